import type { Env, EpisodeGroup } from "./env.ts";
import type { Decision, PastStep, Policy } from "./policy.ts";
import { Rng } from "./rng.ts";
import type { StepInfo, Task, Trajectory } from "./types.ts";

export interface EpisodeStep<R = unknown> {
  observation: string;
  action: string;
  reward: number;
  next_observation: string;
  terminated: boolean;
  truncated: boolean;
  info?: StepInfo;
  /** log π(action) when it was taken. */
  logProb: number;
  /** V(observation) when it was taken. */
  value?: number;
  record: R;
  /** The policy failed to produce a valid action at this step. */
  failed?: string;
}

/** One episode as the learner needs it. */
export interface Episode<R = unknown> {
  task: Task;
  steps: EpisodeStep<R>[];
  totalReward: number;
  success: boolean;
}

export interface PlayOptions {
  task?: Task;
  /** The episode's group, passed to the env's reset (`ResetOptions.group`). */
  group?: EpisodeGroup;
  /** Seeds the env's own randomness. */
  seed?: number;
  /** The policy's sampling stream for this episode. */
  rng: Rng;
  greedy?: boolean;
  /** Whether a return counts as success (the env's rule). @default a return of at least 1 */
  isSuccess?: (totalReward: number) => boolean;
}

const atLeastOne = (total: number) => total >= 1 - 1e-9;

/**
 * The episode loop, the one every caller uses: plays one episode of `policy` in `env`, keeping what
 * each decision needs for an update.
 */
export async function playEpisode<R>(env: Env, policy: Policy<R>, opts: PlayOptions): Promise<Episode<R>> {
  const reset = await env.reset({ seed: opts.seed, task: opts.task, ...(opts.group !== undefined ? { group: opts.group } : {}) });
  const task = (reset.info.task as Task | undefined) ?? opts.task ?? { id: "unknown", instruction: "" };
  policy.reset?.(task);
  const steps: EpisodeStep<R>[] = [];
  const history: string[] = [];
  const trace: PastStep[] = [];
  let observation = reset.observation;
  let info = reset.info;
  let total = 0;
  for (;;) {
    const d: Decision<R> = await policy.act(
      { task, observation, actions: env.availableActions(), history, trace, info },
      { rng: opts.rng, greedy: opts.greedy },
    );
    const r = await env.step(d.action);
    const step: EpisodeStep<R> = {
      observation,
      action: d.action,
      reward: r.reward,
      next_observation: r.observation,
      terminated: r.terminated,
      truncated: r.truncated,
      logProb: d.logProb,
      value: d.value,
      record: d.record,
    };
    if (Object.keys(r.info).length > 0) step.info = r.info;
    if (d.failed) step.failed = d.failed;
    steps.push(step);
    history.push(d.action);
    trace.push({ observation, action: d.action, invalid: r.info.invalid === true });
    total += r.reward;
    observation = r.observation;
    info = r.info;
    if (r.terminated || r.truncated) break;
  }
  return { task, steps, totalReward: total, success: (opts.isSuccess ?? atLeastOne)(total) };
}

export interface EpisodeJob {
  task?: Task;
  /** The episode's group, for an env that picks a group's task itself (`ResetOptions.group`). */
  group?: EpisodeGroup;
  seed?: number;
  /** Seeds the policy's sampling for this episode, so results do not depend on scheduling. */
  rngSeed: number;
}

/**
 * Plays `jobs` over a pool of envs, one episode per env at a time; results come back in job order
 * and, since each job has its own sampling stream, do not depend on which env finished first.
 */
export async function playEpisodes<R>(
  envs: readonly Env[],
  policy: Policy<R>,
  jobs: readonly EpisodeJob[],
  opts: { greedy?: boolean; isSuccess?: (totalReward: number) => boolean; onEpisode?: (e: Episode<R>, index: number) => void } = {},
): Promise<Episode<R>[]> {
  const results: Episode<R>[] = new Array(jobs.length);
  let next = 0;
  let failed = false;
  const worker = async (env: Env) => {
    while (next < jobs.length && !failed) {
      const j = next++;
      const job = jobs[j];
      const episode = await playEpisode(env, policy, {
        task: job.task,
        group: job.group,
        seed: job.seed,
        rng: new Rng(job.rngSeed),
        greedy: opts.greedy,
        isSuccess: opts.isSuccess,
      });
      results[j] = episode;
      opts.onEpisode?.(episode, j);
    }
  };
  // After a failure no new episode starts, and every worker ends before the error is raised: the
  // caller may then close the envs and outputs with nothing still running against them.
  let first: unknown;
  await Promise.allSettled(
    envs.map((env) =>
      worker(env).catch((e) => {
        if (!failed) first = e;
        failed = true;
      }),
    ),
  );
  if (failed) throw first;
  return results;
}

/** A 52-bit seed derived from parts (e.g. run seed, iteration, episode index). */
export function deriveSeed(...parts: (string | number)[]): number {
  const text = parts.join(":");
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995) ^ (h2 >>> 15);
  }
  return (h1 >>> 0) * 0x100000 + ((h2 >>> 0) & 0xfffff);
}

/** An episode as a trajectory record (the JSONL wire format). */
export function episodeTrajectory(e: Episode, meta: { env: string; policy?: string; source?: Trajectory["source"]; createdAt?: string }): Trajectory {
  return {
    env: meta.env,
    task: e.task,
    total_reward: e.totalReward,
    success: e.success,
    source: meta.source ?? "real",
    ...(meta.policy !== undefined ? { policy: meta.policy } : {}),
    created_at: meta.createdAt ?? new Date().toISOString(),
    steps: e.steps.map((s) => ({
      observation: s.observation,
      action: s.action,
      reward: s.reward,
      next_observation: s.next_observation,
      terminated: s.terminated,
      truncated: s.truncated,
      ...(s.info ? { info: s.info } : {}),
    })),
  };
}
