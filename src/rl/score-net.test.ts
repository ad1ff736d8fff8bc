import assert from "node:assert/strict";
import { test } from "node:test";
import { Rng } from "../core/index.ts";
import { FusedScoreNets, ScoreNet } from "./score-net.ts";

test("fused nets score exactly as each net alone, and are a copy the nets' later changes do not reach", () => {
  const rng = new Rng(3);
  const dim = 64;
  const nets = Array.from({ length: 6 }, () => new ScoreNet(dim, 5, { rng, embedScale: 0.5, outScale: 0.7 }));
  for (const net of nets) {
    for (const p of net.params()) for (let i = 0; i < p.length; i++) p[i] += (rng.random() - 0.5) * 0.3; // biases and u too
  }
  const fused = new FusedScoreNets(nets);
  const h = new Float64Array(5);
  const out = new Float64Array(nets.length);
  for (let t = 0; t < 50; t++) {
    const idx = Int32Array.from(new Set(Array.from({ length: 1 + rng.randbelow(20) }, () => rng.randbelow(dim)))).sort();
    const x = { idx, val: Float32Array.from(idx, () => rng.random() * 2 - 1) };
    fused.forward(x, out);
    nets.forEach((net, k) => assert.equal(out[k], net.forward(x, h), `net ${k}, input ${t}`));
  }
  const x = { idx: Int32Array.from([1, 7]), val: Float32Array.from([1, 0.5]) };
  const before = fused.forward(x, new Float64Array(nets.length))[2];
  nets[2].E[7 * 5] += 1;
  assert.equal(fused.forward(x, new Float64Array(nets.length))[2], before);
  assert.notEqual(new FusedScoreNets(nets).forward(x, new Float64Array(nets.length))[2], before);
  assert.throws(() => new FusedScoreNets([nets[0], new ScoreNet(dim, 4, { rng, embedScale: 0.1, outScale: 0.1 })]), /differ in shape/);
});

test("16 hidden units (the default) run unrolled: the same scores, activations and gradients as the formula summed in order, to the bit", () => {
  const rng = new Rng(5);
  const dim = 64;
  const H = 16;
  const net = new ScoreNet(dim, H, { rng, embedScale: 0.5, outScale: 0.7 });
  for (const p of net.params()) for (let i = 0; i < p.length; i++) p[i] += (rng.random() - 0.5) * 0.3;
  // The gradients' rows of E, as `backward` adds them (float32, feature by feature).
  const gE = new Float32Array(dim * H);
  const gu = new Float32Array(dim);
  const gb1 = new Float32Array(H);
  const gw = new Float32Array(H);
  let gb0 = 0;
  for (let t = 0; t < 40; t++) {
    // Repeated features included: each occurrence adds.
    const idx = Int32Array.from({ length: 1 + rng.randbelow(30) }, () => rng.randbelow(dim));
    const x = { idx, val: Float32Array.from(idx, () => rng.random() * 2 - 1) };
    const h = new Float64Array(H);
    const score = net.forward(x, h);
    const z = Float64Array.from(net.b1);
    let want = net.b0[0];
    for (let n = 0; n < idx.length; n++) {
      want += x.val[n] * net.u[idx[n]];
      for (let j = 0; j < H; j++) z[j] += x.val[n] * net.E[idx[n] * H + j];
    }
    for (let j = 0; j < H; j++) want += net.w[j] * Math.tanh(z[j]);
    assert.equal(score, want, `input ${t}`);
    assert.deepEqual([...h], [...z].map(Math.tanh), `input ${t}'s activations`);
    const dScore = rng.random() - 0.5;
    net.backward(x, h, dScore);
    gb0 += dScore;
    for (let j = 0; j < H; j++) {
      gw[j] += dScore * h[j];
      gb1[j] += dScore * net.w[j] * (1 - h[j] * h[j]);
    }
    for (let n = 0; n < idx.length; n++) {
      gu[idx[n]] += dScore * x.val[n];
      for (let j = 0; j < H; j++) gE[idx[n] * H + j] += x.val[n] * (dScore * net.w[j] * (1 - h[j] * h[j]));
    }
  }
  const [gotE, gotU] = net.grads();
  assert.deepEqual([...gotE], [...gE]);
  assert.deepEqual([...gotU], [...gu]);
  // Every row the inputs touched is among those the norm (and Adam) go over.
  const squares = (a: ArrayLike<number>) => Array.from(a).reduce((t, v) => t + v * v, 0);
  const want = squares(gE) + squares(gu) + squares(gb1) + squares(gw) + Math.fround(gb0) ** 2;
  assert.ok(Math.abs(net.gradSquaredNorm() - want) <= 1e-9 * want, `${net.gradSquaredNorm()} against ${want}`);
});
