import { test } from "node:test";
import assert from "node:assert/strict";
import { elementF1, stateKind } from "./audit.ts";

test("state agreement metrics", () => {
  assert.equal(stateKind("page: results\ninstruction: x\n[a]"), "page: results");
  const real = "page: results\ninstruction: x\n[a] one\n[b] two\n[c] three";
  assert.equal(elementF1(real, real), 1);
  // predicted shares 2 of its 3 element lines with the real 4: precision 2/3, recall 2/4.
  const predicted = "page: results\ninstruction: x\n[a] one\n[z] other";
  assert.ok(Math.abs(elementF1(predicted, real) - (2 * (2 / 3) * (2 / 4)) / (2 / 3 + 2 / 4)) < 1e-12);
  assert.equal(elementF1("page: done", "page: results\n[a]"), 0);
  assert.equal(elementF1("page: done", "page: done"), 1);
});
