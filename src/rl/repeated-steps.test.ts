import assert from "node:assert/strict";
import { test } from "node:test";
import type { SparseVector } from "../core/index.ts";
import { firstOfEachStep } from "./repeated-steps.ts";

const vec = (idx: number[], val: number[]): SparseVector => ({ idx: Int32Array.from(idx), val: Float32Array.from(val) });
const step = (candidates: SparseVector[], choice: number) => ({ features: { candidates }, choice });
/** The same step in fresh arrays. */
const copy = (s: ReturnType<typeof step>) =>
  step(
    s.features.candidates.map((c) => vec([...c.idx], [...c.val])),
    s.choice,
  );

test("firstOfEachStep: a step with the same candidates' features and choice points to the first; any difference keeps it apart", () => {
  const a = step([vec([1, 5], [0.5, 1]), vec([2], [0])], 1);
  const b = step([vec([1, 5], [0.5, 1])], 0);
  const steps = [
    a,
    b,
    copy(a), // 2 → 0
    step(copy(a).features.candidates, 0), // another choice
    step([vec([1, 5], [0.5, 1]), vec([2], [-0])], 1), // −0 where a has 0: other bits
    step([vec([1, 5], [0.5, Math.fround(1 + 2 ** -23)]), vec([2], [0])], 1), // one value a float apart
    step([vec([1, 5], [0.5, 1]), vec([3], [0])], 1), // another index
    step([vec([1, 5], [0.5, 1]), vec([2], [0]), vec([], [])], 1), // one more candidate
    copy(b), // 8 → 1
    copy(a), // 9 → 0
  ];
  assert.deepEqual([...firstOfEachStep(steps)], [0, 1, 0, 3, 4, 5, 6, 7, 1, 0]);
  assert.deepEqual([...firstOfEachStep([])], []);
});

test("firstOfEachStep: steps of one hash are told apart value by value; a step with a missing candidate stays alone", () => {
  // Each sign flip flips the top bit of the hash's state through the rest of it: two flips cancel,
  // so these pairs share a hash, and only the check value by value keeps them apart.
  const zeros = [step([vec([1, 2], [0, -0])], 0), step([vec([1, 2], [-0, 0])], 0)];
  const signs = [step([vec([1, 2], [0.5, 1])], 0), step([vec([1, 2], [-0.5, -1])], 0)];
  assert.deepEqual([...firstOfEachStep([...zeros, ...signs, copy(zeros[1]), copy(signs[1])])], [0, 1, 2, 3, 1, 3]);
  // A hole among the candidates: not read here (the scorer skips it, as it did).
  const holey = [vec([1], [1]), , vec([2], [1])] as SparseVector[];
  assert.deepEqual([...firstOfEachStep([step(holey, 0), step(holey, 0), step([vec([1], [1])], 0)])], [0, 1, 2]);
});
