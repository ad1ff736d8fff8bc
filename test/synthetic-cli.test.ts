import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run, runInProcess } from "./helpers.ts";
import { readJsonlAll, type Trajectory } from "../src/core/index.ts";

test("collect in the synthetic env: seed a buffer with abstract states, play episodes concurrently, hybrid rewards", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-syn-cli-"));
  const db = join(dir, "b.db");
  assert.equal((await runInProcess(["collect", "--env", "webshop", "--policy", "oracle", "--episodes", "150", "--out", join(dir, "o.jsonl")])).status, 0);
  const imp = await runInProcess(["buffer", "import", join(dir, "o.jsonl"), "--buffer", db, "--abstract"]);
  assert.equal(imp.status, 0, imp.stderr);
  const out = join(dir, "syn.jsonl");
  // The file's binary run of a synthetic collect; the stats, the hybrid collect and the refusals run in this process.
  const r = run([
    "collect",
    "--env",
    "webshop",
    "--experience",
    "default",
    "--buffer",
    db,
    "--policy",
    "rule",
    "--episodes",
    "12",
    "--split",
    "test",
    "--concurrency",
    "4",
    "--out",
    out,
  ]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /wrote 12 synthetic trajectories/);
  const trajs = await readJsonlAll<Trajectory>(out);
  assert.equal(trajs.length, 12);
  for (const t of trajs) {
    assert.equal(t.source, "synthetic");
    assert.ok(t.steps[0].observation.startsWith("page: search\ninstruction: "));
  }
  const stats = JSON.parse((await runInProcess(["buffer", "stats", "--buffer", db, "--json"])).stdout);
  const synthetic = stats.groups.find((g: { source: string }) => g.source === "synthetic");
  assert.equal(synthetic.trajectories, 12, "every synthetic episode was recorded in the buffer");
  const hybrid = await runInProcess([
    "collect",
    "--env",
    "webshop",
    "--experience",
    "default",
    "--buffer",
    db,
    "--policy",
    "random",
    "--episodes",
    "5",
    "--hybrid",
    "--out",
    join(dir, "h.jsonl"),
  ]);
  assert.equal(hybrid.status, 0, hybrid.stderr);
  assert.match(hybrid.stdout, /hybrid: verified terminal rewards/);
});

test("synthetic collect errors: no buffer, empty buffer, a policy that needs the real env", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-syn-cli-"));
  const base = ["collect", "--env", "webshop", "--experience", "default", "--episodes", "2", "--out", join(dir, "x.jsonl")];
  const noBuffer = await runInProcess([...base, "--policy", "rule"]);
  assert.equal(noBuffer.status, 2);
  assert.match(noBuffer.stderr, /--experience needs --buffer/);
  const missing = await runInProcess([...base, "--policy", "rule", "--buffer", join(dir, "none.db")]);
  assert.equal(missing.status, 2);
  assert.match(missing.stderr, /none\.db does not exist; the embedded model needs offline webshop trajectories/);
  assert.equal(existsSync(join(dir, "none.db")), false);
  const oracle = await runInProcess([...base, "--policy", "oracle", "--buffer", join(dir, "none.db")]);
  assert.equal(oracle.status, 2);
});
