import { InvalidConfigError, type Env, type Task, type Trajectory } from "../core/index.ts";
import { groupAdvantages } from "../rl/index.ts";

/** A synthetic episode to replay in the real env: its task, its actions and what the model said each did. */
export interface SyntheticRecord {
  task: Task;
  /** The real env's seed (the one the synthetic episode was played with, where the env uses one). */
  seed?: number;
  /** The first state the policy saw (abstract). */
  observation: string;
  steps: { action: string; nextObservation: string; terminated: boolean; reward: number; reasoning?: string }[];
  /**
   * The GRPO group the episode was played in (the G episodes of one task in one iteration): the
   * advantage figures compare returns within a group only. Unset: a group of its own.
   */
  group?: string;
  /** The return the policy was trained on (the model's rewards after any pessimism penalty); unset: the model's return. */
  trainedReturn?: number;
}

/** What the real env did with a synthetic episode's actions: its first state and each step. */
export interface RealReplay {
  observation: string;
  /** `action`: what the policy did, where it played the real env itself (closed loop) rather than repeating the synthetic actions. */
  steps: { action?: string; observation: string; reward: number; terminated: boolean; truncated: boolean }[];
}

/** One synthetic episode replayed action by action in the real env. */
export interface ReplayResult {
  syntheticReturn: number;
  /** What the policy update saw (the synthetic return after any pessimism penalty); the advantage figures order these. */
  trainedReturn: number;
  group?: string;
  realReturn: number;
  syntheticSuccess: boolean;
  realSuccess: boolean;
  /** The first step (1-based) whose real state or end differs from the synthetic one; 0: the start states differ; null: never. */
  divergedAt: number | null;
  /** Real env steps taken. */
  steps: number;
  /** The real episode itself (what `auditPairs` keeps beside the synthetic one). */
  real: RealReplay;
}

/** One audited episode as the run folder keeps it (`audit/iteration-NNNN.jsonl`): the synthetic episode beside its real replay. */
export interface AuditPair extends Omit<ReplayResult, "real" | "trainedReturn"> {
  /** Absent in audit files from before it was kept (the synthetic return stands in). */
  trainedReturn?: number;
  /** Its place in the iteration's audit sample. */
  index: number;
  task: Task;
  seed?: number;
  synthetic: { observation: string; steps: SyntheticRecord["steps"] };
  real: RealReplay;
}

/** What an on-policy audit found, over the episodes it replayed (metrics.jsonl's `onPolicyAudit`). */
export interface OnPolicyAuditSummary {
  /** Episodes replayed (those whose task the real env cannot play are left out and counted in `skipped`). */
  episodes: number;
  skipped: number;
  /** Real env steps the replays took (`auditInteractions` adds them up). */
  steps: number;
  syntheticReturn: number;
  realReturn: number;
  syntheticSuccess: number;
  realSuccess: number;
  /** Share of episodes whose success the model and the real env agree on. */
  successAgreement: number;
  /** Mean synthetic − real return: what the model pays beyond what the same actions earn (> 0: it flatters them). Absent in runs from before it was kept. */
  returnGap?: number;
  /** What GRPO learns from: the order of the returns within each replayed group (absent in runs from before it was measured). */
  advantage?: AdvantageAgreement;
  /** Synthetic successes that fail for real, as a share of the synthetic successes (null: there were none). */
  exploitationRate: number | null;
  /** The first step where the states diverge: the mean over the episodes that diverge, and how many diverge at each step ("never" too). */
  divergence: { mean: number | null; atStep: Record<string, number> };
}

/**
 * Whether the synthetic returns rank the episodes of a group as the real ones do. GRPO's update is
 * the group-normalised return, so a model whose rewards are right on average across tasks still
 * teaches nothing, or the wrong thing, if it orders a task's G episodes wrongly.
 */
