import { createHash } from "node:crypto";
import { InvalidConfigError } from "./errors.ts";
import { Rng } from "./rng.ts";

/** Ways a reward can be wrong (see docs/fidelity.md). */
export const REWARD_NOISE_KINDS = ["false-success", "miss", "wrong-score"] as const;
export type RewardNoiseKind = (typeof REWARD_NOISE_KINDS)[number];
/** Ways a next state can be wrong. */
export const STATE_NOISE_KINDS = ["other-product", "drop-element", "wrong-kind"] as const;
export type StateNoiseKind = (typeof STATE_NOISE_KINDS)[number];

/**
 * The oracle's noise: with probability `epsilonR` a step's reward is corrupted, with probability
 * `epsilonP` (when its reward was not) its next state; the kind is drawn by weight among the kinds
 * that apply to that step (none applies: the step stays true). Every draw comes from a hash of
 * (seed, task, actions): the same episode prefix always gets the same answer.
 */
export interface OracleNoise {
  epsilonR: number;
  epsilonP: number;
  /** Weight of each reward error kind (0 or missing: never). @default all 1 */
  rewardKinds?: Partial<Record<RewardNoiseKind, number>>;
  /** Weight of each state error kind. @default all 1 */
  stateKinds?: Partial<Record<StateNoiseKind, number>>;
  seed?: number;
}

/** `false-success,miss:2` → { "false-success": 1, miss: 2 } (a kind without weight: 1). */
export function parseNoiseKinds<K extends string>(spec: string, known: readonly K[], what: string): Partial<Record<K, number>> {
  const out: Partial<Record<K, number>> = {};
  for (const part of spec
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [name, w] = part.split(":");
    if (!known.includes(name as K)) throw new InvalidConfigError(`unknown ${what} noise kind "${name}" (known: ${known.join(", ")})`);
    const weight = w === undefined ? 1 : Number(w);
    if (!Number.isFinite(weight) || weight < 0) throw new InvalidConfigError(`${what} noise kind ${name}: the weight must be a number ≥ 0, got "${w}"`);
    out[name as K] = weight;
  }
  if (Object.values(out).every((w) => !w)) throw new InvalidConfigError(`no ${what} noise kind with a positive weight in "${spec}"`);
  return out;
}

/** The seeded stream of one request: a hash of (seed, task, actions). */
export function requestRng(seed: number, task: string, actions: readonly string[]): Rng {
  const h = createHash("sha256")
    .update(JSON.stringify([seed, task, actions]))
    .digest();
  // 52 bits of the hash: a safe integer seed.
  return new Rng(h.readUInt32BE(0) * 2 ** 20 + (h.readUInt32BE(4) >>> 12));
}

/** One kind among the applicable ones, by weight; null when none applies. */
export function pickKind<K extends string>(rng: Rng, weights: Partial<Record<K, number>>, applicable: readonly K[]): K | null {
  const pool = applicable.filter((k) => (weights[k] ?? 0) > 0);
  if (pool.length === 0) return null;
  const total = pool.reduce((a, k) => a + weights[k]!, 0);
  let x = rng.random() * total;
  for (const k of pool) {
    x -= weights[k]!;
    if (x < 0) return k;
  }
  return pool.at(-1)!;
}

/** One answer of an oracle: the reasoning model's JSON fields, and what the real env did and the noise changed. */
export interface OracleAnswer {
  reasoning: string;
  next_state: string;
  reward: number;
  terminated: boolean;
  /** What the real env did. */
  real: { nextState: string; reward: number; terminated: boolean; invalid: boolean };
  noise: { reward?: RewardNoiseKind; state?: StateNoiseKind };
}

/**
 * The oracle experience model of an env (its plug point `EnvSpec.oracle`): the real env replaying an
 * episode's actions, its step corrupted by the seeded noise, behind the reasoning model's chat protocol.
 */
export interface Oracle {
  /** The step after `actions` (the episode's actions, this one last) of task `taskId`; an error for a task it cannot play. */
  answer(taskId: string, actions: readonly string[]): Promise<OracleAnswer>;
  /** Env steps taken, and steps saved by replaying from a cached prefix. */
  readonly stats: { envSteps: number; cachedSteps: number };
  close(): void;
}

export interface OracleOptions {
  noise: OracleNoise;
  dataDir?: string;
}
