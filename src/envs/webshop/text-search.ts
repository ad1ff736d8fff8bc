import { stemmer } from "stemmer";

/**
 * Full-text search that ranks as WebShop's Pyserini/Lucene index does: Lucene's English analysis
 * (standard tokenizer, possessive removal, lower case, the 33 English stop words, Porter stemming)
 * and Lucene's BM25 (k1 = 0.9, b = 0.4, document lengths stored lossily in one byte, ties by
 * document order). We write this small engine ourselves because the npm BM25 libraries neither
 * expose Lucene's length encoding nor meet the 0.5 ms search budget; see docs/dev/dependencies.md.
 */

/** This module, whose code (`analyze`) a kept analysis depends on: the name of its cache file holds a digest of it. */
export const ANALYZER_MODULE = import.meta.url;

/** Lucene's EnglishAnalyzer stop set. */
const STOP_WORDS = new Set([
  "a",
  "an",
  "and",
  "are",
  "as",
  "at",
  "be",
  "but",
  "by",
  "for",
  "if",
  "in",
  "into",
  "is",
  "it",
  "no",
  "not",
  "of",
  "on",
  "or",
  "such",
  "that",
  "the",
  "their",
  "then",
  "there",
  "these",
  "they",
  "this",
  "to",
  "was",
  "will",
  "with",
]);

