/** Turns texts into unit-length vectors. Small on purpose: any embedding backend fits behind it. */
export interface Embedder {
  /** Names the model and its settings; a buffer refuses vectors from an embedder with another id. */
  readonly id: string;
  /** Vector length (known after the first call for remote models). */
  readonly dims: number;
  embed(texts: string[]): Promise<Float32Array[]>;
}

/** Scales a vector to unit length in place (a zero vector stays zero). */
export function l2Normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i] * v[i];
  if (s > 0) {
    const inv = 1 / Math.sqrt(s);
    for (let i = 0; i < v.length; i++) v[i] *= inv;
  }
  return v;
}

/** Cosine similarity of two unit vectors: the score a buffer's exact search gives, to the bit (`dotAt`). */
export function dot(a: Float32Array, b: Float32Array): number {
  return dotAt(a, 0, b, a.length);
}

/**
 * The dot product of `d` numbers of `a` from `at` with `b`, in doubles, in four running sums: every
 * exact score of a search (its rows scored in JS, the search thread's, a filter's scan) comes from
 * here, so that equal vectors tie and a score recomputed with `dot` is the search's. One chain of
 * additions took twice as long. The products of float32s are exact in doubles: only the sum's
 * rounding (~1e-16) differs from another order.
 */
export function dotAt(a: Float32Array, at: number, b: Float32Array, d: number): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let j = 0;
  for (; j + 3 < d; j += 4) {
    s0 += a[at + j] * b[j];
    s1 += a[at + j + 1] * b[j + 1];
    s2 += a[at + j + 2] * b[j + 2];
    s3 += a[at + j + 3] * b[j + 3];
  }
  for (; j < d; j++) s0 += a[at + j] * b[j];
  return s0 + s1 + (s2 + s3);
}
