import { describeValue } from "./errors.ts";
/**
 * A seeded random number generator: MT19937 with CPython's seeding and its `random()`,
 * `getrandbits`, `_randbelow`, `shuffle`, `sample` and `uniform` algorithms, bit for bit. Being
 * CPython-exact lets environments reproduce reference implementations written in Python (a
 * benchmark's goal shuffle and prices), and gives one deterministic source of randomness everywhere else.
 */
const N = 624;
const M = 397;

export class Rng {
  private readonly mt = new Uint32Array(N);
  private mti = N + 1;

  constructor(seed = 0) {
    this.seed(seed);
  }

  /** CPython `random.seed(int)`: the absolute value, split into 32-bit words, little end first. */
  seed(seed: number): void {
    if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be a safe integer, got ${describeValue(seed)}`);
    let n = Math.abs(seed);
    const key: number[] = [];
    do {
      key.push(n % 0x100000000);
      n = Math.floor(n / 0x100000000);
    } while (n > 0);
    this.initByArray(key);
  }

  private initGenrand(s: number): void {
    const mt = this.mt;
    mt[0] = s >>> 0;
    for (let i = 1; i < N; i++) {
      const prev = mt[i - 1] ^ (mt[i - 1] >>> 30);
      mt[i] = (Math.imul(1812433253, prev) + i) >>> 0;
    }
    this.mti = N;
  }

  private initByArray(key: number[]): void {
    const mt = this.mt;
    this.initGenrand(19650218);
    let i = 1;
    let j = 0;
    for (let k = Math.max(N, key.length); k > 0; k--) {
      const prev = mt[i - 1] ^ (mt[i - 1] >>> 30);
      mt[i] = ((mt[i] ^ Math.imul(prev, 1664525)) + key[j] + j) >>> 0;
      i++;
      j++;
      if (i >= N) {
        mt[0] = mt[N - 1];
        i = 1;
      }
      if (j >= key.length) j = 0;
    }
    for (let k = N - 1; k > 0; k--) {
      const prev = mt[i - 1] ^ (mt[i - 1] >>> 30);
      mt[i] = ((mt[i] ^ Math.imul(prev, 1566083941)) - i) >>> 0;
      i++;
      if (i >= N) {
        mt[0] = mt[N - 1];
        i = 1;
      }
    }
    mt[0] = 0x80000000;
  }

  /** The next raw 32-bit output. */
  nextUint32(): number {
    const mt = this.mt;
    if (this.mti >= N) {
      let kk = 0;
      for (; kk < N - M; kk++) {
        const y = (mt[kk] & 0x80000000) | (mt[kk + 1] & 0x7fffffff);
        mt[kk] = mt[kk + M] ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
      }
      for (; kk < N - 1; kk++) {
        const y = (mt[kk] & 0x80000000) | (mt[kk + 1] & 0x7fffffff);
        mt[kk] = mt[kk + (M - N)] ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
      }
      const y = (mt[N - 1] & 0x80000000) | (mt[0] & 0x7fffffff);
      mt[N - 1] = mt[M - 1] ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
      this.mti = 0;
    }
    let y = mt[this.mti++];
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /** A float in [0, 1) with 53 random bits (CPython `random()`). */
  random(): number {
    const a = this.nextUint32() >>> 5;
    const b = this.nextUint32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }

  /** `k` random bits, k in 1..32 (CPython `getrandbits` for small k). */
  getrandbits(k: number): number {
    if (k < 1 || k > 32) throw new RangeError(`getrandbits supports 1..32 bits, got ${k}`);
    return this.nextUint32() >>> (32 - k);
  }

  /** A uniform integer in [0, n) by rejection sampling (CPython `_randbelow`). */
  randbelow(n: number): number {
    if (!Number.isInteger(n) || n <= 0) throw new RangeError(`randbelow needs a positive integer, got ${n}`);
    if (n > 0x100000000) {
      // Beyond 32 bits CPython draws wider words; we only need the float path here.
      return Math.floor(this.random() * n);
    }
    const k = 32 - Math.clz32(n);
    let r = this.getrandbits(k);
    while (r >= n) r = this.getrandbits(k);
    return r;
  }

  /** A uniform integer in [lo, hi] inclusive. */
  int(lo: number, hi: number): number {
    return lo + this.randbelow(hi - lo + 1);
  }

  /** CPython `uniform(a, b)`. */
  uniform(a: number, b: number): number {
    return a + (b - a) * this.random();
  }

  /** One element, uniformly. */
  choice<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError("choice from an empty list");
    return items[this.randbelow(items.length)];
  }

  /** CPython `shuffle`, in place. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.randbelow(i + 1);
      const t = items[i];
      items[i] = items[j];
      items[j] = t;
    }
    return items;
  }

  /** CPython `sample(population, k)`: k distinct elements, in selection order. */
  sample<T>(population: readonly T[], k: number): T[] {
    const n = population.length;
    if (k < 0 || k > n) throw new RangeError(`sample larger than population or negative (k=${k}, n=${n})`);
    const result: T[] = new Array(k);
    let setsize = 21;
    if (k > 5) setsize += 4 ** Math.ceil(Math.log(k * 3) / Math.log(4));
    if (n <= setsize) {
      const pool = population.slice();
      for (let i = 0; i < k; i++) {
        const j = this.randbelow(n - i);
        result[i] = pool[j];
        pool[j] = pool[n - i - 1];
      }
    } else {
      const selected = new Set<number>();
      for (let i = 0; i < k; i++) {
        let j = this.randbelow(n);
        while (selected.has(j)) j = this.randbelow(n);
        selected.add(j);
        result[i] = population[j];
      }
    }
    return result;
  }

  /** An independent generator derived from this one (for per-episode streams). */
  fork(): Rng {
    return new Rng(this.nextUint32() * 0x200000 + (this.nextUint32() >>> 11));
  }
}
