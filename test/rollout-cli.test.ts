import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, statSync, watch, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chatServer } from "../src/testing/index.ts";
import { BIN, runAsync, runInProcess } from "./helpers.ts";

type Body = { messages: { role: string; content: string }[]; seed: number; temperature: number };

/**
 * A model that shops by the prompt: searches with the instruction, clicks one of the first three
 * products (chosen by the request's seed, so rollouts of a group differ), then buys.
 */
function shopper(raw: Record<string, unknown>): string {
  const body = raw as Body;
  const prompt = body.messages.at(-1)!.content;
  const actions = /Available actions[^\n]*:\n([\s\S]*?)(?:\n\n|$)/.exec(prompt)![1].split("\n");
  const instruction = /^Task: (.*)$/m.exec(prompt)![1];
  let action: string;
  if (actions.includes("search[<query>]")) action = `search[${instruction}]`;
  else if (actions.includes("click[buy now]")) action = "click[buy now]";
  else {
    const products = actions.filter((a) => /^click\[[a-z0-9]{10}\]$/.test(a));
    action = products[body.seed % Math.min(3, products.length)];
  }
  return `Thought: one step at a time.\nAction: ${action}`;
}

const lines = (file: string) =>
  readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));

test("rollout: groups of LLM episodes in real WebShop, exported for a trainer, replayable from the cache", async () => {
  const s = await chatServer({ reply: shopper });
  try {
    const dir = mkdtempSync(join(tmpdir(), "dreamgym-rollout-cli-"));
    const out = join(dir, "steps.jsonl");
    const cache = join(dir, "cache.db");
    const args = [
      "rollout",
      "--env",
      "webshop",
      "--model",
      `${s.url}#tiny`,
      "--tasks",
      "3",
      "--group",
      "2",
      "--start",
      "5",
      "--concurrency",
      "2",
      "--temperature",
      "0.9",
      "--cache",
      cache,
    ];
    // The file's binary run of a rollout (the reruns and the refusals run in this process, which the server's
    // replies reach as well: runInProcess does not block).
    const r = await runAsync([...args, "--out", out]);
    assert.equal(r.status, 0, r.stderr);
    const requests = s.requests.length;
    assert.equal(requests, 3 * 2 * 3, "search, click, buy: one call each");
    assert.match(
      r.stdout,
      new RegExp(
        `wrote 18 steps \\(3 tasks × 2 rollouts, 18 steps\\) to ${out}: score \\d+\\.\\d, success \\d+\\.\\d%, failed steps 0, tokens ${11 * requests} prompt \\+ ${7 * requests} completion`,
      ),
    );
    for (const b of s.requests as Body[]) assert.equal(b.temperature, 0.9);
    assert.equal(new Set((s.requests as Body[]).map((b) => b.seed)).size, requests, "every call has its own seed");
    assert.match((s.requests[0] as Body).messages[0].content, /WebShop, an online shop/, "the abstraction's profile is in the system prompt");

    const rows = lines(out);
    assert.equal(rows.length, 3 * 2 * 3, "tasks × group × steps");
    assert.deepEqual([...new Set(rows.map((x) => x.task_id))], ["webshop:5", "webshop:6", "webshop:7"], "test goals from --start");
    for (const x of rows) {
      for (const k of ["env", "task_id", "group", "rollout", "step", "prompt", "completion", "action", "reward", "advantage", "episode_reward", "success"])
        assert.ok(k in x, k);
      assert.equal(x.env, "webshop");
      assert.equal(x.failed, undefined);
      assert.ok(x.prompt[1].content.includes("Current observation:\npage: "), "abstract states");
      assert.match(x.completion, /^Thought: one step at a time\.\nAction: /);
    }
    assert.deepEqual(
      rows.map((x) => x.action.replace(/\[.*\]/, "")),
      Array(6).fill(["search", "click", "click"]).flat(),
    );
    assert.deepEqual(
      rows.filter((x) => x.step === 2).map((x) => x.action),
      Array(6).fill("click[buy now]"),
    );
    // Advantages: the episode rewards normalised within each task's group, on every step.
    for (let g = 0; g < 3; g++) {
      const group = rows.filter((x) => x.group === g);
      const rewards = [0, 1].map((i) => group.find((x) => x.rollout === i).episode_reward);
      const mean = (rewards[0] + rewards[1]) / 2;
      const std = Math.abs(rewards[0] - rewards[1]) / 2;
      for (const x of group) {
        assert.ok(Math.abs(x.advantage - (x.episode_reward - mean) / (std + 1e-6)) < 1e-9);
        assert.equal(x.reward, x.step === 2 ? x.episode_reward : 0);
      }
    }

    // The same run again: answered from the cache, the same file.
    const again = await runInProcess([...args, "--out", join(dir, "again.jsonl")]);
    assert.equal(again.status, 0, again.stderr);
    assert.equal(s.requests.length, requests, "no new calls");
    assert.match(again.stdout, /\(18 cached responses\)/);
    assert.equal(readFileSync(join(dir, "again.jsonl"), "utf8"), readFileSync(out, "utf8"));

    // One line per episode.
    const traj = join(dir, "traj.jsonl");
    const t = await runInProcess([...args, "--format", "trajectories", "--out", traj]);
    assert.equal(t.status, 0, t.stderr);
    assert.match(t.stdout, /wrote 6 trajectories \(3 tasks × 2 rollouts, 18 steps\)/);
    const trajs = lines(traj);
    assert.equal(trajs.length, 6);
    trajs.forEach((e, i) => {
      assert.equal(e.steps.length, 3);
      assert.equal(e.task.id, rows[3 * i].task_id);
      assert.equal(e.advantage, rows[3 * i].advantage);
      assert.equal(e.total_reward, rows[3 * i].episode_reward);
      assert.deepEqual(
        e.steps.map((x: { action: string }) => x.action),
        rows.slice(3 * i, 3 * i + 3).map((x) => x.action),
      );
    });
  } finally {
    await s.close();
  }
});

