// The learned experience model's ensemble (see learned-model.ts): its model file, its members' heads
// and how their outputs make an estimate; what the estimate thread runs.

import { InvalidConfigError, type HistoryStep, type PolicyFeatures, type PredictInput, type RewardSpec, type SparseVector } from "../core/index.ts";
// Narrowly, not the rl's index (which loads the trainers and their schemas): the estimate thread
// loads this module, and a run's first estimates wait for it to be up.
import { unpackParams } from "../rl/param-file.ts";
import { FusedScoreNets, ScoreNet } from "../rl/score-net.ts";
import { PurchaseSupport, purchaseKey, TRANSITION_FEATURE_VERSION, transitionFeatures } from "./transition-features.ts";

/**
 * The heads of each ensemble member, each a small network over the transition's features
 * (`ScoreNet`, the policy's scorer) read through a sigmoid:
 * - `end`: does the step end the episode;
 * - `top`: is its reward the top of the range (a success), of the steps that earn a reward (ending
 *   steps; every step with dense rewards);
 * - `bottom`: is it the bottom of the range, of those that are not the top;
 * - `mid`: the reward in between, as a share of the range, of those that are neither.
 */
export const HEADS = ["end", "top", "bottom", "mid"] as const;
export const MAGIC = "DGEXPMODEL1\n";

export const FORMAT = "dreamgym-learned-experience-model";

/** What training found on the held-out tasks (the ensemble's figures; `members` per member). */
export interface LearnedModelValidation {
  tasks: number;
  steps: number;
  /** Mean of the heads' cross-entropies, averaged over the members (each at its best epoch). */
  loss: number;
  /** Steps whose end the ensemble predicts as it really was. */
  terminationAccuracy: number;
  /** ε_R: share of steps whose predicted reward is off by more than 0.01 (as `dreamgym audit`). */
  rewardErrorRate: number;
  /** Reward MAE on the ending (reward-earning) steps. */
  endingRewardMAE: number;
  /** Per member: its best epoch (1-based) and the validation loss there. */
  members: { bestEpoch: number; loss: number }[];
}

/** What a model file says about itself (its header). */
export interface LearnedModelInfo {
  format: typeof FORMAT;
  env: string;
  featureVersion: string;
  dim: number;
  hidden: number;
  members: number;
  rewards: RewardSpec;
  training: { seed: number; epochs: number; trajectories: number; transitions: number; tasks: number; valFraction: number };
  validation: LearnedModelValidation | null;
  /**
   * Actions that, in the real data, return to an earlier page of the episode ("< prev" to the
   * results the item was opened from, "back to search" to the start): the next state is then that
   * page from this episode's own history, not a neighbour's copy. Absent in models from before.
   */
  returns?: ReturnRule[];
  /**
   * The training tasks' purchases at the top reward, by product and request (`PurchaseSupport`),
   * which a feature reads: how many other tasks bought this product for this request in full.
   */
  support?: [string, string[]][];
  /**
   * With dense rewards: the distinct rewards the real steps paid (at most 32; absent where they
   * vary more, and in models from before). A step pays one of them, the most likely (see `combine`).
   */
  rewardValues?: number[];
}

/** `action` taken on a page whose first line is `from` leads back to this episode's latest earlier page whose first line is `to`. */
export interface ReturnRule {
  action: string;
  from: string;
  to: string;
}

/** One member's head outputs for a step: P(end), P(top reward), P(bottom reward), and the in-between reward's position. */
export interface HeadOutputs {
  end: number;
  top: number;
  bottom: number;
  mid: number;
}

export const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
/** The ensemble's answer for one transition (see `LearnedExperienceModel.estimate`). */
export type Estimate = { pEnd: number; reward: number; u: number; u_reward: number; u_outcome: number; pTop: number; supported: boolean };
/** What an estimate reads. */
export type EstimateInput = { task: PredictInput["task"]; history: readonly HistoryStep[]; state: string; action: string };

/** How sure the ensemble must be of a top (or bottom) reward to pay exactly that (see `combine`). */
const SURE = 0.9;
/**
 * The most a purchase the data never made in full (this product for this request) may count on the
 * top: the members learned their sureness from data where the buyer was right about the product, so
 * for one no episode bought for this request it is not evidence of the hidden attributes. Of 0, 0.5
 * and 0.75, measured on seed 0 at 80k (test score / on-policy exploitation): 64.2 / 1.4%, 67.7 / 1.5%,
 * 69.7 / 2.3%; without the cap 68.1 / 17.6%.
 */
export const UNSUPPORTED_TOP = 0.75;

