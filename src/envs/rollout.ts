import { episodeTrajectory, playEpisode, Rng, type Env, type Policy, type Task, type Trajectory } from "../core/index.ts";
import { findEnv } from "./registry.ts";

export interface EpisodeOptions {
  /** The env's registry name, recorded in the trajectory. */
  envName: string;
  task?: Task;
  seed?: number;
  /** Whether a return counts as success. @default the registered env's rule (else a return ≥ 1) */
  isSuccess?: (totalReward: number) => boolean;
}

/** The env's success rule when it is registered, else a return of at least 1. */
function successRule(envName: string): (totalReward: number) => boolean {
  return findEnv(envName)?.success ?? ((total) => total >= 1 - 1e-9);
}

/** Plays one episode of `policy` in `env` (the one episode loop) and returns it as a trajectory record. */
export async function runEpisode(env: Env, policy: Policy, opts: EpisodeOptions): Promise<Trajectory> {
  const e = await playEpisode(env, policy, {
    task: opts.task,
    seed: opts.seed,
    rng: new Rng(opts.seed ?? 0),
    isSuccess: opts.isSuccess ?? successRule(opts.envName),
  });
  return episodeTrajectory(e, { env: opts.envName, policy: policy.name, source: "real" });
}
