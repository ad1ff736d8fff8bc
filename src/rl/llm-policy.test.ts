import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { abstractEnv, Rng, type Task } from "../core/index.ts";
import { EndpointFailedError } from "../llm/breaker.ts";
import { createEnv, syntheticSupport } from "../envs/index.ts";
import type { ChatMessage } from "../llm/chat-model.ts";
import { OpenAIChatModel } from "../llm/openai-chat-model.ts";
import { chatServer } from "../testing/index.ts";
import { playEpisode, playEpisodes, type Episode } from "../core/index.ts";
import { exportForTrainer } from "./llm-export.ts";
import { LlmPolicy, matchAction, parseActionLine, type LlmStepRecord } from "./llm-policy.ts";
import type { PolicyInput } from "./policy.ts";

const fast = { backoffMs: 1, maxBackoffMs: 5 };
const task: Task = { id: "t:1", instruction: "buy red shoes" };
const input = (actions: string[] | undefined, over: Partial<PolicyInput> = {}): PolicyInput => ({
  task,
  observation: "page: search",
  actions,
  history: [],
  ...over,
});
type Body = { messages: ChatMessage[]; temperature?: number; seed?: number };
const lastUser = (body: Record<string, unknown>) => (body as Body).messages.at(-1)!.content;
/** The actions listed in a prompt (the lines after "Available actions"). */
const listed = (prompt: string) => /Available actions[^\n]*:\n([\s\S]*?)(?:\n\n|$)/.exec(prompt)?.[1].split("\n") ?? [];

test("the last Action: line is parsed, with markdown, case, quotes and backticks tolerated", () => {
  assert.equal(parseActionLine("Thought: the first result.\nAction: click[b07xtk3p89]"), "click[b07xtk3p89]");
  assert.equal(parseActionLine("**Thought:** hm\n**Action:** click[buy now]"), "click[buy now]");
  assert.equal(parseActionLine("**Action**: `search[red shoes]`"), "search[red shoes]");
  assert.equal(parseActionLine('ACTION:   "click[next >]"  '), "click[next >]");
  assert.equal(parseActionLine("- action: 'click[black]'."), "click[black]");
  assert.equal(parseActionLine("Action: click[a]\nThought: no, better\nAction: click[b]"), "click[b]", "the last one wins");
  assert.equal(parseActionLine("Action:\n\n  click[c]"), "click[c]", "on the next line");
  assert.equal(parseActionLine("Action: click[b07xtk3p89] (the cheapest one)"), "click[b07xtk3p89]");
  assert.equal(parseActionLine("I would click[buy now]."), null);
  assert.equal(parseActionLine("Actions: click[x]"), null);
  assert.equal(parseActionLine(""), null);
});

test("actions are matched to the listed ones: exact, case and spacing, <query> templates", () => {
  const actions = ["search[<query>]", "click[back to search]", "click[B07XTK3P89]", "click[next >]"];
  assert.deepEqual(matchAction("click[next >]", actions), { action: "click[next >]" });
  assert.deepEqual(matchAction("Click [ Back  to Search ]", actions), { action: "click[back to search]" });
  assert.deepEqual(matchAction("click[b07xtk3p89]", actions), { action: "click[B07XTK3P89]" }, "the listed spelling");
  assert.deepEqual(matchAction("Search[ Red Running Shoes ]", actions), { action: "search[Red Running Shoes]" }, "the query keeps its text");
  assert.match(matchAction("search[ ]", actions).error!, /'search\[ \]' is not one of the available actions/);
  assert.match(matchAction("search[<query>]", actions).error!, /replace it with your own text/);
  assert.deepEqual(matchAction("click[x]", actions), { error: "'click[x]' is not one of the available actions" });
  assert.deepEqual(matchAction("click[x]", ["click[y]"]).error, "'click[x]' is not one of the available actions");
  assert.deepEqual(matchAction("go north", undefined), { action: "go north" }, "no listed actions: anything non-empty");
  assert.deepEqual(matchAction("go north", []), { action: "go north" });
  assert.match(matchAction("  ", undefined).error!, /empty/);
});