export interface AdvantageAgreement {
  /** Replayed groups with at least two episodes. */
  groups: number;
  /** Pairs of episodes of one group that the synthetic or the real returns tell apart. */
  pairs: number;
  /** Pairs tied in both (left out: there is nothing to learn from them, and nothing to get wrong). */
  tiedPairs: number;
  /** Share of `pairs` ordered alike; a pair tied on one side only counts half (null: no such pair). */
  orderAgreement: number | null;
  /** Pairs ordered the other way round: GRPO pushes the policy toward the episode that earns less for real. */
  reversedPairs: number;
  /** Pearson correlation of the synthetic and real group-normalised advantages, over the groups either side tells apart (null: none, or no spread). */
  correlation: number | null;
}

/**
 * Replays synthetic episodes in real envs (abstracted as the synthetic ones are), over a pool, one
 * episode per env at a time; results come back in input order. The replay takes the recorded actions
 * until they or the real episode end, so it shows what the policy's synthetic episode would have
 * earned for real. A task the real env cannot play (an LLM-generated one with no goal behind it) gives
 * null instead.
 */
export async function replayInRealEnv(
  envs: readonly Env[],
  records: readonly SyntheticRecord[],
  isSuccess: (totalReward: number) => boolean,
): Promise<(ReplayResult | null)[]> {
  const results: (ReplayResult | null)[] = new Array(records.length).fill(null);
  let next = 0;
  const worker = async (env: Env) => {
    while (next < records.length) {
      const i = next++;
      results[i] = await replayOne(env, records[i], isSuccess);
    }
  };
  await Promise.all(envs.map(worker));
  return results;
}

async function replayOne(env: Env, r: SyntheticRecord, isSuccess: (totalReward: number) => boolean): Promise<ReplayResult | null> {
  let start;
  try {
    start = await env.reset({ task: r.task, seed: r.seed });
  } catch (e) {
    if (e instanceof InvalidConfigError) return null;
    throw e;
  }
  let divergedAt: number | null = start.observation === r.observation ? null : 0;
  let realReturn = 0;
  let steps = 0;
  const real: RealReplay = { observation: start.observation, steps: [] };
  for (const s of r.steps) {
    const x = await env.step(s.action);
    steps++;
    realReturn += x.reward;
    real.steps.push({ observation: x.observation, reward: x.reward, terminated: x.terminated, truncated: x.truncated });
    if (divergedAt === null && (x.observation !== s.nextObservation || x.terminated !== s.terminated)) divergedAt = steps;
    if (x.terminated || x.truncated) break;
  }
  return resultOf(r, real, divergedAt, steps, isSuccess);
}

/** A synthetic episode's figures beside its real counterpart (`steps`: the real env steps taken). */
function resultOf(r: SyntheticRecord, real: RealReplay, divergedAt: number | null, steps: number, isSuccess: (totalReward: number) => boolean): ReplayResult {
  const syntheticReturn = r.steps.reduce((a, s) => a + s.reward, 0);
  const realReturn = real.steps.reduce((a, x) => a + x.reward, 0);
  return {
    syntheticReturn,
    trainedReturn: r.trainedReturn ?? syntheticReturn,
    ...(r.group !== undefined ? { group: r.group } : {}),
    realReturn,
    syntheticSuccess: isSuccess(syntheticReturn),
    realSuccess: isSuccess(realReturn),
    divergedAt,
    steps,
    real,
  };
}

/**
 * A synthetic episode against the real episode the same policy played on the same task and seeds
 * (closed loop): the result a replay gives, where the real episode's actions are its own. The states
 * diverge where the real observation or end first differs from the synthetic one.
 */
export function compareReal(
  r: SyntheticRecord,
  real: { observation: string; steps: { action: string; observation: string; reward: number; terminated: boolean; truncated: boolean }[] },
  isSuccess: (totalReward: number) => boolean,
): ReplayResult {
  let divergedAt: number | null = real.observation === r.observation ? null : 0;
  for (let i = 0; divergedAt === null && i < Math.max(r.steps.length, real.steps.length); i++) {
    const s = r.steps[i];
    const x = real.steps[i];
    if (!s || !x || x.action !== s.action || x.observation !== s.nextObservation || x.terminated !== s.terminated) divergedAt = i + 1;
  }
  return resultOf(r, real, divergedAt, real.steps.length, isSuccess);
}

