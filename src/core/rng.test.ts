import { test } from "node:test";
import assert from "node:assert/strict";
import { Rng } from "./rng.ts";

// Expected values were printed by CPython 3.11's `random` module with the same seeds and calls.
test("Rng reproduces CPython's random bit for bit", () => {
  const r = new Rng(42);
  assert.deepEqual([r.getrandbits(32), r.getrandbits(32), r.getrandbits(32)], [2746317213, 478163327, 107420369]);
  assert.equal(r.random(), 0.7415504997598329);
  assert.equal(r.uniform(19.99, 27.99), 21.94913483042781);
});

test("shuffle and sample follow CPython's algorithms", () => {
  const s = new Rng(233);
  assert.deepEqual(s.shuffle(Array.from({ length: 20 }, (_, i) => i)), [17, 18, 9, 2, 8, 19, 11, 10, 12, 0, 3, 4, 14, 13, 1, 6, 15, 7, 16, 5]);
  const t = new Rng(7);
  assert.deepEqual(t.sample([10, 20, 30, 40], 2), [30, 10]);
  assert.deepEqual(
    t.sample(
      Array.from({ length: 100 }, (_, i) => i),
      7,
    ),
    [50, 83, 6, 9, 68, 12, 46],
  );
});

test("seeds wider than 32 bits are split into words as CPython does", () => {
  assert.equal(new Rng(2 ** 40 + 5).random(), 0.5043802970418443);
});

test("randbelow stays in range and rejects bad input", () => {
  const r = new Rng(1);
  for (let i = 0; i < 1000; i++) {
    const x = r.randbelow(7);
    assert.ok(x >= 0 && x < 7 && Number.isInteger(x));
  }
  assert.throws(() => r.randbelow(0), RangeError);
  assert.throws(() => new Rng(1.5), RangeError);
  assert.throws(() => r.sample([1, 2], 3), RangeError);
});

test("the same seed gives the same stream; fork gives an independent one", () => {
  const a = new Rng(9);
  const b = new Rng(9);
  const xs = Array.from({ length: 5 }, () => a.random());
  assert.deepEqual(
    Array.from({ length: 5 }, () => b.random()),
    xs,
  );
  const f = new Rng(9).fork();
  assert.notDeepEqual(
    Array.from({ length: 5 }, () => f.random()),
    xs,
  );
});
