import { createRequire } from "node:module";
import { dotAt } from "./embedder.ts";

// usearch ships CommonJS with a native addon: load it with require.
const require = createRequire(import.meta.url);
type UsearchMatches = { keys: BigUint64Array; distances: Float32Array };
interface UsearchIndex {
  add(keys: BigUint64Array, vectors: Float32Array, threads?: number): void;
  search(vector: Float32Array, k: number, threads?: number): UsearchMatches;
  remove(keys: bigint | BigUint64Array): number;
  size(): number;
  save(path: string): void;
  load(path: string): void;
}
interface Usearch {
  Index: new (config: {
    dimensions: number;
    metric: string;
    quantization: string;
    connectivity: number;
    expansion_add: number;
    expansion_search: number;
  }) => UsearchIndex;
  exactSearch<T extends Float32Array | Int8Array>(dataset: T, queries: T, dims: number, k: number, metric: string, threads?: number): UsearchMatches;
}
const usearch = require("usearch") as Usearch;

/** Per-row facts a search can filter on, as small codes. */
export interface RowTags {
  env: number;
  source: number;
  task: number;
  action: number;
}

export interface Candidate {
  id: number;
  score: number;
}

/**
 * Exact cosine search over unit vectors held in one growing Float32Array (outside the JS heap),
 * with usearch's SIMD brute force over int8 copies, the candidates then scored exactly (in JS
 * alone for a few rows). A filtered query searches a copy of just its rows, kept in step with the
 * rows that come and go.
 */
export class ExactIndex {
  readonly dims: number;
  private matrix: Float32Array;
  private ids: Float64Array;
  private env: Int32Array;
  private source: Uint8Array;
  private task: Int32Array;
  private action: Int32Array;
  private n = 0;
  private readonly rowOf = new Map<number, number>();
  /**
   * Filtered views by the source they filter on (0: any), and the rows of each action code, kept in
   * step with rows that come and go (see `view`). By source, so that a synthetic row's coming or going
   * looks only at the views it can belong to, not at the many of real rows.
   */
  private readonly views = new Map<number, Map<string, View>>();
  private byAction: Map<number, number[]> | null = null;
  /** Rows copied into the views kept (bounded with their number). */
  private viewRows = 0;
  private viewCount = 0;

  constructor(dims: number, capacity = 1024) {
    this.dims = dims;
    this.matrix = new Float32Array(capacity * dims);
    this.ids = new Float64Array(capacity);
    this.env = new Int32Array(capacity);
    this.source = new Uint8Array(capacity);
    this.task = new Int32Array(capacity);
    this.action = new Int32Array(capacity);
  }

  get size(): number {
    return this.n;
  }

  private grow(): void {
    const cap = this.ids.length * 2;
    const m = new Float32Array(cap * this.dims);
    m.set(this.matrix);
    this.matrix = m;
    const grow = <T extends Float64Array | Uint8Array | Int32Array>(a: T, make: (n: number) => T): T => {
      const b = make(cap);
      b.set(a);
      return b;
    };
    this.ids = grow(this.ids, (n) => new Float64Array(n));
    this.env = grow(this.env, (n) => new Int32Array(n));
    this.source = grow(this.source, (n) => new Uint8Array(n));
    this.task = grow(this.task, (n) => new Int32Array(n));
    this.action = grow(this.action, (n) => new Int32Array(n));
  }

  add(id: number, vector: Float32Array, tags: RowTags): void {
    if (this.n === this.ids.length) this.grow();
    const r = this.n++;
    this.matrix.set(vector, r * this.dims);
    this.ids[r] = id;
    this.env[r] = tags.env;
    this.source[r] = tags.source;
    this.task[r] = tags.task;
    this.action[r] = tags.action;
    this.rowOf.set(id, r);
    this.appended(r, id, vector, tags);
  }

