import { z } from "zod";
import type { Rng, Task, TaskGenerator } from "../core/index.ts";
import { EndpointFailedError } from "../llm/index.ts";

/**
 * DreamGym's curriculum: tasks where the policy sometimes succeeds and sometimes fails are the most
 * informative, measured by the reward variance of a group of rollouts,
 *
 *   V_τ = (1/n) Σ_i (r_i − r̄)²,
 *
 * and the seed tasks with the highest V_τ above a threshold are varied into new, harder tasks by a
 * generator. λ bounds the share of generated tasks in an iteration. Each generated task keeps its
 * lineage (parent, generation). For PPO the groups are the same: the trainer rolls out each task G
 * times whatever the algorithm.
 */
export const curriculumConfigSchema = z.strictObject({
  enabled: z.boolean().default(true),
  /** The largest share of an iteration's tasks that are generated ones. */
  lambda: z.number().min(0).max(1).default(0.25),
  /** Tasks with V_τ below this are not varied. */
  varianceThreshold: z.number().min(0).default(0.01),
  /** Tasks varied per iteration (the highest V_τ first). */
  parentsPerIteration: z.number().int().min(1).default(4),
  variantsPerParent: z.number().int().min(1).default(2),
  /** Generated tasks kept at most (the oldest go first). */
  maxGenerated: z.number().int().min(0).default(2000),
});
export type CurriculumConfig = z.infer<typeof curriculumConfigSchema>;

export interface Lineage {
  parent: string;
  generation: number;
}

/** A generated task: its lineage rides along in the task itself. */
export type GeneratedTask = Task & { lineage: Lineage };

/** V_τ of one group's rewards (population variance). */
export function rewardVariance(rewards: readonly number[]): number {
  if (rewards.length === 0) return 0;
  const mean = rewards.reduce((s, r) => s + r, 0) / rewards.length;
  return rewards.reduce((s, r) => s + (r - mean) ** 2, 0) / rewards.length;
}

export interface CurriculumUpdate {
  /** Mean V_τ over the iteration's groups. */
  meanVariance: number;
  /** Tasks chosen for variation. */
  selected: number;
  added: number;
  infeasible: number;
  duplicates: number;
  /** Generated tasks held now. */
  pool: number;
  /** Parents whose generation failed (the call threw after its own retries). */
  generatorFailures: number;
  lastFailure?: string;
}

/** Word set of an instruction, for near-duplicate checks. */
const words = (s: string) =>
  new Set(
    s
      .toLowerCase()
      .split(/[^a-z0-9.]+/)
      .filter(Boolean),
  );

/**
 * Whether two word sets are near duplicates: Jaccard ≥ 0.95. The words of `a` that `b` lacks are
 * counted as they come, and the answer is no as soon as even `b` holding every word left could not
 * reach 0.95 (the ratio grows with the overlap): most pairs differ in their first few words.
 */
function near(a: Set<string>, b: Set<string>): boolean {
  const reaches = (overlap: number) => overlap / (a.size + b.size - overlap || 1) >= 0.95;
  let missing = 0;
  for (const w of a) if (!b.has(w) && !reaches(a.size - ++missing)) return false;
  return reaches(a.size - missing);
}

/**
 * The words of a set a near duplicate must share one of (prefix filtering): two sets with Jaccard
 * ≥ 0.95 share at least ⌈0.95·size⌉ words, for either set's size, so with every set's words in one
 * fixed order, the first size − ⌈0.95·size⌉ + 1 of one set and of the other meet. Rare words first
 * keeps the lists of sets under each word short.
 */
function prefixOf(w: Set<string>, frequency: ReadonlyMap<string, number>): string[] {
  // (0.95 is stored just below 0.95, so the product never rounds up past a whole number.)
  const length = w.size - Math.ceil(0.95 * w.size) + 1;
  const out: string[] = [];
  const outFrequency: number[] = [];
  for (const x of w) {
    // Rarest first, then by the word: x goes in before the words after it, if among the first `length`.
    const f = frequency.get(x) ?? 0;
    let i = out.length;
    while (i > 0 && (outFrequency[i - 1] > f || (outFrequency[i - 1] === f && out[i - 1] > x))) i--;
    if (i >= length) continue;
    out.splice(i, 0, x);
    outFrequency.splice(i, 0, f);
    if (out.length > length) {
      out.pop();
      outFrequency.pop();
    }
  }
  return out;
}

/** Word sets by the words of their prefixes: only sets that share one are compared. */
class WordSets {
  private readonly byWord = new Map<string, Set<string>[]>();
  constructor(private readonly prefix: (w: Set<string>) => readonly string[]) {}
  add(w: Set<string>): void {
    for (const x of this.prefix(w)) {
      const list = this.byWord.get(x);
      if (list) list.push(w);
      else this.byWord.set(x, [w]);
    }
  }
  hasNear(w: Set<string>): boolean {
    for (const x of this.prefix(w)) if (this.byWord.get(x)?.some((s) => near(s, w))) return true;
    return false;
  }
}

export class Curriculum {
  private generated: GeneratedTask[] = [];
  private counter = 0;

  constructor(
    readonly config: CurriculumConfig,
    private readonly generator: TaskGenerator,
    /** Ids and instructions that generated tasks must not duplicate (the seed and eval tasks). */
    private readonly reserved: readonly Task[] = [],
  ) {}

  /** Word sets of the instructions seen, made once (every update compares against all the known tasks). */
  private readonly wordSets = new Map<string, Set<string>>();
  private wordsOf(instruction: string): Set<string> {
    let w = this.wordSets.get(instruction);
    if (!w) {
      if (this.wordSets.size >= 50_000) this.wordSets.clear();
      this.wordSets.set(instruction, (w = words(instruction)));
    }
    return w;
  }

