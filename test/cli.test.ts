import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run, runInProcess } from "./helpers.ts";
import { readJsonlAll, type Trajectory } from "../src/core/index.ts";

test("collect writes trajectories in the documented format (docs/data-formats.md)", async () => {
  const out = join(mkdtempSync(join(tmpdir(), "dreamgym-cli-")), "oracle.jsonl");
  const r = run(["collect", "--env", "webshop", "--policy", "oracle", "--episodes", "12", "--split", "train", "--out", out]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /wrote 12 trajectories/);
  const trajs = await readJsonlAll<Trajectory>(out);
  assert.equal(trajs.length, 12);
  for (const t of trajs) {
    assert.equal(t.env, "webshop");
    assert.equal(t.source, "real");
    assert.equal(t.policy, "oracle");
    assert.match(t.task.id, /^webshop:\d+$/);
    assert.ok(Number(t.task.id.split(":")[1]) >= 1500, "train goals start at 1500");
    assert.ok(t.steps.length >= 3);
    for (const s of t.steps) for (const k of ["observation", "action", "reward", "next_observation", "terminated", "truncated"]) assert.ok(k in s, k);
    assert.equal(t.success, t.total_reward >= 1);
    assert.ok(!Number.isNaN(Date.parse(t.created_at)));
  }
  // The same command through runInProcess (the CLI in this process, as the other tests build their data) writes the
  // same trajectories; only their timestamps differ.
  const here = join(mkdtempSync(join(tmpdir(), "dreamgym-cli-")), "oracle.jsonl");
  const h = await runInProcess(["collect", "--env", "webshop", "--policy", "oracle", "--episodes", "12", "--split", "train", "--out", here]);
  assert.equal(h.status, 0, h.stderr);
  assert.equal(h.stdout.replace(here, out), r.stdout);
  const untimed = (ts: Trajectory[]) => ts.map(({ created_at: _, ...t }) => t);
  assert.deepEqual(untimed(await readJsonlAll<Trajectory>(here)), untimed(trajs));
  // --append adds to the file.
  const again = await runInProcess(["collect", "--env", "webshop", "--policy", "random", "--episodes", "3", "--split", "dev", "--out", out, "--append"]);
  assert.equal(again.status, 0, again.stderr);
  assert.equal(readFileSync(out, "utf8").trim().split("\n").length, 15);
});

test("env eval prints score ×100 and success rate", async () => {
  const r = await runInProcess(["env", "eval", "--env", "webshop", "--policy", "oracle", "--split", "test", "--episodes", "20", "--json"]);
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.episodes, 20);
  assert.ok(out.score > 90 && out.score <= 100);
  assert.ok(out.success_rate >= 0 && out.success_rate <= 100);
});

test("env eval --start: the split's tasks from that index, as collect --start plays them", async () => {
  const args = ["--env", "webshop", "--policy", "rule", "--split", "test", "--episodes", "3", "--start", "5"];
  const r = await runInProcess(["env", "eval", ...args, "--json"]);
  assert.equal(r.status, 0, r.stderr);
  const out = join(mkdtempSync(join(tmpdir(), "dreamgym-cli-")), "rule.jsonl");
  const c = await runInProcess(["collect", ...args, "--out", out]);
  assert.equal(c.status, 0, c.stderr);
  const trajs = await readJsonlAll<Trajectory>(out);
  const mean = trajs.reduce((sum, t) => sum + t.total_reward, 0) / trajs.length;
  assert.equal(JSON.parse(r.stdout).score, 100 * mean);
  // --start is taken: the split's 6th to 8th tasks, as a run from the start plays them.
  const all = join(mkdtempSync(join(tmpdir(), "dreamgym-cli-")), "rule-all.jsonl");
  const whole = await runInProcess(["collect", ...args.slice(0, -4), "--episodes", "8", "--out", all]);
  assert.equal(whole.status, 0, whole.stderr);
  assert.deepEqual(
    trajs.map((t) => t.task.id),
    (await readJsonlAll<Trajectory>(all)).slice(5).map((t) => t.task.id),
  );
});

test("env play: a person can play in the terminal", () => {
  const input = ["search[pillow]", "3", "8", "quit"].join("\n") + "\n";
  // A binary run: the moves come on its stdin, as a person types them.
  const r = run(["env", "play", "webshop", "--task", "0"], input);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /Instruction:/);
  assert.match(r.stdout, /Page 1 \(Total results: \d+\)/);
  assert.match(r.stdout, /1\. click\[back to search\]/);
});

test("bad input: unknown env, bad split, missing data are clear errors", async () => {
  const env = await runInProcess(["env", "eval", "--env", "alfworldx", "--policy", "rule"]);
  assert.equal(env.status, 2);
  assert.match(env.stderr, /unknown environment "alfworldx" \(known: webshop, alfworld, webarena, webshop-browser, webshop-pages\)/);
  const split = await runInProcess(["env", "eval", "--env", "webshop", "--policy", "rule", "--split", "valid"]);
  assert.equal(split.status, 2);
  assert.match(split.stderr, /unknown WebShop split "valid"/);
  const policy = await runInProcess(["collect", "--env", "webshop", "--policy", "expert", "--out", "/dev/null"]);
  assert.equal(policy.status, 2);
  assert.match(policy.stderr, /unknown policy "expert" for webshop \(known: oracle, oracle-noisy, rule, random\)/);
  // A binary run: its own environment (DREAMGYM_DATA elsewhere), which this process must not change.
  const data = run(["env", "eval", "--env", "webshop", "--policy", "rule"], undefined, { ...process.env, DREAMGYM_DATA: "/nonexistent/data" });
  assert.equal(data.status, 2);
  assert.match(data.stderr, /data folder not found \(looked in \/nonexistent\/data; from DREAMGYM_DATA\)/);
  const episodes = await runInProcess(["collect", "--env", "webshop", "--policy", "rule", "--out", "/dev/null", "--episodes", "-3"]);
  assert.notEqual(episodes.status, 0);
  assert.match(episodes.stderr, /--episodes must be an integer/);
});

test("ALFWorld: env eval prints success per task type; collect writes expert and random trajectories", async () => {
  const r = await runInProcess(["env", "eval", "--env", "alfworld", "--policy", "expert", "--split", "valid_seen", "--json"]);
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.episodes, 140);
  assert.ok(out.success_rate >= 99);
  assert.equal(Object.keys(out.by_type).length, 6);
  assert.equal(
    Object.values(out.by_type as Record<string, { episodes: number }>).reduce((s, v) => s + v.episodes, 0),
    140,
  );
  const file = join(mkdtempSync(join(tmpdir(), "dreamgym-alf-")), "expert.jsonl");
  const c = await runInProcess(["collect", "--env", "alfworld", "--policy", "expert", "--episodes", "6", "--out", file]);
  assert.equal(c.status, 0, c.stderr);
  const trajs = await readJsonlAll<Trajectory>(file);
  assert.equal(trajs.length, 6);
  for (const t of trajs) {
    assert.equal(t.env, "alfworld");
    assert.match(t.task.id, /^alfworld:valid_train\//);
    assert.equal(t.success, true);
    assert.match(t.steps[0].observation, /^-= Welcome to TextWorld, ALFRED! =-/);
  }
  const bad = await runInProcess(["env", "eval", "--env", "alfworld", "--policy", "expert", "--split", "test"]);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /unknown ALFWorld split "test" \(known: valid_unseen, valid_seen, valid_train\)/);
});
