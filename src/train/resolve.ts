import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { abstractEnv, InvalidConfigError, withActions, type ActionSource, type Env, type ExperienceModel, type Task } from "../core/index.ts";
import {
  actionVocabulary,
  envEntry,
  envTasks,
  findEnv,
  plugPoints,
  remoteUrl,
  syntheticSupport,
  unregisteredEntry,
  type EnvEntry,
  type EnvSpec,
  type PlugPoint,
} from "../envs/index.ts";
import { checkBufferEnv, checkBufferGrounds, refuseBufferFolder, ReplayBuffer } from "../buffer/index.ts";
import { isLocalExperience, loadLearnedModel, parseExperienceSpec, type ExperienceSpec } from "../experience/index.ts";
import { probeEndpoint } from "../llm/index.ts";
import { httpBase, useRemoteEnv } from "../remote/index.ts";
import { NeuralPolicy } from "../rl/index.ts";
import { countDemonstrations } from "./bc.ts";
import type { EnvPool, TrainParts } from "./parts.ts";
import type { TrainConfig, TrainConfigInput } from "./config.ts";

/** An env's synthetic support as the registry gives it (with its rewards and scripted policies). */
export type Support = ReturnType<typeof syntheticSupport>;

/** The env a run trains on, looked up once: its entry, its plug points, and where its instances come from. */
export interface RunEnv {
  entry: EnvEntry;
  plugs: { [K in PlugPoint]?: EnvSpec[K] };
  /** Envs in a pool: `concurrency`, or the one instance the parts passed. */
  size(pool: "train" | "eval"): number;
  /** A new env of a pool, and whether the run closes it (it does not close an instance the parts passed). */
  make(pool: "train" | "eval", split: string): { env: Env; owned: boolean };
}

/**
 * The run's env: the registry's entry of `config.env` and `createEnv`'s instances, or the instances or
 * factories of `given.envs` (whose env needs no registration: an unregistered name gets the defaults).
 */
export function runEnv(config: TrainConfig, given: TrainParts = {}): RunEnv {
  const entry = runEnvEntry(config.env, given);
  const envs = given.envs;
  if (!envs) {
    return {
      entry,
      plugs: plugPoints(config.env),
      size: () => config.concurrency,
      make: (_pool, split) => ({ env: entry.spec.create({ split, dataDir: config.dataDir, maxSteps: config.maxSteps }), owned: true }),
    };
  }
  if (config.remote) throw new InvalidConfigError(`the run is given its envs and an env server (${config.remote}): give one of them`);
  return {
    entry,
    plugs: plugPoints(config.env),
    size: (pool) => (typeof envs[pool] === "function" ? config.concurrency : 1),
    make: (pool) => {
      const e = envs[pool];
      return typeof e === "function" ? { env: e(), owned: true } : { env: e, owned: false };
    },
  };
}

/** The registry's entry of env `name`; for envs the parts pass under a name not registered, one with the defaults. */
export function runEnvEntry(name: string, given: TrainParts = {}): EnvEntry {
  if (!given.envs) return envEntry(name);
  return (
    findEnv(name) ??
    unregisteredEntry(name, {
      create: () => {
        throw new InvalidConfigError(`env ${name} is passed to train() as instances or factories (TrainParts.envs): it has no create()`);
      },
    })
  );
}

/** A pool a run opened: its envs as the policy sees them, its tasks, its first env as made, and that env's synthetic support. */
export interface OpenPool extends EnvPool {
  first: Env;
  support?: Support;
  /** A further env of the pool's split as the policy sees it (a served session's own); its caller closes it. */
  make(): Env;
  /** Closes the envs the run made (again: nothing). */
  close(): Promise<void>;
}

