import { createHash } from "node:crypto";
import { InvalidConfigError } from "../core/errors.ts";
import { l2Normalize, type Embedder } from "./embedder.ts";
import { EMBED_STATE_CHARS, transitionText } from "./transition-text.ts";

/**
 * The default embedder: no weights, no network. Feature hashing of words, word bigrams and
 * character trigrams (inside words): each occurrence adds its kind's weight times its inverse
 * document frequency to one of `dims` buckets with a hashed sign; the sum is L2-normalised. In a
 * transition text the action's features are hashed apart from the state's. The IDF table
 * (over 2^18 hashed features) is fitted on a corpus with `fit()` — a buffer fits it on its first
 * import and stores it, so the same buffer always embeds the same way; unfitted, every IDF is 1.
 */
export interface HashingEmbedderOptions {
  /** Vector length. @default 256 */
  dims?: number;
  /** IDF per hashed feature (length 2^18), from `fit()`. */
  idf?: Float32Array;
}

const IDF_BITS = 18;
const IDF_SIZE = 1 << IDF_BITS;
const WORD = 1;
const BIGRAM = 2;
const TRIGRAM = 3;
const KIND_WEIGHT = [0, 1.0, 0.7, 0.35];
const [, WORD_WEIGHT, BIGRAM_WEIGHT, TRIGRAM_WEIGHT] = KIND_WEIGHT;