  /**
   * A row came: the views it belongs to take it in place (its vector copied, its int8 copy made with
   * the view's scale), so a buffer that grows a step at a time (a synthetic env recording its steps)
   * is not copied and quantized anew at every search. A row that does not fit the view's int8 scale
   * drops that copy (made again at the next search).
   */
  private appended(r: number, id: number, vector: Float32Array, tags: RowTags): void {
    if (this.byAction) {
      const list = this.byAction.get(tags.action);
      if (list) list.push(r);
      else this.byAction.set(tags.action, [r]);
    }
    const d = this.dims;
    for (const source of [0, tags.source]) {
      const views = this.views.get(source);
      if (!views) continue;
      for (const v of views.values()) {
        if (v.ids === null) {
          v.matrix = this.matrix; // the whole index's rows, in place (grown meanwhile, maybe)
          v.count = this.n;
        } else if (matches(tags, v.filter)) {
          v.ids = withRoom(v.ids, v.count + 1);
          v.matrix = withRoom(v.matrix, (v.count + 1) * d);
          v.ids[v.count] = id;
          v.matrix.set(vector, v.count * d);
          v.count++;
          this.viewRows++;
        } else continue;
        if (v.int8 && !appendQuantized(v.int8, vector, v.count - 1, d)) v.int8 = undefined;
      }
    }
  }

  /**
   * Row `r` (`id`, `tags`) goes, and the last row takes its place: the views it belongs to (by source,
   * so a synthetic row looks only at the views it can belong to, not at the many of real rows) lose
   * it in place, their last row into its place, their int8 copy alike (its scale and error bounds
   * stay bounds); their kept answers go (they count on rows that only grow). The other views do not
   * hold it and stay as they are. A bounded buffer evicts every few steps: its views made again (a
   * copy and an int8 pass of their rows) were most of an eviction's 60 ms at 20k rows.
   */
  private leaving(r: number, id: number, tags: RowTags): void {
    const last = this.n - 1;
    const own = this.byAction?.get(tags.action);
    // Searched from the front: rows go oldest first, and the oldest sit near the front (a row that goes takes the last one's place).
    const at = own?.indexOf(r) ?? -1;
    if (own && at >= 0) {
      own[at] = own[own.length - 1];
      own.pop();
      if (own.length === 0) this.byAction!.delete(tags.action);
      // The last row's place in its action's list is now r (the list may be the same one).
      const moved = r === last ? undefined : this.byAction!.get(this.action[last]);
      const from = moved?.lastIndexOf(last) ?? -1;
      if (moved && from >= 0) moved[from] = r;
      else if (r !== last) this.byAction = null; // not as it should be: made again when next needed
    } else this.byAction = null;
    const d = this.dims;
    for (const source of [0, tags.source]) {
      const views = this.views.get(source);
      if (!views) continue;
      for (const [key, v] of views) {
        if (v.ids === null) {
          // The whole index's rows, in place: the index moves its matrix's row, the int8 copy is moved here.
          if (v.int8 && r !== last) v.int8.int8.copyWithin(r * d, last * d, (last + 1) * d);
          v.count = last;
        } else if (matches(tags, v.filter)) {
          const i = v.ids.subarray(0, v.count).indexOf(id);
          if (i < 0) {
            // Not where it should be: the view goes, made again at its next search.
            views.delete(key);
            this.dropAnswers(v);
            this.viewRows -= v.count;
            this.viewCount--;
            continue;
          }
          const j = v.count - 1;
          if (i !== j) {
            v.ids[i] = v.ids[j];
            v.matrix.copyWithin(i * d, j * d, (j + 1) * d);
            if (v.int8) v.int8.int8.copyWithin(i * d, j * d, (j + 1) * d);
          }
          v.count = j;
          this.viewRows--;
        } else continue;
        this.dropAnswers(v);
      }
    }
  }

  /** Removes rows by swapping the last row into their place. */
  remove(ids: Iterable<number>): void {
    for (const id of ids) {
      const r = this.rowOf.get(id);
      if (r === undefined) continue;
      this.leaving(r, id, { env: this.env[r], source: this.source[r], task: this.task[r], action: this.action[r] });
      const last = --this.n;
      this.rowOf.delete(id);
      if (r !== last) {
        this.matrix.copyWithin(r * this.dims, last * this.dims, (last + 1) * this.dims);
        this.ids[r] = this.ids[last];
        this.env[r] = this.env[last];
        this.source[r] = this.source[last];
        this.task[r] = this.task[last];
        this.action[r] = this.action[last];
        this.rowOf.set(this.ids[r], r);
      }
    }
  }

