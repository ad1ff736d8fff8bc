import { InvalidConfigError, Rng, type FeaturizedStep, type PolicyFeatures } from "../core/index.ts";
import { FEATURE_VERSION, featurize } from "./features.ts";
import type { ActOptions, Decision, Evaluation, OutputGradients, PolicyInput, TrainablePolicy, UpdateStats } from "./policy.ts";
import { ScoreNet } from "./score-net.ts";
import { packParams, unpackParams } from "./param-file.ts";
import { firstOfEachStep } from "./repeated-steps.ts";

export interface NeuralPolicyConfig {
  /** Hashed feature buckets. @default 32768 */
  dim?: number;
  /** Hidden units of each head. @default 16 */
  hidden?: number;
  /** Seeds the initial weights. @default 0 */
  seed?: number;
  /** The env's own features for states in its format (its `EnvSpec.features`). @default the generic text features */
  features?: PolicyFeatures;
}

/** What the policy keeps of a step to score it again in the update. */
export interface NeuralStepRecord {
  features: FeaturizedStep;
  /** Index of the chosen candidate. */
  choice: number;
}

interface BatchCache {
  records: readonly NeuralStepRecord[];
  probs: Float64Array[];
  hidden: Float64Array[][];
  valueHidden: Float64Array[];
  entropies: Float64Array;
}

const MAGIC = "DGPOLICY1\n";

/**
 * The workhorse policy: scores each candidate action from text features of (instruction, state,
 * action) with a small network and samples from the softmax over the candidates; a second network
 * of the same form over state features is the value head (PPO). Trains on CPU.
 */
export class NeuralPolicy implements TrainablePolicy<NeuralStepRecord> {
  readonly name = "neural";
  readonly dim: number;
  readonly hidden: number;
  private readonly actor: ScoreNet;
  private readonly critic: ScoreNet;
  private readonly h: Float64Array;
  /** `act`'s probabilities, reused (see `evaluate` on typed arrays outside the heap). */
  private probs = new Float64Array(64);
  private cache: BatchCache | undefined;

  /** `of`: a policy whose networks this one starts as a copy of (`clone`; its config the same), instead of drawn ones. */
  constructor(
    readonly config: NeuralPolicyConfig = {},
    of?: NeuralPolicy | null,
  ) {
    this.dim = config.dim ?? 32768;
    this.hidden = config.hidden ?? 16;
    if (!Number.isInteger(this.dim) || this.dim < 16) throw new InvalidConfigError(`neural policy dim must be an integer ≥ 16, got ${this.dim}`);
    if (!Number.isInteger(this.hidden) || this.hidden < 1) throw new InvalidConfigError(`neural policy hidden must be an integer ≥ 1, got ${this.hidden}`);
    if (of && (of.dim !== this.dim || of.hidden !== this.hidden))
      throw new InvalidConfigError(`a neural policy copies one of its own shape: dim ${of.dim} hidden ${of.hidden} into dim ${this.dim} hidden ${this.hidden}`);
    if (of) {
      // Copied, not drawn and then overwritten: an audit clones the policy every few iterations.
      this.actor = of.actor.copy();
      this.critic = of.critic.copy();
    } else if (of === null) {
      // Left at zero, for weights loaded next (`fromBytes`); the seed still checked as a drawn policy's Rng checks it.
      new Rng(config.seed ?? 0);
      this.actor = new ScoreNet(this.dim, this.hidden, null);
      this.critic = new ScoreNet(this.dim, this.hidden, null);
    } else {
      const rng = new Rng(config.seed ?? 0);
      this.actor = new ScoreNet(this.dim, this.hidden, { rng, embedScale: 0.1, outScale: 0.01 });
      this.critic = new ScoreNet(this.dim, this.hidden, { rng, embedScale: 0.1, outScale: 0 });
    }
    this.h = new Float64Array(this.hidden);
  }

