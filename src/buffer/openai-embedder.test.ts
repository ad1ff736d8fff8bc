import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { OpenAIEmbedder } from "./openai-embedder.ts";
import { ReplayBuffer } from "./replay-buffer.ts";
import { createEmbedder } from "./create-embedder.ts";
import { makeTrajectory, tempFile } from "../testing/index.ts";
import { ApiCallError, InvalidConfigError } from "../core/index.ts";

type Fault = "500" | "429" | "bad-count" | null;

/** A local server speaking the OpenAI embeddings protocol; `faults` are served first, one per request. */
async function embeddingsServer(faults: Fault[] = []) {
  const requests: { model: string; input: string[] }[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    for await (const c of req) body += c;
    if (req.method !== "POST" || req.url !== "/v1/embeddings") {
      res.writeHead(404).end();
      return;
    }
    const json = JSON.parse(body) as { model: string; input: string[] };
    requests.push(json);
    const fault = faults.shift() ?? null;
    if (fault === "500" || fault === "429") {
      res.writeHead(Number(fault), { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `injected ${fault}` } }));
      return;
    }
    const inputs = fault === "bad-count" ? json.input.slice(1) : json.input;
    // A deterministic 8-dim "model": character statistics of each input.
    const data = inputs.map((text, index) => ({
      object: "embedding",
      index,
      embedding: Array.from({ length: 8 }, (_, d) => [...text].filter((ch) => ch.charCodeAt(0) % 8 === d).length + 0.5),
    }));
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify({ object: "list", data, model: json.model, usage: { prompt_tokens: 1, total_tokens: 1 } }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1`, requests, close: () => new Promise<void>((r) => server.close(() => r())) };
}

test("embeds in batches over the real protocol, retrying 5xx and 429", async () => {
  const s = await embeddingsServer(["500", "429"]);
  try {
    const e = new OpenAIEmbedder({ baseURL: s.url, model: "test-embed", batchSize: 3, maxRetries: 3 });
    const vs = await e.embed(["alpha", "beta", "gamma", "delta", "epsilon"]);
    assert.equal(vs.length, 5);
    assert.equal(e.dims, 8);
    for (const v of vs) assert.ok(Math.abs(v.reduce((a, x) => a + x * x, 0) - 1) < 1e-6, "unit length");
    assert.equal(s.requests.length, 4, "two failures retried, then two batches");
    assert.deepEqual(
      s.requests.map((r) => r.input.length),
      [3, 3, 3, 2],
    );
    assert.equal(s.requests[0].model, "test-embed");
    assert.equal(e.id, `openai-compatible:${s.url}#test-embed`);
  } finally {
    await s.close();
  }
});

test("an unreachable endpoint: retried, then an error that names the URL", async () => {
  const s = await embeddingsServer();
  const url = s.url;
  await s.close(); // nothing listens there now
  const e = new OpenAIEmbedder({ baseURL: url, model: "m", maxRetries: 1, timeoutMs: 2000 });
  await assert.rejects(e.embed(["x"]), (err: unknown) => {
    assert.ok(err instanceof ApiCallError);
    assert.equal(err.url, `${url}/embeddings`);
    assert.match(err.message, new RegExp(url.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")));
    assert.match(err.message, /Connection error\. \(ECONNREFUSED\)/);
    return true;
  });
});

test("a malformed response is an error, not a silent misalignment", async () => {
  const s = await embeddingsServer(["bad-count"]);
  try {
    const e = new OpenAIEmbedder({ baseURL: s.url, model: "m", maxRetries: 0 });
    await assert.rejects(e.embed(["a", "b"]), /1 vectors for 2 inputs/);
  } finally {
    await s.close();
  }
});

test("a buffer embedded by a server records it; reopening needs the same embedder to search", async () => {
  const s = await embeddingsServer();
  try {
    const file = tempFile("remote.db");
    const spec = `${s.url}#test-embed`;
    const b = ReplayBuffer.open(file, { embedder: createEmbedder(spec) });
    await b.appendTrajectories([makeTrajectory(1), makeTrajectory(2)]);
    assert.equal(b.stats().dims, 8);
    const hits = await b.search("click[buy now]", { k: 2 });
    assert.equal(hits.length, 2);
    b.close();
    const ro = ReplayBuffer.open(file, { readonly: true });
    assert.equal(ro.count(), 6, "stats and export work without the embedder");
    await assert.rejects(ro.search("x"), (e: unknown) => e instanceof InvalidConfigError && e.message.includes(`openai-compatible:${s.url}#test-embed`));
    ro.close();
    const again = ReplayBuffer.open(file, { embedder: createEmbedder(spec) });
    assert.equal((await again.search("click[buy now]", { k: 2 })).length, 2);
    again.close();
  } finally {
    await s.close();
  }
});

test("embedder specs", () => {
  assert.equal(createEmbedder("hashing:64").dims, 64);
  assert.match(createEmbedder("openai:text-embedding-3-small").id, /api\.openai\.com\/v1#text-embedding-3-small$/);
  assert.throws(() => createEmbedder("word2vec"), /unknown embedder "word2vec"/);
});

test("many embeddings at once (a pool's queries): all answered, no listener piling up on a shared signal", async () => {
  const s = await embeddingsServer();
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.name);
  process.on("warning", onWarning);
  try {
    const e = new OpenAIEmbedder({ baseURL: s.url, model: "m" });
    const vs = await Promise.all(Array.from({ length: 64 }, (_, i) => e.embed([`query ${i}`])));
    assert.equal(vs.length, 64);
    await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
    assert.deepEqual(warnings, []);
  } finally {
    process.off("warning", onWarning);
    await s.close();
  }
});