test("rollout appends whole groups as they finish: a bad --out fails before any call, a stopped run keeps its groups, a rerun continues to the same file", async () => {
  let failFrom = Infinity;
  const s = await chatServer({ reply: shopper, fault: (n) => (n >= failFrom ? "400" : undefined) });
  try {
    const dir = mkdtempSync(join(tmpdir(), "dreamgym-rollout-resume-"));
    const args = [
      "rollout",
      "--env",
      "webshop",
      "--model",
      `${s.url}#tiny`,
      "--tasks",
      "4",
      "--group",
      "2",
      "--start",
      "3",
      "--concurrency",
      "2",
      "--max-failures",
      "1",
    ];
    const bad = await runInProcess([...args, "--out", join(dir, "no-such-dir", "r.jsonl")]);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /^error: .*no-such-dir\/r\.jsonl: --out: the folder .*no-such-dir does not exist[^\n]*\n$/);
    assert.equal(s.requests.length, 0, "no model call before the output is known to be writable");

    const whole = join(dir, "whole.jsonl");
    const a = await runInProcess([...args, "--out", whole]);
    assert.equal(a.status, 0, a.stderr);
    const calls = s.requests.length;
    assert.equal(calls, 4 * 2 * 3);

    // From its 11th call on, the server refuses every request: the first group (6 calls) is kept.
    s.requests.length = 0;
    failFrom = 11;
    const part = join(dir, "part.jsonl");
    // Binary runs: what a run that fails (and exits at once, its other calls in flight) leaves on disk, and a rerun after it.
    const b = await runAsync([...args, "--out", part]);
    assert.equal(b.status, 2, b.stderr);
    assert.match(b.stderr, new RegExp(`^error: LLM endpoint ${s.url}/chat/completions failed 1 call in a row; last error: .*HTTP 400[^\n]*\n$`));
    const kept = readFileSync(part, "utf8");
    assert.ok(kept.length > 0 && readFileSync(whole, "utf8").startsWith(kept), "whole groups, in order, as the uninterrupted run wrote them");

    // A killed run's torn last line is cut off; the rerun plays only what is missing.
    appendFileSync(part, '{"env": "webshop", "task_id": "webs');
    s.requests.length = 0;
    failFrom = Infinity;
    const c = await runAsync([...args, "--out", part]);
    assert.equal(c.status, 0, c.stderr);
    assert.match(c.stdout, /wrote 24 steps \(4 tasks × 2 rollouts, 24 steps\).*; continued a run that had done 1 of the tasks \(18 lines added\)/);
    assert.equal(readFileSync(part, "utf8"), readFileSync(whole, "utf8"));
    assert.equal(s.requests.length, calls - 6);

    // Other options would mix two runs in one file: refused, before any call.
    s.requests.length = 0;
    const other = await runInProcess([...args, "--seed", "7", "--out", part]);
    assert.equal(other.status, 2);
    assert.match(other.stderr, /holds other output/);
    assert.equal(s.requests.length, 0);
  } finally {
    await s.close();
  }
});