/** A model file's header and members, checked (all but its env, which the caller knows). */
export function readModelFile(bytes: Uint8Array, source: string): { info: LearnedModelInfo; members: ScoreNet[][] } {
  const { header, arrays } = unpackParams<LearnedModelInfo>(bytes, MAGIC, source, "a dreamgym learned experience model (make one with dreamgym model train)");
  const ok =
    header &&
    header.format === FORMAT &&
    Number.isInteger(header.dim) &&
    header.dim >= 16 &&
    Number.isInteger(header.hidden) &&
    header.hidden >= 1 &&
    Number.isInteger(header.members) &&
    header.members >= 1 &&
    typeof header.env === "string" &&
    header.rewards &&
    typeof header.rewards.min === "number";
  if (!ok) throw new InvalidConfigError(`${source}: the model header is incomplete or of another format`);
  if (
    header.returns !== undefined &&
    !(Array.isArray(header.returns) && header.returns.every((r) => r && typeof r.action === "string" && typeof r.from === "string" && typeof r.to === "string"))
  )
    throw new InvalidConfigError(`${source}: the model header's returns are not a list of actions`);
  if (
    header.support !== undefined &&
    !(
      Array.isArray(header.support) &&
      header.support.every((e) => Array.isArray(e) && typeof e[0] === "string" && Array.isArray(e[1]) && e[1].every((t: unknown) => typeof t === "string"))
    )
  )
    throw new InvalidConfigError(`${source}: the model header's support is not a list of purchases and tasks`);
  if (
    header.rewardValues !== undefined &&
    !(Array.isArray(header.rewardValues) && header.rewardValues.every((v) => typeof v === "number" && Number.isFinite(v)))
  )
    throw new InvalidConfigError(`${source}: the model header's reward values are not a list of numbers`);
  if (header.featureVersion !== TRANSITION_FEATURE_VERSION)
    throw new InvalidConfigError(
      `${source} was trained with features ${header.featureVersion}; this version reads ${TRANSITION_FEATURE_VERSION}: train it again`,
    );
  const { dim, hidden, members } = header;
  const shape = [dim * hidden, dim, hidden, hidden, 1];
  const expectedLengths = Array.from({ length: members * HEADS.length }, () => shape).flat();
  if (header.lengths.length !== expectedLengths.length || header.lengths.some((n, i) => n !== expectedLengths[i])) {
    throw new InvalidConfigError(`${source}: the parameter layout does not match dim=${dim} hidden=${hidden} members=${members}`);
  }
  let next = 0; // the arrays are the members' heads' params, in order (the layout is checked above)
  const nets = Array.from({ length: members }, () =>
    HEADS.map(() => {
      const net = new ScoreNet(dim, hidden, null);
      for (const p of net.params()) p.set(arrays[next++]);
      return net;
    }),
  );
  const { lengths: _l, ...info } = header;
  return { info, members: nets };
}

/**
 * The ensemble's estimates, as its members give them now: each member's heads over the transition's
 * features (one fused pass), read together (`combine`), the top reward capped without evidence
 * (`PurchaseSupport`). No memo: the model keeps its answers (`LearnedExperienceModel.estimate`), and
 * the estimate thread has one of these too.
 */
export class Ensemble {
  readonly support: PurchaseSupport;
  private fused: FusedScoreNets | undefined;
  private readonly scores: Float64Array;

  constructor(
    private readonly info: LearnedModelInfo,
    private readonly members: ScoreNet[][],
    private readonly rewards: RewardSpec,
    /** The policy features of the model's env, which the transition features include. */
    readonly features: PolicyFeatures | undefined,
  ) {
    this.support = new PurchaseSupport(info.support ?? []);
    this.scores = new Float64Array(members.length * HEADS.length);
  }

  /** An ensemble of a model file's members (the estimate thread's), with its env's policy features. */
  static read(bytes: Uint8Array, source: string, rewards: RewardSpec | undefined, features: PolicyFeatures | undefined): Ensemble {
    const { info, members } = readModelFile(bytes, source);
    return new Ensemble(info, members, rewards ?? info.rewards, features);
  }

  estimate(input: EstimateInput): Estimate {
    // The top reward needs evidence: the data bought this product for this request in full (any task).
    const key = this.info.support ? purchaseKey(input) : undefined;
    const supported = key === undefined || this.support.others(key, "") > 0;
    return {
      ...combine(this.outputs(transitionFeatures(input, this.info.dim, this.support, this.features)), this.rewards, supported, this.info.rewardValues),
      supported,
    };
  }

  /** The members' weights changed (a refit): the fused heads are made again. */
  changed(): void {
    this.fused = undefined;
  }

  /** Each member's head outputs for a transition's features. */
  private outputs(x: SparseVector): HeadOutputs[] {
    // Every member's heads in one pass (`FusedScoreNets`: the same scores as each head's own forward).
    this.fused ??= new FusedScoreNets(this.members.flat());
    const s = this.fused.forward(x, this.scores);
    return this.members.map((_, m) => {
      const o = m * HEADS.length;
      return { end: sigmoid(s[o]), top: sigmoid(s[o + 1]), bottom: sigmoid(s[o + 2]), mid: sigmoid(s[o + 3]) };
    });
  }
}