test("act: the ReAct prompt, sampling temperature and a seed from the episode's stream", async () => {
  const s = await chatServer({ reply: () => "Thought: search first.\n**Action:** Search[Red Shoes]" });
  try {
    const model = new OpenAIChatModel({ baseURL: s.url, model: "tiny", ...fast });
    const policy = new LlmPolicy({ model, profile: "A toy shop." });
    assert.equal(policy.name, `llm:${s.url}#tiny`);
    const d = await policy.act(input(["search[<query>]", "click[back to search]"]), { rng: new Rng(1) });
    assert.equal(d.action, "search[Red Shoes]");
    assert.ok(Number.isNaN(d.logProb));
    assert.equal(d.failed, undefined);
    assert.equal(d.record.attempts, 1);
    assert.equal(d.record.completion, "Thought: search first.\n**Action:** Search[Red Shoes]");
    const body = s.requests[0] as Body;
    assert.deepEqual(d.record.messages, body.messages);
    assert.match(body.messages[0].content, /A toy shop\./);
    assert.match(body.messages[0].content, /Reply with\nThought: <reasoning>\nAction: <one action>/);
    assert.match(body.messages[1].content, /Task: buy red shoes/);
    assert.match(body.messages[1].content, /Current observation:\npage: search/);
    assert.deepEqual(listed(body.messages[1].content), ["search[<query>]", "click[back to search]"]);
    assert.match(body.messages[1].content, /replace <query> with your own text/);
    assert.equal(body.temperature, 0.7);

    // Same stream, same seed (a caching backend replays it); another stream, another seed; greedy is temperature 0.
    await policy.act(input(["search[<query>]"]), { rng: new Rng(1) });
    await policy.act(input(["search[<query>]"]), { rng: new Rng(2), greedy: true });
    const [a, b, c] = s.requests as Body[];
    assert.equal(typeof a.seed, "number");
    assert.equal(b.seed, a.seed);
    assert.notEqual(c.seed, a.seed);
    assert.equal(c.temperature, 0);
  } finally {
    await s.close();
  }
});

test("a malformed reply is asked again with a message naming the problem", async () => {
  let calls = 0;
  const s = await chatServer({ reply: () => (calls++ === 0 ? "I think I should search." : "Thought: ok\nAction: search[red shoes]") });
  try {
    const policy = new LlmPolicy({ model: new OpenAIChatModel({ baseURL: s.url, model: "tiny", ...fast }) });
    const d = await policy.act(input(["search[<query>]"]), { rng: new Rng(0) });
    assert.equal(s.requests.length, 2);
    assert.equal(d.action, "search[red shoes]");
    assert.equal(d.failed, undefined);
    assert.equal(d.record.attempts, 2);
    const second = (s.requests[1] as Body).messages;
    assert.equal(second.length, 4);
    assert.deepEqual(second[2], { role: "assistant", content: "I think I should search." });
    assert.match(second[3].content, /no 'Action:' line/);
    assert.deepEqual(d.record.messages, second, "the record keeps the prompt of the accepted attempt");
  } finally {
    await s.close();
  }

  let n = 0;
  const t = await chatServer({ reply: () => (n++ === 0 ? "Action: click[x]" : "Action: click[y]") });
  try {
    const policy = new LlmPolicy({ model: new OpenAIChatModel({ baseURL: t.url, model: "tiny", ...fast }) });
    const d = await policy.act(input(["click[y]"]), { rng: new Rng(0) });
    assert.equal(d.action, "click[y]");
    assert.match(lastUser(t.requests[1]), /'click\[x\]' is not one of the available actions/);
  } finally {
    await t.close();
  }
});

