import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OpenAIChatModel } from "./openai-chat-model.ts";
import { createChatModel } from "./create-chat-model.ts";
import { extractJson } from "./chat-model.ts";
import { ResponseCache } from "./response-cache.ts";
import { EndpointFailedError } from "./breaker.ts";
import { ApiCallError, InvalidConfigError } from "../core/index.ts";
import { chatServer } from "../testing/index.ts";

const fast = { backoffMs: 1, maxBackoffMs: 5 };

/** A whole chat completion's JSON, as a server sends it, answering `text`. */
const completionJson = (text: string) =>
  JSON.stringify({
    id: "c",
    object: "chat.completion",
    created: 0,
    model: "m",
    choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
  });

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

test("429, 500, cut connections and malformed bodies are retried once the server has answered; a timeout is not", async () => {
  const s = await chatServer({ faults: ["429", "500", "cut", "malformed", "ok", "timeout"] });
  try {
    const m = new OpenAIChatModel({ baseURL: s.url, model: "tiny", timeoutMs: 300, maxRetries: 5, ...fast });
    const r = await m.generate({ messages: [{ role: "user", content: "again" }] });
    assert.equal(r.choices[0].text, "echo again");
    assert.equal(m.stats.retries, 4);
    assert.equal(m.stats.requests, 5);
    // A timed-out attempt fails the call (a retry would multiply the wait); the next call is answered.
    await assert.rejects(
      m.generate({ messages: [{ role: "user", content: "slow" }] }),
      (e: unknown) => e instanceof ApiCallError && /timed out/.test(e.message) && !(e instanceof EndpointFailedError),
    );
    assert.equal((await m.generate({ messages: [{ role: "user", content: "fast" }] })).choices[0].text, "echo fast");
    assert.equal(s.requests.length, 7);
    assert.equal(m.stats.failures, 1);
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
    await assert.rejects(
      m.generate({ messages: [{ role: "user", content: "y" }] }),
      (e: unknown) => e instanceof ApiCallError && e.status === 400 && !e.isRetryable,
    );
    assert.equal(s.requests.length, 4, "3 attempts, then 1 for the 400");
    assert.equal(m.stats.failures, 2);
  } finally {
    await s.close();
  }
});

test("a server that never answered (refused, hung, not the protocol) stops at the first call, naming the URL", async () => {
  const dead = await chatServer();
  await dead.close();
  const hung = await chatServer({ faults: ["timeout"] });
  const garbage = await chatServer({ faults: ["malformed"] });
  try {
    for (const [s, last] of [
      [dead, /Connection error\. \(ECONNREFUSED\)/],
      [hung, /Request timed out/],
      [garbage, /JSON|choices/],
    ] as const) {
      const m = new OpenAIChatModel({ baseURL: s.url, model: "tiny", timeoutMs: 200, maxRetries: 3, ...fast });
      await assert.rejects(m.generate({ messages: [{ role: "user", content: "x" }] }), (e: unknown) => {
        assert.ok(e instanceof EndpointFailedError && e instanceof ApiCallError);
        assert.equal(e.url, `${s.url}/chat/completions`);
        assert.match(e.message, new RegExp(`^LLM endpoint ${s.url}/chat/completions cannot be reached; last error: `));
        assert.match(e.message, last);
        assert.ok(!e.message.includes("\n"), "one line");
        return true;
      });
      assert.equal(m.stats.requests, 1, "no retries for an endpoint that never answered");
      await assert.rejects(m.generate({ messages: [{ role: "user", content: "y" }] }), EndpointFailedError);
      assert.equal(m.stats.requests, 1, "tripped: no more calls");
    }
  } finally {
    await hung.close();
    await garbage.close();
  }
});

