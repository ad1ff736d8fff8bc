import { test } from "node:test";
import assert from "node:assert/strict";
import { getReward, NoisyOraclePolicy, OraclePolicy, RulePolicy, WebShopEnv } from "./index.ts";
import { RandomPolicy, runEpisode } from "../index.ts";

const env = new WebShopEnv({ split: "test" });
const tasks = env.tasks();

test("oracle: ≥ 95% success on the test split; every miss is the (name, value) option-pair quirk", async () => {
  const oracle = new OraclePolicy(env);
  let success = 0;
  for (const task of tasks) {
    const t = await runEpisode(env, oracle, { envName: "webshop", task });
    const last = t.steps.at(-1)!;
    assert.equal(last.terminated, true, `${task.id} did not buy`);
    if (t.success) {
      success++;
      continue;
    }
    // The oracle bought the goal product with the goal's options: scored by value it is a 1.
    const purchased = last.info!.purchased as { asin: string; options: Record<string, string>; price: number };
    const goal = env.catalogue.goal(task.goal_index as number);
    assert.equal(purchased.asin, goal.asin);
    assert.deepEqual(purchased.options, goal.goal_options);
    const product = env.catalogue.byAsin.get(goal.asin)!;
    assert.equal(getReward(product, goal, purchased.price, purchased.options, { goalOptionValues: true }), 1, task.id);
  }
  assert.ok(success / tasks.length >= 0.95, `oracle success ${success}/${tasks.length}`);
});

test("rule: search the instruction, click the first result, buy", async () => {
  const t = await runEpisode(env, new RulePolicy(), { envName: "webshop", task: tasks[0] });
  assert.deepEqual(
    t.steps.map((s) => s.action.replace(/\[.*\]/, "[]")),
    ["search[]", "click[]", "click[]"],
  );
  assert.equal(t.steps[0].action, `search[${tasks[0].instruction}]`);
  assert.equal(t.steps[2].action, "click[buy now]");
  assert.equal(t.steps[2].terminated, true);
  assert.equal(t.policy, "rule");
  assert.equal(t.source, "real");
});

test("random: only listed actions, reproducible for a seed, ends by purchase or time limit", async () => {
  const play = async (seed: number) => {
    const e = new WebShopEnv({ split: "test", maxSteps: 15 });
    const out = [];
    const policy = new RandomPolicy(seed);
    for (let i = 0; i < 20; i++) out.push(await runEpisode(e, policy, { envName: "webshop", task: tasks[i] }));
    return out;
  };
  const a = await play(3);
  const b = await play(3);
  assert.deepEqual(
    a.map((t) => t.steps.map((s) => s.action)),
    b.map((t) => t.steps.map((s) => s.action)),
  );
  for (const t of a) {
    assert.ok(t.steps.every((s) => !s.info?.invalid));
    const last = t.steps.at(-1)!;
    assert.ok(last.terminated || last.truncated);
    assert.ok(t.steps.length <= 15);
  }
});

test("the slipping oracle buys near misses as well as successes, the same ones in any order", async () => {
  const play = async (order: typeof tasks) => {
    const p = new NoisyOraclePolicy(env);
    const out = new Map<string, { reward: number; actions: string[] }>();
    for (const task of order) {
      const t = await runEpisode(env, p, { envName: "webshop", task });
      out.set(task.id, { reward: t.total_reward, actions: t.steps.map((s) => s.action) });
    }
    return out;
  };
  const some = tasks.slice(0, 120);
  const a = await play(some);
  const rewards = [...a.values()].map((e) => e.reward);
  const success = rewards.filter((r) => r >= 1 - 1e-9).length;
  const nearMiss = rewards.filter((r) => r > 0.2 && r < 1 - 1e-9).length;
  assert.ok(success >= 0.2 * some.length && success <= 0.8 * some.length, `successes ${success}/${some.length}`);
  assert.ok(nearMiss >= 0.15 * some.length, `near misses ${nearMiss}/${some.length}`);
  // Its slips are seeded by the goal, not by how many episodes the policy played before.
  const b = await play([...some].reverse());
  for (const task of some) assert.deepEqual(b.get(task.id), a.get(task.id), task.id);
});
