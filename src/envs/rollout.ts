import type { Env, Task, Trajectory, Transition } from "../core/index.ts";
import type { ActingPolicy } from "./policies.ts";
import { envNames, envEntry } from "./registry.ts";

/** The env's success rule when it is registered, else a return of at least 1. */
export function successRule(envName: string): (totalReward: number) => boolean {
  return envNames().includes(envName) ? envEntry(envName).success : (total) => total >= 1 - 1e-9;
}

export interface EpisodeOptions {
  /** The env's registry name, recorded in the trajectory. */
  envName: string;
  task?: Task;
  seed?: number;
  /** Whether a return counts as success. @default the registered env's rule (else a return ≥ 1) */
  isSuccess?: (totalReward: number) => boolean;
}

/** Plays one episode of `policy` in `env` and returns it as a trajectory record. */
export async function runEpisode(env: Env, policy: ActingPolicy, opts: EpisodeOptions): Promise<Trajectory> {
  const reset = await env.reset({ seed: opts.seed, task: opts.task });
  const task = (reset.info.task as Task | undefined) ?? opts.task ?? { id: "unknown", instruction: "" };
  policy.reset?.(task);
  const steps: Transition[] = [];
  let observation = reset.observation;
  let info = reset.info;
  let total = 0;
  for (;;) {
    const action = await policy.act({ observation, actions: env.availableActions(), task, info });
    const r = await env.step(action);
    const step: Transition = {
      observation, action, reward: r.reward, next_observation: r.observation,
      terminated: r.terminated, truncated: r.truncated,
    };
    if (Object.keys(r.info).length > 0) step.info = r.info;
    steps.push(step);
    total += r.reward;
    observation = r.observation;
    info = r.info;
    if (r.terminated || r.truncated) break;
  }
  return {
    env: opts.envName,
    task,
    steps,
    total_reward: total,
    success: (opts.isSuccess ?? successRule(opts.envName))(total),
    source: "real",
    policy: policy.name,
    created_at: new Date().toISOString(),
  };
}
