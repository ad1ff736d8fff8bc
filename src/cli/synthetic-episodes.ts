import { existsSync } from "node:fs";
import { InvalidConfigError, type Task, type Trajectory } from "../core/index.ts";
import { checkBufferEnv, checkBufferGrounds, ReplayBuffer } from "../buffer/index.ts";
import { createEnv, createPolicy, envTasks, runEpisode, syntheticSupport } from "../envs/index.ts";
import { createExperienceModel, isLocalExperience, SyntheticEnv } from "../experience/index.ts";
import { endpointSettings } from "./endpoint-options.ts";
import { progressBar } from "./progress.ts";

export interface SyntheticEpisodesOptions {
  env: string;
  policy: string;
  split: string;
  experience: string;
  buffer: string;
  episodes: number;
  concurrency: number;
  start?: number;
  seed?: number;
  data?: string;
  maxSteps?: number;
  hybrid?: boolean;
  /** With a chat model: its response cache file. */
  cache?: string;
  /** With a chat model: seconds an HTTP attempt may take, and failures in a row that stop the run. */
  requestTimeout?: number;
  maxFailures?: number;
}

/**
 * Plays episodes of a scripted policy in the synthetic version of an env: `experience` is
 * `default` (the embedded model) or a chat model spec (the reasoning model). The buffer grounds the
 * model and receives the synthetic transitions. `concurrency` episodes run at once against one model.
 */
export async function playSyntheticEpisodes(
  o: SyntheticEpisodesOptions,
  onEpisode: (t: Trajectory) => void,
  onReady: () => void = () => {},
): Promise<{ score: number; success: number; episodes: number; failedSteps: number; steps: number }> {
  // The real env only for its tasks and synthetic support; closed once they are read.
  const real = createEnv(o.env, { dataDir: o.data, split: o.split });
  let support: ReturnType<typeof syntheticSupport>;
  let tasks: Task[];
  try {
    support = syntheticSupport(o.env, real);
    tasks = envTasks(o.env, real);
  } finally {
    await real.close();
  }
  if (support.policies.length === 0) {
    throw new InvalidConfigError(
      `no scripted policy can play the synthetic ${o.env} env (its scripted policies need the real env's state); collect real ${o.env} trajectories without --experience`,
    );
  }
  if (!support.policies.includes(o.policy)) {
    throw new InvalidConfigError(`policy "${o.policy}" cannot play the synthetic ${o.env} env (it can: ${support.policies.join(", ")})`);
  }
  if (o.hybrid && !support.verifier) throw new InvalidConfigError(`--hybrid needs a verifier of ${o.env}'s rewards; ${o.env} has none: drop --hybrid`);
  if (isLocalExperience(o.experience) && !existsSync(o.buffer)) {
    throw new InvalidConfigError(
      `buffer ${o.buffer} does not exist; the embedded model needs offline ${o.env} trajectories in it (dreamgym buffer import F.jsonl --buffer ${o.buffer} --abstract)`,
    );
  }
  // The model first (a bad spec fails before anything is opened), then the buffer.
  const handle = createExperienceModel(o.experience, {
    abstraction: support.abstraction,
    rewards: support.rewards,
    chat: { concurrency: o.concurrency, cache: o.cache, ...endpointSettings(o) },
  });
  const model = handle.model;
  let buffer: ReplayBuffer;
  try {
    buffer = ReplayBuffer.open(o.buffer);
  } catch (e) {
    await handle.close();
    throw e;
  }
  try {
    checkBufferEnv(buffer, o.buffer, o.env);
    if (isLocalExperience(o.experience)) checkBufferGrounds(buffer, o.buffer, o.env);
  } catch (e) {
    buffer.close();
    await handle.close();
    throw e;
  }
  onReady();
  const start = o.start ?? 0;
  const seed = o.seed ?? 0;
  let next = 0;
  let score = 0;
  let success = 0;
  let done = 0;
  let failedSteps = 0;
  let steps = 0;
  const bar = progressBar(`synthetic ${o.policy}`, o.episodes, { score: "0.0", success: "0.0%" });
  // One failing episode stops the others before the shared buffer and output are closed.
  let failure: unknown = null;
  const worker = async (w: number) => {
    const env = new SyntheticEnv({
      model,
      abstraction: support.abstraction,
      tasks,
      initialState: support.initialState,
      buffer,
      maxSteps: o.maxSteps ?? support.maxSteps,
      policy: o.policy,
      verifier: o.hybrid ? support.verifier : undefined,
      seed: seed + w,
    });
    const policy = createPolicy(o.env, o.policy, env, { seed: seed + 7919 * (w + 1) });
    for (let i = next++; i < o.episodes && failure === null; i = next++) {
      const t = await runEpisode(env, policy, { envName: o.env, task: tasks[(start + i) % tasks.length], seed: seed + i });
      t.source = "synthetic";
      score += t.total_reward;
      success += t.success ? 1 : 0;
      failedSteps += t.steps.filter((s) => s.info?.model_failed).length;
      steps += t.steps.length;
      onEpisode(t);
      bar.update(++done, { score: ((100 * score) / done).toFixed(1), success: `${((100 * success) / done).toFixed(1)}%` });
    }
  };
  try {
    const results = await Promise.allSettled(
      Array.from({ length: Math.max(1, o.concurrency) }, (_, w) =>
        worker(w).catch((e) => {
          failure ??= e;
          throw e;
        }),
      ),
    );
    if (failure !== null || results.some((r) => r.status === "rejected")) throw failure;
  } finally {
    bar.stop();
    buffer.close();
    await handle.close();
  }
  return { score: done ? score / done : 0, success: done ? success / done : 0, episodes: done, failedSteps, steps };
}
