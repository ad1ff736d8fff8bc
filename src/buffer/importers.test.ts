import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReplayBuffer } from "./replay-buffer.ts";
import { exportJsonl, importJsonl, parseTranscript } from "./importers.ts";
import { parseTrajectory } from "./trajectory-schema.ts";
import { makeTrajectory, tempFile } from "../testing/index.ts";
import { readJsonlAll } from "../core/index.ts";

test("import: malformed lines are reported with their numbers, the rest is imported; re-import adds nothing", async () => {
  const file = tempFile("in.jsonl");
  const good = [makeTrajectory(1), makeTrajectory(2), makeTrajectory(3)];
  const lines = [
    JSON.stringify(good[0]),
    "{not json",
    JSON.stringify({ ...good[1], steps: [{ ...good[1].steps[0], reward: "high" }] }),
    "",
    JSON.stringify(good[1]),
    JSON.stringify({ env: "toy", task: { id: "t" }, steps: [] }),
    JSON.stringify(good[2]),
  ];
  writeFileSync(file, lines.join("\n") + "\n");
  const b = ReplayBuffer.open(tempFile("imp.db"));
  const r = await importJsonl(b, file);
  assert.equal(r.added, 3);
  assert.equal(r.transitions, 9);
  assert.deepEqual(
    r.malformed.map((m) => m.line),
    [2, 3, 6],
  );
  assert.match(r.malformed[1].message, /steps\[0\]\.reward must be a finite number/);
  assert.match(r.malformed[2].message, /task\.instruction/);
  const again = await importJsonl(b, file);
  assert.deepEqual([again.added, again.duplicates], [0, 3]);
  assert.equal(b.stats().seedTrajectories, 3, "imports are the offline seed by default");
  b.close();
});

test("export writes the trajectory format; exporting and importing round-trips", async () => {
  const b = ReplayBuffer.open(tempFile("exp.db"));
  const trajs = [makeTrajectory(1, { env: "a" }), makeTrajectory(2, { env: "b", source: "synthetic" }), makeTrajectory(3, { env: "a" })];
  trajs[0].steps[1].reasoning = "the item matches";
  trajs[0].steps[1].info = { page: "item" };
  await b.appendTrajectories(trajs);
  const out = tempFile("out.jsonl");
  assert.equal(exportJsonl(b, out), 3);
  assert.deepEqual(await readJsonlAll(out), trajs);
  assert.equal(exportJsonl(b, out, { env: "a" }), 2);
  assert.equal(exportJsonl(b, out, { source: "synthetic" }), 1);
  const c = ReplayBuffer.open(tempFile("round.db"));
  exportJsonl(b, out);
  const r = await importJsonl(c, out);
  assert.equal(r.added, 3);
  assert.deepEqual([...c.trajectories()], trajs);
  b.close();
  c.close();
});

test("few-shot transcripts parse into trajectories", () => {
  const t = parseTranscript(
    "You are in a room.\nYour task is to: put a mug on a desk.\n> go to desk 1\nOn the desk 1, you see a mug 1.\n> think: the mug is here\nOK.\n> take mug 1 from desk 1\nYou pick up the mug 1 from the desk 1.\n",
    { env: "alfworld", id: "x", policy: "react-fewshot" },
  );
  assert.equal(t.task.instruction, "put a mug on a desk.");
  assert.deepEqual(
    t.steps.map((s) => s.action),
    ["go to desk 1", "think: the mug is here", "take mug 1 from desk 1"],
  );
  assert.equal(t.steps[0].observation, "You are in a room.\nYour task is to: put a mug on a desk.");
  assert.equal(t.steps[1].next_observation, "OK.");
  assert.deepEqual(t.steps[1].info, { think: true });
  assert.equal(t.steps[2].observation, "OK.");
  assert.deepEqual([t.steps[2].terminated, t.steps[2].reward, t.total_reward, t.success], [true, 1, 1, true]);
  assert.doesNotThrow(() => parseTrajectory(JSON.parse(JSON.stringify(t))));
  assert.throws(() => parseTranscript("just text", { env: "e", id: "y", policy: "p" }), /no "> action" lines/);
});

test("export refuses to overwrite the buffer file", async () => {
  const file = tempFile("self.db");
  const b = ReplayBuffer.open(file);
  await b.appendTrajectory(makeTrajectory(1));
  assert.throws(() => exportJsonl(b, file), /cannot export over the buffer file itself/);
  b.close();
});

test("the trajectory schema: with the env registry's rules, unknown envs and rewards out of range are refused; steps are never empty", () => {
  const rules = {
    envs: ["webshop", "counter"],
    rewards: (env: string) => ({ min: 0, max: env === "counter" ? 2 : 1, dense: env === "counter" }),
    success: (_env: string, total: number) => total >= 1,
  };
  const t = makeTrajectory(1, { env: "webshop" });
  assert.doesNotThrow(() => parseTrajectory(t, rules));
  const bad = (over: Record<string, unknown>) => ({ ...t, ...over });
  assert.throws(() => parseTrajectory(bad({ env: "nowhere" }), rules), /unknown env "nowhere" \(known: webshop, counter\)/);
  assert.throws(
    () => parseTrajectory(bad({ steps: [{ ...t.steps[0], reward: 1e308 }], total_reward: 1 }), rules),
    /steps\[0\]\.reward 1e\+308 is outside webshop's reward range \[0, 1\]/,
  );
  assert.throws(() => parseTrajectory(bad({ steps: [{ ...t.steps[0], reward: 0 }], total_reward: -5 }), rules), /"total_reward" -5 is outside/);
  assert.throws(() => parseTrajectory(bad({ steps: [], total_reward: 0 })), /"steps" is empty/);
  // Dense rewards add up: a total above one step's maximum is fine, up to the steps' sum.
  const dense = {
    ...t,
    env: "counter",
    steps: [
      { ...t.steps[0], reward: 2 },
      { ...t.steps[0], reward: 2 },
    ],
    total_reward: 4,
  };
  assert.equal(parseTrajectory(dense, rules).total_reward, 4);
  assert.throws(() => parseTrajectory({ ...dense, total_reward: 5 }, rules), /"total_reward" 5 is outside counter's range for 2 steps \[0, 4\]/);
  // Without rules (library use with other envs) only the structure is checked.
  assert.doesNotThrow(() => parseTrajectory(bad({ env: "toy-env", steps: [{ ...t.steps[0], reward: 7 }], total_reward: 7 })));
});

test("a lone surrogate is stored as U+FFFD and counted so: export and re-import add no duplicate (issue 34, item 18)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-surrogate-"));
  const t = makeTrajectory(7, { env: "webshop" });
  const file = join(dir, "a.jsonl");
  // JSON.stringify writes a lone surrogate as an escape; the line is valid JSON, but not valid text.
  writeFileSync(file, JSON.stringify({ ...t, task: { ...t.task, instruction: "buy a lamp \ud800 now" } }) + "\n");
  const b = ReplayBuffer.open(join(dir, "b.db"));
  try {
    assert.equal((await importJsonl(b, file)).added, 1);
    const out = join(dir, "out.jsonl");
    exportJsonl(b, out);
    assert.match(readFileSync(out, "utf8"), /buy a lamp \uFFFD now/);
    const again = await importJsonl(b, out);
    assert.deepEqual([again.added, again.duplicates], [0, 1]);
  } finally {
    b.close();
  }
});
