import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chatServer } from "../src/testing/index.ts";
import { runAsync, runInProcess } from "./helpers.ts";

test("sft build from the command line, with a teacher over the real protocol, and resume", async () => {
  const s = await chatServer({ reply: () => "Clicking the product opens its page." });
  try {
    const dir = mkdtempSync(join(tmpdir(), "dreamgym-sft-cli-"));
    const traj = join(dir, "o.jsonl");
    assert.equal((await runInProcess(["collect", "--env", "webshop", "--policy", "oracle", "--episodes", "10", "--out", traj])).status, 0);
    const steps = readFileSync(traj, "utf8")
      .trim()
      .split("\n")
      .reduce((n, l) => n + JSON.parse(l).steps.length, 0);
    const args = [
      "sft",
      "build",
      "--env",
      "webshop",
      "--teacher",
      `${s.url}#teacher`,
      "--trajectories",
      traj,
      "--out",
      join(dir, "sft"),
      "--cache",
      join(dir, "cache.db"),
    ];
    const r = await runAsync(args);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`${steps} new examples`));
    const again = await runAsync(args);
    assert.match(again.stdout, new RegExp(`0 new examples .* ${steps} already built`));
    assert.equal(s.requests.length, steps, "the resumed build paid for nothing");
  } finally {
    await s.close();
  }
});

test("sft build that stops at its first teacher call removes the output folder and the parents it made", async () => {
  const dead = await chatServer();
  await dead.close();
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-sft-dead-"));
  const traj = join(dir, "o.jsonl");
  assert.equal((await runInProcess(["collect", "--env", "webshop", "--policy", "oracle", "--episodes", "2", "--out", traj])).status, 0);
  const r = await runInProcess(["sft", "build", "--env", "webshop", "--teacher", `${dead.url}#teacher`, "--trajectories", traj, "--out", join(dir, "a", "b")]);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /^error: LLM endpoint .* cannot be reached; last error: .*ECONNREFUSED/);
  assert.equal(existsSync(join(dir, "a")), false, "the parent folder the build made is gone too");
});
