// What the benches say of a sample of timings.

/** The q-quantile of `xs` by nearest rank; NaN for none. */
export const quantile = (xs: ArrayLike<number>, q: number): number => {
  if (xs.length === 0) return NaN;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

/** The middle value of `xs` (for an even count, the mean of the two middle ones); NaN for none. */
export const median = (xs: ArrayLike<number>): number => {
  if (xs.length === 0) return NaN;
  const s = Float64Array.from(xs).sort();
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};