/** What the estimate thread is started with: the model file's bytes (as `save` writes them) and rewards. */
export interface EstimateThreadData {
  model: Uint8Array;
  rewards: RewardSpec;
  /** The model's env where it has policy features (a built-in env's plug point): only then does the thread load the envs, to read them. */
  featuresOf?: string;
  /** The model's refits so far, whose members these are. */
  generation: number;
}
/**
 * A transition to estimate, for the members of `generation` (the model's refits so far), its texts and
 * task by number: `texts` are those numbered from `base` on, which the thread adds to its table of the
 * numbering `epoch` (a new epoch starts the table again); `taskObject` is the task numbered `task`, the
 * first time. `history`: per step, the numbers of its state, action and next state, and its reward.
 */
export interface EstimateRequest {
  generation: number;
  epoch: number;
  base: number;
  texts: string[];
  task: number;
  taskObject?: EstimateInput["task"];
  state: number;
  action: number;
  history: Float64Array;
}
/** The members after a refit. */
export interface EstimateThreadControl {
  model: Uint8Array;
  generation: number;
}

/**
 * The ensemble's estimate from its members' head outputs: end probability, reward, and the
 * disagreement u. Exported for its tests. `values`: with dense rewards, the rewards the data pays.
 */
export function combine(
  outs: HeadOutputs[],
  rewards: RewardSpec,
  supported = true,
  values?: readonly number[],
): { pEnd: number; reward: number; u: number; u_reward: number; u_outcome: number; pTop: number } {
  const n = outs.length;
  const mean = (f: (o: HeadOutputs) => number) => outs.reduce((s, o) => s + f(o), 0) / n;
  const sd = (f: (o: HeadOutputs) => number) => {
    const m = mean(f);
    return Math.sqrt(outs.reduce((s, o) => s + (f(o) - m) ** 2, 0) / n);
  };
  const range = rewards.max - rewards.min;
  // A member's expected reward of the step: with outcome rewards only an ending step earns one (the
  // reward heads know nothing of other steps), so members that agree a step goes on agree on its reward.
  const expected = (o: HeadOutputs) => (rewards.dense ? 1 : o.end) * (rewards.min + range * (o.top + (1 - o.top) * (1 - o.bottom) * o.mid));
  const pEnd = mean((o) => o.end);
  const pTop = mean((o) => o.top);
  const pBottom = mean((o) => o.bottom);
  // Where the ensemble is sure (≥ SURE) of the top or the bottom, that value, as the env pays it;
  // else the expected reward. Paying 1 for a purchase the members give even odds made the policy
  // seek out exactly those (the on-policy audit found 30% of synthetic successes failing for real;
  // 18% with this), at a small offline cost (held-out ε_R 1.7% → 2.8%, as off-by-a-little counts).
  const mid = rewards.min + range * mean((o) => o.mid);
  // Without evidence for the top (`supported` false: a purchase no real episode made in full), its
  // chance is capped below sure (UNSUPPORTED_TOP), so such a purchase is never paid the top itself.
  const notTop = pBottom >= SURE ? rewards.min : pBottom * rewards.min + (1 - pBottom) * mid;
  const paidTop = supported ? pTop : Math.min(pTop, UNSUPPORTED_TOP);
  const reward = rewards.dense
    ? likeliest(paidTop, pBottom, mid, rewards, values)
    : supported && pTop >= SURE
      ? rewards.max
      : pBottom >= SURE
        ? rewards.min
        : paidTop * rewards.max + (1 - paidTop) * notTop;
  const uReward = Math.min(1, sd(expected) / Math.max(range / 2, 1e-9));
  const uOutcome = Math.min(1, 2 * sd((o) => o.end));
  return { pEnd, reward, pTop, u: Math.max(uReward, uOutcome), u_reward: uReward, u_outcome: uOutcome };
}

/**
 * Dense rewards: the likeliest of top, bottom and in-between, each paid as the data pays it (the
 * in-between reward snapped to the nearest recorded value). An expected value pays a little for every
 * step (on vault, 368 of 838 paid synthetic steps earned a fraction no real step earns), and over an
 * episode of small payments a policy learns to collect them: where the data pays 0 almost everywhere,
 * so must the model.
 */
function likeliest(pTop: number, pBottom: number, mid: number, rewards: RewardSpec, values?: readonly number[]): number {
  const top = pTop;
  const bottom = (1 - pTop) * pBottom;
  const between = (1 - pTop) * (1 - pBottom);
  if (top >= bottom && top >= between) return rewards.max;
  if (bottom >= between) return rewards.min;
  if (values === undefined) return mid;
  // The data pays nothing in between (radio: 0 or 10): the likelier of the two ends.
  const inner = values.filter((v) => v > rewards.min && v < rewards.max);
  if (inner.length === 0) return top >= bottom ? rewards.max : rewards.min;
  return inner.reduce((best, v) => (Math.abs(v - mid) < Math.abs(best - mid) ? v : best));
}