  /**
   * Each word set's prefix (see `prefixOf`), in one order for the whole run: words by how few of the
   * reserved tasks hold them (which never change), then by the words themselves.
   */
  private prefix(w: Set<string>): readonly string[] {
    let p = this.prefixes.get(w);
    if (!p) {
      if (!this.frequency) {
        this.frequency = new Map();
        for (const t of this.reserved) for (const x of this.wordsOf(t.instruction)) this.frequency.set(x, (this.frequency.get(x) ?? 0) + 1);
      }
      this.prefixes.set(w, (p = prefixOf(w, this.frequency)));
    }
    return p;
  }
  private frequency: Map<string, number> | undefined;
  private readonly prefixes = new WeakMap<Set<string>, readonly string[]>();

  /** Ids, keys (with the generator's `key`) and else word sets of `tasks`, for duplicate checks. */
  private index(tasks: readonly Task[], keyOf: ((t: Task) => string | undefined) | undefined): { ids: Set<string>; keys: Set<string>; texts: WordSets } {
    const keys = new Set(keyOf ? tasks.map((t) => keyOf(t)).filter((k): k is string => k !== undefined) : []);
    const texts = new WordSets((w) => this.prefix(w));
    if (!keyOf) for (const t of tasks) texts.add(this.wordsOf(t.instruction));
    return { ids: new Set(tasks.map((t) => t.id)), keys, texts };
  }
  private reservedIndex: ReturnType<Curriculum["index"]> | undefined;

  get tasks(): readonly GeneratedTask[] {
    return this.generated;
  }

  /** `n` tasks for an iteration: at most ⌊λ·n⌋ generated ones, the rest from `seed`. */
  sample(seed: readonly Task[], n: number, rng: Rng): Task[] {
    const fromGenerated = this.config.enabled ? Math.min(Math.floor(this.config.lambda * n), this.generated.length) : 0;
    return [...rng.sample(this.generated, fromGenerated), ...rng.sample([...seed], Math.min(n - fromGenerated, seed.length))];
  }

  /** Scores the iteration's groups by V_τ and varies the most informative tasks. */
  async update(groups: readonly { task: Task; rewards: readonly number[] }[], rng: Rng): Promise<CurriculumUpdate> {
    const scored = groups.map((g) => ({ task: g.task, variance: rewardVariance(g.rewards) }));
    const meanVariance = scored.reduce((s, g) => s + g.variance, 0) / (scored.length || 1);
    const result: CurriculumUpdate = { meanVariance, selected: 0, added: 0, infeasible: 0, duplicates: 0, pool: this.generated.length, generatorFailures: 0 };
    if (!this.config.enabled || this.config.maxGenerated === 0) return result;
    const parents = scored
      .filter((g) => g.variance >= this.config.varianceThreshold && g.variance > 0)
      .sort((a, b) => b.variance - a.variance || (a.task.id < b.task.id ? -1 : 1))
      .slice(0, this.config.parentsPerIteration);
    result.selected = parents.length;
    // What a new task must not repeat: the reserved tasks (indexed once) and the generated ones so far.
    const keyOf = this.generator.key?.bind(this.generator);
    const reserved = (this.reservedIndex ??= this.index(this.reserved, keyOf));
    const mine = this.index(this.generated, keyOf);
    const ids = { has: (id: string) => reserved.ids.has(id) || mine.ids.has(id) };
    const keys = { has: (key: string) => reserved.keys.has(key) || mine.keys.has(key) };
    const texts = { hasNear: (w: Set<string>) => reserved.texts.hasNear(w) || mine.texts.hasNear(w) };
    // Kept apart until every parent is done: an endpoint that fails midway leaves the pool as it was,
    // so the run can be checkpointed at the last whole iteration.
    const added: GeneratedTask[] = [];
    let counter = this.counter;
    for (const { task: parent } of parents) {
      let generated: { tasks: Task[]; infeasible: number };
      try {
        generated = await this.generator.generate(parent, this.config.variantsPerParent, rng);
      } catch (e) {
        // The model's breaker tripped: the endpoint is down, and the run stops.
        if (e instanceof EndpointFailedError) throw e;
        // A generator that fails now and then costs this iteration its new tasks, not the run.
        result.generatorFailures++;
        result.lastFailure = (e as Error).message;
        continue;
      }
      const { tasks, infeasible } = generated;
      result.infeasible += infeasible;
      for (const t of tasks) {
        const w = this.wordsOf(t.instruction);
        const key = keyOf?.(t);
        if (ids.has(t.id) || (keyOf ? key === undefined || keys.has(key) : texts.hasNear(w))) {
          result.duplicates++;
          continue;
        }
        const generation = ((parent as Partial<GeneratedTask>).lineage?.generation ?? 0) + 1;
        const child: GeneratedTask = { ...t, id: `${parent.id.split("~")[0]}~g${generation}.${++counter}`, lineage: { parent: parent.id, generation } };
        added.push(child);
        mine.ids.add(child.id);
        if (key !== undefined) mine.keys.add(key);
        else mine.texts.add(w);
        result.added++;
      }
    }
    this.generated.push(...added);
    this.counter = counter;
    if (this.generated.length > this.config.maxGenerated) this.generated.splice(0, this.generated.length - this.config.maxGenerated);
    result.pool = this.generated.length;
    return result;
  }

  /** For checkpoints. */
  toJSON(): { generated: GeneratedTask[]; counter: number } {
    return { generated: this.generated, counter: this.counter };
  }

  restore(state: { generated: GeneratedTask[]; counter: number }): void {
    this.generated = state.generated;
    this.counter = state.counter;
  }
}