test("output that stays invalid: a failed decision, never an exception", async () => {
  const s = await chatServer({ reply: () => "Action: click[nothing]" });
  try {
    const policy = new LlmPolicy({ model: new OpenAIChatModel({ baseURL: s.url, model: "tiny", ...fast }), maxAttempts: 3 });
    const d = await policy.act(input(["click[y]"]), { rng: new Rng(0) });
    assert.equal(s.requests.length, 3);
    assert.equal(d.action, "click[nothing]", "the last parsed action");
    assert.equal(d.failed, "no valid action after 3 attempts: 'click[nothing]' is not one of the available actions");
    assert.equal(d.record.attempts, 3);
    assert.equal(d.record.messages.length, 6);
  } finally {
    await s.close();
  }
});

test("garbage all along in real WebShop: the episode runs to its step limit with invalid no-ops", async () => {
  const s = await chatServer({ reply: () => "Sorry, I cannot help with that." });
  const env = createEnv("webshop", { split: "test", maxSteps: 5 });
  try {
    const policy = new LlmPolicy({ model: new OpenAIChatModel({ baseURL: s.url, model: "tiny", ...fast }) });
    const e = await playEpisode(env, policy, { rng: new Rng(0), task: env.tasks()[0] });
    assert.equal(e.steps.length, 5);
    assert.ok(e.steps.at(-1)!.truncated);
    for (const step of e.steps) {
      assert.equal(step.action, "");
      assert.equal(step.failed, "no valid action after 2 attempts: there is no 'Action:' line");
      assert.equal(step.info?.invalid, true);
      assert.equal(step.reward, 0);
    }
    assert.equal(s.requests.length, 10);
    assert.match(lastUser(s.requests[9]), /no 'Action:' line/);
  } finally {
    await s.close();
    await env.close();
  }
});

test("a failed call fails the step; failures on tasks in a row trip the breaker, which names the URL", async () => {
  // One good step, then a call that fails after its retry (a counted no-op), a good step (the count
  // starts again), then garbage: failed steps of one task count once, and the third task stops it.
  const s = await chatServer({
    faults: ["ok", "500", "500"],
    reply: (b) => ((b.messages as ChatMessage[]).at(-1)!.content.includes("click[y]") && s.requests.length < 5 ? "Action: click[y]" : "no idea"),
  });
  try {
    const model = new OpenAIChatModel({ baseURL: s.url, model: "tiny", maxRetries: 1, maxFailures: 3, ...fast });
    const policy = new LlmPolicy({ model, maxAttempts: 1 });
    const act = (id = "t:0") => policy.act(input(["click[y]"], { task: { id, instruction: `do ${id}` } }), { rng: new Rng(0) });
    assert.equal((await act()).failed, undefined);
    assert.match((await act()).failed!, /^model call failed: chat completion failed after 2 attempts: 500/);
    assert.equal((await act()).failed, undefined);
    for (const id of ["t:1", "t:1", "t:1", "t:2", "t:1", "t:2"]) assert.match((await act(id)).failed!, /no 'Action:' line/);
    await assert.rejects(act("t:3"), (e: unknown) => {
      assert.ok(e instanceof EndpointFailedError);
      assert.equal(e.url, `${s.url}/chat/completions`);
      assert.match(
        e.message,
        new RegExp(
          `^LLM endpoint ${s.url}/chat/completions gave no valid answer on 3 tasks in a row; last error: no valid action after 1 attempt: there is no 'Action:' line`,
        ),
      );
      return true;
    });
    const calls = s.requests.length;
    await assert.rejects(act(), EndpointFailedError);
    assert.equal(s.requests.length, calls, "once tripped, no more calls");
  } finally {
    await s.close();
  }
});

test("without a breaker (a local model), errors of the model call propagate", async () => {
  const failing = {
    id: "local",
    generate: async () => {
      throw new Error("out of memory");
    },
  };
  await assert.rejects(new LlmPolicy({ model: failing }).act(input(["click[y]"]), { rng: new Rng(0) }), /out of memory/);
});

