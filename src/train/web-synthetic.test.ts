import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { abstractTrajectory } from "../experience/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { createEnv, createPolicy, envTasks, runEpisode, syntheticSupport } from "../envs/index.ts";
import { makeSyntheticPool } from "./compose.ts";
import { resolveTrainConfig } from "./config.ts";
import { train } from "./train.ts";

// webshop-pages: the browser's WebShop pages in-process, so a browser-format run needs no Chromium here.
test("the browser's WebShop gets WebShop's catalogue curriculum, in the browser and in-process", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-webgen-"));
  for (const env of ["webshop-browser", "webshop-pages"]) {
    const config = resolveTrainConfig({ env, mode: "dreamgym", buffer: "unused.db" });
    const real = createEnv(env, { split: config.trainSplit });
    const pool = await makeSyntheticPool(config, join(dir, `${env}.db`), envTasks(env, real).slice(0, 2), {});
    try {
      assert.equal(pool.generator?.name, "webshop-catalogue", env);
    } finally {
      await pool.close();
      await real.close();
    }
  }
});

test("syntheticTasks \"seed\": the synthetic phase plays the seed buffer's tasks (and the curriculum's variations), not the rest of the split", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-seedtasks-"));
  const env = createEnv("webshop-pages", { split: "train" });
  const { abstraction } = syntheticSupport("webshop-pages", env);
  const tasks = envTasks("webshop-pages", env).slice(40, 52);
  const oracle = createPolicy("webshop-pages", "oracle", env);
  const episodes = [];
  for (const [i, task] of tasks.entries())
    episodes.push(abstractTrajectory(await runEpisode(env, oracle, { envName: "webshop-pages", task, seed: i }), abstraction));
  await env.close();
  const seed = join(dir, "seed.db");
  const b = ReplayBuffer.open(seed);
  await b.appendTrajectories(episodes, { seed: true });
  b.close();
  const seedIds = new Set(tasks.map((t) => t.id));
  for (const syntheticTasks of ["seed", "split"] as const) {
    const out = join(dir, syntheticTasks);
    await train(out, {
      env: "webshop-pages",
      mode: "dreamgym",
      buffer: seed,
      budget: 600,
      tasksPerIteration: 4,
      rolloutsPerTask: 2,
      evalEvery: 0,
      finalEvalTasks: 2,
      syntheticTasks,
      curriculum: { enabled: false },
      onPolicyAudit: { every: 0 },
    });
    const runBuffer = ReplayBuffer.open(join(out, "buffer.db"), { readonly: true });
    const played = [...runBuffer.trajectories({ env: "webshop-pages", source: "synthetic" })].map((t) => t.task.id);
    runBuffer.close();
    assert.ok(played.length >= 4, `${played.length} synthetic episodes`);
    const inSeed = played.filter((id) => seedIds.has(id)).length;
    if (syntheticTasks === "seed") assert.equal(inSeed, played.length);
    else assert.ok(inSeed < played.length / 2, `split: ${inSeed} of ${played.length} episodes on seed tasks`);
  }
});
