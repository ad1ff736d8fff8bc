import type { ExperienceModel, HistoryStep, StateAbstraction, Trajectory } from "../core/index.ts";
import type { ReplayBuffer } from "../buffer/index.ts";
import { retrieveDemos } from "./demos.ts";

/** How faithful an experience model is, on real trajectories it replays step by step. */
export interface AuditReport {
  model: string;
  trajectories: number;
  steps: number;
  /** Steps where the model gave no valid output (they also count as errors in every rate below). */
  invalidRate: number;
  /** Why the first failed step failed, if any did. */
  firstFailure?: string;
  /** ε_R: share of steps whose predicted reward differs from the real one by more than 0.01. */
  rewardErrorRate: number;
  rewardMAE: number;
  /** Mean absolute reward error on the real episode-ending steps only. */
  terminalRewardMAE: number;
  /**
   * Success (an ending step with reward 1) predicted vs real, over the steps where the real episode
   * or the model's prediction ends; failed predictions are counted in `invalidRate` instead.
   */
  success: { truePositive: number; falsePositive: number; falseNegative: number; trueNegative: number };
  /** Termination predicted as the real env did. */
  terminationAccuracy: number;
  /** ε_P proxies: the next state's kind (its first line), the F1 of its element lines, and exact equality. */
  stateKindAccuracy: number;
  elementF1: number;
  identicalStates: number;
  /** Per step, when the model reports them. */
  meanLatencyMs: number;
  /** Prompt + completion tokens per step (0 for models without tokens, like the embedded default). */
  tokensPerStep: number;
  /** Where the figures mean little (no demo left to ground the model, no episode that ends, no reward to get wrong). */
  warnings: string[];
}

/** The kind of an abstract state: its first line (e.g. "page: results"). */
export function stateKind(state: string): string {
  return state.split("\n", 1)[0].trim();
}

/** F1 of two states' element lines (everything after the kind line), as sets. */
export function elementF1(predicted: string, real: string): number {
  const lines = (s: string) =>
    new Set(
      s
        .split("\n")
        .slice(1)
        .map((l) => l.trim())
        .filter(Boolean),
    );
  const p = lines(predicted);
  const r = lines(real);
  if (p.size === 0 && r.size === 0) return 1;
  let common = 0;
  for (const l of p) if (r.has(l)) common++;
  if (common === 0) return 0;
  const precision = common / p.size;
  const recall = common / r.size;
  return (2 * precision * recall) / (precision + recall);
}

export interface AuditOptions {
  model: ExperienceModel;
  abstraction: StateAbstraction;
  /** Grounds the model; demos from the audited trajectory's own task are left out (held out by task). */
  buffer?: ReplayBuffer;
  /** Demos per step. @default 5 */
  k?: number;
  /** Tokens the model has used so far (e.g. from a chat model's stats), to report tokens per step. */
  tokensUsed?: () => number;
}

/**
 * Replays real trajectories through the model, step by step with the real history, and compares
 * each prediction with what the real env did. Use trajectories of tasks the buffer has not seen.
 */
export async function auditModel(trajectories: Trajectory[], opts: AuditOptions): Promise<AuditReport> {
  const k = opts.k ?? 5;
  const a = opts.abstraction;
  let steps = 0;
  let invalid = 0;
  let rewardErrors = 0;
  let rewardAbs = 0;
  let terminalAbs = 0;
  let terminals = 0;
  let terminationOk = 0;
  let kindOk = 0;
  let f1 = 0;
  let identical = 0;
  let latency = 0;
  let undemoed = 0;
  let paying = 0;
  const success = { truePositive: 0, falsePositive: 0, falseNegative: 0, trueNegative: 0 };
  let firstFailure: string | undefined;
  const tokensBefore = opts.tokensUsed?.() ?? 0;
  if (opts.buffer && opts.model.fit) await opts.model.fit(opts.buffer);
  for (const t of trajectories) {
    const history: HistoryStep[] = [];
    let before: { raw: string; state: string } | undefined;
    for (const s of t.steps) {
      // The state is the step before's next state, abstracted with that step's info, when it is that text.
      const state = before && before.raw === s.observation ? before.state : a.abstract(s.observation);
      const real = a.abstract(s.next_observation, s.info);
      const demos =
        opts.buffer && opts.model.usesDemos !== false
          ? await retrieveDemos(opts.buffer, a, { state, action: s.action }, { k, excludeTask: t.task.id, exact: opts.model.exactDemos?.(state) })
          : [];
      if (opts.buffer && opts.model.usesDemos !== false && demos.length === 0) undemoed++;
      if (Math.abs(s.reward) > 1e-9) paying++;
      const started = performance.now();
      const p = await opts.model.predict({ task: t.task, history, state, action: s.action, demos });
      latency += performance.now() - started;
      steps++;
      const failed = Boolean(p.info.failed);
      if (failed) {
        invalid++;
        firstFailure ??= String(p.info.failed);
      }
      const reward = failed ? 0 : p.reward;
      const terminated = failed ? false : p.terminated;
      const err = Math.abs(reward - s.reward);
      rewardAbs += err;
      if (failed || err > 0.01) rewardErrors++;
      if (!failed && terminated === s.terminated) terminationOk++;
      if (s.terminated) {
        terminals++;
        terminalAbs += err;
      }
      if (!failed && (s.terminated || terminated)) {
        const realSuccess = s.terminated && s.reward >= 1 - 1e-9;
        const predictedSuccess = terminated && reward >= 1 - 1e-9;
        if (realSuccess && predictedSuccess) success.truePositive++;
        else if (!realSuccess && predictedSuccess) success.falsePositive++;
        else if (realSuccess) success.falseNegative++;
        else success.trueNegative++;
      }
      if (!failed) {
        if (stateKind(p.nextState) === stateKind(real)) kindOk++;
        f1 += elementF1(p.nextState, real);
        if (p.nextState === real) identical++;
      }
      history.push({ state, action: s.action, nextState: real, reward: s.reward });
      before = { raw: s.next_observation, state: real };
    }
  }
  const per = (x: number) => (steps > 0 ? x / steps : 0);
  const warnings: string[] = [];
  if (per(undemoed) >= 0.5) {
    warnings.push(
      `${(100 * per(undemoed)).toFixed(0)}% of the steps found no demo once their own task's steps were left out (the audit holds out by task): in a one-task env, or with a buffer of only these tasks, the figures read a model with nothing to ground it; audit on trajectories of tasks the buffer does not hold`,
    );
  }
  if (steps > 0 && terminals === 0)
    warnings.push("no trajectory in the sample ends: the success counts and the ending-step reward error say nothing; audit on whole episodes");
  if (steps > 0 && paying === 0)
    warnings.push("no step in the sample earns a reward: ε_R cannot tell a model that never pays from a faithful one; add trajectories that earn something");
  return {
    warnings,
    model: opts.model.id,
    trajectories: trajectories.length,
    steps,
    invalidRate: per(invalid),
    rewardErrorRate: per(rewardErrors),
    rewardMAE: per(rewardAbs),
    terminalRewardMAE: terminals > 0 ? terminalAbs / terminals : 0,
    success,
    terminationAccuracy: per(terminationOk),
    stateKindAccuracy: per(kindOk),
    elementF1: per(f1),
    identicalStates: per(identical),
    meanLatencyMs: per(latency),
    tokensPerStep: per((opts.tokensUsed?.() ?? 0) - tokensBefore),
    ...(firstFailure !== undefined ? { firstFailure } : {}),
  };
}
