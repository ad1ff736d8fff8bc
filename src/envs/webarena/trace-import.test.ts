// WebArena's published traces (render_<id>.html + merged_log.txt) into our trajectories, on a fixture
// folder written in that layout (test/fixtures/webarena-traces).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseTrajectory, ReplayBuffer } from "../../buffer/index.ts";
import { DataError, PACKAGE_ROOT } from "../../core/index.ts";
import { syntheticSupport, createEnv, trajectoryRules } from "../index.ts";
import {
  importWebArenaResults,
  normalizeAction,
  parseResultLog,
  placeholderUrl,
  scoreAnswer,
  treeToState,
  parseStopAction,
  type WebArenaTask,
} from "./index.ts";

const FOLDER = join(PACKAGE_ROOT, "test", "fixtures", "webarena-traces");

test("a result folder: passed and failed tasks as real webarena trajectories; unknown outcomes and tasks skipped with the reason", async () => {
  const r = importWebArenaResults(FOLDER);
  assert.deepEqual(
    r.trajectories.map((t) => [t.task.id, t.success, t.steps.length]),
    [
      ["webarena:0", true, 3],
      ["webarena:22", false, 2],
    ],
  );
  assert.deepEqual(
    r.skipped.map((s) => [s.file.split("/").at(-1), s.reason.replace(/ in \/.*$/, "")]),
    [
      ["render_5.html", "no [Result] line for task 5"],
      ["render_9000.html", "task 9000 is not in the all task file"],
    ],
  );
  const [t0, t22] = r.trajectories;
  assert.deepEqual(
    t0.steps.map((s) => s.action),
    ["click [135]", "click [512]", "stop [Quest Lumaflex™ Band]"],
  );
  assert.deepEqual(
    t0.steps.map((s) => s.reward),
    [0, 0, 1],
  );
  assert.deepEqual(
    t0.steps.map((s) => s.terminated),
    [false, false, true],
  );
  assert.equal(t0.task.instruction, "What is the top-1 best-selling product in 2022");
  assert.equal(t0.source, "real");
  // States: the web meta-representation, the deployment's URL as the placeholder, properties dropped.
  assert.equal(
    t0.steps[0].observation.split("\n").slice(0, 4).join("\n"),
    'url: __SHOPPING_ADMIN__/admin/dashboard/\ntitle: Dashboard / Magento Admin\n[89] link "Magento Admin Panel"\n[135] link "\ue604 REPORTS"',
  );
  assert.equal(t0.steps[0].next_observation, t0.steps[1].observation);
  assert.match(t0.steps[2].observation, /^url: __SHOPPING_ADMIN__\/reports\/report_sales\/bestsellers\/\n/);
  assert.match(t0.steps[2].observation, /\n\[2050\] combobox "Period"\n/);
  assert.match(t0.steps[2].observation, /\ngridcell "Quest Lumaflex™ Band"\n/);
  assert.match(String(t0.steps[0].info?.prediction), /^Let's think step-by-step/);
  // The imported answer, graded by the ported evaluator, passes as the log says it did.
  const answer = parseStopAction(t0.steps[2].action)!.answer;
  assert.equal((await scoreAnswer(answer, (t0.task as WebArenaTask).eval.reference_answers!, { intent: t0.task.instruction })).score, 1);
  assert.deepEqual(
    t22.steps.map((s) => [s.action, s.reward]),
    [
      ["type [1261] [under water photo ]", 0],
      ["stop [There is no such review]", 0],
    ],
  );
  assert.match(t22.steps[1].observation, /^url: __SHOPPING__\/catalogsearch\/result\/\?q=under\+water\+photo\ntitle: Search results for: 'under water photo'/);
  assert.match(t22.steps[0].observation, /\n\[1500\] link "Kid's Pillow, 2 Pack"$/, "text repeating its link is dropped");

  // They are valid trajectories of the registered env, and go into a buffer as they are (abstract already).
  for (const t of r.trajectories) parseTrajectory(JSON.parse(JSON.stringify(t)), trajectoryRules());
  const env = createEnv("webarena", { split: "lite", sites: {} });
  const abs = syntheticSupport("webarena", env).abstraction;
  await env.close();
  assert.equal(abs.abstract(t0.steps[1].observation), t0.steps[1].observation);
  assert.ok(abs.actions(t0.steps[1].observation)!.includes("click [512]"), "the action taken is one the state offers");
  const dir = mkdtempSync(join(tmpdir(), "webarena-traces-"));
  try {
    const buffer = ReplayBuffer.open(join(dir, "b.db"));
    try {
      const added = await buffer.appendTrajectories(r.trajectories, { seed: true });
      assert.equal(added.added, 2);
      assert.equal(buffer.count({ env: "webarena", source: "real" }), 5);
    } finally {
      buffer.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("format pieces: result log lines, parsed actions, URLs to placeholders, the tree to a state", () => {
  assert.deepEqual(
    [...parseResultLog("x - INFO - [Result] (PASS) config_files/12.json\ny - [Result] (FAIL) /a/b/config_files/7.json\n[Result] (PASS) junk")],
    [
      [12, true],
      [7, false],
    ],
  );
  assert.equal(normalizeAction("type [12] [hello world ] where [12] is textbox 'Search' required: False"), "type [12] [hello world ]");
  assert.equal(normalizeAction("stop [a where [1] is b]"), "stop [a where [1] is b]", "a stop's answer is kept whole");
  assert.equal(normalizeAction("go_back"), "go_back");
  assert.equal(placeholderUrl("http://h:7780/admin/sales/order/"), "__SHOPPING_ADMIN__/sales/order/");
  assert.equal(placeholderUrl("http://h:9999/f/nyc"), "__REDDIT__/f/nyc");
  assert.equal(placeholderUrl("http://h:1234/x"), "http://h:1234/x");
  assert.equal(placeholderUrl("http://shop.local/p?q=1", { shopping: "http://shop.local" }), "__SHOPPING__/p?q=1");
  assert.equal(
    treeToState("u", "Tab 0 (current): T\n\n[1] RootWebArea 'T' focused: True\n\t[5] StaticText 'Hi'\n\t[6] generic ''\n\t[7] img 'logo'", new Set(["5"])),
    'url: u\ntitle: T\n[5] StaticText "Hi"\nimg "logo"',
  );
});

test("a folder that is not a result folder: one error naming it", () => {
  const dir = mkdtempSync(join(tmpdir(), "webarena-traces-"));
  try {
    assert.throws(
      () => importWebArenaResults(join(dir, "missing")),
      (e: unknown) => e instanceof DataError && /missing: not a folder/.test(e.message),
    );
    assert.throws(() => importWebArenaResults(dir), /no merged_log\.txt \(or merge_log\.txt\)/);
    mkdirSync(join(dir, "r"));
    writeFileSync(join(dir, "r", "merged_log.txt"), "[Result] (PASS) config_files/0.json\n");
    writeFileSync(join(dir, "r", "render_0.html"), "<html><body><pre>task_id: 0</pre>\n<h2>New Page</h2><p>nothing</p></body></html>");
    assert.throws(() => importWebArenaResults(join(dir, "r")), /render_0\.html: step 1 has no URL or observation: not a WebArena render file/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
