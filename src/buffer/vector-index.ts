import { createRequire } from "node:module";

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
  Index: new (config: { dimensions: number; metric: string; quantization: string; connectivity: number; expansion_add: number; expansion_search: number }) => UsearchIndex;
  exactSearch(dataset: Float32Array, queries: Float32Array, dims: number, k: number, metric: string, threads?: number): UsearchMatches;
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
 * Exact cosine search over unit vectors held in one growing Float32Array (outside the JS heap).
 * Unfiltered queries use usearch's SIMD brute force; a filter that keeps few rows is scored in JS
 * over just those rows.
 */
export class ExactIndex {
  readonly dims: number;
  private matrix: Float32Array;
  private ids: Float64Array;
  private env: Uint16Array;
  private source: Uint8Array;
  private task: Int32Array;
  private action: Int32Array;
  private n = 0;
  private readonly rowOf = new Map<number, number>();

  constructor(dims: number, capacity = 1024) {
    this.dims = dims;
    this.matrix = new Float32Array(capacity * dims);
    this.ids = new Float64Array(capacity);
    this.env = new Uint16Array(capacity);
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
    const grow = <T extends Float64Array | Uint16Array | Uint8Array | Int32Array>(a: T, make: (n: number) => T): T => {
      const b = make(cap);
      b.set(a);
      return b;
    };
    this.ids = grow(this.ids, (n) => new Float64Array(n));
    this.env = grow(this.env, (n) => new Uint16Array(n));
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
  }

  /** Removes rows by swapping the last row into their place. */
  remove(ids: Iterable<number>): void {
    for (const id of ids) {
      const r = this.rowOf.get(id);
      if (r === undefined) continue;
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
      (f.env === undefined || this.env[r] === f.env) && (f.source === undefined || this.source[r] === f.source) &&
      (f.task === undefined || this.task[r] === f.task) && (f.action === undefined || this.action[r] === f.action)
    );
  }

  /** The best `k` rows by cosine similarity (ties: lower id first), optionally filtered. */
  search(query: Float32Array, k: number, filter: Partial<RowTags> = {}): Candidate[] {
    const n = this.n;
    if (n === 0 || k <= 0) return [];
    const filtered = filter.env !== undefined || filter.source !== undefined || filter.task !== undefined || filter.action !== undefined;
    if (n >= 2048) {
      // SIMD brute force over everything; a filter that keeps most rows is applied afterwards, with room to spare.
      let matching = n;
      if (filtered) {
        matching = 0;
        for (let r = 0; r < n; r++) if (this.rowMatches(r, filter)) matching++;
      }
      if (matching === 0) return [];
      if (matching * 2 >= n) {
        // Fetch a margin, then order by (score, lower id) so ties at the cut do not depend on storage order.
        const want = Math.min(n, (filtered ? Math.ceil((k * n) / matching) * 2 : k) + 16);
        const m = usearch.exactSearch(this.matrix.subarray(0, n * this.dims), query, this.dims, want, "ip", 1);
        const all: Candidate[] = [];
        for (let i = 0; i < m.keys.length; i++) {
          const r = Number(m.keys[i]);
          if (!filtered || this.rowMatches(r, filter)) all.push({ id: this.ids[r], score: 1 - m.distances[i] });
        }
        all.sort((a, b) => b.score - a.score || a.id - b.id);
        const last = all[Math.min(k, all.length) - 1];
        const tieBeyond = last !== undefined && m.keys.length < n && 1 - m.distances[m.keys.length - 1] >= last.score;
        if (all.length >= Math.min(k, matching) && !tieBeyond) return all.slice(0, k);
      }
    }
    // Score in JS: small buffers, or a filter (only matching rows are scored).
    const heap = new TopK(k);
    const d = this.dims;
    const mat = this.matrix;
    for (let r = 0; r < n; r++) {
      if (filtered && !this.rowMatches(r, filter)) continue;
      let s = 0;
      const o = r * d;
      for (let j = 0; j < d; j++) s += mat[o + j] * query[j];
      heap.push(this.ids[r], s);
    }
    return heap.sorted();
  }
}

/** Keeps the k best (score, id) pairs; ties prefer the lower id. */
export class TopK {
  private items: Candidate[] = [];
  constructor(private readonly k: number) {}
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
    this.index.add(BigUint64Array.from(ids, (x) => BigInt(x)), vectors, 2);
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
