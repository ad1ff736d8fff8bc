import { deriveSeed, playEpisodes, type Env, type Task } from "../core/index.ts";
import type { GrpoConfig, TrainablePolicy } from "../rl/index.ts";
import type { IterationMetrics, TrainConfig } from "./config.ts";
import type { RunState } from "./run-sink.ts";
import { mean, variance } from "./iteration-metrics.ts";

/**
 * The phase schedule: real mode plays the real env until its budget; DreamGym the synthetic env until
 * its budget; S2R then the real env until its real budget. Null when the budgets (or `maxSeconds`,
 * with `pending` seconds of the current iteration not yet counted) are spent.
 */
export function nextPhase(config: TrainConfig, state: RunState, pending = 0): "real" | "synthetic" | null {
  if (config.maxSeconds > 0 && state.wallSeconds + pending >= config.maxSeconds) return null;
  if (config.mode === "real") return state.realInteractions < config.budget ? "real" : null;
  if (state.syntheticInteractions < config.budget) return "synthetic";
  return config.mode === "s2r" && state.realInteractions < config.realBudget ? "real" : null;
}

/** GRPO's settings in a phase: S2R's real phase may set its own batch term (`realBatchAdvantage`). */
export function grpoSettings(config: TrainConfig, phase: "real" | "synthetic"): GrpoConfig {
  return phase === "real" && config.mode === "s2r" && config.realBatchAdvantage !== undefined ? { ...config.grpo, batchAdvantage: config.realBatchAdvantage } : config.grpo;
}

/**
 * Whether the on-policy audit runs on this iteration: synthetic ones, every `onPolicyAudit.every`
 * and the last one (`state`: the counters with this iteration's episodes counted).
 */
export function auditDue(config: TrainConfig, phase: "real" | "synthetic", iteration: number, state: RunState): boolean {
  const a = config.onPolicyAudit;
  return phase === "synthetic" && !config.syntheticOnly && a.every > 0 && (iteration % a.every === 0 || state.syntheticInteractions >= config.budget);
}

/**
 * S2R's real phase: plays each candidate task G times in the synthetic env (fixed seeds, nothing
 * kept) and returns the `tasksPerIteration` whose synthetic returns vary most (ties: draw order). A
 * task the policy always plays the same way gives a real group of equal returns, no gradient; one it
 * plays in several ways is where the real env can tell them apart, and the synthetic env, wrong as
 * its rewards may be, shows which those are.
 */
export async function screenTasks(
  candidates: Task[], config: TrainConfig, envs: Env[], policy: TrainablePolicy<unknown>, iteration: number, isSuccess: (totalReward: number) => boolean,
): Promise<{ tasks: Task[]; summary: NonNullable<IterationMetrics["screen"]> }> {
  const G = config.rolloutsPerTask;
  const jobs = candidates.flatMap((task, t) => Array.from({ length: G }, (_, g) => ({
    task, seed: deriveSeed(config.seed, "screen-env", iteration, t, g), rngSeed: deriveSeed(config.seed, "screen", iteration, t, g),
  })));
  const played = await playEpisodes(envs, policy, jobs, { isSuccess });
  const spread = candidates.map((_, t) => variance(played.slice(t * G, (t + 1) * G).map((e) => e.totalReward)));
  const chosen = candidates.map((_, t) => t).sort((a, b) => spread[b] - spread[a] || a - b).slice(0, config.tasksPerIteration);
  return {
    tasks: chosen.map((t) => candidates[t]),
    summary: { candidates: candidates.length, steps: played.reduce((s, e) => s + e.steps.length, 0), meanVariance: mean(spread), chosenVariance: mean(chosen.map((t) => spread[t])) },
  };
}
