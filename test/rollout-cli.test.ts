import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chatServer } from "../src/testing/index.ts";
import { runAsync } from "./helpers.ts";


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

const lines = (file: string) => readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));

test("rollout: groups of LLM episodes in real WebShop, exported for a trainer, replayable from the cache", async () => {
  const s = await chatServer({ reply: shopper });
  try {
    const dir = mkdtempSync(join(tmpdir(), "dreamgym-rollout-cli-"));
    const out = join(dir, "steps.jsonl");
    const cache = join(dir, "cache.db");
    const args = ["rollout", "--env", "webshop", "--model", `${s.url}#tiny`, "--tasks", "3", "--group", "2", "--start", "5", "--concurrency", "2", "--temperature", "0.9", "--cache", cache];
    const r = await runAsync([...args, "--out", out]);
    assert.equal(r.status, 0, r.stderr);
    const requests = s.requests.length;
    assert.equal(requests, 3 * 2 * 3, "search, click, buy: one call each");
    assert.match(r.stdout, new RegExp(`wrote 18 steps \\(3 tasks × 2 rollouts, 18 steps\\) to ${out}: score \\d+\\.\\d, success \\d+\\.\\d%, failed steps 0, tokens ${11 * requests} prompt \\+ ${7 * requests} completion`));
    for (const b of s.requests as Body[]) assert.equal(b.temperature, 0.9);
    assert.equal(new Set((s.requests as Body[]).map((b) => b.seed)).size, requests, "every call has its own seed");
    assert.match((s.requests[0] as Body).messages[0].content, /WebShop, an online shop/, "the abstraction's profile is in the system prompt");

    const rows = lines(out);
    assert.equal(rows.length, 3 * 2 * 3, "tasks × group × steps");
    assert.deepEqual([...new Set(rows.map((x) => x.task_id))], ["webshop:5", "webshop:6", "webshop:7"], "test goals from --start");
    for (const x of rows) {
      for (const k of ["env", "task_id", "group", "rollout", "step", "prompt", "completion", "action", "reward", "advantage", "episode_reward", "success"]) assert.ok(k in x, k);
      assert.equal(x.env, "webshop");
      assert.equal(x.failed, undefined);
      assert.ok(x.prompt[1].content.includes("Current observation:\npage: "), "abstract states");
      assert.match(x.completion, /^Thought: one step at a time\.\nAction: /);
    }
    assert.deepEqual(rows.map((x) => x.action.replace(/\[.*\]/, "")), Array(6).fill(["search", "click", "click"]).flat());
    assert.deepEqual(rows.filter((x) => x.step === 2).map((x) => x.action), Array(6).fill("click[buy now]"));
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
    const again = await runAsync([...args, "--out", join(dir, "again.jsonl")]);
    assert.equal(again.status, 0, again.stderr);
    assert.equal(s.requests.length, requests, "no new calls");
    assert.match(again.stdout, /\(18 cached responses\)/);
    assert.equal(readFileSync(join(dir, "again.jsonl"), "utf8"), readFileSync(out, "utf8"));

    // One line per episode.
    const traj = join(dir, "traj.jsonl");
    const t = await runAsync([...args, "--format", "trajectories", "--out", traj]);
    assert.equal(t.status, 0, t.stderr);
    assert.match(t.stdout, /wrote 6 trajectories \(3 tasks × 2 rollouts, 18 steps\)/);
    const trajs = lines(traj);
    assert.equal(trajs.length, 6);
    trajs.forEach((e, i) => {
      assert.equal(e.steps.length, 3);
      assert.equal(e.task.id, rows[3 * i].task_id);
      assert.equal(e.advantage, rows[3 * i].advantage);
      assert.equal(e.total_reward, rows[3 * i].episode_reward);
      assert.deepEqual(e.steps.map((x: { action: string }) => x.action), rows.slice(3 * i, 3 * i + 3).map((x) => x.action));
    });
  } finally {
    await s.close();
  }
});

test("rollout: bad options are one-line errors with status 2", async () => {
  const base = ["rollout", "--env", "webshop", "--out", "/dev/null"];
  const format = await runAsync([...base, "--model", "http://127.0.0.1:9/v1#x", "--format", "parquet"]);
  assert.equal(format.status, 2);
  assert.match(format.stderr, /--format must be steps or trajectories, got "parquet"/);
  const model = await runAsync([...base, "--model", "nonsense"]);
  assert.equal(model.status, 2);
  assert.match(model.stderr, /unknown model "nonsense"/);
  const temperature = await runAsync([...base, "--model", "http://127.0.0.1:9/v1#x", "--temperature", "hot"]);
  assert.notEqual(temperature.status, 0);
  assert.match(temperature.stderr, /--temperature must be a number/);
});