/** The audited episodes beside their replays, in sample order (a task the real env could not play is left out). */
export function auditPairs(records: readonly SyntheticRecord[], results: readonly (ReplayResult | null)[]): AuditPair[] {
  return records.flatMap((r, index) => {
    const x = results[index];
    if (!x) return [];
    const { real, ...figures } = x;
    return [
      { index, task: r.task, ...(r.seed !== undefined ? { seed: r.seed } : {}), ...figures, synthetic: { observation: r.observation, steps: r.steps }, real },
    ];
  });
}

/**
 * The real episodes of audited pairs, as trajectories of `env` (what `ExperienceModel.refit` learns
 * from): each step's action is the one the real env was given (the policy's own, closed loop; else the
 * synthetic episode's), its states the real ones. Read the same from the pairs in memory and from
 * their file, so a resumed run refits alike.
 */
export function realTrajectories(pairs: readonly AuditPair[], env: string): Trajectory[] {
  return pairs.map((p) => {
    let observation = p.real.observation;
    const steps = p.real.steps.map((x, i) => {
      const step = {
        observation,
        action: x.action ?? p.synthetic.steps[i]?.action ?? "",
        reward: x.reward,
        next_observation: x.observation,
        terminated: x.terminated,
        truncated: x.truncated,
      };
      observation = x.observation;
      return step;
    });
    return { env, task: p.task, steps, total_reward: p.realReturn, success: p.realSuccess, source: "real" as const, policy: "on-policy audit", created_at: "" };
  });
}

/** What the summary reads of a replayed episode (an `AuditPair` from before the trained return was kept has none). */
type Replayed = Omit<ReplayResult, "real" | "trainedReturn"> & { trainedReturn?: number };

/** The audit's figures over replayed episodes (`skipped`: the nulls, tasks the real env could not play). */
export function summarizeReplays(results: readonly (Replayed | null)[]): OnPolicyAuditSummary {
  const done = results.filter((r): r is Replayed => r !== null);
  const mean = (xs: number[]) => (xs.length === 0 ? 0 : xs.reduce((a, x) => a + x, 0) / xs.length);
  const synSuccesses = done.filter((r) => r.syntheticSuccess);
  const diverged = done.map((r) => r.divergedAt).filter((d): d is number => d !== null);
  const atStep: Record<string, number> = {};
  for (const r of done) {
    const key = r.divergedAt === null ? "never" : String(r.divergedAt);
    atStep[key] = (atStep[key] ?? 0) + 1;
  }
  return {
    episodes: done.length,
    skipped: results.length - done.length,
    steps: done.reduce((a, r) => a + r.steps, 0),
    syntheticReturn: mean(done.map((r) => r.syntheticReturn)),
    realReturn: mean(done.map((r) => r.realReturn)),
    syntheticSuccess: mean(done.map((r) => (r.syntheticSuccess ? 1 : 0))),
    realSuccess: mean(done.map((r) => (r.realSuccess ? 1 : 0))),
    successAgreement: mean(done.map((r) => (r.syntheticSuccess === r.realSuccess ? 1 : 0))),
    returnGap: mean(done.map((r) => r.syntheticReturn - r.realReturn)),
    advantage: advantageAgreement(done),
    exploitationRate: synSuccesses.length === 0 ? null : synSuccesses.filter((r) => !r.realSuccess).length / synSuccesses.length,
    divergence: { mean: diverged.length === 0 ? null : mean(diverged), atStep },
  };
}