/** `env.size(pool)` envs of a split, as the policy sees them (abstract states, candidate actions); an error when the split has no tasks. */
export function openPool(env: RunEnv, config: TrainConfig, pool: "train" | "eval", split: string, actions?: ActionSource): OpenPool {
  const owned: Env[] = [];
  const close = async () => {
    await Promise.all(owned.splice(0).map((e) => e.close()));
  };
  const envs: Env[] = [];
  let tasks: Task[] = [];
  let first: Env | undefined;
  let support: Support | undefined;
  // Observations as abstract states, as in the synthetic env, so a policy transfers between the two.
  const seenAs = (made: Env) => {
    const own = env.entry.spec.synthetic ? syntheticSupport(env.entry, made) : undefined;
    const seen = own ? abstractEnv(made, own.abstraction) : made;
    return { seen: actions ? withActions(seen, actions) : seen, own };
  };
  try {
    for (let i = 0; i < env.size(pool); i++) {
      const made = env.make(pool, split);
      if (made.owned) owned.push(made.env);
      if (i === 0) {
        first = made.env;
        tasks = envTasks(env.entry, made.env);
        if (tasks.length === 0) throw new InvalidConfigError(`${config.env} split ${split} has no tasks`);
      }
      const { seen, own } = seenAs(made.env);
      if (i === 0) support = own;
      envs.push(seen);
    }
  } catch (e) {
    void close();
    throw e;
  }
  return { envs, tasks, first: first!, support, make: () => seenAs(env.make(pool, split).env).seen, close };
}

/**
 * Where the policy's candidates come from when an env lists no actions: `own` (the parts', else the
 * env spec's), else a command vocabulary learned from the real transitions of `bufferFile`.
 */
export function candidatesOf(own: ActionSource | undefined, config: TrainConfig, bufferFile: string | undefined): ActionSource | undefined {
  // A cold start's run buffer does not exist before its synthetic env opens it (and holds nothing real).
  if (own || !bufferFile || !existsSync(bufferFile)) return own;
  const buffer = ReplayBuffer.open(bufferFile, { readonly: true });
  try {
    // Real (offline) transitions only: the synthetic ones a run adds must not change the vocabulary on resume.
    const actions = buffer.actions({ env: config.env, source: "real" });
    return actions.length > 0 ? actionVocabulary(actions) : undefined;
  } finally {
    buffer.close();
  }
}

/** A run's config turned into ready parts, every check made: nothing of the run folder is written yet. */
export interface ResolvedRun {
  env: RunEnv;
  /** Candidate actions where the env lists none. */
  actions?: ActionSource;
  train: OpenPool;
  eval: OpenPool;
  /** The synthetic modes: the synthetic support of the train pool's first env. */
  support?: Support;
  /** The synthetic modes, unless the parts give the model: the experience spec parsed, and a learned model's file loaded. */
  experience?: ExperienceSpec;
  learned?: ExperienceModel;
  /** Closes what it opened (again: nothing). */
  close(): Promise<void>;
}

/**
 * Checks a run's config and opens what it names, once: the env's entry, each split's pool (whose
 * first env the split checks run on: tasks, `unavailable`, the first state's actions), the synthetic
 * support (of the train pool's first env), the experience spec (parsed; a chat model's endpoint
 * probed, a learned model's file loaded). On failure it closes what it opened. `files` are the buffer
 * and initial policy to check (a resumed run's: its own buffer copy, and no initial policy once it
 * has a checkpoint).
 */
