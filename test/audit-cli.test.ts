import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run, runInProcess } from "./helpers.ts";

test("audit: the embedded model on held-out real trajectories (train-seeded buffer, test-split episodes)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-audit-"));
  const db = join(dir, "b.db");
  assert.equal(
    (await runInProcess(["collect", "--env", "webshop", "--policy", "oracle", "--episodes", "300", "--split", "train", "--out", join(dir, "seed.jsonl")]))
      .status,
    0,
  );
  assert.equal((await runInProcess(["buffer", "import", join(dir, "seed.jsonl"), "--buffer", db, "--abstract"])).status, 0);
  assert.equal(
    (await runInProcess(["collect", "--env", "webshop", "--policy", "oracle", "--episodes", "30", "--split", "test", "--out", join(dir, "held.jsonl")])).status,
    0,
  );
  // The file's binary run of audit; the table and the refusal run in this process.
  const r = run(["audit", "--env", "webshop", "--buffer", db, "--trajectories", join(dir, "held.jsonl"), "--json"]);
  assert.equal(r.status, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.trajectories, 30);
  assert.ok(report.steps >= 90);
  assert.ok(report.invalidRate < 0.05, `invalid ${report.invalidRate}`);
  assert.ok(report.stateKindAccuracy > 0.8, `state kind accuracy ${report.stateKindAccuracy}`);
  assert.ok(report.elementF1 > 0.6);
  const s = report.success;
  assert.ok(s.truePositive + s.falsePositive + s.falseNegative + s.trueNegative >= 30, "every real ending step is scored");
  const table = await runInProcess(["audit", "--env", "webshop", "--buffer", db, "--trajectories", join(dir, "held.jsonl"), "--limit", "3"]);
  assert.match(table.stdout, /ε_R: reward error rate/);
  const missing = await runInProcess(["audit", "--env", "webshop", "--trajectories", join(dir, "held.jsonl")]);
  assert.equal(missing.status, 2);
  assert.match(missing.stderr, /needs --buffer/);
});
