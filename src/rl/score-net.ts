import type { Rng } from "../core/index.ts";
import type { SparseVector } from "../core/index.ts";

/**
 * A small wide-and-deep scorer over sparse hashed features, with its gradients and a lazy Adam:
 *
 *   score(x) = w · tanh(Σ_f x_f E[f] + b1) + b0 + Σ_f x_f u[f]
 *
 * Written by hand on typed arrays: a forward pass of one candidate touches only its ~40 rows of E,
 * and the optimiser updates only rows the batch touched (as TensorFlow's LazyAdam and PyTorch's
 * SparseAdam do), so a step costs in proportion to the features seen, not to the table's size.
 */
export class ScoreNet {
  readonly E: Float32Array;
  readonly u: Float32Array;
  readonly b1: Float32Array;
  readonly w: Float32Array;
  readonly b0 = new Float32Array(1);

  private readonly gE: Float32Array;
  private readonly gu: Float32Array;
  private readonly gb1: Float32Array;
  private readonly gw: Float32Array;
  private readonly gb0 = new Float32Array(1);
  /** Adam moments, one pair per parameter array. */
  private readonly m: Float32Array[];
  private readonly v: Float32Array[];
  private adamStep = 0;
  private readonly touched: Uint8Array;
  private touchedList: number[] = [];
  private readonly dz: Float64Array;

  /** `init`: the initial weights' draws (normal, times each scale); null: all zero, for weights set next (a load, a copy). */
  constructor(
    readonly dim: number,
    readonly hidden: number,
    init: { rng: Rng; embedScale: number; outScale: number } | null,
  ) {
    this.E = new Float32Array(dim * hidden);
    this.u = new Float32Array(dim);
    this.b1 = new Float32Array(hidden);
    this.w = new Float32Array(hidden);
    if (init) {
      for (let i = 0; i < this.E.length; i++) this.E[i] = normal(init.rng) * init.embedScale;
      for (let i = 0; i < hidden; i++) this.w[i] = normal(init.rng) * init.outScale;
    }
    this.gE = new Float32Array(this.E.length);
    this.gu = new Float32Array(dim);
    this.gb1 = new Float32Array(hidden);
    this.gw = new Float32Array(hidden);
    this.m = this.params().map((p) => new Float32Array(p.length));
    this.v = this.params().map((p) => new Float32Array(p.length));
    this.touched = new Uint8Array(dim);
    this.dz = new Float64Array(hidden);
  }

  /** The parameter arrays, in a fixed order (save/load and Adam moments follow it). */
  params(): Float32Array[] {
    return [this.E, this.u, this.b1, this.w, this.b0];
  }

  /** The score of `x`; writes the hidden activations into `h`. */
  forward(x: SparseVector, h: Float64Array): number {
    const H = this.hidden;
    let linear: number;
    if (H === 16) linear = this.sums16(x, h);
    else {
      const E = this.E;
      for (let j = 0; j < H; j++) h[j] = this.b1[j];
      linear = this.b0[0];
      for (let n = 0; n < x.idx.length; n++) {
        const f = x.idx[n];
        const xv = x.val[n];
        linear += xv * this.u[f];
        const row = f * H;
        for (let j = 0; j < H; j++) h[j] += xv * E[row + j];
      }
    }
    let score = linear;
    for (let j = 0; j < H; j++) {
      const a = Math.tanh(h[j]);
      h[j] = a;
      score += this.w[j] * a;
    }
    return score;
  }

  /**
   * `forward`'s sums for 16 hidden units (the default), into `h`, returning the linear part: the
   * activations summed in locals (the generic loop loads and stores each of `h` again for every
   * feature, and took twice as long). The same sums in the same order, so the same scores to the bit.
   */
  private sums16(x: SparseVector, h: Float64Array): number {
    const E = this.E;
    const u = this.u;
    const b = this.b1;
    let h0 = b[0],
      h1 = b[1],
      h2 = b[2],
      h3 = b[3],
      h4 = b[4],
      h5 = b[5],
      h6 = b[6],
      h7 = b[7];
    let h8 = b[8],
      h9 = b[9],
      h10 = b[10],
      h11 = b[11],
      h12 = b[12],
      h13 = b[13],
      h14 = b[14],
      h15 = b[15];
    let linear = this.b0[0];
    const idx = x.idx;
    const val = x.val;
    for (let n = 0; n < idx.length; n++) {
      const f = idx[n];
      const xv = val[n];
      linear += xv * u[f];
      const r = f * 16;
      h0 += xv * E[r];
      h1 += xv * E[r + 1];
      h2 += xv * E[r + 2];
      h3 += xv * E[r + 3];
      h4 += xv * E[r + 4];
      h5 += xv * E[r + 5];
      h6 += xv * E[r + 6];
      h7 += xv * E[r + 7];
      h8 += xv * E[r + 8];
      h9 += xv * E[r + 9];
      h10 += xv * E[r + 10];
      h11 += xv * E[r + 11];
      h12 += xv * E[r + 12];
      h13 += xv * E[r + 13];
      h14 += xv * E[r + 14];
      h15 += xv * E[r + 15];
    }
    h[0] = h0;
    h[1] = h1;
    h[2] = h2;
    h[3] = h3;
    h[4] = h4;
    h[5] = h5;
    h[6] = h6;
    h[7] = h7;
    h[8] = h8;
    h[9] = h9;
    h[10] = h10;
    h[11] = h11;
    h[12] = h12;
    h[13] = h13;
    h[14] = h14;
    h[15] = h15;
    return linear;
  }

