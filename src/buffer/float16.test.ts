import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeHalf, encodeHalf } from "./float16.ts";
import { Rng } from "../core/index.ts";

test("half floats: exact for representable values, close for the rest, special values kept", () => {
  const exact = [0, 1, -1, 0.5, 2048, -0.125, 65504, 2 ** -24];
  assert.deepEqual([...decodeHalf(encodeHalf(Float32Array.from(exact)))], exact);
  const special = decodeHalf(encodeHalf(Float32Array.from([Infinity, -Infinity, NaN, 1e6, 1e-9])));
  assert.deepEqual([special[0], special[1], special[3], special[4]], [Infinity, -Infinity, Infinity, 0]);
  assert.ok(Number.isNaN(special[2]));
  const rng = new Rng(3);
  const v = Float32Array.from({ length: 1000 }, () => rng.random() * 2 - 1);
  const back = decodeHalf(encodeHalf(v));
  for (let i = 0; i < v.length; i++) assert.ok(Math.abs(back[i] - v[i]) <= Math.abs(v[i]) * 2 ** -11 + 2 ** -25, `${v[i]} → ${back[i]}`);
  assert.equal(encodeHalf(v).byteLength, 2000);
});
