import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import type { CDPSession } from "playwright-core";
import { FREE_TEXT_SLOT, PACKAGE_ROOT, Rng, type Env, type Policy, type Task } from "../../core/index.ts";
import { createEnv, createPolicy, envTasks, syntheticSupport } from "../index.ts";
import type { BrowserEnv } from "../browser/index.ts";
import { WebShopEnv } from "../webshop/index.ts";
import { webshopBrowserAbstraction, webshopBrowserStartState, type WebShopSite } from "./index.ts";

/** One shared pool of 4 contexts for the test file (as `createEnv` shares it), closed with the last env. */
const envs: (BrowserEnv & { site: WebShopSite })[] = Array.from({ length: 4 }, () => createEnv("webshop-browser", { split: "test", actionTimeoutMs: 20_000 }));
after(async () => {
  for (const e of envs) await e.close();
});

async function play(
  env: Env,
  policy: Policy,
  task: Task,
): Promise<{
  total: number;
  steps: { state: string; action: string; next: string; reward: number }[];
  last: { truncated: boolean; info: Record<string, unknown> };
}> {
  policy.reset?.(task);
  let { observation, info } = await env.reset({ task });
  const steps: { state: string; action: string; next: string; reward: number }[] = [];
  let total = 0;
  for (;;) {
    const action = (await policy.act({ observation, actions: env.availableActions(), task, info, history: [] }, { rng: new Rng(0) })).action;
    const r = await env.step(action);
    steps.push({ state: observation, action, next: r.observation, reward: r.reward });
    total += r.reward;
    ({ observation, info } = r);
    if (r.terminated || r.truncated) return { total, steps, last: { truncated: r.truncated, info: r.info } };
  }
}

test("the oracle reaches in the browser the reward it reaches in the text env, goal by goal", async () => {
  const text = new WebShopEnv({ split: "test" });
  const tasks = envTasks("webshop-browser", envs[0])
    .filter((_, i) => i % 17 === 0)
    .slice(0, 24);
  assert.equal(tasks.length, 24);
  const textRewards = [];
  for (const t of tasks) textRewards.push((await play(text, createPolicy("webshop", "oracle", text), t)).total);
  // Four envs over the pool's four contexts, each taking every fourth goal.
  const browserRewards: number[] = new Array(tasks.length);
  await Promise.all(
    envs.map(async (env, k) => {
      const oracle = createPolicy("webshop-browser", "oracle", env);
      const verifier = syntheticSupport("webshop-browser", env).verifier!;
      for (let i = k; i < tasks.length; i += envs.length) {
        const run = await play(env, oracle, tasks[i]);
        browserRewards[i] = run.total;
        const first = run.steps[0];
        // The synthetic env's start state, actions and purchase verdict are the browser's own.
        assert.equal(first.state, webshopBrowserStartState(tasks[i]));
        for (const s of run.steps) {
          const listed = webshopBrowserAbstraction.actions(s.state)!;
          assert.ok(
            listed.some((a) => a === s.action || (a.includes(FREE_TEXT_SLOT) && s.action.startsWith(a.slice(0, a.indexOf(FREE_TEXT_SLOT))))),
            `${s.action} is listed`,
          );
        }
        const buy = run.steps.at(-1)!;
        const verdict = await verifier(tasks[i], [], buy.state, buy.action);
        assert.ok(verdict, "the verifier judges the purchase");
        assert.equal(verdict.reward, buy.reward);
        assert.equal(verdict.nextState, buy.next);
        assert.ok(webshopBrowserAbstraction.isTerminal(buy.next));
      }
    }),
  );
  assert.deepEqual(browserRewards, textRewards);
  assert.ok(textRewards.filter((r) => r === 1).length >= 12, `the oracle buys well: ${textRewards.join(" ")}`);
  assert.ok(envs[0].pool.stats.launches === 1 && envs[0].pool.stats.contexts <= 4, JSON.stringify(envs[0].pool.stats));
});

test("envs made with the same options share one site and one pool", () => {
  assert.ok(envs.every((e) => e.pool === envs[0].pool && e.site === envs[0].site));
  assert.equal(envs[0].pool.size, 4);
});

test("actions: listed for the page; an unknown id, a wrong kind or go_back on the first page is an invalid no-op", async () => {
  const env = envs[0];
  const { observation } = await env.reset({ task: env.tasks()[1] });
  assert.deepEqual(env.availableActions(), ["type [1] [<query>]", "click [2]", "go_back"]);
  for (const bad of ["click [1]", "click [99]", "type [2] [x]", "go_back", "search[shoes]", "select [1] [x]"]) {
    const r = await env.step(bad);
    assert.equal(r.info.invalid, true, bad);
    assert.equal(r.observation, observation);
  }
  const r = await env.step("type [1] [pillow]");
  assert.ok(!r.info.invalid && /^Page 1 \(Total results: \d+\)$/m.test(r.observation));
  const back = await env.step("go_back");
  // Back on the search page, whose box still holds what was typed (the browser restores forms).
  assert.equal(back.observation, observation.replace('"Search..."', '"Search..." value="pillow"'));
});

test("a crashed page ends the episode as failed; the next reset works", async () => {
  const env = envs[1];
  const oracle = createPolicy("webshop-browser", "oracle", env);
  const task = env.tasks()[2];
  const { observation, info } = await env.reset({ task });
  const first = await env.step((await oracle.act({ observation, actions: env.availableActions(), task, info, history: [] }, { rng: new Rng(0) })).action);
  assert.equal(first.truncated, false);
  const page = env.page!;
  const crashed = new Promise<void>((resolve) => page.once("crash", () => resolve()));
  const cdp: CDPSession = await page.context().newCDPSession(page);
  cdp.send("Page.crash").catch(() => {}); // never answered: the renderer is gone
  await crashed;
  const r = await env.step(env.availableActions()![0]);
  assert.equal(r.truncated, true);
  assert.equal(r.terminated, false);
  assert.equal(r.reward, 0);
  assert.match(String(r.info.error), /crash|closed|Target/i);
  const again = await play(env, oracle, task);
  assert.equal(again.last.truncated, false);
  assert.equal(again.total, 1);
});

test("a killed browser ends the episodes running in it as failed; the pool relaunches it", async () => {
  const env = envs[2];
  const oracle = createPolicy("webshop-browser", "oracle", env);
  const task = env.tasks()[3];
  await env.reset({ task });
  const pid = env.pool.pid;
  assert.ok(pid !== undefined, "the pool knows its browser's pid");
  const launches = env.pool.stats.launches;
  const gone = new Promise<void>((resolve) =>
    env
      .page!.context()
      .browser()!
      .once("disconnected", () => resolve()),
  );
  process.kill(pid, "SIGKILL");
  await gone;
  const r = await env.step("type [1] [pillow]");
  assert.equal(r.truncated, true);
  assert.ok(typeof r.info.error === "string" && r.info.error.length > 0);
  const again = await play(env, oracle, task);
  assert.equal(again.total, 1);
  assert.equal(env.pool.stats.launches, launches + 1);
});

test("without Chromium: one line naming the package, exit 2", () => {
  // The binary, as a user runs it (dist/, which npm test builds first).
  const r = spawnSync(process.execPath, [join(PACKAGE_ROOT, "bin", "dreamgym"), "env", "check", "--env", "webshop-browser", "--steps", "2"], {
    env: { ...process.env, DREAMGYM_CHROMIUM: "/nonexistent/chromium" },
    encoding: "utf8",
  });
  assert.equal(r.status, 2, r.stderr);
  const lines = r.stderr.trim().split("\n");
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0], /apt-get install chromium/);
});
