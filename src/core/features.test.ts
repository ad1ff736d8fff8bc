import { test } from "node:test";
import assert from "node:assert/strict";
import { FeatureBuilder, sparseVector } from "./features.ts";

test("a feature named by a template hashes as the name the template makes, numbers and non-ASCII alike", () => {
  for (const dim of [16, 1024, 32768]) {
    const byName = new FeatureBuilder(dim);
    const byTemplate = new FeatureBuilder(dim);
    const kinds = ["results", "item", "page", "ünïcode"];
    kinds.forEach((kind, i) => {
      const k = `${kind}|click`;
      byName.add(`bias|${k}`);
      byTemplate.named`bias|${k}`;
      byName.add(`label-steps|${k}|<id>|${i}`);
      byTemplate.named`label-steps|${k}|<id>|${i}`;
      byName.add(`${i}`);
      byTemplate.named`${i}`;
      byName.add(`rank-overlap|${k}|${Math.min(i, 2)}|${0.5 * i}|`);
      byTemplate.named`rank-overlap|${k}|${Math.min(i, 2)}|${0.5 * i}|`;
    });
    byName.add("");
    byTemplate.named``;
    assert.deepEqual(byTemplate.build(), byName.build(), `dim ${dim}`);
  }
});

test("a sparse vector's indices come sorted with their values, and a name's values add up", () => {
  const b = new FeatureBuilder(1 << 20);
  b.add("x", 2);
  b.add("y", 0.5);
  b.add("x", 1);
  b.add("z", 0);
  const v = b.build();
  assert.equal(v.idx.length, 2);
  assert.ok(v.idx[0] < v.idx[1]);
  assert.deepEqual([...v.val].sort(), [0.5, 3]);
  const m = new Map([
    [9, 1],
    [3, 2],
    [7, 3],
  ]);
  assert.deepEqual(sparseVector(m), { idx: Int32Array.from([3, 7, 9]), val: Float32Array.from([2, 3, 1]) });
});
