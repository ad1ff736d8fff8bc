import { after, test } from "node:test";
import assert from "node:assert/strict";
import { checkEnv, Rng, type Env, type Policy, type Task } from "../../core/index.ts";
import { createEnv, createPolicy, envTasks, syntheticSupport } from "../index.ts";
import { RandomPolicy } from "../policies.ts";
import type { BrowserEnv } from "../browser/index.ts";
import type { WebShopPagesEnv, WebShopSite } from "./index.ts";

// The in-process pages env against the browser: the same goals, the same policies, every state compared.
// Two browser envs over one pool of two contexts (as `createEnv` shares it), each with its own pages env.
const browsers: (BrowserEnv & { site: WebShopSite })[] = [0, 1].map(() =>
  createEnv("webshop-browser", { split: "train", contexts: 2, actionTimeoutMs: 20_000 }),
);
const [browser] = browsers;
const pagesEnvs: WebShopPagesEnv[] = [0, 1].map(() => createEnv("webshop-pages", { split: "train" }));
const [pages] = pagesEnvs;
after(async () => {
  for (const e of [...browsers, ...pagesEnvs]) await e.close();
});

async function play(env: Env, policy: Policy, task: Task): Promise<{ states: string[]; rewards: number[]; actions: string[][]; taken: string[] }> {
  policy.reset?.(task);
  let { observation, info } = await env.reset({ task });
  const history: string[] = [];
  const out = { states: [observation], rewards: [] as number[], actions: [] as string[][], taken: history };
  for (;;) {
    const actions = env.availableActions()!;
    out.actions.push(actions);
    const { action } = await policy.act({ observation, actions, task, info, history }, { rng: new Rng(0) });
    history.push(action);
    const r = await env.step(action);
    out.states.push(r.observation);
    out.rewards.push(r.reward);
    ({ observation, info } = r);
    if (r.terminated || r.truncated) return out;
  }
}

test("the pages env shows what the browser shows, step by step: oracle and random episodes, go_back and restored radios included", async () => {
  const tasks = envTasks("webshop-browser", browser)
    .filter((_, i) => i % 211 === 0)
    .slice(0, 10);
  assert.equal(tasks.length, 10);
  let steps = 0,
    backs = 0;
  // Each pair of envs takes every other goal (each episode's policy and seed are its goal's alone).
  await Promise.all(
    browsers.map(async (b, k) => {
      const p = pagesEnvs[k];
      for (let i = k; i < tasks.length; i += browsers.length) {
        const task = tasks[i];
        for (const kind of ["oracle", "random"] as const) {
          const mk = (env: Env & { site: { catalogue: unknown }; task: Task | null }) =>
            kind === "oracle" ? createPolicy("webshop-browser", "oracle", env as never) : new RandomPolicy(1000 + i);
          const inBrowser = await play(b, mk(b), task);
          const inProcess = await play(p, mk(p), task);
          assert.deepEqual(inProcess.states, inBrowser.states, `${kind} on ${task.id}`);
          assert.deepEqual(inProcess.rewards, inBrowser.rewards);
          assert.deepEqual(inProcess.actions, inBrowser.actions);
          steps += inBrowser.rewards.length;
          backs += inBrowser.taken.filter((a, j) => a === "go_back" && inBrowser.states[j + 1] !== inBrowser.states[j]).length;
        }
      }
    }),
  );
  assert.ok(steps > 100, `${steps} steps compared`);
  assert.ok(backs > 0, "some episode went back a page");
});

test("the pages env keeps the Env contract and the browser's synthetic support", async () => {
  await checkEnv(createEnv("webshop-pages", { split: "test" }), { steps: 8 });
  const support = syntheticSupport("webshop-pages", pages);
  assert.equal(support.abstraction.env, "webshop-pages");
  const task = pages.tasks()[3];
  const { observation } = await pages.reset({ task });
  assert.equal(observation, support.initialState!(task));
});

test("an item page no data opened is told from its listing as the site shows a product without options", async () => {
  const { webshopBrowserAbstraction } = await import("./index.ts");
  const { parseElements } = await import("../browser/index.ts");
  let like: string | undefined;
  let told = 0;
  for (const task of pages.tasks().slice(0, 12)) {
    const query = `type [1] [${task.instruction.split(" with ")[0]}]`;
    await pages.reset({ task });
    const results = (await pages.step(query)).observation;
    for (const link of parseElements(results).filter((e) => e.role === "link")) {
      await pages.reset({ task });
      await pages.step(query);
      const item = (await pages.step(`click [${link.id}]`)).observation;
      if (like === undefined) like = item;
      else if (!item.includes(" radio ")) {
        assert.equal(webshopBrowserAbstraction.unseenPage!(results, `click [${link.id}]`, like), item);
        told++;
      }
    }
  }
  assert.ok(told >= 10, `${told} pages told`);
  // Not a product link, or not a results page: not told.
  assert.equal(webshopBrowserAbstraction.unseenPage!(like!, "click [1]", like!), undefined);
});
