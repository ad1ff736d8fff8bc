import assert from "node:assert/strict";
import { test } from "node:test";
import { playEpisode, Rng, type Task } from "../../core/index.ts";
import {
  AlfWorldEnv,
  AlfWorldExpert,
  alfworldAbstract,
  alfworldGames,
  Game,
  parseAlfState,
  sceneOf,
  specGoal,
  specKey,
  taskSpec,
  type AlfWorldTask,
} from "./index.ts";
import { Curriculum, curriculumConfigSchema } from "../../curriculum/index.ts";
import { envEntry, syntheticSupport } from "../index.ts";
import { AlfWorldTaskGenerator, alfworldTaskKey } from "./task-generator.ts";

const train = new AlfWorldEnv({ split: "valid_train" });
const root = train.root;
const games = alfworldGames(root);
const seedTasks = train.tasks();

test("a task variant's goal is ALFWorld's own goal formula for that task type and targets (every game of every split)", () => {
  for (const g of games) {
    const game = Game.load(root, g.game);
    assert.deepEqual(specGoal(taskSpec(g.taskType, g.params)), game.problem.goal, g.game);
  }
});

// One generator and one batch of variants for the tests below: 3 variants of each of 30 seed tasks.
const gen = new AlfWorldTaskGenerator();
const parents = new Rng(7).sample(seedTasks, 30);
const batch: { parent: AlfWorldTask; tasks: AlfWorldTask[]; infeasible: number }[] = [];
const ready = (async () => {
  const rng = new Rng(3);
  for (const parent of parents) {
    const r = await gen.generate(parent, 3, rng);
    batch.push({ parent, tasks: r.tasks as AlfWorldTask[], infeasible: r.infeasible });
  }
})();

test("variants are new tasks of training games: another object, receptacle, task type, or scene, and never an evaluation game's task", async () => {
  await ready;
  const variants = batch.flatMap((b) => b.tasks);
  assert.ok(variants.length >= 60, `only ${variants.length} variants of 90`);
  // The evaluation games' tasks, from the index itself (scene, type, object, receptacle, lamp).
  const evalKeys = new Set(games.filter((g) => g.split !== "valid_train").map((g) => `${sceneOf(g.game)}|${specKey(taskSpec(g.taskType, g.params))}`));
  const seedKeys = new Set(seedTasks.map((t) => alfworldTaskKey(t)));
  const kinds = new Set<string>();
  for (const { parent, tasks } of batch) {
    for (const v of tasks) {
      assert.equal(v.variant, true);
      assert.equal(v.split, "valid_train");
      assert.ok(
        games.some((g) => g.game === v.game && g.split === "valid_train"),
        v.game,
      );
      assert.ok(!evalKeys.has(`${sceneOf(v.game)}|${specKey(taskSpec(v.task_type, v.params))}`), `${v.id} is an evaluation task`);
      assert.ok(!seedKeys.has(alfworldTaskKey(v)), `${v.id} is a seed task`);
      assert.notEqual(alfworldTaskKey(v), alfworldTaskKey(parent));
      kinds.add(v.id.slice(v.id.lastIndexOf("~") + 1).split(":")[0]);
    }
    assert.equal(new Set(tasks.map((t) => alfworldTaskKey(t))).size, tasks.length, "one parent's variants differ");
  }
  assert.deepEqual([...kinds].sort(), ["object", "receptacle", "scene", "type"]);
  // Checked at generation: every kept variant passed the expert, and some candidates did not.
  assert.equal(gen.checks.passed, variants.length);
});