  private rowMatches(r: number, f: Partial<RowTags>): boolean {
    return (
      (f.env === undefined || this.env[r] === f.env) &&
      (f.source === undefined || this.source[r] === f.source) &&
      (f.task === undefined || this.task[r] === f.task) &&
      (f.action === undefined || this.action[r] === f.action)
    );
  }

  /** The best `k` rows by cosine similarity (ties: lower id first), optionally filtered. */
  search(query: Float32Array, k: number, filter: Partial<RowTags> = {}): Candidate[] {
    if (this.n === 0 || k <= 0) return [];
    const view = this.view(filter);
    const count = view.count;
    if (count === 0) return [];
    // A small view is scored in JS, cheaper than keeping its answers.
    if (count < SIMD_MIN_ROWS) return this.scan(view, query, k, 0, []);
    // The same query again (a group's rollouts of a task reach the same steps; a recording env asks
    // again after a few more rows): its answer then, with the rows the view took since searched
    // alone, is this search's answer (a row that goes drops the answers of its views: see `leaving`).
    const key = answerKey(query, k);
    const kept = view.answers?.get(key);
    if (kept && kept.k === k && sameBits(kept.query, query)) {
      this.recalled++;
      if (kept.count < count) {
        const top = this.scan(view, query, k, kept.count, kept.top);
        this.answersKept.candidates += top.length - kept.top.length;
        kept.top = top;
        kept.count = count;
      }
      return kept.top.map((c) => ({ ...c }));
    }
    const top = this.scan(view, query, k, 0, []);
    if (k > ANSWERS_KEPT.k) return top; // a search widened over many copies of one step (a buffer's k × 4 a round): not kept
    if (this.answersKept.answers >= ANSWERS_KEPT.answers || this.answersKept.candidates + top.length > ANSWERS_KEPT.candidates) this.forgetAnswers();
    const answers = (view.answers ??= new Map());
    this.dropAnswer(answers.get(key));
    answers.set(key, { query: Float32Array.from(query), k, count, top });
    this.answersKept.answers++;
    this.answersKept.candidates += top.length;
    return top.map((c) => ({ ...c }));
  }

  /** Searches answered from a kept answer (and the rows since). */
  recalled = 0;
  /** Filtered views made so far (each a copy of its rows; an eviction should not make them again). @internal */
  viewsMade = 0;
  /** Answers kept over all views (`search`), and their candidates: within ANSWERS_KEPT. */
  private answersKept = { answers: 0, candidates: 0 };
  private forgetAnswers(): void {
    for (const views of this.views.values()) for (const v of views.values()) v.answers = undefined;
    this.answersKept = { answers: 0, candidates: 0 };
  }
  private dropAnswer(a: { top: Candidate[] } | undefined): void {
    if (!a) return;
    this.answersKept.answers--;
    this.answersKept.candidates -= a.top.length;
  }
  /** A view goes: its answers with it. */
  private dropAnswers(v: View): void {
    for (const a of v.answers?.values() ?? []) this.dropAnswer(a);
    v.answers = undefined;
  }

