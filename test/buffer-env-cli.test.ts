// Bad input: an ALFWorld buffer used for WebShop, or the reverse, is refused by every command that
// reads a buffer for an env, naming both envs: exit 2, one line, nothing written.
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runInProcess } from "./helpers.ts";

const root = mkdtempSync(join(tmpdir(), "dreamgym-bufenv-cli-"));
const file = (env: string, ext: string) => join(root, `${env}.${ext}`);

before(async () => {
  for (const [env, policy] of [
    ["webshop", "oracle"],
    ["alfworld", "expert"],
  ]) {
    const c = await runInProcess(["collect", "--env", env, "--policy", policy, "--episodes", "3", "--out", file(env, "jsonl")]);
    assert.equal(c.status, 0, c.stderr);
    const i = await runInProcess(["buffer", "import", file(env, "jsonl"), "--abstract", "--buffer", file(env, "db")]);
    assert.equal(i.status, 0, i.stderr);
  }
});

test("every command that reads a buffer for an env refuses another env's buffer, naming both", async () => {
  for (const [env, other] of [
    ["webshop", "alfworld"],
    ["alfworld", "webshop"],
  ]) {
    const buffer = file(other, "db");
    const out = join(root, `${env}-out`);
    mkdirSync(out);
    // Each command with what it would write (its last argument; audit writes nothing).
    const commands: Record<string, string[]> = {
      train: ["train", "--env", env, "--mode", "dreamgym", "--buffer", buffer, "--budget", "10", "--out", join(out, "run")],
      "train bc": ["train", "--env", env, "--mode", "bc", "--buffer", buffer, "--out", join(out, "bc")],
      collect: [
        "collect",
        "--env",
        env,
        "--experience",
        "default",
        "--buffer",
        buffer,
        "--policy",
        "random",
        "--episodes",
        "1",
        "--out",
        join(out, "syn.jsonl"),
      ],
      "model train": ["model", "train", "--env", env, "--buffer", buffer, "--out", join(out, "model.bin")],
      audit: ["audit", "--env", env, "--trajectories", file(env, "jsonl"), "--buffer", buffer],
    };
    // In-process: refusals, checked by their status, line and files (the commands' binary runs are in their own tests).
    for (const [name, argv] of Object.entries(commands)) {
      const r = await runInProcess(argv);
      assert.equal(r.status, 2, `${name} --env ${env}: ${r.stderr}`);
      assert.equal(r.stderr, `error: buffer ${buffer} holds ${other} trajectories, not ${env}: give a buffer of offline ${env} trajectories\n`, name);
      if (argv.includes("--out")) assert.equal(existsSync(argv.at(-1)!), false, `${name}: nothing written`);
    }
  }
});
