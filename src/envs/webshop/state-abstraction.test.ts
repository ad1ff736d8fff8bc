import { test } from "node:test";
import assert from "node:assert/strict";
import { abstractEnv, checkEnv } from "../../core/index.ts";
import { RandomPolicy } from "../policies.ts";
import { runEpisode } from "../rollout.ts";
import { OraclePolicy, WebShopEnv, webshopAbstraction, webshopPageKind, webshopStartPage, webshopVerifier } from "./index.ts";

const env = new WebShopEnv({ split: "test", maxSteps: 25 });
const abs = webshopAbstraction(env.catalogue);

test("abstract states list exactly the actions the real env accepts, on every page kind", async () => {
  const policy = new RandomPolicy(5);
  const kinds = new Set<string>();
  let pages = 0;
  for (const task of env.tasks().slice(0, 60)) {
    let { observation } = await env.reset({ task });
    for (;;) {
      const state = abs.abstract(observation);
      assert.equal(abs.abstract(state), state, "abstracting an abstract state changes nothing");
      const kind = /^page: (\S+)/.exec(state)![1];
      kinds.add(kind);
      assert.equal(kind, webshopPageKind(observation));
      assert.deepEqual(new Set(abs.actions(state)), new Set(env.availableActions()), `${kind} page:\n${state}`);
      pages++;
      if (kind === "done") break;
      const action = await policy.choose({ observation, actions: env.availableActions(), task, info: {}, history: [] });
      const r = await env.step(action);
      observation = r.observation;
      if (r.truncated) break;
    }
  }
  assert.deepEqual([...kinds].sort(), ["done", "item", "item_sub", "results", "search"]);
  assert.ok(pages > 300);
  assert.ok(abs.isTerminal(abs.abstract("Thank you for shopping with us! [SEP] Your code:")));
  assert.equal(abs.abstract(webshopStartPage({ id: "x", instruction: "find a lamp" })), "page: search\ninstruction: find a lamp\n[search box]");
});

test("a real env with abstract observations still conforms to the Env contract", async () => {
  await checkEnv(abstractEnv(new WebShopEnv({ split: "test" }), abs), { steps: 6 });
});

test("the hybrid verifier gives WebShop's own reward for a purchase seen in abstract states", async () => {
  const verify = webshopVerifier(env.catalogue);
  const oracle = new OraclePolicy(env);
  const random = new RandomPolicy(9);
  let checked = 0;
  for (const [i, task] of env.tasks().slice(0, 80).entries()) {
    const t = await runEpisode(env, i % 2 ? oracle : random, { envName: "webshop", task });
    const history: { state: string; action: string }[] = [];
    for (const s of t.steps) {
      const state = abs.abstract(s.observation);
      const v = verify(task, history, state, s.action);
      if (s.action === "click[buy now]" && s.terminated) {
        assert.ok(v, "a purchase is verified");
        assert.equal(v.reward, s.reward, `${task.id}: verifier ${v.reward} vs real ${s.reward}`);
        checked++;
      } else assert.equal(v, null);
      history.push({ state, action: s.action });
    }
  }
  assert.ok(checked >= 40, `${checked} purchases checked`);
});

test("the verifier clears options when the episode leaves the product, as the real env does", async () => {
  const verify = webshopVerifier(env.catalogue);
  // Goals whose product has options: pick one, leave, come back, buy without picking again.
  const tasks = env
    .tasks()
    .filter((t) => Object.keys(env.catalogue.goal(t.goal_index as number).goal_options).length > 0)
    .slice(0, 30);
  assert.ok(tasks.length >= 10);
  let compared = 0;
  for (const task of tasks) {
    const goal = env.catalogue.goal(task.goal_index as number);
    const value = Object.values(goal.goal_options as Record<string, string>)[0];
    const script = [
      `search[${goal.name}]`,
      `click[${goal.asin.toLowerCase()}]`,
      `click[${value}]`,
      "click[< prev]",
      `click[${goal.asin.toLowerCase()}]`,
      "click[buy now]",
    ];
    let { observation } = await env.reset({ task });
    const history: { state: string; action: string }[] = [];
    let real: number | null = null;
    let verified: { reward: number; nextState: string } | null = null;
    for (const action of script) {
      const state = abs.abstract(observation);
      if (action === "click[buy now]") verified = verify(task, history, state, action);
      const r = await env.step(action);
      if (r.info.invalid) break;
      history.push({ state, action });
      observation = r.observation;
      if (r.terminated) real = r.reward;
    }
    if (real === null || !verified) continue;
    assert.equal(verified.reward, real, task.id);
    assert.equal(verified.nextState, abs.abstract(observation), "the verified done state is the real one, abstracted");
    compared++;
  }
  assert.ok(compared >= 10, `${compared} compared`);
});
