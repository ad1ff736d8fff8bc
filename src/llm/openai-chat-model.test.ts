import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OpenAIChatModel } from "./openai-chat-model.ts";
import { createChatModel } from "./create-chat-model.ts";
import { extractJson } from "./chat-model.ts";
import { ResponseCache } from "./response-cache.ts";
import { ApiCallError } from "../core/index.ts";
import { chatServer } from "../testing/index.ts";

const fast = { backoffMs: 1, maxBackoffMs: 5 };

test("a plain completion: text, usage, latency, counters", async () => {
  const s = await chatServer();
  try {
    const m = new OpenAIChatModel({ baseURL: s.url, model: "tiny", ...fast });
    const r = await m.generate({ messages: [{ role: "user", content: "hi" }], temperature: 0, maxTokens: 20, seed: 3, stop: ["\n"] });
    assert.equal(r.choices[0].text, "echo hi");
    assert.deepEqual(r.usage, { promptTokens: 11, completionTokens: 7 });
    assert.equal(r.cached, false);
    assert.ok(r.latencyMs >= 0);
    assert.deepEqual([s.requests[0].temperature, s.requests[0].max_tokens, s.requests[0].seed, s.requests[0].stop], [0, 20, 3, ["\n"]]);
    assert.deepEqual([m.stats.requests, m.stats.promptTokens, m.stats.completionTokens, m.stats.failures], [1, 11, 7, 0]);
    assert.equal(m.id, `${s.url}#tiny`);
  } finally {
    await s.close();
  }
});

test("structured output: the schema goes out as response_format, the JSON comes back parsed", async () => {
  const s = await chatServer({ reply: () => '```json\n{"next_state": "page 2", "reward": 0}\n```' });
  try {
    const m = new OpenAIChatModel({ baseURL: s.url, model: "tiny", ...fast });
    const schema = { type: "object", properties: { next_state: { type: "string" }, reward: { type: "number" } }, required: ["next_state", "reward"] };
    const r = await m.generate({ messages: [{ role: "user", content: "step" }], schema: { name: "transition", schema }, n: 2 });
    assert.equal(r.choices.length, 2);
    assert.deepEqual(r.choices[0].parsed, { next_state: "page 2", reward: 0 });
    const sent = s.requests[0].response_format as { type: string; json_schema: { name: string; schema: unknown } };
    assert.equal(sent.type, "json_schema");
    assert.deepEqual(sent.json_schema.schema, schema);
  } finally {
    await s.close();
  }
});

test("429, 500, timeouts, cut connections and malformed bodies are retried", async () => {
  const s = await chatServer({ faults: ["429", "500", "timeout", "cut", "malformed"] });
  try {
    const m = new OpenAIChatModel({ baseURL: s.url, model: "tiny", timeoutMs: 300, maxRetries: 5, ...fast });
    const r = await m.generate({ messages: [{ role: "user", content: "again" }] });
    assert.equal(r.choices[0].text, "echo again");
    assert.equal(m.stats.retries, 5);
    assert.equal(m.stats.requests, 6);
    assert.equal(s.requests.length, 6);
  } finally {
    await s.close();
  }
});

test("retries are bounded; the error names the URL and the status; a 400 is not retried", async () => {
  const s = await chatServer({ faults: ["500", "500", "500", "400"] });
  try {
    const m = new OpenAIChatModel({ baseURL: s.url, model: "tiny", maxRetries: 2, ...fast });
    await assert.rejects(m.generate({ messages: [{ role: "user", content: "x" }] }), (e: unknown) => {
      assert.ok(e instanceof ApiCallError);
      assert.equal(e.status, 500);
      assert.equal(e.url, `${s.url}/chat/completions`);
      assert.match(e.message, /after 3 attempts/);
      return true;
    });
    await assert.rejects(m.generate({ messages: [{ role: "user", content: "y" }] }), (e: unknown) => e instanceof ApiCallError && e.status === 400 && !e.isRetryable);
    assert.equal(s.requests.length, 4, "3 attempts, then 1 for the 400");
    assert.equal(m.stats.failures, 2);
  } finally {
    await s.close();
  }
});

test("an unreachable server: retried, then an error naming the URL", async () => {
  const s = await chatServer();
  await s.close();
  const m = new OpenAIChatModel({ baseURL: s.url, model: "tiny", maxRetries: 1, ...fast });
  await assert.rejects(m.generate({ messages: [{ role: "user", content: "x" }] }), (e: unknown) => e instanceof ApiCallError && e.url === `${s.url}/chat/completions` && m.stats.requests === 2);
});

test("the concurrency limit holds: never more calls in flight than allowed", async () => {
  // The server answers only when every call the client has started has arrived and more are queued
  // behind its limit. A client without a limit never queues, so all 20 calls would pile up at once.
  let m: OpenAIChatModel | null = null;
  const s = await chatServer({ hold: (pending) => !(pending === m!.load.inFlight && m!.load.waiting > 0), total: 20 });
  try {
    const model = (m = new OpenAIChatModel({ baseURL: s.url, model: "tiny", concurrency: 4, ...fast }));
    const all = await Promise.all(Array.from({ length: 20 }, (_, i) => model.generate({ messages: [{ role: "user", content: `q${i}` }] })));
    assert.equal(all.length, 20);
    assert.equal(s.maxInFlight, 4);
  } finally {
    await s.close();
  }
});

test("the response cache answers identical requests without a call, across instances", async () => {
  const s = await chatServer();
  const file = join(mkdtempSync(join(tmpdir(), "dreamgym-llm-")), "cache.db");
  try {
    const req = { messages: [{ role: "user" as const, content: "cache me" }], seed: 1 };
    const a = new OpenAIChatModel({ baseURL: s.url, model: "tiny", cache: file, ...fast });
    const first = await a.generate(req);
    const second = await a.generate(req);
    assert.equal(second.cached, true);
    assert.deepEqual(second.choices, first.choices);
    a.close();
    const b = new OpenAIChatModel({ baseURL: s.url, model: "tiny", cache: new ResponseCache(file), ...fast });
    assert.equal((await b.generate(req)).cached, true);
    assert.equal((await b.generate({ ...req, seed: 2 })).cached, false, "another request is another key");
    assert.equal(s.requests.length, 2);
    b.close();
  } finally {
    await s.close();
  }
});

test("extractJson: whole text, fenced, embedded; failures say why", () => {
  assert.deepEqual(extractJson('{"a": 1}').value, { a: 1 });
  assert.deepEqual(extractJson('Sure!\n```json\n{"a": 2}\n```').value, { a: 2 });
  assert.deepEqual(extractJson('reasoning... {"a": {"b": 3}} done').value, { a: { b: 3 } });
  assert.match(extractJson("no json here").error!, /^not JSON/);
  assert.match(extractJson("").error!, /empty output/);
});

test("model specs", () => {
  assert.equal(createChatModel("http://127.0.0.1:8000/v1#Qwen2.5-7B").id, "http://127.0.0.1:8000/v1#Qwen2.5-7B");
  assert.equal(createChatModel("openai:gpt-4o-mini").id, "https://api.openai.com/v1#gpt-4o-mini");
  assert.equal(createChatModel("gguf:./m.gguf").id, "gguf:./m.gguf");
  assert.throws(() => createChatModel("llama"), /unknown model "llama"/);
});
