import type { Episode, Trajectory } from "../core/index.ts";
import type { IterationMetrics } from "./config.ts";
import { mean } from "./iteration-metrics.ts";

/** An episode in which the experience model kept failing: left out of the update, and counted. */
export const modelFailed = (e: Episode) => e.steps.some((s) => s.info?.model_failed !== undefined);

/** The experience model's own reward of a step (before the pessimism penalty; a halted step earns nothing). */
export const modelReward = (s: Episode["steps"][number]) => (s.info?.halted ? 0 : typeof s.info?.model_reward === "number" ? s.info.model_reward : s.reward);

/** Mean and largest u over the steps whose model reported one, and the episodes pessimism halted (undefined: no u at all). */
export function uncertaintyOf(episodes: Episode[]): IterationMetrics["uncertainty"] {
  const us = episodes.flatMap((e) => e.steps.map((s) => s.info?.u).filter((u): u is number => typeof u === "number"));
  if (us.length === 0) return undefined;
  return { mean: mean(us), max: Math.max(...us), steps: us.length, halts: episodes.filter((e) => e.steps.at(-1)?.info?.halted === true).length };
}

/** Steps an env server reported played in `where` (a served DreamGym run's `played_in`). */
export const playedIn = (episodes: Episode[], where: "synthetic" | "real") =>
  episodes.reduce((a, e) => a + e.steps.filter((s) => s.info?.played_in === where).length, 0);

/** Synthetic steps whose reward and end the real env's verifier gave (hybrid runs). */
export const verifiedSteps = (episodes: Episode[]) => episodes.reduce((a, e) => a + e.steps.filter((s) => s.info?.verified === true).length, 0);

/**
 * A synthetic episode as the buffer stores it (the model's reasoning kept; a fixed time, so content
 * ids repeat on resume). It keeps what the model predicted: its rewards before the pessimism penalty,
 * and not a halted step (which the model did not predict; a later demo must not teach "this ends it").
 */
export function syntheticTrajectory(e: Episode, env: string, policy: string, isSuccess: (totalReward: number) => boolean): Trajectory {
  const steps = e.steps.filter((s) => s.info?.halted !== true);
  const total = steps.reduce((a, s) => a + modelReward(s), 0);
  return {
    env,
    task: e.task,
    source: "synthetic",
    policy,
    total_reward: total,
    success: isSuccess(total),
    created_at: new Date(0).toISOString(),
    steps: steps.map((s) => ({
      observation: s.observation,
      action: s.action,
      reward: modelReward(s),
      next_observation: s.next_observation,
      terminated: s.terminated,
      truncated: s.truncated,
      ...(s.info?.reasoning ? { reasoning: String(s.info.reasoning) } : {}),
    })),
  };
}
