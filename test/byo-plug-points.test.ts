// A registered env gets what the built-in envs get, through its spec's plug points: the vault example's
// own embedded experience model plays every synthetic step of a DreamGym run, and its task generator
// feeds the curriculum. The env is registered again under another name with the same parts, counted,
// so the test fails if the loop falls back to the kNN model or runs without a curriculum.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
// From the package, as the example itself imports it (a user's env module and its tests see the built package).
import {
  createEnv,
  createExperienceModel,
  createPolicy,
  registerEnv,
  ReplayBuffer,
  runEpisode,
  train,
  type EnvSpec,
  type ExperienceModel,
  type IterationMetrics,
  type TaskGenerator,
} from "dreamgym";
import { abstractTrajectory, Rng } from "dreamgym/core";
import { envTasks, syntheticSupport, unregisterEnv } from "dreamgym/envs";
import { vaultSpec, VaultStartGenerator, VaultTableModel, type VaultEnv } from "../examples/vault/vault.ts";

test("a registered env's own experience model and task generator drive the DreamGym loop (vault)", async (t) => {
  const name = "vault-counted";
  const counts = { models: 0, predictions: 0, generators: 0, generated: 0 };
  const spec: EnvSpec<VaultEnv> = {
    ...vaultSpec,
    // Its own name on the same states, so its buffer and plug points are its own.
    synthetic: (env) => {
      const support = vaultSpec.synthetic!(env);
      return { ...support, abstraction: { ...support.abstraction, env: name } };
    },
    experienceModel: (context) => {
      counts.models++;
      const model: ExperienceModel = vaultSpec.experienceModel!(context);
      const predict = model.predict.bind(model);
      model.predict = (input) => (counts.predictions++, predict(input));
      return model;
    },
    taskGenerator: (env, context) => {
      counts.generators++;
      const own: TaskGenerator = vaultSpec.taskGenerator!(env, context)!;
      return {
        name: own.name,
        key: own.key?.bind(own),
        generate: async (parent, n, rng) => {
          const r = await own.generate(parent, n, rng);
          counts.generated += r.tasks.length;
          return r;
        },
      };
    },
  };
  registerEnv(name, spec);
  t.after(() => unregisterEnv(name));

  // Offline data: the expert and a wanderer on the training layouts, as abstract states.
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-plugs-"));
  const bufferFile = join(dir, "b.db");
  const env = createEnv(name, { split: "train" });
  const abstraction = syntheticSupport(name, env).abstraction;
  const tasks = envTasks(name, env).slice(0, 60);
  const buffer = ReplayBuffer.open(bufferFile);
  for (const [policy, seed] of [
    ["expert", 0],
    ["wander", 1],
    ["wander", 2],
  ] as const) {
    const played = [];
    for (const [i, task] of tasks.entries())
      played.push(
        abstractTrajectory(await runEpisode(env, createPolicy(name, policy, env, { seed: seed * 1000 + i }), { envName: name, task, seed: i }), abstraction),
      );
    await buffer.appendTrajectories(played, { seed: true });
  }
  buffer.close();
  await env.close();

  // The framework's "default" experience model for the env is the env's own.
  assert.ok(createExperienceModel("default", { abstraction }).model instanceof VaultTableModel);
  assert.equal(counts.models, 1);

  const metrics: IterationMetrics[] = [];
  const summary = await train(
    join(dir, "run"),
    {
      env: name,
      mode: "dreamgym",
      buffer: bufferFile,
      budget: 2000,
      tasksPerIteration: 8,
      evalEvery: 0,
      finalEvalTasks: 20,
      onPolicyAudit: { every: 0 },
    },
    { onIteration: (m) => metrics.push(m) },
  );

  // Every synthetic step was the vault model's prediction.
  assert.ok(summary.syntheticInteractions >= 2000);
  assert.equal(counts.models, 2, "one model for the run");
  assert.equal(counts.predictions, summary.syntheticInteractions);
  // The curriculum ran on the vault's generator: variants made, added, and played in the synthetic env.
  assert.equal(counts.generators, 1);
  assert.ok(counts.generated > 0, "the generator made variants");
  const added = metrics.reduce((s, m) => s + (m.curriculum?.added ?? 0), 0);
  assert.ok(added > 0, "the curriculum kept some");
  const run = ReplayBuffer.open(join(dir, "run", "buffer.db"), { readonly: true });
  try {
    const variants = [...run.trajectories({ env: name, source: "synthetic" })].filter((x) => x.task.start !== undefined);
    assert.ok(variants.length > 0, "variants were played");
    assert.ok(
      variants.every((x) => x.task.id.includes("~g")),
      "with the curriculum's lineage",
    );
  } finally {
    run.close();
  }
});

test("the vault's generator starts a task's world elsewhere, names that world, and its key tells variants apart", async () => {
  const gen = new VaultStartGenerator();
  const parent = { id: "vault:3", instruction: "x", layout: 3 };
  const { tasks, infeasible } = await gen.generate(parent, 4, new Rng(0));
  assert.equal(infeasible, 0);
  assert.deepEqual(tasks.map((v) => v.start).sort(), [1, 2, 3], "the three other rooms, once each");
  const world = (k: string) => {
    const { rooms, items } = JSON.parse(k) as { rooms: string[]; items: string[][] };
    return { rooms, items };
  };
  for (const v of tasks) {
    assert.deepEqual(world(gen.key(v)), world(gen.key(parent)), "the same rooms and items");
    assert.equal(v.world, "vault:3");
  }
  assert.equal(new Set([parent, ...tasks].map((t) => gen.key(t))).size, 4);
  // A variant of a variant names the seed task's world, and the real game starts where it says.
  const [grandchild] = (await gen.generate(tasks[0], 1, new Rng(1))).tasks;
  assert.equal(grandchild.world, "vault:3");
  const env = vaultSpec.create({ split: "train" });
  try {
    const { observation } = await env.reset({ task: tasks[0], seed: 0 });
    const rooms = (JSON.parse(gen.key(parent)) as { rooms: string[] }).rooms;
    assert.ok(observation.includes(`You are in the ${rooms[tasks[0].start as number]}.`), observation);
  } finally {
    await env.close();
  }
});
