import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GgufChatModel } from "./gguf-chat-model.ts";
import { writeTinyGguf } from "../testing/index.ts";
import { createChatModel } from "./create-chat-model.ts";
import { DataError } from "../core/index.ts";

const dir = mkdtempSync(join(tmpdir(), "dreamgym-gguf-"));
const modelPath = join(dir, "tiny.gguf");
writeTinyGguf(modelPath, { seed: 3 });

test("the real llama.cpp engine runs a GGUF model the suite wrote, and grammar-constrained output parses against the schema", async () => {
  const model = createChatModel(`gguf:${modelPath}`) as GgufChatModel;
  const schema = {
    type: "object",
    properties: {
      reasoning: { type: "string", maxLength: 24 },
      next_state: { type: "string", maxLength: 24 },
      reward: { type: "number" },
      terminated: { type: "boolean" },
    },
    required: ["reasoning", "next_state", "reward", "terminated"],
  };
  for (let seed = 0; seed < 3; seed++) {
    const r = await model.generate({
      messages: [
        { role: "system", content: "You are the environment." },
        { role: "user", content: "State: page: search\nAction: search[lamp]" },
      ],
      schema: { name: "step", schema },
      seed,
      maxTokens: 200,
    });
    const choice = r.choices[0];
    assert.equal(choice.parseError, undefined, choice.text);
    const parsed = choice.parsed as Record<string, unknown>;
    assert.deepEqual(Object.keys(parsed).sort(), ["next_state", "reasoning", "reward", "terminated"]);
    // Random weights choose the content; the grammar guarantees the shape.
    assert.deepEqual(
      [typeof parsed.reasoning, typeof parsed.next_state, typeof parsed.reward, typeof parsed.terminated],
      ["string", "string", "number", "boolean"],
    );
    assert.ok(r.usage.promptTokens > 0 && r.usage.completionTokens > 0);
  }
  assert.equal(model.stats.requests, 3);
});

test("GGUF responses can be cached for exact replay", async () => {
  const model = new GgufChatModel({ path: modelPath, cache: join(dir, "cache.db") });
  const req = { messages: [{ role: "user" as const, content: "hello" }], seed: 5, maxTokens: 20 };
  const first = await model.generate(req);
  const second = await model.generate(req);
  assert.equal(second.cached, true);
  assert.deepEqual(second.choices, first.choices);
  assert.equal(model.stats.requests, 1);
  model.close();
});

test("a prompt longer than the context is an error, not a silent cut", async () => {
  const model = new GgufChatModel({ path: modelPath, contextSize: 64 });
  await assert.rejects(
    model.generate({ messages: [{ role: "user", content: "x".repeat(500) }], maxTokens: 8 }),
    /the prompt is \d+ tokens .* the context holds 64/,
  );
});

test("a missing model file is a clear error", async () => {
  const model = new GgufChatModel({ path: join(dir, "missing.gguf") });
  await assert.rejects(
    model.generate({ messages: [{ role: "user", content: "x" }] }),
    (e: unknown) => e instanceof DataError && /no such GGUF model file/.test(e.message),
  );
});
