import { z } from "zod";
import type { Rng } from "../core/index.ts";
import type { TrainablePolicy } from "./policy.ts";

/**
 * Behaviour cloning: maximum likelihood of demonstrated actions. Each record is the policy's own
 * record of taking the demonstrated action (`TrainablePolicy.recordFor`); the loss is the mean of
 * −log π(a* | s) over a minibatch, minimised with the policy's optimiser. The value head is not
 * trained (GRPO does not use it).
 */
export const bcConfigSchema = z.strictObject({
  /** Passes over the demonstrations (one iteration of a `--mode bc` run each). */
  epochs: z.number().int().min(1).max(1e6).default(8),
  learningRate: z.number().positive().default(0.01),
  minibatchSize: z.number().int().min(1).default(64),
  maxGradNorm: z.number().positive().default(1),
});
export type BcConfig = z.infer<typeof bcConfigSchema>;

export interface BcStats {
  /** Mean −log π(a* | s) over the epoch, as the minibatches saw it (before each one's step). */
  loss: number;
  /** Mean π(a* | s): the probability the policy gave the demonstrated action. */
  meanProb: number;
  /** Mean entropy of the policy over the candidates. */
  entropy: number;
  gradNorm: number;
  steps: number;
}

/** One epoch of behaviour cloning over `records`, in an order drawn from `rng`. */
export function bcEpoch<R>(policy: TrainablePolicy<R>, records: readonly R[], config: BcConfig, rng: Rng): BcStats {
  const n = records.length;
  const stats: BcStats = { loss: 0, meanProb: 0, entropy: 0, gradNorm: 0, steps: n };
  if (n === 0) return stats;
  const order = Array.from({ length: n }, (_, i) => i);
  rng.shuffle(order);
  let batches = 0;
  for (let start = 0; start < n; start += config.minibatchSize) {
    const idx = order.slice(start, start + config.minibatchSize);
    const m = idx.length;
    const out = policy.evaluate(idx.map((i) => records[i]));
    for (let j = 0; j < m; j++) {
      stats.loss -= out.logProbs[j];
      stats.meanProb += Math.exp(out.logProbs[j]);
      stats.entropy += out.entropies[j];
    }
    policy.backward({ logProbs: new Float64Array(m).fill(-1 / m) });
    stats.gradNorm += policy.step({ learningRate: config.learningRate, maxGradNorm: config.maxGradNorm }).gradNorm;
    batches++;
  }
  return { ...stats, loss: stats.loss / n, meanProb: stats.meanProb / n, entropy: stats.entropy / n, gradNorm: stats.gradNorm / batches };
}
