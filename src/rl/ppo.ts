import { z } from "zod";
import type { Rng } from "../core/index.ts";
import type { Episode } from "../core/index.ts";
import type { TrainablePolicy } from "./policy.ts";

/**
 * PPO with a value head, as CleanRL writes it: advantages by GAE(γ, λ) per episode, then epochs of
 * shuffled minibatches on the clipped surrogate, a squared-error value loss and an entropy bonus,
 * advantages normalised per minibatch, gradients clipped by global norm.
 */
export const ppoConfigSchema = z.strictObject({
  learningRate: z.number().positive().default(0.003),
  gamma: z.number().min(0).max(1).default(0.99),
  gaeLambda: z.number().min(0).max(1).default(0.95),
  clipRange: z.number().positive().max(1).default(0.2),
  valueCoef: z.number().min(0).default(0.5),
  entropyCoef: z.number().min(0).default(0.001),
  epochs: z.number().int().min(1).default(4),
  minibatchSize: z.number().int().min(1).default(128),
  normalizeAdvantages: z.boolean().default(true),
  maxGradNorm: z.number().positive().default(1),
});
export type PpoConfig = z.infer<typeof ppoConfigSchema>;

/**
 * GAE over one episode: δ_t = r_t + γ V(s_{t+1}) − V(s_t), A_t = δ_t + γλ A_{t+1}, with V after the
 * last step = `bootstrap` (the trainer passes 0: its episodes end at the env's step limit). Returns the advantages and the value
 * targets A_t + V(s_t).
 */
export function gae(
  rewards: readonly number[],
  values: readonly number[],
  bootstrap: number,
  gamma: number,
  lambda: number,
): { advantages: number[]; returns: number[] } {
  const T = rewards.length;
  const advantages = new Array<number>(T);
  let next = 0;
  for (let t = T - 1; t >= 0; t--) {
    const nextValue = t === T - 1 ? bootstrap : values[t + 1];
    const delta = rewards[t] + gamma * nextValue - values[t];
    next = delta + gamma * lambda * next;
    advantages[t] = next;
  }
  return { advantages, returns: advantages.map((a, t) => a + values[t]) };
}

export interface PpoStats {
  policyLoss: number;
  valueLoss: number;
  entropy: number;
  clipFraction: number;
  approxKl: number;
  /** 1 − Var(returns − V) / Var(returns): how much of the return the value head explains. */
  explainedVariance: number;
  gradNorm: number;
  steps: number;
}

export function ppoUpdate<R>(policy: TrainablePolicy<R>, episodes: readonly Episode<R>[], config: PpoConfig, rng: Rng): PpoStats {
  // 1. GAE per episode, from the values recorded while acting.
  const records: R[] = [];
  const oldLogProbs: number[] = [];
  const advantages: number[] = [];
  const returns: number[] = [];
  const oldValues: number[] = [];
  for (const e of episodes) {
    const values = e.steps.map((s) => s.value ?? 0);
    // The step limit is part of the task (an episode cut there is scored as it stands), so a
    // truncated episode is not bootstrapped: V after the last step is 0 either way.
    const g = gae(
      e.steps.map((s) => s.reward),
      values,
      0,
      config.gamma,
      config.gaeLambda,
    );
    e.steps.forEach((s, t) => {
      records.push(s.record);
      oldLogProbs.push(s.logProb);
      advantages.push(g.advantages[t]);
      returns.push(g.returns[t]);
      oldValues.push(values[t]);
    });
  }
  const n = records.length;
  const stats: PpoStats = { policyLoss: 0, valueLoss: 0, entropy: 0, clipFraction: 0, approxKl: 0, explainedVariance: 0, gradNorm: 0, steps: n };
  if (n === 0) return stats;

  // 2. Epochs of minibatch updates.
  const order = Array.from({ length: n }, (_, i) => i);
  for (let epoch = 0; epoch < config.epochs; epoch++) {
    rng.shuffle(order);
    const last = epoch === config.epochs - 1;
    let pl = 0,
      vl = 0,
      entropy = 0,
      clipped = 0,
      approxKl = 0,
      gradNorm = 0,
      batches = 0;
    for (let start = 0; start < n; start += config.minibatchSize) {
      const idx = order.slice(start, start + config.minibatchSize);
      const m = idx.length;
      let adv = idx.map((i) => advantages[i]);
      if (config.normalizeAdvantages && m > 1) {
        const mean = adv.reduce((s, a) => s + a, 0) / m;
        const std = Math.sqrt(adv.reduce((s, a) => s + (a - mean) ** 2, 0) / (m - 1));
        adv = adv.map((a) => (a - mean) / (std + 1e-8));
      }
      const out = policy.evaluate(idx.map((i) => records[i]));
      const dLogProbs = new Float64Array(m);
      const dValues = new Float64Array(m);
      const dEntropies = new Float64Array(m).fill(-config.entropyCoef / m);
      idx.forEach((i, j) => {
        const logRatio = out.logProbs[j] - oldLogProbs[i];
        const ratio = Math.exp(logRatio);
        const A = adv[j];
        const clippedRatio = Math.min(Math.max(ratio, 1 - config.clipRange), 1 + config.clipRange);
        pl -= Math.min(ratio * A, clippedRatio * A);
        if (clippedRatio !== ratio) clipped++;
        if (ratio * A <= clippedRatio * A) dLogProbs[j] = (-A * ratio) / m;
        // Value loss ½ c_v (V − R)².
        const err = out.values[j] - returns[i];
        vl += 0.5 * err * err;
        dValues[j] = (config.valueCoef * err) / m;
        entropy += out.entropies[j];
        approxKl += -logRatio;
      });
      policy.backward({ logProbs: dLogProbs, entropies: dEntropies, values: dValues });
      gradNorm += policy.step({ learningRate: config.learningRate, maxGradNorm: config.maxGradNorm }).gradNorm;
      batches++;
    }
    if (last)
      Object.assign(stats, {
        policyLoss: pl / n,
        valueLoss: vl / n,
        entropy: entropy / n,
        clipFraction: clipped / n,
        approxKl: approxKl / n,
        gradNorm: gradNorm / batches,
      });
  }
  stats.explainedVariance = explainedVariance(oldValues, returns);
  return stats;
}

function explainedVariance(pred: readonly number[], target: readonly number[]): number {
  const n = target.length;
  const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const mt = mean(target);
  const varT = target.reduce((s, x) => s + (x - mt) ** 2, 0) / n;
  const diff = target.map((t, i) => t - pred[i]);
  const md = mean(diff);
  const varD = diff.reduce((s, x) => s + (x - md) ** 2, 0) / n;
  return varT === 0 ? 0 : 1 - varD / varT;
}
