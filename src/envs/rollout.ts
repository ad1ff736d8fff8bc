import type { Env, Task, Trajectory, Transition } from "../core/index.ts";
import type { ActingPolicy } from "./policies.ts";

export interface EpisodeOptions {
  /** The env's registry name, recorded in the trajectory. */
  envName: string;
  task?: Task;
  seed?: number;
  /** A reward at or above this counts as success. @default 1 */
  successThreshold?: number;
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
    success: total >= (opts.successThreshold ?? 1) - 1e-9,
    source: "real",
    policy: policy.name,
    created_at: new Date().toISOString(),
  };
}
