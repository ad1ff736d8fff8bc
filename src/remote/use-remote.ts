import { InvalidConfigError, type Env, type Policy } from "../core/index.ts";
import { findEnv, findLocalEnv, registerRemote, unregisterRemote, type EnvSpec, type SyntheticSupport } from "../envs/index.ts";
import { RemoteEnv } from "./remote-env.ts";
import { remoteEnvInfo, type RemoteEnvInfo } from "./remote-info.ts";

export interface UseRemoteOptions {
  /** Bearer token. @default $DREAMGYM_TOKEN */
  token?: string;
  /** Seconds to connect and per reply. @default 60 */
  timeout?: number;
  /** The local data folder, for the synthetic support of a locally known env. */
  dataDir?: string;
}

/** A remote env in use: its name now means the server's env in this process, until `release()`. */
export interface RemoteEnvHandle {
  name: string;
  url: string;
  info: RemoteEnvInfo;
  /** Whether the synthetic version works here (a locally known env whose data is here too). */
  synthetic: boolean;
  /** Removes the shadow (the local env of that name, if any, is found again). */
  release(): Promise<void>;
}

/**
 * Resolves an env server once (`GET /metadata`, `GET /tasks`) and registers its env under the served
 * env's name for this process (`registerRemote`), so every command and `createEnv(name)` run on the
 * server: `create()` is a RemoteEnv (one session per env), `tasks()` the server's, rewards its own.
 *
 * Where the env is also known here and its data is here, the synthetic side (state abstraction,
 * start states, verifier, the env's own task generator) and the scripted policies that play on
 * abstract states come from the local env (one instance, the twin, open until `release()`), so `train --mode dreamgym --env ws://…` takes its real steps and evaluations on the server.
 * Otherwise the remote env is real-only, with the `random` policy.
 */
export async function useRemoteEnv(url: string, opts: UseRemoteOptions = {}): Promise<RemoteEnvHandle> {
  const info = await remoteEnvInfo(url, opts);
  const local = findLocalEnv(info.env);
  // The local twin: the same env over the local data, for what needs the env's own state (synthetic support).
  let twin: Env | undefined;
  let support: (SyntheticSupport & { policies: readonly string[] }) | undefined;
  if (local?.spec.synthetic) {
    try {
      twin = local.spec.create({ split: info.split, dataDir: opts.dataDir });
      support = { policies: [], ...local.spec.synthetic(twin) };
    } catch {
      await twin?.close();
      twin = undefined; // no local data (or another split list): the remote env is real-only here
    }
  }
  // Scripted policies that play on abstract states (the synthetic env's) play the served ones too.
  const policies: Record<string, (env: Env, o: { seed: number }) => Policy> = {};
  if (support && info.observation === "abstract") {
    for (const p of support.policies) {
      const make = local!.spec.policies?.[p];
      if (make && p !== "random") policies[p] = make;
    }
  }
  const spec: EnvSpec<Env> = {
    description: `${info.env} served at ${info.url} (${info.mode}, split ${info.split})`,
    create(options) {
      if (options.split !== undefined && options.split !== info.split) {
        throw new InvalidConfigError(
          `the env server ${info.url} serves ${info.env} split ${info.split}, not ${options.split}: ask for split ${info.split}, or start a server with --split ${options.split}`,
        );
      }
      if (options.maxSteps !== undefined) {
        throw new InvalidConfigError(
          `the env server ${info.url} sets its own step limit: start it with --max-steps ${options.maxSteps} instead of giving it here`,
        );
      }
      return new RemoteEnv(info.url, { token: opts.token, timeout: opts.timeout, tasks: info.tasks });
    },
    tasks: () => [...info.tasks],
    splits: { train: info.split, eval: info.split },
    rewards: info.rewards,
    success: local?.success,
    policies,
    synthetic: support ? () => support : undefined,
    // The env's own task variation reads its data, which the twin has here and a served env cannot give.
    taskGenerator: (_env, context) => (twin && local?.spec.taskGenerator ? local.spec.taskGenerator(twin, context) : undefined),
    candidateActions: local?.spec.candidateActions,
    check: local?.spec.check,
  };
  registerRemote(info.env, spec, info.url);
  return {
    name: info.env,
    url: info.url,
    info,
    synthetic: support !== undefined,
    async release() {
      if (findEnv(info.env)?.spec === (spec as unknown)) unregisterRemote(info.env);
      await twin?.close();
    },
  };
}