test("the prompt shows recent steps with their observations, per episode, also when episodes run at once", async () => {
  // Plays abstract WebShop: search with the instruction, then the first listed action.
  const s = await chatServer({
    reply: (body) => {
      const prompt = lastUser(body);
      const first = listed(prompt)[0];
      const instruction = /^Task: (.*)$/m.exec(prompt)![1];
      return `Thought: go.\nAction: ${first === "search[<query>]" ? `search[${instruction}]` : first}`;
    },
  });
  const real = [createEnv("webshop", { split: "test", maxSteps: 4 }), createEnv("webshop", { split: "test", maxSteps: 4 })];
  const { abstraction } = syntheticSupport("webshop", real[0]);
  const envs = real.map((e) => abstractEnv(e, abstraction));
  try {
    const policy = new LlmPolicy({ model: new OpenAIChatModel({ baseURL: s.url, model: "tiny", ...fast }), historySteps: 2, profile: abstraction.profile });
    const tasks = real[0].tasks().slice(0, 2);
    const episodes = await playEpisodes(
      envs,
      policy,
      tasks.map((t, i) => ({ task: t, rngSeed: i })),
    );
    for (const [i, e] of episodes.entries()) {
      assert.equal(e.steps.length, 4);
      assert.deepEqual(
        e.steps.map((st) => st.failed),
        [undefined, undefined, undefined, undefined],
      );
      assert.equal(e.steps[0].action, `search[${tasks[i].instruction}]`);
      const prompt = e.steps[3].record.messages[1].content;
      assert.match(prompt, /History \(3 steps\):\n\(1 earlier step not shown\)\nStep 2 observation:\npage: results/);
      assert.ok(prompt.includes(`Step 2 observation:\n${e.steps[1].observation}\nStep 2 action: ${e.steps[1].action}`));
      assert.ok(prompt.includes(`Step 3 observation:\n${e.steps[2].observation}\nStep 3 action: ${e.steps[2].action}`));
      assert.ok(!prompt.includes("Step 1 "), "older steps are only counted");
      assert.ok(prompt.includes(`Current observation:\n${e.steps[3].observation}`));
      assert.ok(e.steps[0].observation.startsWith("page: search\ninstruction: "), "abstract states");
      // Each episode's history is its own: every state shown is of this episode's instruction.
      for (const m of prompt.matchAll(/^instruction: (.*)$/gm)) assert.equal(m[1], tasks[i].instruction);
    }
  } finally {
    await s.close();
    await Promise.all(envs.map((e) => e.close()));
  }
});

// --- export ---

const step = (action: string, reward: number, failed?: string) => ({
  observation: `obs before ${action}`,
  action,
  reward,
  next_observation: "next",
  terminated: false,
  truncated: false,
  logProb: NaN,
  record: { messages: [{ role: "user" as const, content: `prompt for ${action}` }], completion: `Action: ${action}`, attempts: 1 } satisfies LlmStepRecord,
  ...(failed ? { failed } : {}),
});
const episode = (id: string, rewards: number[]): Episode<LlmStepRecord> => ({
  task: { id, instruction: `do ${id}` },
  steps: rewards.map((r, i) => step(`a${i}`, r)),
  totalReward: rewards.reduce((a, b) => a + b, 0),
  success: rewards.reduce((a, b) => a + b, 0) >= 1,
});
const lines = (file: string) =>
  readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));