test("a hung server stays 'cannot be reached' when the process stalls as it sends (the answer's deadline does not pass for an answer)", async () => {
  const hung = await chatServer({ faults: ["timeout"] });
  try {
    const m = new OpenAIChatModel({ baseURL: hung.url, model: "tiny", timeoutMs: 200, maxFailures: 1, ...fast });
    // A stall between the start of the attempt and the request's send (a collector's pause, the process
    // descheduled on a loaded machine), here made by the message's own JSON: longer than the 50 ms by
    // which the whole answer's deadline follows the headers' timeout.
    const stalling = {
      toJSON() {
        const until = performance.now() + 120;
        while (performance.now() < until);
        return "x";
      },
    };
    await assert.rejects(m.generate({ messages: [{ role: "user", content: stalling as unknown as string }] }), (e: unknown) => {
      assert.ok(e instanceof EndpointFailedError);
      assert.match(e.message, /cannot be reached; last error: .*Request timed out/);
      return true;
    });
    assert.equal(m.breaker.reached, false, "a server that sent nothing has not answered");
  } finally {
    await hung.close();
  }
});

test("an answer that came in time is taken when the process stalls past the timeout before reading it (not 'cannot be reached')", async () => {
  const { createServer } = await import("node:http");
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(completionJson("in time"));
      // The answer is sent; then the process stalls (a collector's pause, the process descheduled on a
      // loaded machine) past the request timeout and the whole answer's deadline, before the client reads it.
      // (The timeout leaves room for this process to reach the server's answer first on a loaded machine.)
      const until = performance.now() + 800;
      while (performance.now() < until);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const m = new OpenAIChatModel({
      baseURL: `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`,
      model: "m",
      timeoutMs: 600,
      maxFailures: 1,
      ...fast,
    });
    assert.equal((await m.generate({ messages: [{ role: "user", content: "x" }] })).choices[0].text, "in time");
    m.close();
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("a server that answered once and then keeps failing trips the breaker after maxFailures calls in a row", async () => {
  const s = await chatServer({ faults: ["ok", "500", "ok", "400", "400", "400"] });
  try {
    const m = new OpenAIChatModel({ baseURL: s.url, model: "tiny", maxRetries: 0, maxFailures: 3, ...fast });
    const call = () => m.generate({ messages: [{ role: "user", content: "x" }] });
    await call();
    await assert.rejects(call(), (e: unknown) => e instanceof ApiCallError && !(e instanceof EndpointFailedError) && e.status === 500);
    await call(); // a success starts the count again
    await assert.rejects(call(), (e: unknown) => !(e instanceof EndpointFailedError));
    await assert.rejects(call(), (e: unknown) => !(e instanceof EndpointFailedError));
    await assert.rejects(call(), (e: unknown) => e instanceof EndpointFailedError && /failed 3 calls in a row; last error: .*HTTP 400/.test(e.message));
    assert.equal(s.requests.length, 6);
  } finally {
    await s.close();
  }
});

test("a breaker that trips aborts the calls in flight", async () => {
  const s = await chatServer({ faults: ["ok", "timeout", "400"] });
  try {
    const m = new OpenAIChatModel({ baseURL: s.url, model: "tiny", timeoutMs: 60_000, maxRetries: 0, maxFailures: 1, ...fast });
    await m.generate({ messages: [{ role: "user", content: "x" }] });
    const hanging = m.generate({ messages: [{ role: "user", content: "hang" }] });
    while (s.requests.length < 2) await new Promise((r) => setImmediate(r));
    await assert.rejects(m.generate({ messages: [{ role: "user", content: "bad" }] }), EndpointFailedError);
    await assert.rejects(hanging, EndpointFailedError, "aborted, not left to its 60 s timeout");
  } finally {
    await s.close();
  }
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

test("an answer is bounded as a whole: a dripping body times out, a huge one fails as it streams, a 200 that is not the protocol counts as a failed call (issue 34, items 9–11)", async () => {
  const { createServer } = await import("node:http");
  const { gzipSync } = await import("node:zlib");
  const drips = new Set<NodeJS.Timeout>();
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const mode = req.url?.split("/")[1];
      if (mode === "loop") {
        res.writeHead(302, { location: req.url });
        return void res.end();
      }
      if (mode === "text") {
        res.writeHead(200, { "content-type": "text/plain" });
        return void res.end("hello, not json");
      }
      if (mode === "sized") {
        // A whole answer with its length (as vLLM, llama.cpp and Ollama send one); "big" declares 200 kB.
        const big = req.url?.startsWith("/sized/big/");
        const body = Buffer.from(completionJson("sized").padEnd(big ? 200_000 : 0, " "));
        res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
        return void res.end(body);
      }
      if (mode === "gzip") {
        // 200 kB of answer in a ~1 kB gzip body, its length the compressed one's: fetch inflates it.
        const body = gzipSync(Buffer.from("{}".padStart(200_000, " ")));
        res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip", "content-length": body.length });
        return void res.end(body);
      }
      res.writeHead(200, { "content-type": "application/json" });
      if (mode === "drip") {
        const t = setInterval(() => res.write(" "), 20); // headers at once, then a byte now and then
        drips.add(t);
        return void res.on("close", () => clearInterval(t));
      }
      // huge: 8 MB of spaces before a JSON body, in 64 KB chunks, as fast as the client reads
      const chunk = Buffer.alloc(1 << 16, 32);
      let n = 0;
      const write = () => {
        while (n < 128) {
          n++;
          if (!res.write(chunk)) return void res.once("drain", write);
        }
        res.end("{}");
      };
      write();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  try {
    const drip = new OpenAIChatModel({ baseURL: `${base}/drip`, model: "m", timeoutMs: 300, maxFailures: 2, ...fast });
    const t0 = performance.now();
    await assert.rejects(
      drip.generate({ messages: [{ role: "user", content: "x" }] }),
      (e: unknown) => e instanceof ApiCallError && !(e instanceof EndpointFailedError) && /no whole answer within 0\.3 s/.test((e as Error).message),
    );
    assert.ok(performance.now() - t0 < 5000, "bounded by the timeout, not by the server");
    await assert.rejects(
      drip.generate({ messages: [{ role: "user", content: "x" }] }),
      (e: unknown) => e instanceof EndpointFailedError && /failed 2 calls in a row/.test((e as Error).message),
    );

    const huge = new OpenAIChatModel({ baseURL: `${base}/huge`, model: "m", maxAnswerBytes: 100_000, maxRetries: 1, maxFailures: 5, ...fast });
    await assert.rejects(
      huge.generate({ messages: [{ role: "user", content: "x" }] }),
      (e: unknown) => e instanceof ApiCallError && /the answer is larger than 100000 bytes/.test((e as Error).message),
    );
    assert.equal(huge.stats.requests, 2, "retried once, as a malformed answer is");
    // A declared length: within the bound, the answer is read as it is; above it, the attempt fails before the body.
    const sized = new OpenAIChatModel({ baseURL: `${base}/sized`, model: "m", maxAnswerBytes: 100_000, maxRetries: 0, maxFailures: 5, ...fast });
    assert.equal((await sized.generate({ messages: [{ role: "user", content: "x" }] })).choices[0].text, "sized");
    const declared = new OpenAIChatModel({ baseURL: `${base}/sized/big`, model: "m", maxAnswerBytes: 100_000, maxRetries: 0, maxFailures: 5, ...fast });
    await assert.rejects(
      declared.generate({ messages: [{ role: "user", content: "x" }] }),
      (e: unknown) => e instanceof ApiCallError && /the answer is larger than 100000 bytes \(HTTP 200\)/.test((e as Error).message),
    );
    const inflated = new OpenAIChatModel({ baseURL: `${base}/gzip`, model: "m", maxAnswerBytes: 100_000, maxRetries: 0, maxFailures: 5, ...fast });
    await assert.rejects(
      inflated.generate({ messages: [{ role: "user", content: "x" }] }),
      (e: unknown) => e instanceof ApiCallError && /the answer is larger than 100000 bytes/.test((e as Error).message),
    );

    // Not the protocol: the endpoint is there (not "cannot be reached"), and the calls count to the breaker.
    const text = new OpenAIChatModel({ baseURL: `${base}/text`, model: "m", maxRetries: 0, maxFailures: 3, ...fast });
    for (let i = 0; i < 2; i++)
      await assert.rejects(
        text.generate({ messages: [{ role: "user", content: "x" }] }),
        (e: unknown) => !(e instanceof EndpointFailedError) && /not an OpenAI chat completion \(it begins "hello, not json"\)/.test((e as Error).message),
      );
    await assert.rejects(
      text.generate({ messages: [{ role: "user", content: "x" }] }),
      (e: unknown) => e instanceof EndpointFailedError && /failed 3 calls in a row/.test((e as Error).message),
    );

    // Redirects in a loop: the server is there (not "cannot be reached"), and the message says what it does.
    const loop = new OpenAIChatModel({ baseURL: `${base}/loop`, model: "m", maxRetries: 0, maxFailures: 2, ...fast });
    await assert.rejects(
      loop.generate({ messages: [{ role: "user", content: "x" }] }),
      (e: unknown) => !(e instanceof EndpointFailedError) && /the server redirects in a loop: check the URL/.test((e as Error).message),
    );
    await assert.rejects(
      loop.generate({ messages: [{ role: "user", content: "x" }] }),
      (e: unknown) =>
        e instanceof EndpointFailedError &&
        /failed 2 calls in a row; .*redirects in a loop/.test((e as Error).message) &&
        !/cannot be reached/.test((e as Error).message),
    );
  } finally {
    for (const t of drips) clearInterval(t);
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("calls reuse one kept-alive connection, which close() ends; a redirect that keeps the POST (307) is followed", async () => {
  const { createServer } = await import("node:http");
  const sockets = new Set<import("node:net").Socket>();
  let connections = 0;
  const completion = completionJson("moved");
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      if (req.url?.startsWith("/old/")) {
        res.writeHead(307, { location: req.url.replace("/old/", "/new/") });
        return void res.end();
      }
      const sent = JSON.parse(body) as { messages: { content: string }[] };
      res.writeHead(200, { "content-type": "application/json; charset=utf-8" });
      res.end(completion.replace('"moved"', JSON.stringify(`${req.method} ${req.url} ${sent.messages[0].content}`)));
    });
  });
  server.on("connection", (s) => {
    connections++;
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  try {
    const m = new OpenAIChatModel({ baseURL: `${base}/new/v1`, model: "m", ...fast });
    for (const q of ["a", "b", "c"])
      assert.equal((await m.generate({ messages: [{ role: "user", content: q }] })).choices[0].text, `POST /new/v1/chat/completions ${q}`);
    assert.equal(connections, 1, "one connection for three calls in a row");
    m.close();
    // The server sees the connection end (a bounded wait: it fails rather than hangs if it does not).
    for (let i = 0; sockets.size > 0 && i < 400; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(sockets.size, 0, "close() ended the kept-alive connection");
    const moved = new OpenAIChatModel({ baseURL: `${base}/old/v1`, model: "m", ...fast });
    assert.equal((await moved.generate({ messages: [{ role: "user", content: "d" }] })).choices[0].text, "POST /new/v1/chat/completions d");
    moved.close();
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("the key goes to the endpoint's origin only; an error status stands though its body is cut; raw deflate and a byte-order mark are read; close() lets a call in flight finish", async () => {
  const { createServer } = await import("node:http");
  const { deflateRawSync } = await import("node:zlib");
  const seen: { url?: string; authorization?: string }[] = [];
  let release: () => void = () => {};
  const held = new Promise<void>((r) => (release = r));
  const other = createServer((req, res) => {
    seen.push({ url: req.url, authorization: req.headers.authorization });
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(completionJson("elsewhere"));
    });
  });
  await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
  const otherBase = `http://127.0.0.1:${(other.address() as { port: number }).port}`;
  const server = createServer((req, res) => {
    seen.push({ url: req.url, authorization: req.headers.authorization });
    req.resume();
    req.on("end", () => {
      const mode = req.url?.split("/")[1];
      if (mode === "away") {
        res.writeHead(307, { location: `${otherBase}/v1/chat/completions` });
        return void res.end();
      }
      if (mode === "cut") {
        // A 500 whose body stops short of its declared length.
        res.writeHead(500, { "content-type": "application/json", "content-length": 1000 });
        res.write('{"error": {"mess');
        return void setImmediate(() => res.socket?.destroy());
      }
      if (mode === "raw") {
        res.writeHead(200, { "content-type": "application/json", "content-encoding": "deflate" });
        return void res.end(deflateRawSync(Buffer.from(`\uFEFF${completionJson("inflated")}`)));
      }
      void held.then(() => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(completionJson("held"));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const ask = (m: OpenAIChatModel) => m.generate({ messages: [{ role: "user", content: "x" }] });
  try {
    const away = new OpenAIChatModel({ baseURL: `${base}/away/v1`, model: "m", apiKey: "sk-secret", ...fast });
    assert.equal((await ask(away)).choices[0].text, "elsewhere");
    assert.deepEqual(
      seen.map((s) => s.authorization),
      ["Bearer sk-secret", undefined],
      "sent to the endpoint, not on to another origin",
    );
    away.close();
    const cut = new OpenAIChatModel({ baseURL: `${base}/cut/v1`, model: "m", maxRetries: 0, ...fast });
    await assert.rejects(ask(cut), (e: unknown) => e instanceof ApiCallError && e.status === 500 && !(e instanceof EndpointFailedError));
    cut.close();
    const raw = new OpenAIChatModel({ baseURL: `${base}/raw/v1`, model: "m", ...fast });
    assert.equal((await ask(raw)).choices[0].text, "inflated");
    raw.close();
    const slow = new OpenAIChatModel({ baseURL: `${base}/held/v1`, model: "m", ...fast });
    const inFlight = ask(slow);
    while (seen.length < 5) await new Promise((r) => setImmediate(r));
    slow.close();
    release();
    assert.equal((await inFlight).choices[0].text, "held");
  } finally {
    for (const s of [server, other]) {
      s.closeAllConnections();
      await new Promise((resolve) => s.close(resolve));
    }
  }
});

test("a key pasted with its newline is trimmed (one inside is a config error); an empty answer is the server speaking something else; no answer bound is too large", async () => {
  const { createServer } = await import("node:http");
  const { gzipSync } = await import("node:zlib");
  const keys: (string | undefined)[] = [];
  const server = createServer((req, res) => {
    keys.push(req.headers.authorization);
    req.resume();
    req.on("end", () => {
      if (req.url?.startsWith("/empty/")) {
        res.writeHead(200, { "content-type": "application/json", "content-length": 0 });
        return void res.end();
      }
      const body = gzipSync(completionJson("ok"));
      res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip", "content-length": body.length });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const ask = (m: OpenAIChatModel) => m.generate({ messages: [{ role: "user", content: "x" }] });
  try {
    const m = new OpenAIChatModel({ baseURL: `${base}/v1`, model: "m", apiKey: "sk-abc\n", maxAnswerBytes: Number.POSITIVE_INFINITY, ...fast });
    assert.equal((await ask(m)).choices[0].text, "ok");
    assert.deepEqual(keys, ["Bearer sk-abc"]);
    m.close();
    assert.throws(
      () => new OpenAIChatModel({ baseURL: `${base}/v1`, model: "m", apiKey: "sk-a\nbc" }),
      (e: unknown) => e instanceof InvalidConfigError && /API key/.test((e as Error).message),
    );
    assert.throws(() => new OpenAIChatModel({ baseURL: `${base}/v1`, model: "m", maxAnswerBytes: 0 }), InvalidConfigError);
    const empty = new OpenAIChatModel({ baseURL: `${base}/empty/v1`, model: "m", maxRetries: 0, ...fast });
    await assert.rejects(ask(empty), (e: unknown) => !(e instanceof EndpointFailedError) && /an empty answer/.test((e as Error).message));
    empty.close();
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
