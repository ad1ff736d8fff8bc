import assert from "node:assert/strict";
import { test } from "node:test";
import { Rng } from "../../core/index.ts";
import { getReward, WebShopEnv, webshopGoalOf } from "./index.ts";
import { WebShopTaskGenerator } from "./task-generator.ts";

test("WebShop variants are feasible by WebShop's own reward, play in the real env, and never reuse a test goal", async () => {
  const test = new WebShopEnv({ split: "test" });
  const train = new WebShopEnv({ split: "train" });
  const testGoals = test.tasks().map((t) => test.catalogue.goal(t.goal_index as number));
  const gen = new WebShopTaskGenerator(train.catalogue, { excludeGoals: testGoals });
  const testKeys = new Set(testGoals.map((g) => `${g.asin}|${JSON.stringify(g.goal_options)}`));
  const rng = new Rng(4);
  let made = 0;
  for (const parent of train.tasks().slice(0, 40)) {
    const { tasks } = await gen.generate(parent, 3, rng);
    for (const t of tasks) {
      made++;
      const goal = webshopGoalOf(train.catalogue, t)!;
      const product = train.catalogue.byAsin.get(goal.asin)!;
      assert.equal(getReward(product, goal, train.catalogue.prices.get(goal.asin)!, goal.goal_options as Record<string, string>), 1);
      assert.ok(!testKeys.has(`${goal.asin}|${JSON.stringify(goal.goal_options)}`));
      assert.ok(goal.price_upper > train.catalogue.prices.get(goal.asin)!);
    }
  }
  assert.ok(made >= 60, `only ${made} feasible variants of 120`);
  // A generated task runs in the real env with its own goal.
  const t = (await gen.generate(train.tasks()[0], 1, new Rng(9))).tasks[0];
  const r = await train.reset({ task: t });
  assert.match(r.observation, new RegExp(t.instruction.slice(0, 30).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
});