function mix(h: number): number {
  // murmur3 finalizer: spreads FNV's low-entropy bits before we cut buckets from them.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

// 1 for characters that belong to words: ASCII letters and digits; other letters via the regex below.
const ASCII_WORD = new Uint8Array(128);
for (let c = 48; c <= 57; c++) ASCII_WORD[c] = 1;
for (let c = 97; c <= 122; c++) ASCII_WORD[c] = 1;
const NON_ASCII_WORD = /[\p{L}\p{N}]/u;
function isWordChar(c: number): boolean {
  return c < 128 ? ASCII_WORD[c] === 1 : NON_ASCII_WORD.test(String.fromCharCode(c));
}

const FNV = 0x811c9dc5;
const PRIME = 0x01000193;
const trigram = (a: number, b: number, c: number) => Math.imul(Math.imul(Math.imul(FNV ^ a, PRIME) ^ b, PRIME) ^ c, PRIME);

/**
 * Calls `visit(feature, kind)` for every feature occurrence of a text: each word, each pair of
 * neighbouring words, and each character trigram of " word " (boundary-marked, so prefixes and
 * suffixes count). Features are 32-bit hashes. `HashingEmbedder.segmentSum` repeats this loop with
 * the sum written in it (a callback per feature costs a third of an embedding; measured 5.6 against
 * 7.3 µs a WebShop pair): a change here goes there too, and hashing-embedder.test.ts's digests check both.
 */
function visitFeatures(text: string, visit: (feature: number, kind: number) => void, salt = 0): void {
  const lower = text.toLowerCase();
  const n = lower.length;
  let prevWord = 0;
  let havePrev = false;
  let i = 0;
  while (i < n) {
    let c = lower.charCodeAt(i);
    if (!isWordChar(c)) {
      i++;
      continue;
    }
    let h = FNV;
    let c1 = 32;
    let c2 = 32;
    let len = 0;
    while (i < n && isWordChar((c = lower.charCodeAt(i)))) {
      h = Math.imul(h ^ c, PRIME);
      if (len >= 1) visit(mix(trigram(c1, c2, c) ^ 0x3c6ef372 ^ salt), TRIGRAM);
      c1 = c2;
      c2 = c;
      len++;
      i++;
    }
    visit(mix(trigram(c1, c2, 32) ^ 0x3c6ef372 ^ salt), TRIGRAM);
    visit(mix(h ^ salt), WORD);
    if (havePrev) visit(mix(Math.imul(prevWord ^ 0x5bd1e995, PRIME) ^ h ^ 0x9e3779b9 ^ salt), BIGRAM);
    prevWord = h;
    havePrev = true;
  }
}

/**
 * Adds a feature's signed weight (kind weight × IDF) to its bucket of `v`. Sign and bucket come from
 * the 14 bits the IDF index does not use: the low one the sign, the others (< 8,192) a bucket through
 * `buckets`, their remainder by the vector's length looked up (a division per feature was a tenth
 * to a fifth of an embedding).
 */
function addFeature(v: Float32Array, idf: Float32Array, buckets: Uint16Array, f: number, weight: number): void {
  const w = weight * idf[f & (IDF_SIZE - 1)];
  const b = f >>> IDF_BITS;
  v[buckets[b >>> 1]] += b & 1 ? -w : w;
}
/** The IDF of an unfitted embedder: 1 for every feature (a weight × 1 is the weight, to the bit). */
let unitIdf: Float32Array | undefined;

/** Marks the action segment of a transition text (see `transitionText`). */
const ACTION_MARK = "\n>>> ";
/** Action features are hashed apart from state features, so "buy now" on a page and in an action differ. */
const ACTION_SALT = 0x27d4eb2f;
/** A buffer fits its IDF on its first batch only from this many transitions on (fewer say too little). */
export const IDF_FIT_MIN_TRANSITIONS = 100;
const SEGMENT_CACHE = 4096;

export class HashingEmbedder implements Embedder {
  readonly dims: number;
  readonly id: string;
  readonly idf: Float32Array | null;

  constructor(opts: HashingEmbedderOptions = {}) {
    const dims = opts.dims ?? 256;
    if (!Number.isInteger(dims) || dims < 8 || dims > 4096) throw new InvalidConfigError(`hashing embedder dims must be an integer in 8..4096, got ${dims}`);
    if (opts.idf && opts.idf.length !== IDF_SIZE)
      throw new InvalidConfigError(`hashing embedder IDF table must have ${IDF_SIZE} entries, got ${opts.idf.length}`);
    this.dims = dims;
    this.idf = opts.idf ?? null;
    this.buckets = new Uint16Array(1 << (31 - IDF_BITS)).map((_, i) => i % dims);
    const fingerprint = this.idf
      ? createHash("sha256")
          .update(new Uint8Array(this.idf.buffer, this.idf.byteOffset, this.idf.byteLength))
          .digest("hex")
          .slice(0, 12)
      : "none";
    this.id = `hashing-v3:dims=${dims}:idf=${fingerprint}`;
  }

  /** A copy of this embedder with IDF weights fitted on `texts` (smoothed: ln((1 + N) / (1 + df)) + 1). */
  fit(texts: Iterable<string>): HashingEmbedder {
    const df = new Uint32Array(IDF_SIZE);
    const seenIn = new Uint32Array(IDF_SIZE); // the last document (1-based) a feature was counted for
    let docs = 0;
    for (const t of texts) {
      const doc = ++docs;
      const count = (f: number) => {
        const b = f & (IDF_SIZE - 1);
        if (seenIn[b] !== doc) {
          seenIn[b] = doc;
          df[b]++;
        }
      };
      const cut = t.lastIndexOf(ACTION_MARK);
      if (cut < 0) visitFeatures(t, count);
      else {
        visitFeatures(t.slice(0, cut), count);
        visitFeatures(t.slice(cut + ACTION_MARK.length), count, ACTION_SALT);
      }
    }
    const idf = new Float32Array(IDF_SIZE);
    for (let i = 0; i < IDF_SIZE; i++) idf[i] = Math.log((1 + docs) / (1 + df[i])) + 1;
    return new HashingEmbedder({ dims: this.dims, idf });
  }

  private segments = new Map<string, Float32Array>();
  /** A feature's bucket number (< 8,192: see `addFeature`) to its bucket of the vector, the number modulo `dims`. */
  private readonly buckets: Uint16Array;

  /**
   * The unnormalised feature sum of one segment of text: `visitFeatures` with the sum written in
   * its loop (the same features, weights and order of additions, so the same float32 sums).
   */
  private segmentSum(text: string, salt: number): Float32Array {
    const v = new Float32Array(this.dims);
    const idf = this.idf ?? (unitIdf ??= new Float32Array(IDF_SIZE).fill(1));
    const buckets = this.buckets;
    const lower = text.toLowerCase();
    const n = lower.length;
    const tri = 0x3c6ef372 ^ salt;
    let prevWord = 0;
    let havePrev = false;
    let i = 0;
    while (i < n) {
      let c = lower.charCodeAt(i);
      if (!isWordChar(c)) {
        i++;
        continue;
      }
      let h = FNV;
      let c1 = 32;
      let c2 = 32;
      let len = 0;
      while (i < n && isWordChar((c = lower.charCodeAt(i)))) {
        h = Math.imul(h ^ c, PRIME);
        if (len >= 1) addFeature(v, idf, buckets, mix(trigram(c1, c2, c) ^ tri), TRIGRAM_WEIGHT);
        c1 = c2;
        c2 = c;
        len++;
        i++;
      }
      addFeature(v, idf, buckets, mix(trigram(c1, c2, 32) ^ tri), TRIGRAM_WEIGHT);
      addFeature(v, idf, buckets, mix(h ^ salt), WORD_WEIGHT);
      if (havePrev) addFeature(v, idf, buckets, mix(Math.imul(prevWord ^ 0x5bd1e995, PRIME) ^ h ^ 0x9e3779b9 ^ salt), BIGRAM_WEIGHT);
      prevWord = h;
      havePrev = true;
    }
    return v;
  }

  /**
   * One text's vector: the sum of its features' signed weights (kind weight × IDF), unit length.
   * Text after the last "\n>>> " is the action segment, hashed apart from the state before it;
   * state sums are cached, since a state recurs under many actions.
   */
  embedOne(text: string): Float32Array {
    const cut = text.lastIndexOf(ACTION_MARK);
    if (cut < 0) return l2Normalize(this.segmentSum(text, 0));
    const state = text.slice(0, cut);
    let sum = this.segments.get(state);
    if (!sum) {
      sum = this.segmentSum(state, 0);
      if (this.segments.size >= SEGMENT_CACHE) this.segments.clear();
      this.segments.set(state, sum);
    }
    const v = this.segmentSum(text.slice(cut + ACTION_MARK.length), ACTION_SALT);
    for (let i = 0; i < v.length; i++) v[i] += sum[i];
    return l2Normalize(v);
  }

  /**
   * `embedOne(transitionText(state, action))` without building that text: the state's first
   * 2,000 characters are looked up in the cache as they are. An action holding the mark itself
   * goes the long way (its text would be cut at the mark inside it).
   */
  embedPair(state: string, action: string): Float32Array {
    if (action.includes(ACTION_MARK)) return this.embedOne(transitionText(state, action));
    const s = state.length > EMBED_STATE_CHARS ? state.slice(0, EMBED_STATE_CHARS) : state;
    let sum = this.segments.get(s);
    if (!sum) {
      sum = this.segmentSum(s, 0);
      if (this.segments.size >= SEGMENT_CACHE) this.segments.clear();
      this.segments.set(s, sum);
    }
    const v = this.segmentSum(action, ACTION_SALT);
    for (let i = 0; i < v.length; i++) v[i] += sum[i];
    return l2Normalize(v);
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((t) => this.embedOne(t));
  }
}