  /** Accumulates d(loss)/d(params) given d(loss)/d(score) and the activations of `forward(x)` (read, never written: `NeuralPolicy.evaluate` shares them). */
  backward(x: SparseVector, h: Float64Array, dScore: number): void {
    if (dScore === 0) return;
    const H = this.hidden;
    this.gb0[0] += dScore;
    const dz = this.dz;
    for (let j = 0; j < H; j++) {
      this.gw[j] += dScore * h[j];
      dz[j] = dScore * this.w[j] * (1 - h[j] * h[j]);
      this.gb1[j] += dz[j];
    }
    if (H === 16) {
      this.backwardRows16(x, dScore);
      return;
    }
    for (let n = 0; n < x.idx.length; n++) {
      const f = x.idx[n];
      const xv = x.val[n];
      if (!this.touched[f]) {
        this.touched[f] = 1;
        this.touchedList.push(f);
      }
      this.gu[f] += dScore * xv;
      const row = f * H;
      for (let j = 0; j < H; j++) this.gE[row + j] += xv * dz[j];
    }
  }

  /** `backward`'s rows of E for 16 hidden units, `dz` read once into locals (as `sums16`; the same sums). */
  private backwardRows16(x: SparseVector, dScore: number): void {
    const dz = this.dz;
    const d0 = dz[0],
      d1 = dz[1],
      d2 = dz[2],
      d3 = dz[3],
      d4 = dz[4],
      d5 = dz[5],
      d6 = dz[6],
      d7 = dz[7];
    const d8 = dz[8],
      d9 = dz[9],
      d10 = dz[10],
      d11 = dz[11],
      d12 = dz[12],
      d13 = dz[13],
      d14 = dz[14],
      d15 = dz[15];
    const gE = this.gE;
    const gu = this.gu;
    const touched = this.touched;
    const idx = x.idx;
    const val = x.val;
    for (let n = 0; n < idx.length; n++) {
      const f = idx[n];
      const xv = val[n];
      if (!touched[f]) {
        touched[f] = 1;
        this.touchedList.push(f);
      }
      gu[f] += dScore * xv;
      const r = f * 16;
      gE[r] += xv * d0;
      gE[r + 1] += xv * d1;
      gE[r + 2] += xv * d2;
      gE[r + 3] += xv * d3;
      gE[r + 4] += xv * d4;
      gE[r + 5] += xv * d5;
      gE[r + 6] += xv * d6;
      gE[r + 7] += xv * d7;
      gE[r + 8] += xv * d8;
      gE[r + 9] += xv * d9;
      gE[r + 10] += xv * d10;
      gE[r + 11] += xv * d11;
      gE[r + 12] += xv * d12;
      gE[r + 13] += xv * d13;
      gE[r + 14] += xv * d14;
      gE[r + 15] += xv * d15;
    }
  }

  /** Sum of squared gradient entries (for global-norm clipping across nets). */
  gradSquaredNorm(): number {
    const H = this.hidden;
    let s = this.gb0[0] ** 2;
    for (let j = 0; j < H; j++) s += this.gb1[j] ** 2 + this.gw[j] ** 2;
    for (const f of this.touchedList) {
      s += this.gu[f] ** 2;
      for (let j = 0; j < H; j++) s += this.gE[f * H + j] ** 2;
    }
    return s;
  }

