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