test("rollout stopped with SIGINT exits 130 and says what it kept and how to go on", { timeout: 120_000 }, async () => {
  const s = await chatServer({ reply: shopper });
  try {
    const dir = mkdtempSync(join(tmpdir(), "dreamgym-rollout-int-"));
    const out = join(dir, "r.jsonl");
    // A binary run: the signal is the process's.
    const args = ["rollout", "--env", "webshop", "--model", `${s.url}#tiny`, "--tasks", "1000", "--group", "2", "--format", "trajectories", "--out", out];
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    // Signal once a group is in the file; a child that ends first fails the test, with what it said.
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        if (existsSync(out) && statSync(out).size > 0) {
          watcher.close();
          resolve();
        }
      };
      const watcher = watch(dir, check);
      void exited.then((code) => {
        watcher.close();
        reject(new Error(`rollout ended (${code}) before its first group: ${stderr}`));
      });
      check();
    });
    child.kill("SIGINT");
    assert.equal(await exited, 130);
    const groups = lines(out).length / 2;
    assert.ok(Number.isInteger(groups) && groups >= 1, `${groups} groups`);
    assert.equal(
      stderr.trimEnd().split("\n").at(-1),
      `stopped by SIGINT after ${groups} of 1000 tasks (groups of 2 rollouts); those are in ${out}: the same command continues it`,
    );
  } finally {
    await s.close();
  }
});

test("rollout: a --cache that cannot be opened fails before the output is made, or an earlier one is cut", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-rollout-cache-"));
  const notDb = join(dir, "not-a-db");
  writeFileSync(notDb, "this is a text file, not SQLite\n");
  const out = join(dir, "r.jsonl");
  // A dead endpoint: the cache is opened before any call.
  const args = ["rollout", "--env", "webshop", "--model", "http://127.0.0.1:9/v1#m", "--tasks", "1", "--group", "1", "--concurrency", "1", "--out", out];
  const refused = async (cache: string, why: string) => {
    const r = await runInProcess([...args, "--cache", cache]);
    assert.equal(r.status, 2);
    assert.equal(r.stderr, `error: ${cache}: cannot open the response cache: ${why}\n`);
  };
  await refused(dir, "unable to open database file"); // a folder
  assert.equal(existsSync(out), false);
  await refused(notDb, "file is not a database");
  assert.equal(existsSync(out), false);
  // An earlier run's output whose last line is torn: the cut waits until the model is open.
  const torn = '{"env": "webshop", "task_id": "webs';
  writeFileSync(out, torn);
  await refused(notDb, "file is not a database");
  assert.equal(readFileSync(out, "utf8"), torn);
  assert.equal(readFileSync(notDb, "utf8"), "this is a text file, not SQLite\n");
});

test("rollout: bad options are one-line errors with status 2", async () => {
  const base = ["rollout", "--env", "webshop", "--out", "/dev/null"];
  const format = await runInProcess([...base, "--model", "http://127.0.0.1:9/v1#x", "--format", "parquet"]);
  assert.equal(format.status, 2);
  assert.match(format.stderr, /--format must be steps or trajectories, got "parquet"/);
  const model = await runInProcess([...base, "--model", "nonsense"]);
  assert.equal(model.status, 2);
  assert.match(model.stderr, /unknown model "nonsense"/);
  const temperature = await runInProcess([...base, "--model", "http://127.0.0.1:9/v1#x", "--temperature", "hot"]);
  assert.notEqual(temperature.status, 0);
  assert.match(temperature.stderr, /--temperature must be a number/);
});
