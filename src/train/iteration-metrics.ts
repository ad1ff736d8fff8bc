import { TrainingDivergedError, type Episode } from "../core/index.ts";
import type { OnPolicyAuditSummary } from "../experience/index.ts";
import type { GrpoStats, PpoStats } from "../rl/index.ts";
import type { EvalResult, IterationMetrics, TrainConfig } from "./config.ts";
import type { RunState } from "./run-sink.ts";
import type { RunSink } from "./run-sink.ts";

/** What one iteration did, as the loop collected it. */
export interface IterationRecord {
  iteration: number;
  phase: "real" | "synthetic";
  played: Episode[];
  steps: number;
  /** The update's figures (none on a served run: the trainer updates the policy). */
  stats?: GrpoStats | PpoStats;
  /** GRPO's groups of the update (two episodes or more). */
  updated: Episode[][];
  screen?: IterationMetrics["screen"];
  curriculum?: Omit<NonNullable<IterationMetrics["curriculum"]>, "generatedInBatch">;
  generatedInBatch: number;
  /** Milliseconds at the iteration's start, after rollouts, after the update, after the audit, after the evaluation. */
  times: [number, number, number, number, number];
  eval?: EvalResult;
  uncertainty?: IterationMetrics["uncertainty"];
  verifiedSteps?: number;
  audit?: OnPolicyAuditSummary;
}

/** One line of metrics.jsonl: the iteration's record and the run's counters after it. */
export function iterationMetrics(config: TrainConfig, r: IterationRecord, state: RunState): IterationMetrics {
  const { stats } = r;
  const [t0, t1, t2, tAudit, t3] = r.times;
  return {
    iteration: r.iteration,
    phase: r.phase,
    episodes: r.played.length,
    steps: r.steps,
    meanReward: mean(r.played.map((e) => e.totalReward)),
    success: mean(r.played.map((e) => (e.success ? 1 : 0))),
    ...runCounters(state),
    ...(stats
      ? {
          policyLoss: stats.policyLoss,
          ...("valueLoss" in stats ? { valueLoss: stats.valueLoss } : {}),
          entropy: stats.entropy,
          ...("kl" in stats && stats.kl !== undefined ? { kl: stats.kl } : {}),
          approxKl: stats.approxKl,
          clipFraction: stats.clipFraction,
          gradNorm: stats.gradNorm,
        }
      : {}),
    ...(config.algo === "grpo"
      ? { groups: { total: r.updated.length, informative: r.updated.filter((g) => variance(g.map((e) => e.totalReward)) > 1e-12).length } }
      : {}),
    ...(r.screen ? { screen: r.screen } : {}),
    ...(r.curriculum ? { curriculum: { ...r.curriculum, generatedInBatch: r.generatedInBatch } } : {}),
    rolloutSeconds: (t1 - t0) / 1000,
    updateSeconds: (t2 - t1) / 1000,
    auditSeconds: (tAudit - t2) / 1000,
    evalSeconds: (t3 - tAudit) / 1000,
    wallSeconds: state.wallSeconds,
    ...(r.eval ? { eval: r.eval } : {}),
    ...(r.uncertainty ? { uncertainty: r.uncertainty } : {}),
    ...(r.verifiedSteps !== undefined ? { verifiedSteps: r.verifiedSteps } : {}),
    ...(r.audit ? { onPolicyAudit: r.audit } : {}),
  };
}

/**
 * A loss or gradient that is not a finite number stops the run (it would train on to nonsense and
 * report it, exit 0): the checkpoints written so far are the last good ones.
 */
export function checkFinite(stats: object, iteration: number, sink: Pick<RunSink, "where" | "lastCheckpoint">): void {
  const bad = Object.entries(stats).filter(([, v]) => typeof v === "number" && !Number.isFinite(v));
  if (bad.length === 0) return;
  const last = sink.lastCheckpoint();
  const kept = last > 0 ? `${sink.where} keeps its last good checkpoint (iteration ${last})` : `${sink.where} has no checkpoint yet`;
  throw new TrainingDivergedError(
    `training diverged at iteration ${iteration}: ${bad.map(([k, v]) => `${k} ${v}`).join(", ")} (a learning rate too high?); the run stops, and ${kept}; start again with other settings (a lower learning rate)`,
  );
}

/** The run's counters as a metrics line carries them. */
export const runCounters = (state: RunState) => ({
  realInteractions: state.realInteractions,
  evalInteractions: state.evalInteractions,
  syntheticInteractions: state.syntheticInteractions,
  auditInteractions: state.auditInteractions ?? 0,
  droppedEpisodes: state.droppedEpisodes,
  tokens: state.tokens ?? 0,
});

export const mean = (xs: number[]) => (xs.length === 0 ? 0 : xs.reduce((s, x) => s + x, 0) / xs.length);
/** Population variance (0 for fewer than two values). */
export const variance = (xs: number[]) => {
  const m = mean(xs);
  return mean(xs.map((x) => (x - m) ** 2));
};