test("export for a trainer: group advantages broadcast to steps, in both formats", () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-llm-export-"));
  // Rewards [1, 0, 0.5, 0.5]: mean 0.5, population std √0.125, so advantages √2, −√2, 0, 0.
  const g0 = [episode("t:0", [0, 1]), episode("t:0", [0, 0, 0]), episode("t:0", [0.5]), episode("t:0", [0, 0.5])];
  g0[1].steps[2].failed = "no valid action after 2 attempts: there is no 'Action:' line";
  const g1 = [episode("t:1", [0.25]), episode("t:1", [0.25])]; // all equal: advantage 0
  const file = join(dir, "steps.jsonl");
  writeFileSync(file, "old content\n");
  const r = exportForTrainer([g0, g1], file, { env: "webshop" });
  assert.deepEqual(r, { groups: 2, episodes: 6, steps: 10, lines: 10 });
  const rows = lines(file);
  assert.equal(rows.length, 10, "the old file is replaced");
  const expected = [Math.SQRT2, Math.SQRT2, -Math.SQRT2, -Math.SQRT2, -Math.SQRT2, 0, 0, 0, 0, 0];
  rows.forEach((row, i) => assert.ok(Math.abs(row.advantage - expected[i]) < 1e-5, `line ${i}: ${row.advantage} vs ${expected[i]}`));
  assert.deepEqual(rows[1], {
    env: "webshop",
    task_id: "t:0",
    group: 0,
    rollout: 0,
    step: 1,
    prompt: [{ role: "user", content: "prompt for a1" }],
    completion: "Action: a1",
    action: "a1",
    reward: 1,
    advantage: rows[1].advantage,
    episode_reward: 1,
    episode_steps: 2,
    success: true,
  });
  assert.equal(rows[4].failed, "no valid action after 2 attempts: there is no 'Action:' line");
  assert.deepEqual(
    rows.map((x) => [x.group, x.rollout, x.step]),
    [
      [0, 0, 0],
      [0, 0, 1],
      [0, 1, 0],
      [0, 1, 1],
      [0, 1, 2],
      [0, 2, 0],
      [0, 3, 0],
      [0, 3, 1],
      [1, 0, 0],
      [1, 1, 0],
    ],
  );
  assert.deepEqual(
    rows.map((x) => x.episode_reward),
    [1, 1, 0, 0, 0, 0.5, 0.5, 0.5, 0.25, 0.25],
  );

  const tfile = join(dir, "traj.jsonl");
  assert.deepEqual(exportForTrainer([g0, g1], tfile, { env: "webshop", format: "trajectories" }), { groups: 2, episodes: 6, steps: 10, lines: 6 });
  const trajs = lines(tfile);
  assert.equal(trajs.length, 6);
  assert.deepEqual(
    trajs.map((t) => Math.round(t.advantage * 1e4) / 1e4),
    [1.4142, -1.4142, 0, 0, 0, 0],
  );
  assert.deepEqual(Object.keys(trajs[0]), ["env", "task", "group", "rollout", "total_reward", "success", "advantage", "steps"]);
  assert.deepEqual(trajs[0].task, { id: "t:0", instruction: "do t:0" });
  assert.deepEqual(trajs[0].steps[0], {
    prompt: [{ role: "user", content: "prompt for a0" }],
    completion: "Action: a0",
    action: "a0",
    reward: 0,
    observation: "obs before a0",
  });
  assert.equal(trajs[1].steps[2].failed, "no valid action after 2 attempts: there is no 'Action:' line");
  assert.deepEqual(
    trajs.map((t) => [t.group, t.rollout, t.total_reward]),
    [
      [0, 0, 1],
      [0, 1, 0],
      [0, 2, 0.5],
      [0, 3, 0.5],
      [1, 0, 0.25],
      [1, 1, 0.25],
    ],
  );
  assert.deepEqual(readdirSync(dir).sort(), ["steps.jsonl", "traj.jsonl"], "no temporary files left");
});

test("a failed export leaves the old file as it was and no temporary file", () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-llm-export-"));
  const file = join(dir, "out.jsonl");
  writeFileSync(file, "old content\n");
  const bad = episode("t:0", [1, 0]);
  (bad.steps[1].record as unknown as { completion: unknown }).completion = 10n; // JSON.stringify throws on a BigInt
  assert.throws(() => exportForTrainer([[episode("t:0", [1]), bad]], file, { env: "webshop" }), /BigInt/);
  assert.equal(readFileSync(file, "utf8"), "old content\n");
  assert.deepEqual(readdirSync(dir), ["out.jsonl"]);
  assert.ok(!existsSync(`${file}.${process.pid}.tmp`));
});