/** The mean return gap, signed (a summary from before it was kept: from its two returns). */
const gap = (s: OnPolicyAuditSummary) => {
  const g = s.returnGap ?? s.syntheticReturn - s.realReturn;
  return `${g >= 0 ? "+" : ""}${g.toFixed(3)}`;
};

/** Returns this close count as equal (float sums of the same rewards in another order). */
const TIE = 1e-9;

/** What the agreement figures read of a replayed episode. */
type Ranked = Pick<ReplayResult, "syntheticReturn" | "realReturn" | "group"> & { trainedReturn?: number };

/** The episodes' (trained synthetic, real) returns by group; an episode with no group is a group of its own. */
function groupsOf(results: readonly Ranked[]): { syn: number; real: number }[][] {
  const byGroup = new Map<string, { syn: number; real: number }[]>();
  results.forEach((r, i) => {
    const key = r.group ?? `#${i}`;
    byGroup.set(key, [...(byGroup.get(key) ?? []), { syn: r.trainedReturn ?? r.syntheticReturn, real: r.realReturn }]);
  });
  return [...byGroup.values()];
}

/** How a pair is ordered by the two sides: null where both tie, else 1 alike, ½ tied on one side only, 0 reversed. */
function pairOrder(x: { syn: number; real: number }, y: { syn: number; real: number }): number | null {
  const sign = (d: number) => (Math.abs(d) <= TIE ? 0 : Math.sign(d));
  const a = sign(x.syn - y.syn);
  const b = sign(x.real - y.real);
  return a === 0 && b === 0 ? null : a === b ? 1 : a === 0 || b === 0 ? 0.5 : 0;
}

/** Order and advantage agreement within the groups of replayed episodes (an episode with no group is a group of its own). */
export function advantageAgreement(results: readonly Ranked[]): AdvantageAgreement {
  let groups = 0,
    pairs = 0,
    tiedPairs = 0,
    agree = 0,
    reversed = 0;
  const xs: number[] = [];
  const ys: number[] = [];
  for (const g of groupsOf(results)) {
    if (g.length < 2) continue;
    groups++;
    let told = false;
    for (let i = 0; i < g.length; i++) {
      for (let j = i + 1; j < g.length; j++) {
        const o = pairOrder(g[i], g[j]);
        if (o === null) tiedPairs++;
        else {
          told = true;
          pairs++;
          agree += o;
          if (o === 0) reversed++;
        }
      }
    }
    // GRPO's own advantages, over the groups either side tells apart.
    if (told) {
      xs.push(
        ...groupAdvantages(
          g.map((e) => e.syn),
          TIE,
        ),
      );
      ys.push(
        ...groupAdvantages(
          g.map((e) => e.real),
          TIE,
        ),
      );
    }
  }
  return { groups, pairs, tiedPairs, orderAgreement: pairs === 0 ? null : agree / pairs, reversedPairs: reversed, correlation: pearson(xs, ys) };
}

/**
 * Order agreement by how far apart the synthetic returns of a pair are: for each band [edges[k],
 * edges[k+1]) of |Δ synthetic (trained) return|, the pairs of one group that either side tells apart,
 * and the share ordered alike (one side tied: half). Shows whether the model's small differences are
 * signal or noise: GRPO's normalisation gives a group whose returns differ by a thousandth the same
 * push as one whose returns differ by 1.
 */
export function orderAgreementByMargin(
  results: readonly Ranked[],
  edges: readonly number[],
): { from: number; to: number; pairs: number; orderAgreement: number | null }[] {
  const bands = edges.map((from, k) => ({ from, to: edges[k + 1] ?? Infinity, pairs: 0, agree: 0 }));
  for (const g of groupsOf(results)) {
    for (let i = 0; i < g.length; i++) {
      for (let j = i + 1; j < g.length; j++) {
        const o = pairOrder(g[i], g[j]);
        const d = Math.abs(g[i].syn - g[j].syn);
        const band = bands.find((x) => d >= x.from && d < x.to);
        if (o === null || !band) continue;
        band.pairs++;
        band.agree += o;
      }
    }
  }
  return bands.map(({ from, to, pairs, agree }) => ({ from, to, pairs, orderAgreement: pairs === 0 ? null : agree / pairs }));
}

