import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerEnv } from "../envs/index.ts";
import { BanditEnv } from "../testing/index.ts";
import { makeEnvPool, makePolicy, MemorySink, readMetrics, resolveTrainConfig, train, trainingLoop, type IterationMetrics } from "./index.ts";
import { NEW_RUN } from "./run-sink.ts";

const ENV = "sink-bandit";
registerEnv(ENV, { create: () => new BanditEnv(5, 3), tasks: (env) => env.tasks(6) });

/** A metrics line without its clock readings. */
const untimed = (m: IterationMetrics) => {
  const { rolloutSeconds, updateSeconds, auditSeconds, evalSeconds, wallSeconds, ...rest } = m;
  return rest;
};

test("the loop writes through a sink: in memory it gives the run folder's metrics, line for line, and its last checkpoint", async () => {
  const input = {
    env: ENV,
    mode: "real" as const,
    budget: 48,
    tasksPerIteration: 3,
    rolloutsPerTask: 4,
    evalEvery: 2,
    evalTasks: 3,
    finalEvalTasks: 6,
    checkpointEvery: 2,
    seed: 5,
    policy: { dim: 256 },
  };
  const dir = join(mkdtempSync(join(tmpdir(), "dreamgym-sink-")), "run");
  const summary = await train(dir, input);

  const config = resolveTrainConfig(input);
  const pool = makeEnvPool(config, config.trainSplit);
  const evaluation = makeEnvPool(config, config.evalSplit);
  const sink = new MemorySink();
  const state = { ...NEW_RUN };
  const parts = { policy: makePolicy(config, {}), real: pool, evaluation, isSuccess: (r: number) => r >= 1, close: async () => {} };
  try {
    const final = await trainingLoop(config, parts, state, sink);
    assert.deepEqual(sink.metrics.map(untimed), readMetrics(dir).map(untimed));
    assert.equal(final.score, summary.final.score);
    assert.equal(sink.metrics.length, summary.iterations);
    assert.equal(sink.lastCheckpoint(), summary.iterations);
    assert.deepEqual(sink.checkpoint!.policy, parts.policy.save());
  } finally {
    await Promise.all([...pool.envs, ...evaluation.envs].map((e) => e.close()));
  }
});