export async function resolveRun(config: TrainConfig, given: TrainParts, files: { buffer?: string; initPolicy?: string } = config): Promise<ResolvedRun> {
  checkSettings(config);
  const env = runEnv(config, given);
  if (files.initPolicy) {
    if (!existsSync(files.initPolicy)) throw new InvalidConfigError(`initPolicy ${files.initPolicy} does not exist`);
    const bytes = readFileSync(files.initPolicy);
    if (given.policy) given.policy.load(bytes, files.initPolicy);
    else NeuralPolicy.fromBytes(bytes, files.initPolicy, { ...config.policy, seed: config.seed });
  }
  const synthetic = config.mode === "dreamgym" || config.mode === "s2r";
  if (files.buffer) {
    if (!existsSync(files.buffer)) throw new InvalidConfigError(`buffer ${files.buffer} does not exist`);
    refuseBufferFolder(files.buffer);
    const b = ReplayBuffer.open(files.buffer, { readonly: true }); // a corrupt or foreign file fails here
    try {
      // Another env's buffer grounds nothing here: its states are in another format.
      if (config.mode !== "real") checkBufferEnv(b, files.buffer, config.env);
      // As collect and serve refuse it: a local model with nothing to ground it drops every synthetic episode.
      if (synthetic && !given.experienceModel && isLocalExperience(config.experience)) checkBufferGrounds(b, files.buffer, config.env);
    } finally {
      b.close();
    }
  }
  const experience = await checkExperience(config, env, given, files.buffer);
  const actions = candidatesOf(given.candidateActions ?? env.entry.spec.candidateActions, config, files.buffer);
  const opened: OpenPool[] = [];
  const close = async () => {
    await Promise.all(opened.splice(0).map((p) => p.close()));
  };
  try {
    const train = openPool(env, config, "train", config.trainSplit, actions);
    opened.push(train);
    checkPlayable(env, config, train);
    const support = synthetic ? train.support : undefined;
    if (config.hybrid && !support?.verifier) throw new InvalidConfigError(`--hybrid needs a verifier of ${config.env}'s rewards; ${config.env} has none`);
    // The policy has something to pick from at the first state.
    const listed = support
      ? support.abstraction.actions(support.abstraction.abstract(support.initialState(train.tasks[0])))
      : (await train.first.reset({ task: train.tasks[0], seed: 0 }), train.first.availableActions());
    if (listed === undefined && actions === undefined) {
      throw new InvalidConfigError(
        `${config.env} lists no actions, so the policy has no candidates: give its env spec candidateActions, or a --buffer of its trajectories to learn a command vocabulary from`,
      );
    }
    // Read (and checked) once, before anything is written; the run plays with it.
    const learned = experience?.kind === "learned" ? loadLearnedModel(experience.file, support!.abstraction, support!.rewards) : undefined;
    const evaluation = openPool(env, config, "eval", config.evalSplit, actions);
    opened.push(evaluation);
    checkPlayable(env, config, evaluation);
    return { env, actions, train, eval: evaluation, support, experience, learned, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** The settings that cannot go together. */
function checkSettings(config: TrainConfig): void {
  if (config.realTasks === "server" && (config.remote === undefined || config.mode !== "real"))
    throw new InvalidConfigError(
      'realTasks "server" lets a DreamGym session server pick the tasks: it needs --mode real and --env ws://… (dreamgym serve --mode dreamgym)',
    );
  if (config.mode === "s2r" && config.realBudget === 0)
    throw new InvalidConfigError("invalid training config:\n  realBudget: mode s2r needs real steps after the synthetic phase (--real-budget N > 0)");
  if (config.mode !== "s2r" && config.realBudget > 0 && config.realTasks !== "server")
    throw new InvalidConfigError(`invalid training config:\n  realBudget: only mode s2r has a real phase (mode is ${config.mode})`);
  if ((config.mode === "real" || config.mode === "bc") && config.hybrid)
    throw new InvalidConfigError(`--hybrid applies to the synthetic env (mode dreamgym or s2r); mode ${config.mode} has no synthetic rewards: drop --hybrid`);
  if (config.coldStart && config.mode !== "dreamgym" && config.mode !== "s2r")
    throw new InvalidConfigError(`--cold-start applies to the synthetic modes (dreamgym, s2r); mode is ${config.mode}`);
  if (config.coldStart && config.buffer)
    throw new InvalidConfigError(`--cold-start starts from an empty buffer: drop --buffer ${config.buffer} (or drop --cold-start to ground the model in it)`);
  if (config.syntheticOnly && config.mode !== "dreamgym")
    throw new InvalidConfigError(`--synthetic-only trains in the synthetic env alone: it needs --mode dreamgym (mode is ${config.mode})`);
  if (config.onPolicyAudit.refit) {
    const why =
      config.mode !== "dreamgym" && config.mode !== "s2r"
        ? `it needs the synthetic modes (dreamgym, s2r); mode is ${config.mode}`
        : config.syntheticOnly
          ? "--synthetic-only has no audit"
          : config.onPolicyAudit.every === 0
            ? "the audit is off (onPolicyAudit.every 0)"
            : config.served && config.mode === "s2r"
              ? "a served S2R run's trainer counts the real phase's steps itself, which the refit's would upset"
              : undefined;
    if (why) throw new InvalidConfigError(`--refit learns from the on-policy audit's real replays: ${why}`);
  }
}

/**
 * What the mode needs of the buffer and the experience model: bc's demonstrations; the synthetic
 * modes' synthetic support, buffer (or cold start with a chat model), and experience spec, parsed
 * here once (undefined when the parts give the model) with a chat model's endpoint probed.
 */
async function checkExperience(config: TrainConfig, env: RunEnv, given: TrainParts, buffer: string | undefined): Promise<ExperienceSpec | undefined> {
  if (config.mode === "bc") {
    if (!buffer)
      throw new InvalidConfigError(
        `mode bc clones the successful real episodes of a buffer: give --buffer B.db (dreamgym buffer import F.jsonl --abstract --buffer B.db)`,
      );
    if (countDemonstrations(config, buffer, env.entry.success) === 0)
      throw new InvalidConfigError(`mode bc: buffer ${buffer} holds no successful real ${config.env} episodes to clone`);
    return undefined;
  }
  if (config.mode === "real") return undefined;
  if (!env.entry.spec.synthetic)
    throw new InvalidConfigError(
      `mode ${config.mode} needs a synthetic ${config.env}: its env spec has no synthetic(env) (a state abstraction and start states); use --mode real`,
    );
  let experience: ExperienceSpec | undefined;
  if (config.coldStart) {
    if (!given.experienceModel && (experience = parseExperienceSpec(config.experience)).kind !== "chat") {
      throw new InvalidConfigError(
        `--cold-start needs a reasoning experience model (--experience http://host/v1#model, openai:model or gguf:file): the ${experience.kind} model is built from a buffer's trajectories`,
      );
    }
  } else if (!buffer)
    throw new InvalidConfigError(
      `mode ${config.mode} needs a buffer of offline ${config.env} trajectories (--buffer B.db; dreamgym buffer import F.jsonl --abstract --buffer B.db), or --cold-start with a reasoning experience model to start from none (dreamgym serve: --set coldStart=true)`,
    );
  if (given.experienceModel) return undefined;
  experience ??= parseExperienceSpec(config.experience);
  if (experience.kind === "chat") await probeEndpoint(experience.spec, 1000 * config.requestTimeout);
  return experience;
}

/** A pool's env can play real episodes here, or the run trains in its synthetic env alone (WebArena with no deployment). */
function checkPlayable(env: RunEnv, config: TrainConfig, pool: OpenPool): void {
  const why = config.syntheticOnly ? undefined : env.entry.spec.unavailable?.(pool.first);
  if (why) throw new InvalidConfigError(`${why}; to train in its synthetic env alone: --mode dreamgym --synthetic-only (no evaluation, no on-policy audit)`);
}

/**
 * Runs `fn` with the env server a run names standing for its env (`useRemoteEnv`), unless the caller
 * has already made `input.env` mean that server (as the CLI does); `env` defaults to the served env.
 * A new run names it in `input.remote`; a resumed one in its folder's config.json (`savedRemote`).
 */
export async function withRemote<T>(input: TrainConfigInput, fn: (input: TrainConfigInput) => Promise<T>): Promise<T> {
  const url = input.remote;
  if (typeof url !== "string" || !/^(wss?|https?):\/\/./i.test(url)) return fn(input); // none, or the config check tells
  if (input.env !== undefined && remoteUrl(input.env) === httpBase(url)) return fn(input);
  const remote = await useRemoteEnv(url, { dataDir: input.dataDir });
  try {
    if (input.env !== undefined && input.env !== remote.name) {
      throw new InvalidConfigError(`the env server ${remote.url} serves ${remote.name}, not ${input.env}: set env to ${remote.name} (or leave it out)`);
    }
    return await fn({ ...input, env: remote.name });
  } finally {
    await remote.release();
  }
}

/**
 * The `env`, `remote` and `dataDir` a run folder's config.json records (nothing when it names no env
 * server): a resumed run connects first, so its env (perhaps known only to the server) checks out.
 */
export function savedRemote(runDir: string): TrainConfigInput {
  try {
    const c = JSON.parse(readFileSync(join(runDir, "config.json"), "utf8")) as Record<string, unknown>;
    if (typeof c.remote !== "string") return {};
    return { env: typeof c.env === "string" ? c.env : undefined, remote: c.remote, dataDir: typeof c.dataDir === "string" ? c.dataDir : undefined };
  } catch {
    return {}; // RunFolder.open says what is wrong with the folder
  }
}