  /**
   * The two networks (for inspection and gradient checks). Whoever reads them may change their
   * weights at any time after, so reading them turns `act`'s kept scores off for this policy.
   */
  get networks(): { actor: ScoreNet; critic: ScoreNet } {
    this.exposed = true;
    return { actor: this.actor, critic: this.critic };
  }

  /** Changes whenever `step` or `load` changes the weights: `act`'s scores are kept for one value of it. */
  private weights = 0;
  /** The networks were handed out (`networks`): `act` keeps no scores. */
  private exposed = false;
  /**
   * `act`'s scores and value of a step's features (a kept `featuresOf` object) for the weights they
   * were made with: a group's rollouts repeat each other's steps between two updates (two in three),
   * and the same weights give the same scores. Not with an env's own features, made anew each time.
   */
  private readonly scored = new WeakMap<FeaturizedStep, { weights: number; scores: number[]; value: number }>();

  async act(input: PolicyInput, opts: ActOptions): Promise<Decision<NeuralStepRecord>> {
    if (!input.actions || input.actions.length === 0) {
      throw new InvalidConfigError("the neural policy needs an env that lists its actions (availableActions() returned none)");
    }
    const features = this.featuresOf(input);
    const keeps = !this.exposed && !this.config.features;
    let kept = keeps ? this.scored.get(features) : undefined;
    if (kept?.weights !== this.weights) {
      kept = {
        weights: this.weights,
        scores: features.candidates.map((x) => this.actor.forward(x, this.h)),
        value: this.critic.forward(features.state, this.h),
      };
      if (keeps) this.scored.set(features, kept);
    }
    const { scores } = kept;
    if (this.probs.length < scores.length) this.probs = new Float64Array(2 * scores.length);
    const probs = softmax(scores, this.probs.subarray(0, scores.length));
    let choice = 0;
    if (opts.greedy) {
      for (let i = 1; i < probs.length; i++) if (probs[i] > probs[choice]) choice = i;
    } else {
      let u = opts.rng.random();
      choice = probs.length - 1;
      for (let i = 0; i < probs.length; i++) {
        u -= probs[i];
        if (u < 0) {
          choice = i;
          break;
        }
      }
    }
    return {
      action: features.actions[choice],
      logProb: Math.log(probs[choice]),
      value: kept.value,
      record: { features, choice },
    };
  }

  recordFor(input: PolicyInput, action: string): NeuralStepRecord | undefined {
    if (!input.actions || input.actions.length === 0) return undefined;
    const features = this.featuresOf(input);
    let choice = features.actions.indexOf(action);
    if (choice < 0) {
      // The same action written differently (case, spacing), as an env that parses actions would take it.
      const norm = (a: string) => a.toLowerCase().replace(/\s+/g, " ").trim();
      const wanted = norm(action);
      choice = features.actions.findIndex((a) => norm(a) === wanted);
    }
    return choice < 0 ? undefined : { features, choice };
  }

  value(input: PolicyInput): number {
    return this.critic.forward(this.featuresOf(input).state, this.h);
  }

  /**
   * A step's features, kept for steps met lately: a group's rollouts of one task repeat each other's
   * steps (two in three of a 20k WebShop run's, real or synthetic). The generic features read the
   * instruction, the page, the actions and the history, and they make the key; an env's own
   * (`config.features`) may read more of the input, and are made each time.
   */
  private featuresOf(input: PolicyInput): FeaturizedStep {
    if (this.config.features) return featurize(input, this.dim, this.config.features);
    const key = stepKey(input);
    let features = this.recentFeatures.get(key);
    if (!features) {
      if (this.recentFeatures.size >= RECENT_FEATURES) this.recentFeatures.clear();
      this.recentFeatures.set(key, (features = featurize(input, this.dim)));
    }
    return features;
  }
  private readonly recentFeatures = new Map<string, FeaturizedStep>();

