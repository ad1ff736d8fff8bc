import { z } from "zod";
import type { Rng } from "../core/index.ts";
import type { Episode } from "../core/index.ts";
import type { TrainablePolicy } from "./policy.ts";

/**
 * GRPO (Group Relative Policy Optimization) for multi-step episodes.
 *
 * For each task, a group of G episodes (G is the trainer's `rolloutsPerTask`); each episode's return is normalised within its group,
 * A_i = (R_i − mean_G R) / (std_G R + ε), and broadcast to every step of that episode. The loss per
 * step is PPO's clipped surrogate with that advantage, plus β·KL(π ‖ π_ref) to a frozen reference
 * policy (the k3 estimator, as DeepSeekMath), minus an optional entropy bonus; averaged over the
 * steps of a minibatch (token-level, as DAPO). No value function.
 */
export const grpoConfigSchema = z.strictObject({
  learningRate: z.number().positive().default(0.003),
  /** ε of the clipped ratio. */
  clipRange: z.number().positive().max(1).default(0.2),
  /** β of the KL penalty to the reference policy; 0 turns the reference off. */
  klCoef: z.number().min(0).default(0),
  entropyCoef: z.number().min(0).default(0.001),
  /** Passes over each iteration's steps. */
  epochs: z.number().int().min(1).default(2),
  minibatchSize: z.number().int().min(1).default(256),
  maxGradNorm: z.number().positive().default(1),
  /** ε in the advantage's denominator. */
  advantageEps: z.number().positive().default(1e-6),
  /**
   * λ of a batch term added to every episode's advantage: λ·(mean_G R − mean R)/(std R + ε) over the
   * iteration's groups. A group whose returns are all equal carries no group-relative gradient; with
   * λ > 0 it is still pushed down where it earns less than the batch and up where it earns more, so a
   * policy that plays a task one way, and badly, is moved off it (0: GRPO as published).
   */
  batchAdvantage: z.number().min(0).max(100).default(0),
  /**
   * σ_min, a floor under the group's standard deviation: A_i = (R_i − mean_G R) / (max(std_G R, σ_min) + ε).
   * A group whose returns differ by less than the floor gets advantages below 1 in size, instead of
   * ±1 for any difference at all. Where returns come from an experience model, differences far below
   * its resolution are its noise (the pessimism penalty's jitter, a few thousandths), and GRPO's
   * normalisation blows them up into as strong a push as a success against a failure (0: GRPO as published).
   */
  stdFloor: z.number().min(0).max(1e6).default(0),
});
export type GrpoConfig = z.infer<typeof grpoConfigSchema>;

/** (r_i − mean) / (max(std, floor) + ε) within one group; std is the population standard deviation. */
export function groupAdvantages(rewards: readonly number[], eps = 1e-6, floor = 0): number[] {
  const n = rewards.length;
  const mean = rewards.reduce((s, r) => s + r, 0) / n;
  const std = Math.sqrt(rewards.reduce((s, r) => s + (r - mean) ** 2, 0) / n);
  return rewards.map((r) => (r - mean) / (Math.max(std, floor) + eps));
}

/** Each group's λ·(mean_G − mean)/(std + ε), the mean and std over every return of the batch (all 0 when λ is 0). */
export function batchTerms(groups: readonly (readonly number[])[], lambda: number, eps = 1e-6): number[] {
  const all = groups.flat();
  if (lambda === 0 || all.length === 0) return groups.map(() => 0);
  const mean = all.reduce((s, r) => s + r, 0) / all.length;
  const std = Math.sqrt(all.reduce((s, r) => s + (r - mean) ** 2, 0) / all.length);
  return groups.map((g) => (lambda * (g.reduce((s, r) => s + r, 0) / g.length - mean)) / (std + eps));
}

/** The records of an update's steps, in the order `grpoUpdate` reads them. */
export function updateRecords<R>(groups: readonly (readonly Episode<R>[])[]): R[] {
  return groups.flatMap((group) => group.flatMap((episode) => episode.steps.map((step) => step.record)));
}

export interface GrpoStats {
  policyLoss: number;
  /** Mean KL to the reference policy (k3), when there is one. */
  kl?: number;
  entropy: number;
  clipFraction: number;
  /** Mean of (old log π − new log π) over the last epoch: how far the update moved the policy. */
  approxKl: number;
  gradNorm: number;
  steps: number;
}