/** Pearson's r (null: fewer than two points, or either side constant). */
export function pearson(xs: readonly number[], ys: readonly number[]): number | null {
  const n = xs.length;
  if (n < 2) return null;
  const mx = xs.reduce((a, x) => a + x, 0) / n;
  const my = ys.reduce((a, y) => a + y, 0) / n;
  let sxy = 0,
    sxx = 0,
    syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my);
    sxx += (xs[i] - mx) ** 2;
    syy += (ys[i] - my) ** 2;
  }
  return sxx <= TIE || syy <= TIE ? null : sxy / Math.sqrt(sxx * syy);
}

/** The audit as table rows (label, value), one row per figure: what `dreamgym audit --run` prints. */
export function auditRows(s: OnPolicyAuditSummary): [string, string][] {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const steps = Object.entries(s.divergence.atStep).sort(([a], [b]) => (a === "never" ? 1 : b === "never" ? -1 : Number(a) - Number(b)));
  return [
    ["episodes replayed (skipped)", `${s.episodes} (${s.skipped})`],
    ["return synthetic / real", `${s.syntheticReturn.toFixed(3)} / ${s.realReturn.toFixed(3)}`],
    ["success synthetic / real", `${pct(s.syntheticSuccess)} / ${pct(s.realSuccess)}`],
    ["success agreement", pct(s.successAgreement)],
    ["return gap (synthetic − real)", gap(s)],
    [
      "order agreement in groups (pairs; reversed)",
      s.advantage ? `${s.advantage.orderAgreement === null ? "-" : pct(s.advantage.orderAgreement)} (${s.advantage.pairs}; ${s.advantage.reversedPairs})` : "-",
    ],
    ["advantage correlation", s.advantage?.correlation == null ? "-" : s.advantage.correlation.toFixed(2)],
    ["exploitation rate", s.exploitationRate === null ? "- (no synthetic success)" : pct(s.exploitationRate)],
    ["first divergent step: mean", s.divergence.mean === null ? "- (none diverged)" : s.divergence.mean.toFixed(2)],
    ["first divergent step: episodes at", steps.map(([k, n]) => `${k}:${n}`).join(" ")],
    ["real steps", String(s.steps)],
  ];
}

/** Audits by iteration as one table (what `dreamgym audit --run` prints and `dreamgym view` shows): a header and a row per audit. */
export function auditTable(rows: readonly { iteration: number | "all"; summary: OnPolicyAuditSummary }[]): { header: string[]; lines: string[][] } {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const header = [
    "iteration",
    "episodes",
    "return syn/real",
    "gap",
    "success syn/real",
    "agreement",
    "exploitation",
    "order agree (pairs)",
    "adv. corr",
    "diverge@",
    "diverge at step: episodes",
  ];
  const lines = rows.map(({ iteration, summary: s }) => {
    const at = auditRows(s).find(([k]) => k === "first divergent step: episodes at")![1];
    const adv = s.advantage;
    return [
      String(iteration),
      String(s.episodes),
      `${s.syntheticReturn.toFixed(3)}/${s.realReturn.toFixed(3)}`,
      gap(s),
      `${pct(s.syntheticSuccess)}/${pct(s.realSuccess)}`,
      pct(s.successAgreement),
      s.exploitationRate === null ? "-" : pct(s.exploitationRate),
      adv?.orderAgreement == null ? "-" : `${pct(adv.orderAgreement)} (${adv.pairs})`,
      adv?.correlation == null ? "-" : adv.correlation.toFixed(2),
      s.divergence.mean === null ? "-" : s.divergence.mean.toFixed(2),
      at,
    ];
  });
  return { header, lines };
}