  evaluate(records: readonly NeuralStepRecord[]): Evaluation {
    const n = records.length;
    const out: Evaluation = { logProbs: new Float64Array(n), entropies: new Float64Array(n), values: new Float64Array(n) };
    const cache: BatchCache = { records, probs: [], hidden: [], valueHidden: [], entropies: out.entropies };
    // The batch's activations and probabilities in one buffer, each a view of it: a typed array of
    // more than 64 bytes has its own memory outside V8's heap, and one per candidate (a million in a
    // 20k-step run) made the update ~15% slower.
    const H = this.hidden;
    // A step met again in the batch (a group's rollouts repeat each other's steps; its kept features
    // are the same object) has the same activations and probabilities under the same weights: they
    // are shared, as `backward` only reads them.
    const firstOf = new Map<FeaturizedStep, number>();
    let size = 0;
    records.forEach((r, i) => {
      if (firstOf.has(r.features)) return;
      firstOf.set(r.features, i);
      size += r.features.candidates.length * (H + 1) + H; // activations and a probability per candidate, the value head's activations
    });
    const pool = new Float64Array(size);
    let at = 0;
    const take = (length: number) => pool.subarray(at, (at += length));
    records.forEach((r, i) => {
      const first = firstOf.get(r.features)!;
      if (first !== i) {
        const probs = cache.probs[first];
        out.logProbs[i] = Math.log(probs[r.choice]);
        out.entropies[i] = out.entropies[first];
        out.values[i] = out.values[first];
        cache.probs.push(probs);
        cache.hidden.push(cache.hidden[first]);
        cache.valueHidden.push(cache.valueHidden[first]);
        return;
      }
      const hs = r.features.candidates.map(() => take(H));
      const scores = r.features.candidates.map((x, c) => this.actor.forward(x, hs[c]));
      const probs = softmax(scores, take(scores.length));
      let entropy = 0;
      for (const p of probs) if (p > 0) entropy -= p * Math.log(p);
      out.logProbs[i] = Math.log(probs[r.choice]);
      out.entropies[i] = entropy;
      const hv = take(H);
      out.values[i] = this.critic.forward(r.features.state, hv);
      cache.probs.push(probs);
      cache.hidden.push(hs);
      cache.valueHidden.push(hv);
    });
    this.cache = cache;
    return out;
  }

  /**
   * The log-probability of each record's chosen candidate, as `evaluate` gives it (the same scores and
   * softmax), without the value head or what `backward` keeps: GRPO's frozen reference reads no more.
   */
  chosenLogProbs(records: readonly NeuralStepRecord[]): Float64Array {
    if (this.evaluate !== NeuralPolicy.prototype.evaluate) return this.evaluate(records).logProbs; // a subclass that scores otherwise
    const out = new Float64Array(records.length);
    const h = new Float64Array(this.hidden);
    const first = firstOfEachStep(records); // a repeated step is scored once
    records.forEach((r, i) => {
      if (first[i] !== i) {
        out[i] = out[first[i]];
        return;
      }
      const scores = r.features.candidates.map((x) => this.actor.forward(x, h));
      out[i] = Math.log(softmax(scores)[r.choice]);
    });
    return out;
  }

  backward(grads: OutputGradients): void {
    const cache = this.cache;
    if (!cache) throw new Error("backward() needs a preceding evaluate()");
    cache.records.forEach((r, i) => {
      const probs = cache.probs[i];
      const dLogProb = grads.logProbs[i];
      const dEntropy = grads.entropies?.[i] ?? 0;
      const entropy = cache.entropies[i];
      // d log p_a / d s_c = [c = a] − p_c;  d H / d s_c = −p_c (log p_c + H).
      r.features.candidates.forEach((x, c) => {
        const p = probs[c];
        let dScore = dLogProb * ((c === r.choice ? 1 : 0) - p);
        if (dEntropy !== 0 && p > 0) dScore += dEntropy * -p * (Math.log(p) + entropy);
        this.actor.backward(x, cache.hidden[i][c], dScore);
      });
      const dValue = grads.values?.[i] ?? 0;
      if (dValue !== 0) this.critic.backward(r.features.state, cache.valueHidden[i], dValue);
    });
  }

