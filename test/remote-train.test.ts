// A run on an env server whose env only the server knows (as on a trainer machine without the
// user's env module): train, then resume from the run folder alone.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { findEnv, registerEnv, unregisterEnv } from "../src/envs/index.ts";
import { ChainEnv } from "../src/testing/index.ts";
import { resumeTraining, train } from "../src/train/index.ts";
import { startTestServer } from "./serve-kit.ts";

test("train on an env known only to the server, then resume it from the run folder", { timeout: 60_000 }, async () => {
  registerEnv("remote-only-chain", { create: () => new ChainEnv(), tasks: (e) => e.tasks(8), splits: { train: "train", eval: "train" } });
  const s = await startTestServer({ host: { env: "remote-only-chain" } });
  unregisterEnv("remote-only-chain"); // from here on, only the server knows it
  try {
    const dir = join(mkdtempSync(join(tmpdir(), "dreamgym-remote-train-")), "run");
    const first = await train(dir, {
      remote: s.url,
      mode: "real",
      budget: 40,
      tasksPerIteration: 2,
      rolloutsPerTask: 2,
      evalEvery: 0,
      finalEvalTasks: 2,
      checkpointEvery: 1,
    });
    const config = JSON.parse(readFileSync(join(dir, "config.json"), "utf8"));
    assert.equal(config.env, "remote-only-chain");
    assert.equal(config.remote, s.url);
    const again = await resumeTraining(dir);
    assert.equal(again.iterations, first.iterations);
    assert.deepEqual(again.final, first.final);
    assert.equal(findEnv("remote-only-chain"), undefined, "the shadow is released after the run");
  } finally {
    await s.close();
  }
});