export function grpoUpdate<R>(
  policy: TrainablePolicy<R>,
  reference: TrainablePolicy<R> | undefined,
  groups: readonly (readonly Episode<R>[])[],
  config: GrpoConfig,
  rng: Rng,
  /**
   * The reference's log-probabilities of the update's steps (group by group, episode by episode, step
   * by step: `updateRecords`), worked out before (`ReferenceThread`); else the reference scores them here.
   */
  referenceLogProbs?: Float64Array,
): GrpoStats {
  // 1. Group-relative advantages, broadcast to the steps of each episode.
  const records: R[] = [];
  const oldLogProbs: number[] = [];
  const advantages: number[] = [];
  const batch = batchTerms(
    groups.map((g) => g.map((e) => e.totalReward)),
    config.batchAdvantage,
    config.advantageEps,
  );
  groups.forEach((group, k) => {
    const a = groupAdvantages(
      group.map((e) => e.totalReward),
      config.advantageEps,
      config.stdFloor,
    );
    group.forEach((episode, i) => {
      for (const step of episode.steps) {
        records.push(step.record);
        oldLogProbs.push(step.logProb);
        advantages.push(a[i] + batch[k]);
      }
    });
  });
  const n = records.length;
  const stats: GrpoStats = { policyLoss: 0, entropy: 0, clipFraction: 0, approxKl: 0, gradNorm: 0, steps: n };
  if (n === 0) return stats;

  // 2. The frozen reference's log-probabilities, for the KL penalty.
  const refLogProbs =
    config.klCoef > 0 && reference
      ? referenceLogProbs?.length === n
        ? referenceLogProbs
        : (reference.chosenLogProbs?.(records) ?? reference.evaluate(records).logProbs)
      : undefined;

  // 3. Epochs of minibatch updates on the clipped surrogate.
  const order = Array.from({ length: n }, (_, i) => i);
  for (let epoch = 0; epoch < config.epochs; epoch++) {
    rng.shuffle(order);
    const last = epoch === config.epochs - 1;
    let loss = 0,
      kl = 0,
      entropy = 0,
      clipped = 0,
      approxKl = 0,
      gradNorm = 0,
      batches = 0;
    for (let start = 0; start < n; start += config.minibatchSize) {
      const idx = order.slice(start, start + config.minibatchSize);
      const m = idx.length;
      const out = policy.evaluate(idx.map((i) => records[i]));
      const dLogProbs = new Float64Array(m);
      const dEntropies = new Float64Array(m).fill(-config.entropyCoef / m);
      idx.forEach((i, j) => {
        const logRatio = out.logProbs[j] - oldLogProbs[i];
        const ratio = Math.exp(logRatio);
        const A = advantages[i];
        const unclipped = ratio * A;
        const clippedRatio = Math.min(Math.max(ratio, 1 - config.clipRange), 1 + config.clipRange);
        const surrogate = Math.min(unclipped, clippedRatio * A);
        loss -= surrogate;
        if (clippedRatio !== ratio) clipped++;
        // The gradient flows through the unclipped branch only when it is the minimum.
        if (unclipped <= clippedRatio * A) dLogProbs[j] = (-A * ratio) / m;
        if (refLogProbs) {
          // k3: π_ref/π − log(π_ref/π) − 1 ≥ 0; its derivative in log π is 1 − π_ref/π.
          const d = refLogProbs[i] - out.logProbs[j];
          kl += Math.exp(d) - d - 1;
          dLogProbs[j] += (config.klCoef * (1 - Math.exp(d))) / m;
        }
        entropy += out.entropies[j];
        approxKl += -logRatio;
      });
      policy.backward({ logProbs: dLogProbs, entropies: dEntropies });
      gradNorm += policy.step({ learningRate: config.learningRate, maxGradNorm: config.maxGradNorm }).gradNorm;
      batches++;
    }
    if (last)
      Object.assign(stats, {
        policyLoss: loss / n,
        kl: refLogProbs ? kl / n : undefined,
        entropy: entropy / n,
        clipFraction: clipped / n,
        approxKl: approxKl / n,
        gradNorm: gradNorm / batches,
      });
  }
  return stats;
}