test("the real env plays a variant for its own goal (the expert wins it again; the game's own task is not its goal)", async () => {
  await ready;
  const env = new AlfWorldEnv({ split: "valid_unseen" });
  const expert = new AlfWorldExpert(env);
  const variants = batch.flatMap((b) => b.tasks).slice(0, 12);
  for (const v of variants) {
    const reset = await env.reset({ task: v });
    const state = parseAlfState(alfworldAbstract(reset.observation, reset.info))!;
    assert.equal(state.task, v.instruction);
    assert.equal((reset.info.task as Task).id, v.id);
    const ep = await playEpisode(env, expert, { task: v, seed: 0, rng: new Rng(0) });
    assert.ok(ep.success, `${v.id}: the expert lost the variant`);
    // The variant's goal holds at the end; it differs from the game's own goal.
    assert.notDeepEqual(specGoal(taskSpec(v.task_type, v.params)), env.current!.game.problem.goal);
  }
  // The game's own task still ends on its own goal.
  const own = seedTasks[0];
  const ep = await playEpisode(env, expert, { task: own, seed: 0, rng: new Rng(0) });
  assert.ok(ep.success);
  assert.equal((ep.task as AlfWorldTask).variant, undefined);
});

test("a variant the scene cannot host is refused by the expert's check", async () => {
  const parent = seedTasks.find((t) => t.task_type === "pick_and_place_simple")!;
  const impossible: AlfWorldTask = {
    ...parent,
    id: "x~impossible",
    instruction: "put some unicorn on sofa",
    variant: true,
    params: { ...parent.params, object_target: "unicorn" },
  };
  assert.equal(await gen.expertSolves(impossible), false);
});

test("the synthetic env starts a generated task from its game's opening text with the variant's task line", async () => {
  await ready;
  const v = batch.flatMap((b) => b.tasks)[0];
  const support = syntheticSupport("alfworld", train);
  const start = parseAlfState(support.abstraction.abstract(support.initialState(v)))!;
  assert.equal(start.task, v.instruction);
  assert.ok(start.actions.some((a) => a.startsWith("go to ")));
  assert.ok(envEntry("alfworld").success(1));
});

test("the curriculum with the ALFWorld generator: lineage, λ, and duplicates by game and targets (not by sentence)", async () => {
  const config = curriculumConfigSchema.parse({ lambda: 0.5, varianceThreshold: 0.01, parentsPerIteration: 2, variantsPerParent: 2 });
  const evalTasks = new AlfWorldEnv({ split: "valid_unseen" }).tasks();
  const c = new Curriculum(config, gen, [...seedTasks, ...evalTasks]);
  const [a, b, flat] = seedTasks;
  const r = await c.update(
    [
      { task: a, rewards: [1, 0, 1, 0] },
      { task: b, rewards: [1, 0, 0, 0] },
      { task: flat, rewards: [0, 0, 0, 0] },
    ],
    new Rng(5),
  );
  assert.equal(r.selected, 2);
  assert.ok(r.added >= 3, `added ${r.added}`);
  for (const t of c.tasks) {
    assert.ok([a.id, b.id].includes(t.lineage.parent));
    assert.equal(t.lineage.generation, 1);
  }
  // Variants of a variant: generation 2, their parent the generated task.
  const child = c.tasks[0];
  await c.update([{ task: child, rewards: [1, 0] }], new Rng(6));
  const grand = c.tasks.filter((t) => t.lineage.generation === 2);
  assert.ok(grand.length > 0);
  for (const t of grand) assert.equal(t.lineage.parent, child.id);
  // λ bounds the generated share of a sample.
  const sample = c.sample(seedTasks, 10, new Rng(0));
  assert.equal(sample.filter((t) => "lineage" in t).length, 5);
  // Keys: all distinct; the same sentence on another game is not a duplicate, the same game and targets are.
  const keys = c.tasks.map((t) => alfworldTaskKey(t));
  assert.equal(new Set(keys).size, keys.length);
  const echo = { name: "echo", key: gen.key.bind(gen), generate: async (p: Task) => ({ tasks: [{ ...p, id: `${p.id}~same` }], infeasible: 0 }) };
  const d = new Curriculum(config, echo, seedTasks);
  const again = await d.update([{ task: a, rewards: [1, 0] }], new Rng(0));
  assert.equal(again.duplicates, 1);
  const other = seedTasks.find((t) => t.instruction === a.instruction && t.game !== a.game);
  if (other) assert.notEqual(alfworldTaskKey(other), alfworldTaskKey(a));
});