  step({ learningRate, maxGradNorm }: { learningRate: number; maxGradNorm: number }): UpdateStats {
    const gradNorm = Math.sqrt(this.actor.gradSquaredNorm() + this.critic.gradSquaredNorm());
    const scale = maxGradNorm > 0 && gradNorm > maxGradNorm ? maxGradNorm / gradNorm : 1;
    this.actor.adam(learningRate, scale);
    this.critic.adam(learningRate, scale);
    this.weights++;
    this.cache = undefined;
    return { gradNorm };
  }

  /**
   * A policy of `config`'s shape holding `save()`'s bytes (`load`, which checks the shape), its networks
   * not drawn first: a million draws, all overwritten (a run's initial policy, a helper thread's copy).
   */
  static fromBytes(bytes: Uint8Array, source: string, config: NeuralPolicyConfig = {}): NeuralPolicy {
    const policy = new NeuralPolicy(config, null);
    policy.load(bytes, source);
    return policy;
  }

  clone(): NeuralPolicy {
    return new NeuralPolicy(this.config, this);
  }

  save(): Uint8Array {
    const actor = this.actor.state();
    const critic = this.critic.state();
    return packParams(
      MAGIC,
      {
        policy: this.name,
        featureVersion: FEATURE_VERSION,
        dim: this.dim,
        hidden: this.hidden,
        adamSteps: [actor.adamStep, critic.adamStep],
      },
      [...actor.arrays, ...critic.arrays],
    );
  }

  load(bytes: Uint8Array, source = "checkpoint"): void {
    type Header = { policy: string; featureVersion: string; dim: number; hidden: number; adamSteps: number[] };
    const { header, arrays } = unpackParams<Header>(bytes, MAGIC, source, "a dreamgym policy checkpoint");
    const mine = `policy=${this.name} dim=${this.dim} hidden=${this.hidden} features=${FEATURE_VERSION}`;
    const theirs = `policy=${header.policy} dim=${header.dim} hidden=${header.hidden} features=${header.featureVersion}`;
    if (mine !== theirs) throw new InvalidConfigError(`${source} holds a policy of another shape (${theirs}); this policy is ${mine}`);
    // Arrays of other lengths would be set in part, the rest left as they were (drawn, or zero: `fromBytes`).
    const lengths = [...this.actor.state().arrays, ...this.critic.state().arrays].map((a) => a.length);
    if (header.lengths.length !== lengths.length || header.lengths.some((n, i) => n !== lengths[i]))
      throw new InvalidConfigError(`${source} holds arrays of other lengths (${header.lengths.join(", ")}) than a policy of its shape (${lengths.join(", ")})`);
    const half = arrays.length / 2;
    this.weights++;
    this.actor.setState(arrays.slice(0, half), header.adamSteps[0]);
    this.critic.setState(arrays.slice(half), header.adamSteps[1]);
  }
}

/** Steps whose features a policy keeps (~15 kB each: about an iteration's worth of distinct steps, several times over). */
const RECENT_FEATURES = 2048;

/** What the generic features read of a step, each part prefixed by its length (no two steps share a key). */
function stepKey(input: PolicyInput): string {
  const { instruction } = input.task;
  let key = `${instruction.length}:${instruction}${input.observation.length}:${input.observation}`;
  key += input.actions ? `${input.actions.length}[` : "-";
  for (const a of input.actions ?? []) key += `${a.length}:${a}`;
  key += `${input.history.length}[`;
  for (const a of input.history) key += `${a.length}:${a}`;
  return key;
}

/** The softmax of `scores`, into `p` (a new array by default). */
function softmax(scores: number[], p = new Float64Array(scores.length)): Float64Array {
  let max = -Infinity;
  for (const s of scores) if (s > max) max = s;
  let sum = 0;
  for (let i = 0; i < scores.length; i++) {
    p[i] = Math.exp(scores[i] - max);
    sum += p[i];
  }
  for (let i = 0; i < p.length; i++) p[i] /= sum;
  return p;
}
