import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run, runInProcess } from "./helpers.ts";

test("model train: a learned model from a buffer (same seed, same bytes), audited with --experience learned:FILE; bad inputs are one-line errors (exit 2)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-model-"));
  const db = join(dir, "b.db");
  assert.equal(
    (await runInProcess(["collect", "--env", "webshop", "--policy", "oracle", "--episodes", "150", "--split", "train", "--out", join(dir, "seed.jsonl")]))
      .status,
    0,
  );
  assert.equal((await runInProcess(["buffer", "import", join(dir, "seed.jsonl"), "--buffer", db, "--abstract"])).status, 0);
  const train = (out: string) => ["model", "train", "--buffer", db, "--env", "webshop", "--out", out, "--epochs", "2", "--members", "2", "--seed", "1"];
  // The file's binary run of model train; the second, in this process, must write the same bytes.
  const first = run(train(join(dir, "m1.bin")));
  assert.equal(first.status, 0, first.stderr);
  assert.match(first.stdout, /trained 2 members on \d+ real transitions/);
  assert.match(first.stdout, /held-out tasks \/ steps/);
  assert.equal((await runInProcess(train(join(dir, "m2.bin")))).status, 0);
  assert.ok(readFileSync(join(dir, "m1.bin")).equals(readFileSync(join(dir, "m2.bin"))), "same buffer and seed: same bytes");
  assert.ok(!existsSync(`${join(dir, "m1.bin")}.tmp`));

  assert.equal(
    (await runInProcess(["collect", "--env", "webshop", "--policy", "oracle", "--episodes", "10", "--split", "test", "--out", join(dir, "held.jsonl")])).status,
    0,
  );
  const audit = await runInProcess([
    "audit",
    "--env",
    "webshop",
    "--buffer",
    db,
    "--trajectories",
    join(dir, "held.jsonl"),
    "--experience",
    `learned:${join(dir, "m1.bin")}`,
    "--json",
  ]);
  assert.equal(audit.status, 0, audit.stderr);
  const report = JSON.parse(audit.stdout);
  assert.equal(report.model, "learned-ensemble-v1");
  assert.equal(report.trajectories, 10);

  writeFileSync(join(dir, "bad.bin"), "garbage");
  for (const args of [
    ["audit", "--env", "webshop", "--buffer", db, "--trajectories", join(dir, "held.jsonl"), "--experience", `learned:${join(dir, "bad.bin")}`],
    ["audit", "--env", "webshop", "--buffer", db, "--trajectories", join(dir, "held.jsonl"), "--experience", `learned:${join(dir, "none.bin")}`],
    ["model", "train", "--buffer", join(dir, "none.db"), "--env", "webshop", "--out", join(dir, "x.bin")],
    ["model", "train", "--buffer", db, "--env", "webshop", "--out", join(dir, "no-such-folder", "x.bin")],
    [
      "train",
      "--env",
      "webshop",
      "--mode",
      "dreamgym",
      "--buffer",
      db,
      "--budget",
      "100",
      "--experience",
      `learned:${join(dir, "bad.bin")}`,
      "--out",
      join(dir, "run"),
    ],
  ]) {
    const r = await runInProcess(args);
    assert.equal(r.status, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    assert.match(r.stderr, /^error: /);
  }
  assert.ok(!existsSync(join(dir, "run")), "a bad model file stops a run before it writes anything");
});
