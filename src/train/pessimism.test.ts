import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { grpoSettings } from "./phases.ts";
import { resolveTrainConfig, train } from "./index.ts";
import { RunFolder } from "./run-folder.ts";

test("the synthetic phase's GRPO floors a group's std and pays a KL penalty to the start; the real phase does not", () => {
  const config = resolveTrainConfig({ env: "webshop", mode: "s2r", realBudget: 100 });
  assert.deepEqual([grpoSettings(config, "synthetic").klCoef, grpoSettings(config, "synthetic").stdFloor], [0.05, 0.1]);
  assert.deepEqual([grpoSettings(config, "real").klCoef, grpoSettings(config, "real").stdFloor], [0, 0]);
  // grpo.klCoef still applies in both phases, pessimism.kl adds to it in the synthetic one.
  const both = resolveTrainConfig({ env: "webshop", mode: "s2r", realBudget: 100, grpo: { klCoef: 0.02, stdFloor: 0.3 } });
  assert.deepEqual([grpoSettings(both, "synthetic").klCoef, grpoSettings(both, "synthetic").stdFloor], [0.07, 0.3]);
  assert.equal(grpoSettings(both, "real").klCoef, 0.02);
});

test("an env's own pessimism defaults (EnvSpec.pessimism) stand where the config sets none: ALFWorld's are off", () => {
  const alf = resolveTrainConfig({ env: "alfworld", mode: "dreamgym" });
  assert.deepEqual([alf.pessimism.kl, alf.pessimism.stdFloor], [0, 0]);
  assert.equal(alf.pessimism.beta, 1, "the reward penalty for uncertainty is not part of it");
  const asked = resolveTrainConfig({ env: "alfworld", mode: "dreamgym", pessimism: { kl: 0.05 } });
  assert.deepEqual([asked.pessimism.kl, asked.pessimism.stdFloor], [0.05, 0]);
  const web = resolveTrainConfig({ env: "webshop", mode: "dreamgym" });
  assert.deepEqual([web.pessimism.kl, web.pessimism.stdFloor], [0.05, 0.1]);
});

test("a run from before the synthetic phase's KL penalty resumes without it, as it began", async () => {
  const dir = join(mkdtempSync(join(tmpdir(), "dreamgym-pessimism-")), "run");
  await train(dir, { env: "webshop", mode: "real", budget: 20, tasksPerIteration: 1, rolloutsPerTask: 2, finalEvalTasks: 1, policy: { dim: 64 } });
  const file = join(dir, "config.json");
  const c = JSON.parse(readFileSync(file, "utf8"));
  assert.deepEqual([c.pessimism.kl, c.pessimism.stdFloor], [0.05, 0.1], "a new run records its pessimism");
  delete c.pessimism.kl;
  delete c.pessimism.stdFloor;
  writeFileSync(file, JSON.stringify(c));
  const { folder } = RunFolder.open(dir);
  assert.deepEqual([folder.config.pessimism.kl, folder.config.pessimism.stdFloor], [0, 0]);
});
