import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createEnv, envEntry, envTasks } from "../envs/index.ts";
import type { NeuralPolicy } from "../rl/index.ts";
import { makePolicy, makeSyntheticPool } from "./compose.ts";
import { resolveTrainConfig } from "./config.ts";

test("with a chat model, WebShop's curriculum varies tasks with the LLM; ALFWorld keeps its own generator (a task needs a game's scene)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-gen-"));
  for (const [env, want] of [
    ["webshop", "llm"],
    ["alfworld", "alfworld-scenes"],
  ] as const) {
    for (const [experience, generator] of [
      ["http://127.0.0.1:9/v1#m", want],
      ["default", env === "webshop" ? "webshop-catalogue" : "alfworld-scenes"],
    ]) {
      const config = resolveTrainConfig({ env, mode: "dreamgym", experience, buffer: "unused.db" });
      const real = createEnv(env, { split: config.trainSplit });
      const pool = await makeSyntheticPool(config, join(dir, `${env}.db`), envTasks(env, real).slice(0, 2), {});
      try {
        assert.equal(pool.generator?.name, generator, `${env} with ${experience}`);
      } finally {
        await pool.close();
        await real.close();
      }
    }
  }
});

test("the run's neural policy gets the env's own features from its entry (ALFWorld's), the generic ones elsewhere", () => {
  const features = (env: string) => (makePolicy(resolveTrainConfig({ env }), {}) as NeuralPolicy).config.features;
  assert.equal(features("alfworld"), envEntry("alfworld").spec.features);
  assert.notEqual(features("alfworld"), undefined);
  assert.equal(features("webshop"), undefined);
});
