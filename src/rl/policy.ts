import type { Rng, StepInfo, Task } from "../core/index.ts";

/** What a policy sees before it acts. */
export interface PolicyInput {
  task: Task;
  observation: string;
  /** The env's listed actions (a free-text slot as `<query>`), when it lists them. */
  actions: string[] | undefined;
  /** The actions taken so far in this episode, oldest first. */
  history: readonly string[];
  /** The steps so far, oldest first, when the caller keeps them (prompts of LLM policies show them). */
  trace?: readonly PastStep[];
  /** The info of the last reset/step. */
  info?: StepInfo;
}

export interface PastStep {
  observation: string;
  action: string;
  /** The env flagged the action invalid (nothing changed). */
  invalid: boolean;
}

/** A chosen action with what the update needs to score it again. */
export interface Decision<R = unknown> {
  action: string;
  /** log π(action | input) at the time of acting (NaN when the policy cannot say). */
  logProb: number;
  /** V(input), for policies with a value head. */
  value?: number;
  /** The policy's own record of the step (features, candidates), replayed by `evaluate`. */
  record: R;
  /** The policy could not produce a valid action (e.g. an unparseable LLM reply); the env gets it anyway. */
  failed?: string;
}

export interface ActOptions {
  rng: Rng;
  /** Take the most likely action instead of sampling (evaluation). */
  greedy?: boolean;
}

/** Anything that acts: the neural policy, an LLM policy. */
export interface Policy<R = unknown> {
  readonly name: string;
  act(input: PolicyInput, opts: ActOptions): Promise<Decision<R>>;
}

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
}
