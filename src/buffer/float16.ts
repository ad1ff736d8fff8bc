/**
 * Embeddings are stored as IEEE half floats: half the disk and I/O of float32, and for unit
 * vectors a cosine error below 1e-3 (searches rank the stored vectors exactly).
 */
function toHalf(bits: number): number {
  const sign = (bits >>> 16) & 0x8000;
  const exp = ((bits >>> 23) & 0xff) - 112; // rebias 127 → 15
  const mant = bits & 0x7fffff;
  if (exp >= 31) return sign | 0x7c00 | (((bits >>> 23) & 0xff) === 0xff && mant ? 0x200 : 0); // inf / NaN
  if (exp <= 0) {
    if (exp < -10) return sign; // underflows to zero
    const m = (mant | 0x800000) >>> (1 - exp);
    return sign | ((m + 0x1000) >>> 13); // subnormal, rounded
  }
  return sign | ((((exp << 23) | mant) + 0x1000) >>> 13); // rounding may carry into the exponent, as it should
}

const HALF_TO_FLOAT = new Float32Array(65536);
for (let h = 0; h < 65536; h++) {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  HALF_TO_FLOAT[h] = exp === 0 ? sign * mant * 2 ** -24 : exp === 31 ? (mant ? NaN : sign * Infinity) : sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

export function encodeHalf(v: Float32Array): Buffer {
  const bits = new Uint32Array(v.buffer, v.byteOffset, v.length);
  const out = Buffer.allocUnsafe(v.length * 2);
  for (let i = 0; i < v.length; i++) {
    const h = toHalf(bits[i]);
    out[2 * i] = h & 0xff;
    out[2 * i + 1] = h >>> 8;
  }
  return out;
}

export function decodeHalf(b: Uint8Array, into?: Float32Array): Float32Array {
  const n = b.byteLength >>> 1;
  const out = into ?? new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = HALF_TO_FLOAT[b[2 * i] | (b[2 * i + 1] << 8)];
  return out;
}