  /** The best `k` of a view's rows from `from` on and of `best` (scored rows before them). */
  private scan(view: View, query: Float32Array, k: number, from: number, best: Candidate[]): Candidate[] {
    const count = view.count;
    const d = this.dims;
    const idAt = (i: number) => (view.ids === null ? this.ids[i] : view.ids[i]);
    const exact = (i: number) => dotAt(view.matrix, i * d, query, d);
    const seeded = () => {
      const top = new TopK(k);
      for (const c of best) top.push(c.id, c.score);
      return top;
    };
    const rowsLeft = count - from;
    if (rowsLeft < SIMD_MIN_ROWS) {
      const top = seeded();
      for (let i = from; i < count; i++) top.push(idAt(i), exact(i));
      return top.sorted();
    }
    // A first pass over int8 copies (usearch's SIMD brute force, a quarter of float32's memory
    // traffic) picks candidates, which are scored exactly. The result is exact: the int8 score of a
    // row is off its exact score by at most `slack` (Cauchy–Schwarz on the rounding errors), so when
    // the k-th exact score beats every row left out by more than that, none of them can enter or
    // tie; else the candidates widen.
    const q = this.quantized(view);
    // usearch reads a typed array from its buffer's start (a subarray's offset is lost): a tail is copied.
    const rows = from === 0 ? q.int8.subarray(0, count * d) : q.int8.slice(from * d, count * d);
    const qScale = 127 / maxAbs(query);
    const q8 = quantize(query, qScale);
    let qErr = 0;
    let qNorm = 0;
    for (let j = 0; j < d; j++) {
      qErr += (q8[j] - query[j] * qScale) ** 2;
      qNorm += q8[j] * q8[j];
    }
    // The rows' rounding against the query, and the query's against the longest row (f16 rows are
    // not quite unit length, and an index takes rows of any length).
    const slack = (q.maxError * Math.sqrt(qNorm)) / (q.scale * qScale) + (q.maxNorm * Math.sqrt(qErr)) / qScale;
    // usearch's "ip" distance is 1 − the dot product of the int8 vectors, and its matches come best
    // first: once the k-th exact score beats a match's int8 score by more than the slack, neither it
    // nor any match after it (nor any row left out) can enter, so the rest are not scored. The bound
    // also allows for the distance's float32 rounding and the exact scores' own (~1e-16).
    const unit = q.scale * qScale;
    const bound = (distance: number) => (1 - distance) / unit + slack + ((Math.abs(1 - distance) + 1) * 2 ** -23) / unit + 1e-12 * q.maxNorm;
    for (let want = Math.min(rowsLeft, 4 * k + 64); ; want = Math.min(rowsLeft, want * 4)) {
      const m = usearch.exactSearch(rows, q8, d, want, "ip", 1);
      const top = seeded();
      for (let i = 0; i < m.keys.length; i++) {
        if (top.full && top.worst > bound(m.distances[i])) return top.sorted();
        const r = from + Number(m.keys[i]);
        top.push(idAt(r), exact(r));
      }
      if (m.keys.length >= rowsLeft) return top.sorted();
      if (top.full && top.worst > bound(m.distances[m.keys.length - 1])) return top.sorted();
    }
  }

  /** A view's int8 copy (one scale for the whole view), its largest rounding error and its longest row (L2, per row), made at its first search. */
  private quantized(view: View): Quantized {
    if (!view.int8) {
      const d = this.dims;
      const count = view.count;
      const matrix = view.matrix.subarray(0, count * d);
      const scale = 127 / maxAbs(matrix);
      const int8 = quantize(matrix, scale);
      let maxError = 0;
      let maxNorm = 0;
      for (let i = 0; i < count; i++) {
        let e = 0;
        let n = 0;
        for (let j = i * d; j < (i + 1) * d; j++) {
          e += (int8[j] - matrix[j] * scale) ** 2;
          n += matrix[j] * matrix[j];
        }
        maxError = Math.max(maxError, Math.sqrt(e));
        maxNorm = Math.max(maxNorm, Math.sqrt(n));
      }
      view.int8 = { int8, scale, maxError, maxNorm };
    }
    return view.int8;
  }

