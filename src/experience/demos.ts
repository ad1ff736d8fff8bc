import type { Demo, StateAbstraction } from "../core/index.ts";
import type { ReplayBuffer, SearchResult } from "../buffer/index.ts";

export interface DemoOptions {
  /** Demos per query. */
  k: number;
  /** Also the k most similar states where the same action was taken. @default true */
  sameAction?: boolean;
  /** Leave out demos of this task (held-out evaluation). */
  excludeTask?: string;
  /** Only the real recorded steps of this very action in this very state (a model that replays, not transfers). */
  exact?: boolean;
  /** With `exact`: this task's own steps first. */
  preferTask?: string;
  /**
   * Also the most similar *real* transition with the same action, marked `anchor` when it is not
   * among the others: how well the offline data backs the step, however many synthetic transitions
   * crowd the top k (a model's uncertainty reads it; it grounds no prediction).
   */
  realAnchor?: boolean;
  /** Only real recorded steps, none a synthetic episode wrote back (then `realAnchor` adds nothing). */
  realOnly?: boolean;
  /**
   * The model's `sameActionFirst`: the steps of this very action are searched first, and where one of
   * them is at least this similar, the other actions' are not searched (the model reads them only
   * where none is). Where the action is recorded under another spelling too (case, spaces), which
   * models count as the same action, or where searches are not exact (HNSW, on large buffers), every
   * step is searched, as without.
   */
  sameActionFirst?: number;
  /**
   * The caller reads no more than the first n demos (the anchor aside; the reasoning model's prompt):
   * where searches are exact, k ≥ n and no task is left out, the same action's steps among the first
   * n are among the k most similar of every step already, and their own search is left out where the
   * first n are the same without it (no ties in score among them, n + 1 steps found). One difference:
   * where thousands of copies of one step crowd the search's candidates, the merge filled the places
   * left with this action's steps, and this search (one wider) may find the other actions' that are
   * more similar.
   */
  readsFirst?: number;
}

/**
 * The transitions that ground one prediction: the k most similar recorded (state, action) pairs of
 * the env and (unless turned off) the k most similar states where the same action was taken, merged
 * best first, as abstract states.
 */
export function retrieveDemos(
  buffer: ReplayBuffer,
  abstraction: StateAbstraction,
  query: { state: string; action: string },
  opts: DemoOptions,
): Promise<Demo[]> {
  // The same query on the same content has the same answer: a policy's rollouts of one task ask for
  // the same pages again and again (about 60% of WebShop's synthetic steps), and in training the
  // buffer changes only between iterations. Answers are kept per content version of the buffer; a
  // query of real steps only (`realOnly`, `exact`) per version of its real steps, which a run's
  // synthetic appends do not change, so its answers outlive the iteration.
  let byAbstraction = memo.get(buffer);
  if (!byAbstraction) memo.set(buffer, (byAbstraction = new WeakMap()));
  const real = opts.realOnly === true || opts.exact === true;
  const version = real ? buffer.realVersion : String(buffer.version);
  let slots = byAbstraction.get(abstraction);
  if (!slots) byAbstraction.set(abstraction, (slots = {}));
  const slot = real ? "real" : "all";
  let m = slots[slot];
  if (!m || m.version !== version || m.full) slots[slot] = m = new KeptAnswers(version, MEMO_MAX);
  const key = JSON.stringify([
    query.action,
    opts.k,
    opts.sameAction,
    opts.excludeTask,
    opts.exact,
    opts.preferTask,
    opts.realAnchor,
    opts.realOnly,
    opts.sameActionFirst,
    opts.readsFirst,
  ]);
  return m.get(query.state, key, () =>
    search(buffer, abstraction, query, opts).then((demos) => {
      // Every caller of this query gets this very list: frozen, so that none changes it under the others.
      Object.freeze(demos);
      keptDemos.add(demos);
      return demos;
    }),
  );
}

/**
 * Demo lists `retrieveDemos` hands out again for the same query while the buffer's content (or its
 * real steps) stays as it is: one frozen list stands for its query (a model may key what it works out
 * from the demos on the list itself).
 */
export const keptDemos = new WeakSet<readonly Demo[]>();

/** Answers for one version of the buffer's content, by the query's state and then the rest of the query; at most `max`. */
class KeptAnswers<T> {
  private readonly answers = new Map<string, Map<string, T>>();
  private size = 0;
  constructor(
    readonly version: string,
    private readonly max: number,
  ) {}
  /** Full: the caller starts anew. */
  get full(): boolean {
    return this.size >= this.max;
  }
  get(state: string, key: string, make: () => T): T {
    // By the state itself first: a page is a long string, and the same string object comes back step
    // after step (its hash kept with it), where a key made of it would be a new string to hash each time.
    let byState = this.answers.get(state);
    if (!byState) this.answers.set(state, (byState = new Map()));
    let answer = byState.get(key);
    if (answer === undefined) {
      const made = make();
      byState.set(key, made);
      this.size++;
      // A search that fails (an embedder's endpoint down for a moment) is not kept: the same query
      // asks again rather than failing for the rest of the run.
      if (made instanceof Promise)
        made.catch(() => {
          if (byState.get(key) === made) byState.delete(key);
        });
      answer = made;
    }
    return answer;
  }
}

/** Answers of `retrieveDemos` per buffer and abstraction (at most MEMO_MAX a version). */
const memo = new WeakMap<ReplayBuffer, WeakMap<StateAbstraction, { real?: KeptAnswers<Promise<Demo[]>>; all?: KeptAnswers<Promise<Demo[]>> }>>();
const MEMO_MAX = 50_000;