  /** One Adam step on the touched rows and the dense parameters (gradients scaled by `scale`), then clears the gradients. */
  adam(lr: number, scale: number, beta1 = 0.9, beta2 = 0.999, eps = 1e-8): void {
    this.adamStep++;
    const c1 = 1 - beta1 ** this.adamStep;
    const c2 = 1 - beta2 ** this.adamStep;
    const [mE, mu, mb1, mw, mb0] = this.m;
    const [vE, vu, vb1, vw, vb0] = this.v;
    // Inlined per array: this loop runs over every touched row of the table.
    const lrc = lr / c1;
    const adamRange = (p: Float32Array, g: Float32Array, m: Float32Array, v: Float32Array, from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const gi = g[i] * scale;
        g[i] = 0;
        const mi = beta1 * m[i] + (1 - beta1) * gi;
        const vi = beta2 * v[i] + (1 - beta2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] -= (lrc * mi) / (Math.sqrt(vi / c2) + eps);
      }
    };
    const H = this.hidden;
    for (const f of this.touchedList) {
      adamRange(this.u, this.gu, mu, vu, f, f + 1);
      adamRange(this.E, this.gE, mE, vE, f * H, (f + 1) * H);
      this.touched[f] = 0;
    }
    this.touchedList = [];
    adamRange(this.b1, this.gb1, mb1, vb1, 0, H);
    adamRange(this.w, this.gw, mw, vw, 0, H);
    adamRange(this.b0, this.gb0, mb0, vb0, 0, 1);
  }

  /** The accumulated gradients, in the order of `params()` (for inspection and gradient checks). */
  grads(): Float32Array[] {
    return [this.gE, this.gu, this.gb1, this.gw, this.gb0];
  }

  /** Everything that determines future behaviour: parameters, Adam moments and step. */
  state(): { arrays: Float32Array[]; adamStep: number } {
    return { arrays: [...this.params(), ...this.m, ...this.v], adamStep: this.adamStep };
  }

  setState(arrays: Float32Array[], adamStep: number): void {
    const mine = this.state().arrays;
    mine.forEach((a, i) => a.set(arrays[i]));
    this.adamStep = adamStep;
  }

  /** A copy: the same parameters, Adam moments and step, no gradient pending. */
  copy(): ScoreNet {
    const c = new ScoreNet(this.dim, this.hidden, null);
    c.setState(this.state().arrays, this.adamStep);
    return c;
  }
}

/** A standard normal draw (Box–Muller). */
export function normal(rng: Rng): number {
  const u1 = 1 - rng.random();
  const u2 = rng.random();
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}

/**
 * Several ScoreNets of one shape evaluated on the same input at once (an ensemble's heads), their
 * tables interleaved by feature: a feature's rows of every net lie side by side, so a forward pass
 * reads one block per feature instead of one row in each net's table. Gives exactly the nets' own
 * scores (each sum is taken in the same order). A copy: remake it after the nets change.
 */
export class FusedScoreNets {
  private readonly n: number;
  private readonly H: number;
  private readonly E: Float32Array;
  private readonly u: Float32Array;
  private readonly b1: Float64Array;
  private readonly w: Float32Array;
  private readonly b0: Float64Array;
  private readonly h: Float64Array;
  private readonly linear: Float64Array;

  constructor(nets: readonly ScoreNet[]) {
    const n = nets.length;
    const { dim, hidden: H } = nets[0];
    if (nets.some((x) => x.dim !== dim || x.hidden !== H)) throw new Error("FusedScoreNets: the nets differ in shape");
    this.n = n;
    this.H = H;
    this.E = new Float32Array(dim * n * H);
    this.u = new Float32Array(dim * n);
    // Copied element by element: a view per feature and net (164k for the learned model's 20 nets of
    // 8,192 features) took 50-70 ms of a run's main thread at its first estimate.
    const { E, u } = this;
    nets.forEach((net, k) => {
      const src = net.E;
      for (let f = 0; f < dim; f++) {
        const from = f * H;
        const to = (f * n + k) * H;
        for (let j = 0; j < H; j++) E[to + j] = src[from + j];
        u[f * n + k] = net.u[f];
      }
    });
    this.b1 = Float64Array.from(nets.flatMap((x) => [...x.b1]));
    this.w = Float32Array.from(nets.flatMap((x) => [...x.w]));
    this.b0 = Float64Array.from(nets.map((x) => x.b0[0]));
    this.h = new Float64Array(n * H);
    this.linear = new Float64Array(n);
  }

  /** Each net's score of `x`, in the nets' order, into `out`. */
  forward(x: SparseVector, out: Float64Array): Float64Array {
    const { n, H, E, u, h, linear } = this;
    const width = n * H;
    h.set(this.b1);
    linear.set(this.b0);
    for (let i = 0; i < x.idx.length; i++) {
      const f = x.idx[i];
      const xv = x.val[i];
      const ur = f * n;
      for (let k = 0; k < n; k++) linear[k] += xv * u[ur + k];
      const row = f * width;
      for (let j = 0; j < width; j++) h[j] += xv * E[row + j];
    }
    for (let k = 0; k < n; k++) {
      let score = linear[k];
      for (let j = 0; j < H; j++) score += this.w[k * H + j] * Math.tanh(h[k * H + j]);
      out[k] = score;
    }
    return out;
  }
}
