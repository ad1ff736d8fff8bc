import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerEnv } from "../envs/index.ts";
import { BanditEnv } from "../testing/index.ts";
import { makeEnvPool, makePolicy, MemorySink, readMetrics, resolveTrainConfig, train, trainingLoop, type IterationMetrics } from "./index.ts";
import { NEW_RUN } from "./run-sink.ts";
import { InvalidConfigError } from "../core/index.ts";
import type { AuditPair } from "../experience/index.ts";

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

test("MemorySink keeps the latest audits' episodes: 100 by default, as many as asked, or all", () => {
  const pairs = (iteration: number) => [{ index: 0, iteration }] as unknown as AuditPair[];
  const write = (sink: MemorySink, iterations: number[]) => {
    for (const i of iterations) sink.writeAuditPairs(i, pairs(i));
  };
  const every5 = Array.from({ length: 300 }, (_, k) => 5 * (k + 1)); // 1,500 iterations audited every 5

  const byDefault = new MemorySink();
  write(byDefault, every5);
  assert.deepEqual([...byDefault.audits.keys()], every5.slice(-100));
  assert.deepEqual(byDefault.audits.get(1500), pairs(1500));

  const three = new MemorySink("r", { auditsKept: 3 });
  write(three, [5, 20, 25, 10, 30]); // the lowest goes, whatever the order
  assert.deepEqual(
    [...three.audits.keys()].sort((a, b) => a - b),
    [20, 25, 30],
  );

  const all = new MemorySink("r", { auditsKept: Infinity });
  write(all, every5);
  assert.equal(all.audits.size, every5.length);
  const none = new MemorySink("r", { auditsKept: 0 });
  write(none, [1, 2]);
  assert.equal(none.audits.size, 0);
  assert.equal(none.episodeLabel(2), "neural@r#2");

  for (const bad of [-1, 1.5, Number.NaN]) assert.throws(() => new MemorySink("r", { auditsKept: bad }), InvalidConfigError);
});
