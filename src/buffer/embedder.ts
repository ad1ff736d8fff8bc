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

/** Cosine similarity of two unit vectors. */
export function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}