async function search(buffer: ReplayBuffer, abstraction: StateAbstraction, query: { state: string; action: string }, opts: DemoOptions): Promise<Demo[]> {
  if (buffer.transitions === 0) return [];
  if (opts.exact) {
    // Only real steps: what a synthetic episode wrote back is a model's guess, never evidence (and
    // its copies, the task's own and so first, would crowd the real steps out of the k).
    return buffer
      .findExact(query, { env: abstraction.env, excludeTask: opts.excludeTask, preferTask: opts.preferTask, limit: opts.k, source: "real" })
      .map((t) => ({
        state: abstraction.abstract(t.state),
        action: t.action,
        nextState: abstraction.abstract(t.nextState, t.info),
        reward: t.reward,
        terminated: t.terminated,
        task: t.task,
        source: t.source,
        score: 1,
      }));
  }
  const vector = await buffer.embedQuery(query);
  const env = abstraction.env;
  const source = opts.realOnly ? ("real" as const) : undefined;
  const fetch = opts.excludeTask === undefined ? opts.k : opts.k * 3; // room for the excluded task's own transitions
  const pick = (hits: SearchResult[]) => hits.filter((h) => h.transition.task.id !== opts.excludeTask).slice(0, opts.k);
  const searchSimilar = () => buffer.searchVectorAsync(vector, { k: fetch, filter: { env, source } });
  const searchSameAction = () => buffer.searchVectorAsync(vector, { k: fetch, filter: { env, source, action: query.action } });
  let similar: SearchResult[];
  let sameAction: SearchResult[];
  const first = opts.sameActionFirst;
  const n = opts.readsFirst;
  if (n !== undefined && n > 0 && opts.k >= n && opts.excludeTask === undefined && opts.sameAction !== false && first === undefined && buffer.searchesExactly) {
    // The first n of the merge are the first n of every step's k most similar (a step of this action
    // among them is among the action's k best too): the action's own search adds none the caller
    // reads, unless fewer than n + 1 steps came (copies of one step crowd the candidates) or two of the
    // first n + 1 score the same (spellings of an action embed alike), where the merge's order may
    // differ: then it is searched too, as without.
    const hits = await buffer.searchVectorAsync(vector, { k: Math.max(fetch, n + 1), filter: { env, source } });
    similar = pick(hits);
    const tie = hits.slice(0, n + 1).some((h, i, a) => i > 0 && h.score === a[i - 1].score);
    sameAction = hits.length <= n || tie ? pick(await searchSameAction()) : [];
  } else if (first !== undefined && opts.sameAction !== false && buffer.searchesExactly && buffer.actionSpellings(query.action, env, source) <= 1) {
    // A step of every action that is among the k most similar and took this action is among this
    // action's k most similar too (exact searches: by score, ties by id): where the model reads this
    // action's demos alone, the search of every step would add none it reads.
    sameAction = pick(await searchSameAction());
    similar = sameAction.some((h) => h.score >= first) ? [] : pick(await searchSimilar());
  } else {
    // Both asked at once: real-only searches may run on the buffer's search thread.
    const [similarHits, sameActionHits] = await Promise.all([searchSimilar(), opts.sameAction === false ? [] : searchSameAction()]);
    similar = pick(similarHits);
    sameAction = pick(sameActionHits);
  }
  const seen = new Set<number>();
  const demo = (h: SearchResult): Demo => ({
    state: abstraction.abstract(h.transition.state),
    action: h.transition.action,
    nextState: abstraction.abstract(h.transition.nextState, h.transition.info),
    reward: h.transition.reward,
    terminated: h.transition.terminated,
    task: h.transition.task,
    source: h.transition.source,
    score: h.score,
  });
  const demos = [...sameAction, ...similar]
    .filter((h) => !seen.has(h.transition.id) && seen.add(h.transition.id))
    .sort((a, b) => b.score - a.score)
    .map(demo);
  if (!opts.realAnchor || opts.realOnly) return demos;
  const anchor = realAnchor(
    buffer,
    env,
    query,
    opts,
    () => pick(buffer.searchVector(vector, { k: fetch, filter: { env, source: "real", action: query.action } }))[0],
  );
  return anchor && !seen.has(anchor.transition.id) ? [...demos, { ...demo(anchor), anchor: true }] : demos;
}

/**
 * The most similar real step of the query's action (`find`), kept per version of the buffer's real
 * steps: a recording synthetic env changes the buffer at every step, so whole answers are not kept
 * across steps (`retrieveDemos`), but its appends leave the real steps, and so the anchor, as they were.
 */
function realAnchor(
  buffer: ReplayBuffer,
  env: string,
  query: { state: string; action: string },
  opts: DemoOptions,
  find: () => SearchResult | undefined,
): SearchResult | undefined {
  const version = buffer.realVersion;
  let m = anchors.get(buffer);
  if (!m || m.version !== version || m.full) anchors.set(buffer, (m = new KeptAnswers(version, ANCHORS_MAX)));
  return m.get(query.state, JSON.stringify([env, query.action, opts.k, opts.excludeTask]), () => find() ?? null) ?? undefined;
}
/** Fewer than answers (`MEMO_MAX`): anchors last a whole run, each with its query's page and a transition. */
const ANCHORS_MAX = 10_000;
/** Anchors per buffer (`realAnchor`), by state and then the env, action, k and task left out; null: none. */
const anchors = new WeakMap<ReplayBuffer, KeptAnswers<SearchResult | null>>();
