// createEnv("webarena") before and after a browser env is wired in. The browser env here is a few
// lines over a real Chromium page (what the BrowserEnv factory will be at merge): it opens the site's
// start URL, turns `stop [answer]` into the site's verdict, and answers anything else with the URL.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { chromium, type Browser, type Page } from "playwright-core";
import { InvalidConfigError, type Env, type Task } from "../../core/index.ts";
import { fixtureSites, type FixtureSites } from "../../../test/fixtures/webarena-sites.ts";
import { createEnv, findEnv, syntheticSupport, webarenaBrowserEnv } from "../index.ts";
import type { BrowserSite } from "../browser/site.ts";
import { parseStopAction, useBrowserEnv, WebArenaEnv, type BrowserEnvFactory } from "./index.ts";

let browser: Browser;
let fx: FixtureSites;
before(async () => {
  fx = await fixtureSites();
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
});
after(async () => {
  useBrowserEnv(undefined);
  await browser?.close();
  await fx?.close();
});

/** The least a browser env does for a site: one page, start URL, stop → judge. */
const tinyBrowserEnv: BrowserEnvFactory = (site: BrowserSite) => {
  let page: Page | undefined;
  let task: Task | undefined;
  const env: Env = {
    async reset(opts = {}) {
      task = opts.task!;
      await page?.context().close();
      page = await (await browser.newContext()).newPage();
      await page.goto(await site.startUrl(task));
      return { observation: `url: ${page.url()}`, info: { task } };
    },
    async step(action) {
      const stop = parseStopAction(action);
      const verdict = await site.judge(page!, task!, { stopped: stop !== null, answer: stop?.answer });
      return {
        observation: `url: ${page!.url()}`,
        reward: verdict?.reward ?? 0,
        terminated: verdict !== null,
        truncated: false,
        info: verdict ? { detail: verdict.detail } : {},
      };
    },
    availableActions: () => undefined,
    async close() {
      await page?.context().close();
    },
  };
  return env;
};

test("registered: tasks and the synthetic side work with no deployment; reset says what is missing in one line", async () => {
  useBrowserEnv(undefined);
  assert.ok(findEnv("webarena"));
  const env = createEnv("webarena", { split: "lite", sites: {} });
  try {
    assert.equal(env.tasks().length, 165);
    const support = syntheticSupport("webarena", env);
    const t = env.tasks()[0];
    const start = support.abstraction.abstract(support.initialState(t));
    assert.match(start, /^url: __SHOPPING_ADMIN__\/\ntitle: Dashboard/);
    assert.ok(support.abstraction.actions(start)!.includes("click [3]"));
    assert.ok(support.abstraction.actions(start)!.includes("stop [<query>]"));
    await assert.rejects(
      env.reset({ task: t }),
      (e: unknown) => e instanceof InvalidConfigError && /browser env .* not available in this build/.test(e.message) && !e.message.includes("\n"),
    );
    useBrowserEnv(tinyBrowserEnv);
    await assert.rejects(env.reset({ task: t }), /webarena: no site of a deployment given/);
  } finally {
    await env.close();
  }
});

test("wired to a browser env: an episode on the fixture sites is judged by WebArena's evaluators at stop", async () => {
  useBrowserEnv(tinyBrowserEnv);
  const env = createEnv("webarena", { split: "all", sites: fx.sites }) as WebArenaEnv;
  try {
    const t0 = env.tasks()[0]; // shopping_admin, exact_match "Quest Lumaflex™ Band"
    const r = await env.reset({ task: t0 });
    assert.equal(r.observation, `url: ${fx.sites.shopping_admin}`);
    let s = await env.step("stop [Quest Lumaflex™ Band]");
    assert.deepEqual([s.reward, s.terminated], [1, true]);
    await env.reset({ task: t0 });
    s = await env.step("stop [Sprite Yoga Strap]");
    assert.deepEqual([s.reward, s.terminated], [0, true]);
    assert.match(String(s.info.detail), /string_match 0/);
    // A map task: the map site was not given.
    const mapTask = env.tasks().find((t) => t.sites.join() === "map")!;
    await assert.rejects(env.reset({ task: mapTask }), new RegExp(`${mapTask.id} needs the map site \\(not given\\)`));
    // Sampled tasks on the sites given are reproducible by seed.
    const shopOnly = new WebArenaEnv({ split: "lite", sites: { shopping: fx.sites.shopping } });
    try {
      await assert.rejects(shopOnly.reset({ seed: 1 }), /needs the \w+ site/);
    } finally {
      await shopOnly.close();
    }
  } finally {
    await env.close();
  }
});

test("with the package's own wiring, BrowserEnv plays a WebArena task on the fixture site and WebArena's evaluator judges the stop", async () => {
  useBrowserEnv(webarenaBrowserEnv);
  const env = createEnv("webarena", { split: "all", sites: fx.sites, contexts: 1 } as never) as WebArenaEnv;
  try {
    const t0 = env.tasks()[0]; // shopping_admin, exact_match "Quest Lumaflex™ Band"
    const r = await env.reset({ task: t0 });
    assert.ok(
      r.observation.includes("404"),
      `the fixture admin site answers its start URL with its 404 page, read by the browser: ${r.observation.slice(0, 200)}`,
    );
    assert.ok(
      env.availableActions()?.some((a) => a.startsWith("stop [")),
      "stop is listed",
    );
    let s = await env.step("stop [Sprite Yoga Strap]");
    assert.deepEqual([s.reward, s.terminated], [0, true]);
    await env.reset({ task: t0 });
    s = await env.step("stop [Quest Lumaflex™ Band]");
    assert.deepEqual([s.reward, s.terminated], [1, true]);
  } finally {
    await env.close();
  }
});