  /**
   * The rows a filter keeps, with their vectors copied into one matrix (no filter: every row, in
   * place): made at the filter's first search and kept, taking rows as they come and losing them as
   * they go, so a filtered search reads only its own rows (a synthetic env asks the same filters again
   * and again).
   */
  private view(filter: Partial<RowTags>): View {
    const key = `${filter.env ?? ""}|${filter.source ?? ""}|${filter.task ?? ""}|${filter.action ?? ""}`;
    let views = this.views.get(filter.source ?? 0);
    if (!views) this.views.set(filter.source ?? 0, (views = new Map()));
    let v = views.get(key);
    if (v) return v;
    const n = this.n;
    const d = this.dims;
    if (key === "|||") {
      v = { ids: null, matrix: this.matrix, count: n, filter };
    } else {
      // Rows of the action, when the filter names one, are found through the action's list.
      let candidates: ArrayLike<number> | null = null;
      if (filter.action !== undefined) {
        if (!this.byAction) {
          this.byAction = new Map();
          for (let r = 0; r < n; r++) {
            const list = this.byAction.get(this.action[r]);
            if (list) list.push(r);
            else this.byAction.set(this.action[r], [r]);
          }
        }
        candidates = this.byAction.get(filter.action) ?? [];
      }
      const kept: number[] = [];
      const total = candidates === null ? n : candidates.length;
      for (let i = 0; i < total; i++) {
        const r = candidates === null ? i : candidates[i];
        if (this.rowMatches(r, filter)) kept.push(r);
      }
      const matrix = new Float32Array(kept.length * d);
      kept.forEach((r, i) => matrix.set(this.matrix.subarray(r * d, (r + 1) * d), i * d));
      v = { ids: Float64Array.from(kept, (r) => this.ids[r]), matrix, count: kept.length, filter: { ...filter } };
    }
    const rows = v.ids === null ? 0 : v.count;
    if (++this.viewCount > MAX_VIEWS || this.viewRows + rows > VIEW_ROWS_MIN + 2 * this.n) {
      for (const m of this.views.values()) {
        for (const old of m.values()) this.dropAnswers(old);
        m.clear();
      }
      this.viewRows = 0;
      this.viewCount = 1;
    }
    views.set(key, v);
    this.viewsMade++;
    this.viewRows += rows;
    return v;
  }
}

/** A filter's rows' ids (null: every row, in place) and their vectors, with an int8 copy once searched by SIMD. */
interface View {
  filter: Partial<RowTags>;
  /** Its answers by `answerKey`: the query, k, the rows it had then (`count`) and their best. */
  answers?: Map<number, { query: Float32Array; k: number; count: number; top: Candidate[] }>;
  /** Its rows: the first `count` of `ids` and of `matrix` (room to grow beyond). */
  count: number;
  ids: Float64Array | null;
  matrix: Float32Array;
  int8?: Quantized;
}

interface Quantized {
  int8: Int8Array;
  scale: number;
  maxError: number;
  maxNorm: number;
}

const matches = (t: RowTags, f: Partial<RowTags>) =>
  (f.env === undefined || t.env === f.env) &&
  (f.source === undefined || t.source === f.source) &&
  (f.task === undefined || t.task === f.task) &&
  (f.action === undefined || t.action === f.action);
const maxAbs = (x: Float32Array) => {
  let m = 0;
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i]));
  return m || 1;
};
/**
 * Adds row `i` (`vector`) to an int8 copy at its scale, growing it as needed, and its rounding error
 * to the bound; false where the row does not fit the scale (a component beyond ±127 once scaled).
 */
function appendQuantized(q: Quantized, vector: Float32Array, i: number, d: number): boolean {
  if (maxAbs(vector) * q.scale > 127) return false;
  q.int8 = withRoom(q.int8, (i + 1) * d);
  let e = 0;
  let n = 0;
  for (let j = 0; j < d; j++) {
    const v = Math.round(vector[j] * q.scale);
    q.int8[i * d + j] = v;
    e += (v - vector[j] * q.scale) ** 2;
    n += vector[j] * vector[j];
  }
  q.maxError = Math.max(q.maxError, Math.sqrt(e));
  q.maxNorm = Math.max(q.maxNorm, Math.sqrt(n));
  return true;
}
/** `a` itself where it holds `length` items, else a copy with room for them (at least twice as long): rows appended one by one. */
export function withRoom<T extends Float32Array | Float64Array | Int8Array>(a: T, length: number): T {
  if (length <= a.length) return a;
  const grown = new (a.constructor as new (n: number) => T)(Math.max(length, 2 * a.length));
  grown.set(a);
  return grown;
}
const quantize = (x: Float32Array, scale: number) => {
  const q = new Int8Array(x.length);
  for (let i = 0; i < x.length; i++) q[i] = Math.round(x[i] * scale);
  return q;
};

