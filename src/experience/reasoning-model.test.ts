import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Rng, type Task } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { EndpointFailedError, OpenAIChatModel } from "../llm/index.ts";
import { chatServer } from "../testing/index.ts";
import { RandomPolicy, runEpisode } from "../envs/index.ts";
import { RulePolicy, WebShopEnv, webshopAbstraction, webshopStartPage } from "../envs/webshop/index.ts";
import { ReasoningExperienceModel, SyntheticEnv } from "./index.ts";

const real = new WebShopEnv({ split: "test" });
const abs = webshopAbstraction(real.catalogue);
const task: Task = real.tasks()[0];
const start = abs.abstract(webshopStartPage(task));
const results = `page: results\ninstruction: ${task.instruction}\n[back to search] [next >]\nPage 1 (Total results: 50)\n[b07xtk3p89] A pillow | $9.99`;
const fast = { backoffMs: 1, maxBackoffMs: 2 };

/** Model outputs of every kind a real model produces, good and bad, drawn from a seeded stream. */
function fuzzedOutput(rng: Rng): string {
  const good = { reasoning: "the search returns pillows", next_state: results, reward: 0, terminated: false };
  const kinds: (() => string)[] = [
    () => JSON.stringify(good),
    () => "```json\n" + JSON.stringify({ ...good, terminated: true, reward: 0.75 }) + "\n```",
    () => JSON.stringify({ ...good, reward: "1", terminated: "true" }), // repairable
    () => JSON.stringify({ reasoning: "x", reward: 0, terminated: false }), // missing next_state
    () => JSON.stringify({ ...good, reward: 7 }), // out of range
    () => JSON.stringify({ ...good, next_state: 42 }), // wrong type
    () => JSON.stringify({ ...good, next_state: "x".repeat(20_000) }), // absurd length
    () => JSON.stringify({ ...good, next_state: "   " }),
    () => "I think the page will show pillows.",
    () => "",
    () => JSON.stringify(good).slice(0, 40), // truncated
    () => JSON.stringify([good]),
    () => JSON.stringify({ ...good, reward: null, terminated: 1 }),
    () => `{"reasoning": "\\u0000\\ud83d", "next_state": "page: done\\ninstruction: \\nscore: 1", "reward": 1, "terminated": true}`,
    () => JSON.stringify({ ...good, next_state: "The results page lists several pillows." }), // prose, not a state
    () => JSON.stringify({ ...good, next_state: "page: banana\ninstruction: x" }), // an unknown page kind
  ];
  return kinds[rng.randbelow(kinds.length)]();
}

test("fuzzed model output: never a crash, never an invalid step, bounded retries", async () => {
  const rng = new Rng(2024);
  const s = await chatServer({ reply: () => fuzzedOutput(rng) });
  try {
    const chat = new OpenAIChatModel({ baseURL: s.url, model: "fuzz", ...fast });
    const model = new ReasoningExperienceModel({ chat, abstraction: abs, maxAttempts: 3 });
    let ok = 0;
    let failed = 0;
    for (let i = 0; i < 300; i++) {
      const p = await model.predict({ task, history: [], state: start, action: "search[pillow]", demos: [] });
      if (p.info.failed) {
        failed++;
        assert.equal(p.nextState, start, "a failed step changes nothing");
        assert.match(p.info.failed, /invalid model output after 3 attempts/);
        continue;
      }
      ok++;
      assert.ok(p.nextState.startsWith("page: ") && p.nextState.length <= 8000);
      assert.notEqual(abs.actions(p.nextState), undefined, `a state of WebShop's format: ${p.nextState.slice(0, 60)}`);
      assert.ok(p.reward >= 0 && p.reward <= 1);
      assert.equal(typeof p.terminated, "boolean");
      if (!p.terminated) assert.equal(p.reward, 0, "outcome-based: no reward before the end");
    }
    assert.ok(ok > 150 && failed > 0, `ok ${ok}, failed ${failed}`);
    assert.ok(s.requests.length <= 900, "at most 3 calls a step");
    const repair = s.requests.find((r) => JSON.stringify(r.messages).includes("That answer was invalid"));
    assert.ok(repair, "an invalid answer is sent back with its error");
  } finally {
    await s.close();
  }
});

