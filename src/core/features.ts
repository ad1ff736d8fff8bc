import type { PolicyInput } from "./policy.ts";

/** A sparse feature vector: hashed indices (sorted, unique) and their values. */
export interface SparseVector {
  idx: Int32Array;
  val: Float32Array;
}

/** A step as the neural policy scores it: each candidate action's features and the state's. */
export interface FeaturizedStep {
  /** The candidate actions, free text filled in. */
  actions: string[];
  candidates: SparseVector[];
  /** Features of the state alone (the value head's input). */
  state: SparseVector;
}

/**
 * An env's own features for the neural policy (its plug point `EnvSpec.features`), for states in its
 * format where the generic text features read the wrong things.
 */
export interface PolicyFeatures {
  /** What the features are, for messages (e.g. "myenv-features"). */
  readonly name: string;
  /** The step's features, or undefined for a state not in the env's format (the generic text features then apply). */
  featurize(input: PolicyInput, dim: number): FeaturizedStep | undefined;
}

const FNV_OFFSET = 0x811c9dc5;

// Called as a function, not read off each string: the names' pieces are strings of many kinds (literal,
// joined, sliced, two-byte), and `s.length` and `s.charCodeAt` read per character went through V8's
// megamorphic property lookup, 30% of `featurize`'s time (the same hashes).
const charCodeAt = String.prototype.charCodeAt;

/** 32-bit FNV-1a of `s`, continued from `h` (hashing two strings in turn hashes their concatenation). */
function fnv(h: number, s: string): number {
  const n = s.length;
  for (let i = 0; i < n; i++) {
    h ^= charCodeAt.call(s, i);
    h = Math.imul(h, 0x01000193);
  }
  return h;
}

/** Builds a sparse vector from named features, hashed into `dim` buckets (values of a name add up). */
export class FeatureBuilder {
  // Indices and their values side by side: a vector has ~15 entries, where a Map's hashing cost more
  // than a scan for a repeated index.
  private readonly idx: number[] = [];
  private readonly val: number[] = [];
  constructor(private readonly dim: number) {}
  add(name: string, value = 1): void {
    if (value === 0) return;
    this.addHash(fnv(FNV_OFFSET, name) >>> 0, value);
  }
  /**
   * `add` of the name the template makes, with value 1, hashed piece by piece without building the
   * name: b.named`label|${k}|${label}` is b.add(`label|${k}|${label}`). A step's candidates have ~15
   * features each, and building their names was a tenth of a training step.
   */
  named(strings: TemplateStringsArray, ...values: (string | number)[]): void {
    let h = fnv(FNV_OFFSET, strings[0]);
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      h = fnv(fnv(h, typeof v === "string" ? v : String(v)), strings[i + 1]);
    }
    this.addHash(h >>> 0, 1);
  }
  /** Adds a built vector's entries (of this dimension), values of an index adding up. */
  addVector(v: SparseVector): void {
    for (let j = 0; j < v.idx.length; j++) this.addHash(v.idx[j], v.val[j]);
  }
  private addHash(h: number, value: number): void {
    const i = h % this.dim;
    const at = this.idx.indexOf(i);
    if (at >= 0) this.val[at] += value;
    else {
      this.idx.push(i);
      this.val.push(value);
    }
  }
  build(): SparseVector {
    // Sorted by index (insertion sort: a handful of entries), values alongside.
    const n = this.idx.length;
    const idx = new Int32Array(n);
    const val = new Float32Array(n);
    for (let k = 0; k < n; k++) {
      const i = this.idx[k];
      const v = this.val[k];
      let j = k;
      for (; j > 0 && idx[j - 1] > i; j--) {
        idx[j] = idx[j - 1];
        val[j] = val[j - 1];
      }
      idx[j] = i;
      val[j] = v;
    }
    return { idx, val };
  }
}

/** The index of the first edge `x` does not pass (0..edges.length). */
export const bucket = (x: number, edges: number[]) => {
  let b = 0;
  while (b < edges.length && x > edges[b]) b++;
  return b;
};
