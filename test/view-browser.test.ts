// `dreamgym view` in a real browser: Debian's Chromium driven by playwright-core, over the real app
// on a small generated run. It clicks through runs → episode → side by side with the real replay,
// and through the other tabs, checking what is on the page, and takes a screenshot of each view
// (into a temp folder; with DREAMGYM_VIEW_SCREENSHOTS=docs/img, into the README's images).
import { test } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { createViewApp, startServer, type RunningServer } from "../src/server/index.ts";
import { makeViewFixture } from "./view-fixture.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const absent = !existsSync(CHROMIUM);

test("dreamgym view in Chromium: runs → curves, episode → side by side with its real replay, search, curriculum, audit", {
  skip: absent
    ? `Chromium is not installed at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH): the browser test of dreamgym view is skipped`
    : false,
}, async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-view-browser-"));
  const shots = process.env.DREAMGYM_VIEW_SCREENSHOTS ? resolve(process.env.DREAMGYM_VIEW_SCREENSHOTS) : join(root, "shots");
  mkdirSync(shots, { recursive: true });
  const fx = await makeViewFixture(root);
  // A third run, still "training" (no summary yet): the page must follow its metrics as they are written.
  const live = join(fx.runs, "live");
  cpSync(fx.dirs[1], live, { recursive: true });
  rmSync(join(live, "summary.json"));
  const liveMetrics = readFileSync(join(live, "metrics.jsonl"), "utf8").trim().split("\n");
  const app = createViewApp({ runs: fx.runs, buffer: fx.buffer });
  let server: RunningServer | undefined;
  let browser: Browser | undefined;
  try {
    server = await startServer({ app, port: 0, host: "127.0.0.1" });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("console", (m) => void (m.type() === "error" && errors.push(m.text())));
    const shot = async (name: string) => {
      const file = join(shots, `view-${name}.png`);
      await page.screenshot({ path: file });
      assert.ok(statSync(file).size > 5000, `${file} is a real picture`);
    };
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const api = async (path: string): Promise<any> => (await fetch(`${server!.url}/api/${path}`)).json();

    // Runs: both rows of the experiment, with mode, env, budget and final eval.
    await page.goto(server.url);
    const rows = page.locator("[data-test=runs-table] tbody tr");
    await rows.first().waitFor();
    assert.equal(await rows.count(), 3);
    const first = await rows.nth(0).innerText();
    assert.match(first, /exp\/seed-3\s+dreamgym\s+view-corridor\s+grpo\s+400\s+7\s+100\.0\s+100\.0%\s+finished/);
    assert.match(await rows.nth(2).innerText(), /live\s+dreamgym.*\*\s+[\d.]+%\s+running/);
    // Open one run, overlay the other: a chart per curve, with a line per run.
    await page.click("[data-run='exp/seed-3'] [data-test=run-link]");
    await page.locator("[data-test=overlaid]", { hasText: "1 run" }).waitFor();
    await page.check("[data-run='exp/seed-4'] input[type=checkbox]");
    await page.locator("[data-test=overlaid]", { hasText: "2 runs" }).waitFor();
    await page.uncheck("[data-run='exp/seed-4'] input[type=checkbox]");
    await page.locator("[data-test=overlaid]", { hasText: "1 run" }).waitFor();
    // The experiment folder's rows at once.
    await page.click("[data-test=overlay-group]");
    await page.locator("[data-test=overlaid]", { hasText: "2 runs" }).waitFor();
    for (const c of ["reward", "success", "eval", "entropy", "kl", "exploitation", "order", "gap"])
      await page.locator(`[data-test=chart-${c}] canvas`).first().waitFor();
    assert.equal(await page.locator("[data-test=open-run]").innerText(), "run: exp/seed-3");
    await page.selectOption("[data-test=axis]", "synthetic");
    await page.locator("[data-test=chart-reward] [data-test=axis-label]", { hasText: "against synthetic interactions" }).waitFor();
    // Live: the running run's next metrics line shows up, in the list and in its curve.
    await page.check("[data-run='live'] input[type=checkbox]");
    await page.locator("[data-test=overlaid]", { hasText: "3 runs" }).waitFor();
    const next = { ...JSON.parse(liveMetrics.at(-1)!), iteration: liveMetrics.length + 1 };
    appendFileSync(join(live, "metrics.jsonl"), JSON.stringify(next) + "\n");
    await page.locator("[data-run='live'] td:nth-child(7)", { hasText: String(liveMetrics.length + 1) }).waitFor({ timeout: 20_000 });
    // The reward chart plots every line of the three runs: 7 + 7 and the live run's 8.
    await page
      .locator(`[data-test=chart-reward][data-points='${fx.summaries[0].iterations + fx.summaries[1].iterations + liveMetrics.length + 1}']`)
      .waitFor({ timeout: 20_000 });
    await shot("runs");

    // Trajectories of the run: its own synthetic episodes, paged by the server.
    await page.click("[data-tab=trajectories]");
    await page.check("text=this run's episodes only");
    await page.selectOption("[data-test=origin]", "synthetic");
    const list = await api("episodes?src=run&run=exp/seed-3&origin=synthetic&own=true&limit=25");
    await page.locator("[data-test=episode-count]", { hasText: `${list.total} episodes, 1–25` }).waitFor();
    assert.equal(await page.locator("[data-test=episodes-table] tbody tr[data-origin=synthetic]").count(), 25);
    // The first episode of the page that the on-policy audit replayed and found diverging after its first step.
    let replayed: { id: number; pair: { iteration: number; index: number } } | undefined;
    for (const e of list.episodes) {
      const d = await api(`episode?src=run&run=exp/seed-3&id=${e.id}`);
      if (!d.replayed) continue;
      const p = await api(`run/audit-pair?run=exp/seed-3&iteration=${d.replayed.iteration}&index=${d.replayed.index}`);
      if (p.divergedAt > 1) {
        replayed = { id: e.id, pair: d.replayed };
        break;
      }
    }
    assert.ok(replayed, "a diverging audited episode on the first page");
    await shot("trajectories");
    await page.click(`[data-episode='${replayed.id}']`);
    await page.locator("[data-test=episode]").waitFor();
    const steps = page.locator("[data-test=step]");
    const ep = await api(`episode?src=run&run=exp/seed-3&id=${replayed.id}`);
    assert.equal(await steps.count(), ep.steps.length);
    assert.match(await page.locator("[data-test=reasoning]").first().innerText(), /step (moves one position|reaches the end)/);
    await shot("episode");

    // Side by side: the synthetic episode and what the real corridor did with the same actions.
    await page.click("[data-test=compare]");
    await page.locator("[data-test=pair]").waitFor();
    const pair = await api(`run/audit-pair?run=exp/seed-3&iteration=${replayed.pair.iteration}&index=${replayed.pair.index}`);
    assert.equal(await page.locator("[data-test=pair-step]").count(), pair.synthetic.steps.length);
    assert.equal(await page.locator("[data-test=divergence-summary]").innerText(), `first divergence at step ${pair.divergedAt}`);
    const diverged = page.locator(`[data-test=pair-step][data-step='${pair.divergedAt}']`);
    assert.match((await diverged.getAttribute("class")) ?? "", /diverged/);
    assert.equal(await diverged.locator("[data-test=first-divergence]").count(), 1);
    assert.equal(await page.locator("[data-test=first-divergence]").count(), 1, "one first divergence");
    // Its diff: the model jumped to the end (position 4), the real corridor went one step (position 3).
    const diff = await diverged.locator("[data-test=diff]").innerText();
    assert.match(diff, /− position 4 of 4/);
    assert.match(diff, /\+ position 3 of 4/);
    // Before it, the two agree: no diff.
    assert.equal(await page.locator("[data-test=pair-step][data-step='1'] [data-test=diff]").count(), 0);
    await diverged.scrollIntoViewIfNeeded();
    await shot("diff");

    // Search: what the experience model would be given for (state, action).
    await page.click("[data-tab=search]");
    await page.fill("[data-test=search-state]", "page: corridor\ninstruction: walk to the end of the corridor\nposition 2 of 4\n[left] [right]");
    await page.fill("[data-test=search-action]", "click[right]");
    await page.click("[data-test=search-go]");
    await page.locator("[data-test=demo]").first().waitFor();
    const demo = await page.locator("[data-test=demo]").first().innerText();
    assert.match(demo, /click\[right\]/);
    assert.match(demo, /position 2 of 4/);
    await shot("search");

    // Curriculum: the generated tasks under their seed tasks.
    await page.click("[data-tab=curriculum]");
    await page.locator("[data-test=curriculum]").waitFor();
    const tree = await api("run/curriculum?run=exp/seed-3");
    assert.ok(tree.generated > 0);
    assert.equal(await page.locator("[data-test=task-node]").count(), tree.generated + tree.seedsVaried);
    assert.equal(await page.locator("[data-test=task-node] [data-test=task-node]").count(), tree.generated, "every generated task under its parent");
    await shot("curriculum");

    // Audit: a row per audited iteration and one over all, as `dreamgym audit --run` prints.
    await page.click("[data-tab=audit]");
    await page.locator("[data-test=audit-table]").waitFor();
    assert.equal(await page.locator("[data-test=audit-table] tbody tr").count(), 8);
    assert.match(await page.locator("[data-test=audit-table] tbody tr").last().innerText(), /^all\s+28\s/);
    await shot("audit");
    // A long run's audited episodes come a page at a time: 60 more audit files of 4 pairs each.
    const auditDir = join(fx.dirs[0], "audit");
    for (let i = 1001; i <= 1060; i++) cpSync(join(auditDir, "iteration-0001.jsonl"), join(auditDir, `iteration-${i}.jsonl`));
    await page.click("[data-tab=curriculum]");
    await page.click("[data-tab=audit]");
    const pager = page.locator("[data-test=pairs-pager]");
    await pager.waitFor();
    assert.match(await pager.innerText(), /^1–200 of 268\b/);
    assert.equal(await page.locator("[data-test=pairs-table] tbody tr").count(), 200);
    await page.click("[data-test=pairs-next]");
    await page.locator("[data-test=pairs-pager]", { hasText: "201–268 of 268" }).waitFor();
    assert.equal(await page.locator("[data-test=pairs-table] tbody tr").count(), 68);
    assert.match(await page.locator("[data-test=pairs-table] tbody tr").last().innerText(), /^1060\s/);
    // From the audit's list of episodes to a pair, and back to the same page of the list.
    await page.locator("[data-test=pairs-table] tbody tr").first().click();
    await page.locator("[data-test=pair]").waitFor();
    await page.click("[data-test=pair] button.link");
    await page.locator("[data-test=pairs-pager]", { hasText: "201–268 of 268" }).waitFor();
    await page.locator("[data-test=pairs-table] tbody tr").first().click();
    await page.locator("[data-test=pair]").waitFor();
    assert.deepEqual(errors, []);
  } finally {
    await browser?.close();
    await (server ?? app).close();
    rmSync(root, { recursive: true, force: true });
  }
});