// Approximates Unicode word segmentation (UAX #29) as Lucene's StandardTokenizer applies it:
// letters and digits run together; "." and "'" join letters to letters or digits to digits
// ("d.o.n", "l'eau", "3.5"); "," and ";" join digits ("1,200").
const WORD = /[\p{L}\p{N}_]+(?:(?:[.'\u2019](?=[\p{L}\p{N}]))[\p{L}\p{N}_]+|(?:(?<=\p{N})[,;](?=\p{N}))[\p{N}_]+)*/gu;
const POSSESSIVE = /['\u2019\uFF07][sS]$/;

// The term of each token the tokenizer cuts (null: none, for a stop word). Texts repeat
// their words: the possessive, the case and the stem are worked out once per distinct token.
const termOf = new Map<string, string | null>();
function term(token: string): string | null {
  let t = termOf.get(token);
  if (t === undefined) {
    const lower = token.replace(POSSESSIVE, "").toLowerCase();
    // Porter leaves tokens with digits alone in practice; the library lower-cases, which we already did.
    t = lower === "" || STOP_WORDS.has(lower) ? null : /^[a-z]+$/.test(lower) ? stemmer(lower) : lower;
    if (termOf.size < 200_000) termOf.set(token, t);
  }
  return t;
}

/** The analyzed terms of a text, in order. */
export function analyze(text: string): string[] {
  const out: string[] = [];
  // match() with a global pattern gives the matched strings alone, without the object per match of matchAll.
  for (const token of text.match(WORD) ?? []) {
    const t = term(token);
    if (t !== null) out.push(t);
  }
  return out;
}

// Lucene's SmallFloat.intToByte4 / byte4ToInt: lengths below 24 are exact, larger ones keep 4 bits.
function longToInt4(i: number): number {
  const numBits = 32 - Math.clz32(i);
  if (numBits < 4) return i;
  const shift = numBits - 4;
  return ((i >>> shift) & 0x07) | ((shift + 1) << 3);
}
function int4ToLong(i: number): number {
  const bits = i & 0x07;
  const shift = (i >>> 3) - 1;
  return shift === -1 ? bits : (bits | 0x08) * 2 ** shift;
}
const MAX_INT4 = longToInt4(0x7fffffff);
const NUM_FREE_VALUES = 255 - MAX_INT4;
export function encodeLength(i: number): number {
  return i < NUM_FREE_VALUES ? i : NUM_FREE_VALUES + longToInt4(i - NUM_FREE_VALUES);
}
export function decodeLength(b: number): number {
  return b < NUM_FREE_VALUES ? b : NUM_FREE_VALUES + int4ToLong(b - NUM_FREE_VALUES);
}

/**
 * What indexing works out from the texts alone, as plain arrays (it can be kept as JSON): each document's
 * length in terms; the terms in the order first met; and term t's postings, `docs` and `freqs` from
 * `offsets[t]` to `offsets[t + 1]`: the documents it is in (ascending) and its count in each.
 */
export interface CorpusAnalysis {
  lengths: number[];
  terms: string[];
  offsets: number[];
  docs: number[];
  freqs: number[];
}

/** The analysis of `texts`, as the index makes it. */
export function analyzeCorpus(texts: readonly string[]): CorpusAnalysis {
  const building = new Map<string, { docs: number[]; freqs: number[] }>();
  const lengths: number[] = [];
  texts.forEach((text, doc) => {
    const terms = analyze(text);
    lengths.push(terms.length);
    for (const t of terms) {
      let p = building.get(t);
      if (!p) building.set(t, (p = { docs: [], freqs: [] }));
      // A term met before in this document ends its postings: count it there (no map of counts per document).
      const last = p.docs.length - 1;
      if (last >= 0 && p.docs[last] === doc) p.freqs[last]++;
      else {
        p.docs.push(doc);
        p.freqs.push(1);
      }
    }
  });
  const analysis: CorpusAnalysis = { lengths, terms: [], offsets: [0], docs: [], freqs: [] };
  for (const [t, p] of building) {
    analysis.terms.push(t);
    for (let i = 0; i < p.docs.length; i++) {
      analysis.docs.push(p.docs[i]);
      analysis.freqs.push(p.freqs[i]);
    }
    analysis.offsets.push(analysis.docs.length);
  }
  return analysis;
}

/**
 * Whether `value` is an analysis of `size` documents that the index can trust: read back from a file, it
 * must be whole and consistent (each term's documents ascending, each document's counts summing to its length).
 */
export function isAnalysis(value: unknown, size: number): value is CorpusAnalysis {
  if (typeof value !== "object" || value === null) return false;
  const { lengths, terms, offsets, docs, freqs } = value as Partial<CorpusAnalysis>;
  if (![lengths, terms, offsets, docs, freqs].every(Array.isArray)) return false;
  if (lengths!.length !== size || offsets!.length !== terms!.length + 1 || docs!.length !== freqs!.length || offsets![0] !== 0) return false;
  if (offsets![terms!.length] !== docs!.length || new Set(terms).size !== terms!.length || !terms!.every((t) => typeof t === "string")) return false;
  const counted = new Array<number>(size).fill(0);
  for (let t = 0; t < terms!.length; t++) {
    const start = offsets![t];
    const end = offsets![t + 1];
    if (!Number.isInteger(end) || end <= start) return false;
    for (let i = start, previous = -1; i < end; i++) {
      const d = docs![i];
      const f = freqs![i];
      if (!Number.isInteger(d) || d <= previous || d >= size || !Number.isInteger(f) || f < 1) return false;
      counted[d] += f;
      previous = d;
    }
  }
  return lengths!.every((l, d) => l === counted[d]);
}

export interface SearchHit {
  readonly doc: number;
  readonly score: number;
}

/** Queries whose hits are kept (about 2 KB each at k = 50). */
const RECENT_QUERIES = 2048;

export class TextSearchIndex {
  readonly size: number;
  /** Each term's number: its postings are `docs` and `tfNorms` from `offsets[t]` to `offsets[t + 1]`. */
  private readonly termIds = new Map<string, number>();
  private readonly offsets: Int32Array;
  private readonly docs: Int32Array;
  /** freq · normInverse[doc] per posting: the document's part of BM25's term score, worked out once. */
  private readonly tfNorms: Float64Array;
  /** 1 / (k1 · (1 − b + b · dl / avgdl)) per document, as Lucene caches it. */
  private readonly normInverse: Float64Array;
  private readonly scores: Float64Array;
  /** The documents a query touched, in the order it touched them, and which they are (scratch of rank). */
  private readonly touched: Int32Array;
  private readonly isTouched: Uint8Array;
  /**
   * Recent queries' hits (least recently used first). A search is a pure function of the query, and
   * RL asks the same ones again and again: a GRPO group's rollouts of one task, sessions of a served env.
   */
  private readonly recent = new Map<string, readonly SearchHit[]>();
  readonly k1: number;
  readonly b: number;

  /** An index of `texts`, or of their analysis (`analyzeCorpus`: kept from an earlier index of the same texts). */
  constructor(corpus: readonly string[] | CorpusAnalysis, opts: { k1?: number; b?: number } = {}) {
    this.k1 = opts.k1 ?? 0.9;
    this.b = opts.b ?? 0.4;
    // Lucene's own bounds: outside them a term's score can be negative or NaN.
    if (!(Number.isFinite(this.k1) && this.k1 >= 0)) throw new RangeError(`BM25's k1 must be a finite number ≥ 0, got ${this.k1}`);
    if (!(this.b >= 0 && this.b <= 1)) throw new RangeError(`BM25's b must be in [0, 1], got ${this.b}`);
    const { lengths, terms, offsets, docs, freqs } = "terms" in corpus ? corpus : analyzeCorpus(corpus);
    this.size = lengths.length;
    let total = 0;
    for (const l of lengths) total += l;
    const avgdl = this.size > 0 ? Math.fround(total / this.size) : 1;
    this.normInverse = new Float64Array(this.size);
    for (let d = 0; d < this.size; d++) {
      const dl = decodeLength(encodeLength(lengths[d]));
      this.normInverse[d] = Math.fround(1 / (this.k1 * (1 - this.b + (this.b * dl) / avgdl)));
    }
    // One array of each for all terms: a pair of typed arrays per term cost more to make than the analysis.
    terms.forEach((t, i) => this.termIds.set(t, i));
    this.offsets = Int32Array.from(offsets);
    this.docs = Int32Array.from(docs);
    this.tfNorms = new Float64Array(docs.length);
    for (let i = 0; i < docs.length; i++) this.tfNorms[i] = freqs[i] * this.normInverse[docs[i]];
    this.scores = new Float64Array(this.size);
    this.touched = new Int32Array(this.size);
    this.isTouched = new Uint8Array(this.size);
  }

  /** Inverse document frequency as Lucene's BM25 computes it. */
  idf(term: string): number {
    const t = this.termIds.get(term);
    const df = t === undefined ? 0 : this.offsets[t + 1] - this.offsets[t];
    return Math.fround(Math.log(1 + (this.size - df + 0.5) / (df + 0.5)));
  }

  /**
   * The top `k` documents for a query, best first. A query term that repeats counts that many
   * times (Pyserini's bag-of-words query); a query with no terms finds nothing.
   */
  search(query: string, k: number): SearchHit[] {
    const key = `${k}\u0000${query}`;
    const known = this.recent.get(key);
    if (known) {
      this.recent.delete(key);
      this.recent.set(key, known);
      return known.slice();
    }
    const hits = this.rank(query, k);
    this.recent.set(key, hits);
    if (this.recent.size > RECENT_QUERIES) this.recent.delete(this.recent.keys().next().value as string);
    return hits.slice();
  }

  private rank(query: string, k: number): SearchHit[] {
    const qtf = new Map<string, number>();
    for (const t of analyze(query)) qtf.set(t, (qtf.get(t) ?? 0) + 1);
    const { scores, touched, isTouched, offsets, docs, tfNorms } = this;
    let n = 0;
    for (const [term, boost] of qtf) {
      const t = this.termIds.get(term);
      if (t === undefined) continue;
      const weight = boost * this.idf(term);
      for (let i = offsets[t], end = offsets[t + 1]; i < end; i++) {
        const d = docs[i];
        if (isTouched[d] === 0) {
          isTouched[d] = 1;
          touched[n++] = d;
        }
        scores[d] += weight - weight / (1 + tfNorms[i]);
      }
    }
    // The k best of the touched (score down, then document order) through a heap whose root is the
    // worst kept: a query touches hundreds of documents and shows 50, so most never become a hit.
    const size = !(k < n) ? n : Math.max(0, Math.floor(k));
    const heapDoc = new Int32Array(size);
    const heapScore = new Float64Array(size);
    let kept = 0;
    for (let t = 0; t < n; t++) {
      const d = touched[t];
      const s = Math.fround(scores[d]);
      scores[d] = 0;
      isTouched[d] = 0;
      if (kept < size) {
        // Sift up: the new entry rises while it is worse than its parent.
        let i = kept++;
        while (i > 0) {
          const parent = (i - 1) >> 1;
          if (!worse(s, d, heapScore[parent], heapDoc[parent])) break;
          heapScore[i] = heapScore[parent];
          heapDoc[i] = heapDoc[parent];
          i = parent;
        }
        heapScore[i] = s;
        heapDoc[i] = d;
      } else if (size > 0 && worse(heapScore[0], heapDoc[0], s, d)) {
        // Replace the root and sift down.
        let i = 0;
        for (;;) {
          const l = 2 * i + 1;
          if (l >= size) break;
          const r = l + 1;
          const c = r < size && worse(heapScore[r], heapDoc[r], heapScore[l], heapDoc[l]) ? r : l;
          if (!worse(heapScore[c], heapDoc[c], s, d)) break;
          heapScore[i] = heapScore[c];
          heapDoc[i] = heapDoc[c];
          i = c;
        }
        heapScore[i] = s;
        heapDoc[i] = d;
      }
    }
    const hits: SearchHit[] = [];
    for (let i = 0; i < kept; i++) hits.push({ doc: heapDoc[i], score: heapScore[i] });
    hits.sort((a, b) => b.score - a.score || a.doc - b.doc);
    return hits;
  }
}

/** Whether hit (s1, d1) ranks below hit (s2, d2): a lower score, or the same score and a later document. */
function worse(s1: number, d1: number, s2: number, d2: number): boolean {
  return s1 < s2 || (s1 === s2 && d1 > d2);
}