/** Below this many rows a search scores in JS (usearch's call costs more than it saves). */
const SIMD_MIN_ROWS = 256;
/**
 * Filtered views kept at once, and the rows they may copy: beyond 2 × the index plus VIEW_ROWS_MIN
 * they all go. A synthetic env's same-action searches ask for one view per action (2,581 actions in
 * WebShop's 13,453 seed rows: each row is in one of them).
 */
const MAX_VIEWS = 8192;
const VIEW_ROWS_MIN = 65_536;

/**
 * Answers kept at most over an index's views (a query's copy each, 1 KB at 256 dims), their
 * candidates (~50 B each), and the largest k kept (a search widened over thousands of copies of one
 * step asks for k in the thousands: not kept).
 */
const ANSWERS_KEPT = { answers: 4096, candidates: 100_000, k: 320 };

/** A hash of the query's bits and k (a kept answer is used only where its query has the same bits). */
function answerKey(query: Float32Array, k: number): number {
  const bits = new Int32Array(query.buffer, query.byteOffset, query.length);
  let h = 0x811c9dc5 ^ k;
  for (let i = 0; i < bits.length; i++) h = Math.imul(h ^ bits[i], 0x01000193);
  return h;
}

function sameBits(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  const x = new Int32Array(a.buffer, a.byteOffset, a.length);
  const y = new Int32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

/** Keeps the k best (score, id) pairs; ties prefer the lower id. */
export class TopK {
  private items: Candidate[] = [];
  constructor(private readonly k: number) {}
  /** Whether it holds k items. */
  get full(): boolean {
    return this.items.length === this.k;
  }
  /** The lowest score kept (the heap's root; -Infinity when empty). */
  get worst(): number {
    return this.items.length === 0 ? Number.NEGATIVE_INFINITY : this.items[0].score;
  }
  private worse(a: Candidate, b: Candidate): boolean {
    return a.score < b.score || (a.score === b.score && a.id > b.id);
  }
  push(id: number, score: number): void {
    const items = this.items;
    if (items.length < this.k) {
      items.push({ id, score });
      let i = items.length - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!this.worse(items[i], items[p])) break;
        [items[i], items[p]] = [items[p], items[i]];
        i = p;
      }
      return;
    }
    const c = { id, score };
    if (!this.worse(items[0], c)) return;
    items[0] = c;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < items.length && this.worse(items[l], items[m])) m = l;
      if (r < items.length && this.worse(items[r], items[m])) m = r;
      if (m === i) break;
      [items[i], items[m]] = [items[m], items[i]];
      i = m;
    }
  }
  sorted(): Candidate[] {
    return [...this.items].sort((a, b) => b.score - a.score || a.id - b.id);
  }
}

/** An HNSW index (usearch, cosine, f16 storage) keyed by transition id. */
export class AnnIndex {
  readonly dims: number;
  private index: UsearchIndex;
  constructor(dims: number) {
    this.dims = dims;
    this.index = AnnIndex.make(dims);
  }
  private static make(dims: number): UsearchIndex {
    return new usearch.Index({ dimensions: dims, metric: "cos", quantization: "f16", connectivity: 16, expansion_add: 128, expansion_search: 256 });
  }
  get size(): number {
    return this.index.size();
  }
  add(ids: number[], vectors: Float32Array): void {
    if (ids.length === 0) return;
    this.index.add(
      BigUint64Array.from(ids, (x) => BigInt(x)),
      vectors,
      2,
    );
  }
  remove(ids: number[]): void {
    for (const id of ids) this.index.remove(BigInt(id));
  }
  search(query: Float32Array, k: number): Candidate[] {
    if (this.size === 0) return [];
    const m = this.index.search(query, Math.min(k, this.size), 1);
    const out: Candidate[] = [];
    for (let i = 0; i < m.keys.length; i++) out.push({ id: Number(m.keys[i]), score: 1 - m.distances[i] });
    return out;
  }
  save(path: string): void {
    this.index.save(path);
  }
  static load(path: string, dims: number): AnnIndex {
    const a = new AnnIndex(dims);
    a.index.load(path);
    return a;
  }
}