test("in a SyntheticEnv, fuzzed output never enters the buffer as a valid transition", async () => {
  const rng = new Rng(7);
  const s = await chatServer({ reply: () => fuzzedOutput(rng) });
  try {
    const buffer = ReplayBuffer.open(join(mkdtempSync(join(tmpdir(), "dreamgym-fuzz-")), "b.db"));
    const chat = new OpenAIChatModel({ baseURL: s.url, model: "fuzz", ...fast });
    const env = new SyntheticEnv({
      model: new ReasoningExperienceModel({ chat, abstraction: abs }),
      abstraction: abs,
      tasks: [task],
      initialState: webshopStartPage,
      buffer,
      maxSteps: 6,
    });
    let failedSteps = 0;
    for (let i = 0; i < 12; i++) {
      const t = await runEpisode(env, new RandomPolicy(i), { envName: "webshop", task });
      failedSteps += t.steps.filter((st) => st.info?.model_failed).length;
    }
    for (const t of buffer.trajectories()) {
      for (const st of t.steps) {
        assert.ok(st.next_observation.startsWith("page: ") && st.next_observation.length <= 8000);
        assert.notEqual(abs.actions(st.next_observation), undefined);
        assert.ok(st.reward >= 0 && st.reward <= 1);
        assert.equal(t.source, "synthetic");
      }
    }
    assert.ok(buffer.count() > 0 && failedSteps > 0);
    buffer.close();
  } finally {
    await s.close();
  }
});

test("the prompt: profile, task, bounded history with older steps summarised, demos, state and action", () => {
  const chat = new OpenAIChatModel({ baseURL: "http://127.0.0.1:9/v1", model: "unused" });
  const model = new ReasoningExperienceModel({ chat, abstraction: abs, recentSteps: 2 });
  const history = Array.from({ length: 5 }, (_, i) => ({
    state: `page: results\nstate ${i}`,
    action: `click[next >]`,
    nextState: `page: results\nafter ${i}`,
    reward: 0,
  }));
  const demo = {
    state: start,
    action: "search[lamp]",
    nextState: results,
    reward: 0,
    terminated: false,
    task: { id: "t", instruction: "x" },
    source: "real" as const,
    score: 0.87,
  };
  const [system, user] = model.messages({ task, history, state: start, action: "search[pillow]", demos: [demo] });
  assert.ok(system.content.includes(abs.profile));
  assert.ok(user.content.includes(`Task: ${task.instruction}`));
  assert.ok(user.content.includes("1. click[next >] → page: results"), "older steps in one line");
  assert.ok(user.content.includes("5. state:\npage: results\nstate 4"), "recent steps in full");
  assert.ok(!user.content.includes("state 2\n"), "the third step is summarised, not shown");
  assert.ok(user.content.includes("similarity 0.87") && user.content.includes("action: search[lamp]"));
  assert.ok(user.content.trimEnd().endsWith("Action: search[pillow]"));
});

test("cold start: with an empty buffer the model plays from the profile alone", async () => {
  const s = await chatServer({ reply: () => JSON.stringify({ reasoning: "searching", next_state: results, reward: 0, terminated: false }) });
  try {
    const chat = new OpenAIChatModel({ baseURL: s.url, model: "m", ...fast });
    const empty = ReplayBuffer.open(join(mkdtempSync(join(tmpdir(), "dreamgym-cold-")), "b.db"));
    const env = new SyntheticEnv({
      model: new ReasoningExperienceModel({ chat, abstraction: abs }),
      abstraction: abs,
      tasks: [task],
      initialState: webshopStartPage,
      buffer: empty,
      maxSteps: 2,
    });
    const t = await runEpisode(env, new RulePolicy(), { envName: "webshop", task });
    assert.equal(t.steps[0].next_observation, results);
    assert.equal(t.steps[0].info?.reasoning, "searching");
    assert.equal(empty.count(), 2);
    assert.ok(!JSON.stringify(s.requests[0].messages).includes("Similar recorded transitions"));
    empty.close();
  } finally {
    await s.close();
  }
});

test("an unreachable model stops the run at the first step, naming the URL", async () => {
  const chat = new OpenAIChatModel({ baseURL: "http://127.0.0.1:9/v1", model: "m" });
  const model = new ReasoningExperienceModel({ chat, abstraction: abs });
  await assert.rejects(
    model.predict({ task, history: [], state: start, action: "search[x]", demos: [] }),
    (e: unknown) =>
      e instanceof EndpointFailedError &&
      /^LLM endpoint http:\/\/127\.0\.0\.1:9\/v1\/chat\/completions cannot be reached; last error: chat completion failed: Connection error/.test(e.message),
  );
  assert.equal(chat.stats.requests, 1, "not retried: it never answered");
});
