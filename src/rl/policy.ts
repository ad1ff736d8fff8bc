import type { Decision, Policy, PolicyInput } from "../core/index.ts";

export type { ActOptions, Decision, PastStep, Policy, PolicyInput } from "../core/index.ts";

/** Per-step outputs of a policy over a batch of recorded steps. */
export interface Evaluation {
  logProbs: Float64Array;
  entropies: Float64Array;
  values: Float64Array;
}

/** Per-step derivatives of the loss with respect to each output of `evaluate`. */
export interface OutputGradients {
  logProbs: Float64Array;
  entropies?: Float64Array;
  values?: Float64Array;
}

export interface UpdateStats {
  /** Global gradient norm before clipping. */
  gradNorm: number;
}

/**
 * A policy that learns. The algorithm computes its loss from `evaluate`'s outputs and hands back
 * the loss's derivatives with respect to them; the policy backpropagates through its network. So
 * GRPO and PPO are written once, over any trainable policy.
 */
export interface TrainablePolicy<R = unknown> extends Policy<R> {
  evaluate(records: readonly R[]): Evaluation;
  /**
   * `evaluate`'s log-probabilities alone, bit for bit, where the policy can give them for less (a frozen
   * reference needs no more).
   */
  chosenLogProbs?(records: readonly R[]): Float64Array;
  /** Accumulates the gradient of the loss for the batch last passed to `evaluate`. */
  backward(grads: OutputGradients): void;
  /** Applies the accumulated gradient (clipped to `maxGradNorm`) with the optimiser and clears it. */
  step(opts: { learningRate: number; maxGradNorm: number }): UpdateStats;
  /** V(input) without acting (bootstraps a truncated episode). */
  value(input: PolicyInput): number;
  /** A frozen copy (GRPO's reference policy). */
  clone(): TrainablePolicy<R>;
  /** Parameters and optimiser state, as bytes. */
  save(): Uint8Array;
  /** Restores `save()`'s bytes; refuses bytes of another shape with a clear message. */
  load(bytes: Uint8Array, source?: string): void;
  /**
   * The record of taking `action` at `input`, as `act` would have made it had it chosen that action
   * (behaviour cloning scores a demonstrated action with it); undefined when the action is not among
   * the policy's candidates.
   */
  recordFor?(input: PolicyInput, action: string): R | undefined;
}
