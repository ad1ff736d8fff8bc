// What a command opens, it closes: a user's env may hold a subprocess or a browser. An env module
// registers WebShop again as "counted" and reports the instances still open when each command exits.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chatServer } from "../src/testing/index.ts";
import { ROOT, runAsync } from "./helpers.ts";

test("train, collect, audit, sft build and buffer import close every env they create", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-close-"));
  const counts = join(dir, "open.txt");
  process.env.DREAMGYM_OPEN_ENVS = counts;
  const teacher = await chatServer({ reply: () => "Clicking the product opens its page." });
  const module = ["--env-module", join(ROOT, "test", "fixtures", "counted-env.mjs")];
  const tiny = ["--tasks-per-iter", "2", "--group", "2", "--final-eval-tasks", "4", "--set", "evalTasks=4", "--set", "policy.dim=1024"];
  const commands: [string, string[]][] = [
    ["collect", ["collect", "--env", "counted", "--policy", "oracle", "--episodes", "6", "--out", join(dir, "t.jsonl")]],
    ["buffer import", ["buffer", "import", join(dir, "t.jsonl"), "--abstract", "--buffer", join(dir, "b.db")]],
    ["env eval", ["env", "eval", "--env", "counted", "--policy", "rule", "--episodes", "3"]],
    ["audit", ["audit", "--env", "counted", "--trajectories", join(dir, "t.jsonl"), "--buffer", join(dir, "b.db")]],
    [
      "sft build",
      ["sft", "build", "--env", "counted", "--teacher", `${teacher.url}#teacher`, "--trajectories", join(dir, "t.jsonl"), "--out", join(dir, "sft")],
    ],
    ["train real", ["train", "--env", "counted", "--mode", "real", "--budget", "40", ...tiny, "--out", join(dir, "real")]],
    ["train dreamgym", ["train", "--env", "counted", "--mode", "dreamgym", "--buffer", join(dir, "b.db"), "--budget", "40", ...tiny, "--out", join(dir, "dg")]],
    ["a failing train start", ["train", "--env", "counted", "--budget", "40", "--set", "evalSplit=nowhere", "--out", join(dir, "bad")]],
  ];
  try {
    for (const [name, args] of commands) {
      const r = await runAsync([...module, ...args]);
      if (name !== "a failing train start") assert.equal(r.status, 0, `${name}: ${r.stderr}`);
      else assert.equal(r.status, 2, r.stderr);
      const lines = readFileSync(counts, "utf8").trim().split("\n");
      assert.equal(lines.at(-1), "0", `${name} left ${lines.at(-1)} env(s) open`);
    }
  } finally {
    delete process.env.DREAMGYM_OPEN_ENVS;
    await teacher.close();
  }
});
