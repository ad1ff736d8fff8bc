// The OpenEnv side of `dreamgym serve`: every route and message type, each error code, heartbeat,
// reaper, capacity, limits, synthetic sessions, shutdown. Real servers on loopback, real WebShop,
// real `ws` clients.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { InvalidConfigError } from "../src/core/index.ts";
import { ReplayBuffer } from "../src/buffer/index.ts";
import { registerEnv, unregisterEnv } from "../src/envs/index.ts";
import { startServer } from "../src/server/index.ts";
import { ChainEnv } from "../src/testing/index.ts";
import { startTestServer, TestClient, until, webshopSeedBuffer, type TestServer } from "./serve-kit.ts";

let shop: TestServer;
before(async () => {
  shop = await startTestServer();
});
after(async () => {
  await shop.close();
});

/** A response whose JSON the tests read freely. */
type Reply = { status: number; json(): Promise<any> };
const get = (s: TestServer, path: string, headers: Record<string, string> = {}): Promise<Reply> => fetch(`${s.url}${path}`, { headers });
const post = (s: TestServer, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> =>
  fetch(`${s.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
const OBSERVATION_KEYS = ["text", "available_actions", "instruction", "task_id", "step", "terminated", "truncated"];

test("GET /health, /metadata, /schema, /tasks, /state", { timeout: 20_000 }, async () => {
  assert.deepEqual(await (await get(shop, "/health")).json(), { status: "healthy", sessions: 0, max_sessions: 256 });

  const meta = await (await get(shop, "/metadata")).json();
  assert.deepEqual(Object.keys(meta), ["name", "description", "readme_content", "version", "author", "documentation_url", "dreamgym"]);
  assert.equal(meta.name, "webshop");
  assert.deepEqual(meta.dreamgym, {
    env: "webshop",
    mode: "real",
    split: "test",
    observation: "abstract",
    rewards: { min: 0, max: 1, dense: false },
    tasks: 500,
    version: meta.version,
  });

  const schema = await (await get(shop, "/schema")).json();
  assert.deepEqual(Object.keys(schema), ["action", "observation", "state"]);
  assert.deepEqual(schema.action.required, ["action"]);
  assert.equal(schema.action.additionalProperties, false);
  for (const k of [...OBSERVATION_KEYS, "done", "reward", "invalid", "verified"]) assert.ok(k in schema.observation.properties, k);
  assert.deepEqual(Object.keys(schema.state.properties), ["episode_id", "step_count", "task_id", "total_reward", "done"]);

  const tasks = await (await get(shop, "/tasks")).json();
  assert.equal(tasks.split, "test");
  assert.equal(tasks.total, 500);
  assert.equal(tasks.tasks.length, 500);
  assert.equal(tasks.tasks[0].id, "webshop:0");
  const page = await (await get(shop, "/tasks?offset=498&limit=5")).json();
  assert.deepEqual(
    page.tasks.map((t: { id: string }) => t.id),
    ["webshop:498", "webshop:499"],
  );
  const bad = await get(shop, "/tasks?limit=10001");
  assert.equal(bad.status, 422);
  const badBody = await bad.json();
  assert.equal(badBody.code, "VALIDATION_ERROR");
  assert.deepEqual(badBody.detail[0].loc, ["query", "limit"]);

  // HTTP keeps no session: the state of a fresh env.
  assert.deepEqual(await (await get(shop, "/state")).json(), { episode_id: null, step_count: 0, task_id: null, total_reward: 0, done: true });
});

test("HTTP /reset is stateless (a fresh env per request, closed after); /step answers as a fresh env would", { timeout: 20_000 }, async () => {
  const r = await post(shop, "/reset", { task_index: 3, seed: 1, episode_id: "h-1", unknown_kwarg: true });
  assert.equal(r.status, 200);
  const body = await r.json();
  assert.deepEqual(Object.keys(body), ["observation", "reward", "done"]);
  assert.deepEqual(Object.keys(body.observation), OBSERVATION_KEYS);
  assert.equal(body.observation.task_id, "webshop:3");
  assert.equal(body.reward, null);
  assert.equal(body.done, false);
  assert.equal(shop.manager.size, 0, "the request's env was closed");
  assert.equal((await post(shop, "/reset")).status, 200, "no body is {}");

  const bySeed = async () => (await (await post(shop, "/reset", { seed: 7 })).json()).observation.task_id;
  assert.equal(await bySeed(), await bySeed(), "a seed picks the same task");

  const badSeed = await post(shop, "/reset", { seed: -1 });
  assert.equal(badSeed.status, 422);
  assert.deepEqual((await badSeed.json()).detail[0].loc, ["body", "seed"]);
  const badJson = await post(shop, "/reset", "{nope");
  assert.equal(badJson.status, 422);
  assert.equal((await badJson.json()).code, "INVALID_JSON");
  const unknownTask = await post(shop, "/reset", { task_id: "webshop:nope" });
  assert.equal(unknownTask.status, 400);
  assert.equal((await unknownTask.json()).code, "VALIDATION_ERROR");

  const noAction = await post(shop, "/step", { timeout_s: 1 });
  assert.equal(noAction.status, 422);
  assert.deepEqual((await noAction.json()).detail[0].loc, ["body", "action"]);
  const badAction = await post(shop, "/step", { action: { action: "search[x]", extra: 1 } });
  assert.equal(badAction.status, 422);
  assert.deepEqual(
    (await badAction.json()).detail.map((e: { loc: string[]; type: string }) => [e.loc, e.type]),
    [[["extra"], "extra_forbidden"]],
  );
  const step = await post(shop, "/step", { action: { action: "search[x]", metadata: {} }, request_id: "r1" });
  assert.equal(step.status, 409);
  const stepBody = await step.json();
  assert.equal(stepBody.code, "SESSION_ERROR");
  assert.match(stepBody.message, /stateless.*\/ws/);
});

test("errors are JSON with a code: unknown route 404, plain GET /ws 426, oversized body 413", { timeout: 20_000 }, async () => {
  const nf = await get(shop, "/nope");
  assert.equal(nf.status, 404);
  assert.deepEqual(await nf.json(), { detail: "Not Found", code: "NOT_FOUND", message: "no route GET /nope" });
  assert.equal((await post(shop, "/health")).status, 404);
  const ws = await get(shop, "/ws");
  assert.equal(ws.status, 426);
  assert.equal((await ws.json()).code, "UPGRADE_REQUIRED");
  const big = await post(shop, "/reset", { seed: 1, pad: "x".repeat(1024 * 1024) });
  assert.equal(big.status, 413);
  const bigBody = await big.json();
  assert.equal(bigBody.code, "PAYLOAD_TOO_LARGE");
  assert.match(bigBody.message, /1048576 bytes/);
  // A chunked body (no content-length) is counted as it arrives: a small one is read, a large one refused.
  const chunked = (text: string): Promise<Reply> =>
    fetch(`${shop.url}/reset`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      duplex: "half",
      body: new ReadableStream({
        start(c) {
          for (let i = 0; i < text.length; i += 65_536) c.enqueue(new TextEncoder().encode(text.slice(i, i + 65_536)));
          c.close();
        },
      }),
    } as RequestInit);
  const small = await chunked(JSON.stringify({ task_index: 2 }));
  assert.equal(small.status, 200);
  assert.equal((await small.json()).observation.task_id, "webshop:2");
  const bigChunked = await chunked(JSON.stringify({ seed: 1, pad: "x".repeat(1024 * 1024) }));
  assert.equal(bigChunked.status, 413);
  assert.equal((await bigChunked.json()).code, "PAYLOAD_TOO_LARGE");
});

test("a WebShop episode over /ws: reset, step to done, state, step after done, reset again, close", { timeout: 20_000 }, async () => {
  const c = await TestClient.open(shop.ws);
  assert.equal(shop.manager.size, 1, "one session per connection, opened on connect (as upstream)");
  assert.equal((await (await get(shop, "/health")).json()).sessions, 1, "/health counts the open sessions");
  const noEpisode = await c.call({ type: "step", data: { action: "search[pillow]" } });
  assert.deepEqual(noEpisode, { type: "error", data: { message: "no episode has started in this session: reset first", code: "SESSION_ERROR" } });

  let r = await c.call({ type: "reset", data: { task_id: "webshop:0" } });
  assert.equal(r.type, "observation");
  assert.equal(r.data.observation.task_id, "webshop:0");
  assert.match(r.data.observation.text, /^page: search\ninstruction: Find me double sided/);
  assert.deepEqual(r.data.observation.available_actions, ["search[<query>]"]);
  r = await c.call({ type: "step", data: { action: "search[pillow]" } });
  assert.equal(r.data.observation.step, 1);
  assert.equal(r.data.reward, 0);
  const item = r.data.observation.available_actions.find((a: string) => /^click\[b0/.test(a));
  r = await c.call({ type: "step", data: { action: "click[nothing here]" } });
  assert.equal(r.data.observation.invalid, true, "an unlisted action is an invalid no-op");
  r = await c.call({ type: "step", data: { action: item } });
  r = await c.call({ type: "step", data: { action: "click[buy now]" } });
  assert.equal(r.data.done, true);
  assert.equal(r.data.observation.terminated, true);
  assert.ok(r.data.reward > 0 && r.data.reward <= 1);
  const state = await c.call({ type: "state" });
  assert.deepEqual(Object.keys(state.data), ["episode_id", "step_count", "task_id", "total_reward", "done"]);
  assert.equal(state.data.step_count, 4);
  assert.equal(state.data.done, true);
  assert.equal(state.data.total_reward, r.data.reward);

  const afterDone = await c.call({ type: "step", data: { action: "click[buy now]" } });
  assert.equal(afterDone.data.code, "SESSION_ERROR");
  assert.match(afterDone.data.message, /episode ended after 4 steps: reset/);
  r = await c.call({ type: "reset", data: { task_index: 1 } });
  assert.equal(r.data.observation.task_id, "webshop:1");

  c.send({ type: "close" });
  assert.deepEqual(await c.closed, { code: 1000, reason: "closed by the client" });
  await until(() => shop.manager.size === 0, "the session is closed");
  assert.equal((await (await get(shop, "/health")).json()).sessions, 0);
});

test("each error code: INVALID_JSON, UNKNOWN_TYPE, VALIDATION_ERROR; the connection stays open", { timeout: 20_000 }, async () => {
  const c = await TestClient.open(shop.ws);
  const invalid = await c.call("{not json");
  assert.equal(invalid.data.code, "INVALID_JSON");
  assert.match(invalid.data.message, /^Invalid JSON: /);
  assert.deepEqual(await c.call({ type: "jump" }), { type: "error", data: { message: "Unknown message type: jump", code: "UNKNOWN_TYPE" } });
  assert.deepEqual(await c.call({ data: {} }), { type: "error", data: { message: "Unknown message type: ", code: "UNKNOWN_TYPE" } });
  assert.equal((await c.call({ type: 5 })).data.message, "Unknown message type: 5");

  const cases: [unknown, (string | number)[], string][] = [
    [{ type: "state", data: {} }, ["data"], "extra_forbidden"], // upstream's message models forbid extra keys
    [{ type: "step" }, ["data"], "missing"],
    [{ type: "step", data: "search[x]" }, ["data"], "dict_type"],
    [{ type: "step", data: { act: "search[x]" } }, ["act"], "extra_forbidden"],
    [{ type: "step", data: { action: 3 } }, ["action"], "string_type"],
    [{ type: "reset", data: { seed: 1.5 } }, ["seed"], "int_type"],
    [{ type: "reset", data: { task_index: -1 } }, ["task_index"], "greater_than_equal"],
    [[1, 2], [], "model_type"],
  ];
  for (const [message, loc, type] of cases) {
    const r = await c.call(message);
    assert.equal(r.type, "error", JSON.stringify(message));
    assert.equal(r.data.code, "VALIDATION_ERROR", JSON.stringify(message));
    assert.equal(r.data.message, "Invalid message");
    assert.ok(
      r.data.errors.some((e: { loc: unknown; type: string }) => JSON.stringify(e.loc) === JSON.stringify(loc) && e.type === type),
      `${JSON.stringify(message)}: ${JSON.stringify(r.data.errors)}`,
    );
  }
  // A message nested 10,000 deep: an error frame, not a dropped connection (issue 34, item 18).
  const deep = await c.call(`{"type":"step","data":{"action":${"[".repeat(10_000)}${"]".repeat(10_000)}}}`);
  assert.deepEqual([deep.type, deep.data.code, deep.data.message], ["error", "VALIDATION_ERROR", "Invalid message: nested deeper than 32 levels"]);
  const outOfRange = await c.call({ type: "reset", data: { task_index: 500 } });
  assert.equal(outOfRange.data.code, "VALIDATION_ERROR");
  assert.match(outOfRange.data.message, /task index 500 is out of range: webshop split test has tasks 0\.\.499/);
  // Still usable.
  assert.equal((await c.call({ type: "reset", data: {} })).type, "observation");
  await c.close();
});

test("replies keep message order: steps sent back to back, with a bad message between, are answered in order", { timeout: 20_000 }, async () => {
  const c = await TestClient.open(shop.ws);
  await c.call({ type: "reset", data: { task_index: 0 } });
  c.send({ type: "step", data: { action: "search[pillow]" } });
  c.send("nope");
  c.send({ type: "step", data: { action: "click[next >]" } });
  c.send({ type: "state" });
  const replies = [await c.next(), await c.next(), await c.next(), await c.next()];
  assert.deepEqual(
    replies.map((r) => r.type),
    ["observation", "error", "observation", "state"],
  );
  assert.equal(replies[0].data.observation.step, 1);
  assert.match(replies[0].data.observation.text, /^page: results/);
  assert.equal(replies[1].data.code, "INVALID_JSON");
  assert.equal(replies[2].data.observation.step, 2);
  assert.match(replies[2].data.observation.text, /Page 2/);
  assert.equal(replies[3].data.step_count, 2);
  await c.close();
});

test("GenericEnvClient conformance: the exact messages OpenEnv's client sends, and the exact reply shapes it reads", { timeout: 20_000 }, async () => {
  // EnvClient: connect to <base>/ws, send nothing until reset; reset(**kw) → {"type":"reset","data":kw};
  // step(action) → {"type":"step","data":action} (a pydantic action dumps metadata: {}); state() → {"type":"state"};
  // close() → {"type":"close"} then a normal close. Errors are raised from data.message and data.code.
  const c = await TestClient.open(shop.ws);
  const reset = await c.call({ type: "reset", data: {} });
  assert.deepEqual(Object.keys(reset), ["type", "data"]);
  assert.equal(reset.type, "observation");
  assert.deepEqual(Object.keys(reset.data), ["observation", "reward", "done"]);
  assert.deepEqual(Object.keys(reset.data.observation), OBSERVATION_KEYS);
  assert.equal(reset.data.reward, null);
  assert.equal(reset.data.done, false);

  const seeded = await c.call({ type: "reset", data: { seed: 1, episode_id: "ep-1" } });
  const again = await c.call({ type: "reset", data: { seed: 1, episode_id: "ep-1" } });
  assert.deepEqual(again, seeded, "a seed gives the same episode");
  const step = await c.call({ type: "step", data: { action: "search[pillow]", metadata: {} } });
  assert.deepEqual(Object.keys(step.data), ["observation", "reward", "done"]);
  assert.deepEqual(Object.keys(step.data.observation), OBSERVATION_KEYS);
  assert.equal(typeof step.data.reward, "number");
  const state = await c.call({ type: "state" });
  assert.deepEqual(state, {
    type: "state",
    data: { episode_id: "ep-1", step_count: 1, task_id: seeded.data.observation.task_id, total_reward: 0, done: false },
  });
  const error = await c.call({ type: "step", data: { move: "x" } });
  assert.equal(error.type, "error");
  assert.equal(typeof error.data.message, "string");
  assert.equal(error.data.code, "VALIDATION_ERROR");
  c.send({ type: "close" });
  assert.equal((await c.closed).code, 1000);
});

test("a token guards every route but /health (401 JSON), and WS upgrades (Bearer, or Basic as a ws://user:token@ URL sends it)", {
  timeout: 20_000,
}, async () => {
  const s = await startTestServer({ app: { token: "s3cret" } });
  try {
    assert.equal((await get(s, "/health")).status, 200);
    for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: "s3cret" }] as Record<string, string>[]) {
      const r = await get(s, "/metadata", headers);
      assert.equal(r.status, 401);
      assert.equal((await r.json()).code, "UNAUTHORIZED");
    }
    assert.equal((await post(s, "/reset", {})).status, 401);
    assert.equal((await get(s, "/metadata", { authorization: "Bearer s3cret" })).status, 200);

    await assert.rejects(TestClient.open(s.ws), (e: { status: number; body: { code: string } }) => e.status === 401 && e.body.code === "UNAUTHORIZED");
    assert.equal(s.manager.size, 0, "a refused upgrade opens no session");
    const bearer = await TestClient.open(s.ws, { headers: { authorization: "Bearer s3cret" } });
    assert.equal((await bearer.call({ type: "reset", data: {} })).type, "observation");
    await bearer.close();
    const basic = await TestClient.open(s.ws.replace("ws://", "ws://trainer:s3cret@"));
    assert.equal((await basic.call({ type: "state" })).type, "state");
    await basic.close();
  } finally {
    await s.close();
  }
});

test("capacity: past --max-sessions a connection gets one CAPACITY_REACHED frame and a normal close (as upstream); HTTP /reset gets 503", {
  timeout: 20_000,
}, async () => {
  const s = await startTestServer({ sessions: { maxSessions: 1 } });
  try {
    const first = await TestClient.open(s.ws);
    const second = await TestClient.open(s.ws);
    const refused = await second.next();
    assert.equal(refused.type, "error");
    assert.equal(refused.data.code, "CAPACITY_REACHED");
    assert.equal(refused.data.active_sessions, 1);
    assert.equal(refused.data.max_sessions, 1);
    assert.match(refused.data.message, /--max-sessions/);
    assert.equal((await second.closed).code, 1000);
    const http = await post(s, "/reset", {});
    assert.equal(http.status, 503);
    assert.equal((await http.json()).code, "CAPACITY_REACHED");
    await first.close();
    await until(() => s.manager.size === 0, "the first session is closed");
    const third = await TestClient.open(s.ws);
    assert.equal((await third.call({ type: "reset", data: {} })).type, "observation");
    await third.close();
  } finally {
    await s.close();
  }
});

test("EXECUTION_ERROR when the env throws, FACTORY_ERROR when it cannot be built; other sessions are unaffected", { timeout: 20_000 }, async () => {
  class ExplodingChain extends ChainEnv {
    override async step(action: string) {
      if (action === "explode") throw new Error("the env blew up");
      return super.step(action);
    }
  }
  let built = 0;
  registerEnv("serve-test-exploding", { create: () => new ExplodingChain(), tasks: (e) => e.tasks(3) });
  registerEnv("serve-test-unbuildable", {
    create: () => {
      if (built++ > 0) throw new Error("out of licences");
      return new ChainEnv();
    },
    tasks: (e) => e.tasks(3),
  });
  const s = await startTestServer({ host: { env: "serve-test-exploding" } });
  const u = await startTestServer({ host: { env: "serve-test-unbuildable" } });
  try {
    const a = await TestClient.open(s.ws);
    const b = await TestClient.open(s.ws);
    await a.call({ type: "reset", data: {} });
    await b.call({ type: "reset", data: {} });
    const r = await a.call({ type: "step", data: { action: "explode" } });
    assert.deepEqual(r, { type: "error", data: { message: "step failed: the env blew up", code: "EXECUTION_ERROR" } });
    assert.equal((await b.call({ type: "step", data: { action: "click[right]" } })).data.observation.step, 1);
    assert.equal((await a.call({ type: "state" })).type, "state", "the connection stays open");
    await a.close();
    await b.close();

    const f = await TestClient.open(u.ws);
    const refused = await f.next();
    assert.equal(refused.data.code, "FACTORY_ERROR");
    assert.equal(refused.data.factory_name, "serve-test-unbuildable");
    assert.match(refused.data.message, /out of licences/);
    assert.equal((await f.closed).code, 1000);
    assert.equal(u.manager.size, 0);
  } finally {
    await s.close();
    await u.close();
    unregisterEnv("serve-test-exploding");
    unregisterEnv("serve-test-unbuildable");
  }
});

test("heartbeat: a half-open socket (no pongs) is cut and its session closed; a live one stays", { timeout: 20_000 }, async () => {
  const s = await startTestServer({ app: { heartbeat: 0.25 } });
  try {
    const live = await TestClient.open(s.ws);
    const silent = await TestClient.open(s.ws, { autoPong: false });
    await silent.call({ type: "reset", data: {} });
    assert.equal(s.manager.size, 2);
    assert.equal((await silent.closed).code, 1006, "cut, without a closing handshake");
    await until(() => s.manager.size === 1, "the half-open socket's session is closed");
    assert.equal((await live.call({ type: "reset", data: {} })).type, "observation", "the live socket answered its pings");
    assert.equal(s.manager.size, 1);
    await live.close();
  } finally {
    await s.close();
  }
});

test("heartbeat: a server stalled past a beat while a live socket's pong came in does not cut that socket", { timeout: 20_000 }, async () => {
  const s = await startTestServer({ app: { heartbeat: 0.25 } });
  try {
    const live = await TestClient.open(s.ws);
    // The process stalls (a long step, a collector's pause, a loaded machine) just after the socket
    // answered a ping, here in the client's own ping handler (its pong is sent before it): past the
    // next beat, which comes before the pong is read.
    live.ws.once("ping", () => {
      const until = performance.now() + 300;
      while (performance.now() < until);
    });
    // Two pings more (beats after the stalled one) on a socket still open.
    await new Promise<void>((resolve, reject) => {
      let pings = 0;
      live.ws.on("ping", () => ++pings === 3 && resolve());
      live.ws.once("close", (code) => reject(new Error(`the live socket was cut (${code})`)));
    });
    assert.equal((await live.call({ type: "reset", data: {} })).type, "observation");
    await live.close();
  } finally {
    await s.close();
  }
});

test("a session reaped while idle closes its socket, with the reason; a live socket's session outlasts --idle-timeout", { timeout: 20_000 }, async () => {
  const s = await startTestServer({ sessions: { idleTimeout: 60, connectedIdleTimeout: 300 } });
  try {
    const c = await TestClient.open(s.ws);
    await c.call({ type: "reset", data: {} });
    // A trainer keeps its sockets across optimizer steps: --idle-timeout is for sessions without one.
    assert.equal(await s.manager.reapIdle(Date.now() + 61_000), 0);
    assert.equal(s.manager.size, 1);
    assert.equal(await s.manager.reapIdle(Date.now() + 301_000), 1);
    assert.deepEqual(await c.closed, { code: 1000, reason: "idle for more than 300 s" });
    assert.equal(s.manager.size, 0);
    assert.equal(s.manager.stats.reaped, 1);
  } finally {
    await s.close();
  }
});

test("an oversized WS message closes that connection with 1009; the server goes on", { timeout: 20_000 }, async () => {
  const s = await startTestServer({ app: { bodyLimit: 4096 } });
  try {
    const c = await TestClient.open(s.ws);
    c.send({ type: "step", data: { action: `search[${"x".repeat(5000)}]` } });
    assert.equal((await c.closed).code, 1009);
    await until(() => s.manager.size === 0, "its session is closed");
    const d = await TestClient.open(s.ws);
    assert.equal((await d.call({ type: "reset", data: {} })).type, "observation");
    await d.close();
  } finally {
    await s.close();
  }
});

test("synthetic mode: sessions step the embedded experience model over a buffer; observations say whether a step was verified", {
  timeout: 20_000,
}, async () => {
  const db = await webshopSeedBuffer(40);

  const s = await startTestServer({ host: { env: "webshop", mode: "synthetic", buffer: db, split: "test" } });
  try {
    const meta = await (await get(s, "/metadata")).json();
    assert.equal(meta.dreamgym.mode, "synthetic");
    assert.equal(meta.dreamgym.observation, "abstract");
    assert.deepEqual(meta.dreamgym.experience, { spec: "default", model: "embedded-knn-v1", hybrid: false }, "which experience model answers");
    const c = await TestClient.open(s.ws);
    const r = await c.call({ type: "reset", data: { task_index: 0 } });
    assert.match(r.data.observation.text, /^page: search\ninstruction: /);
    const step = await c.call({ type: "step", data: { action: "search[pillow]" } });
    assert.equal(step.type, "observation", JSON.stringify(step));
    assert.equal(step.data.observation.verified, false);
    assert.equal(step.data.observation.step, 1);
    assert.match(step.data.observation.text, /^page: /);
    assert.equal(typeof step.data.reward, "number");
    await c.close();
  } finally {
    await s.close();
  }
  const after = ReplayBuffer.open(db, { readonly: true });
  assert.equal(after.count({ env: "webshop", source: "synthetic" }), 0, "serving does not record by default");
  after.close();
});

test("synthetic mode with --record and a buffer capacity: the buffer keeps that many recorded steps besides the seed, the oldest episodes going first", {
  timeout: 20_000,
}, async () => {
  const db = await webshopSeedBuffer(10);
  const before = ReplayBuffer.open(db, { readonly: true });
  const seed = before.count();
  before.close();
  const s = await startTestServer({ host: { env: "webshop", mode: "synthetic", buffer: db, split: "test", record: true, bufferCapacity: 5 } });
  let recorded = 0;
  try {
    const c = await TestClient.open(s.ws);
    for (let e = 0; e < 12; e++) {
      await c.call({ type: "reset", data: { task_index: e } });
      const step = await c.call({ type: "step", data: { action: "search[pillow]" } });
      assert.equal(step.type, "observation", JSON.stringify(step));
      recorded++;
    }
    await c.close();
  } finally {
    await s.close();
  }
  const after = ReplayBuffer.open(db, { readonly: true });
  const synthetic = after.count({ env: "webshop", source: "synthetic" });
  assert.ok(synthetic > 0 && synthetic <= 5, `${synthetic} of ${recorded} recorded steps kept`);
  assert.equal(after.count({ env: "webshop", source: "real" }), seed, "the seed stays");
  after.close();
});

test("graceful shutdown: open sockets get 1001, sessions close, the port is freed; a port in use is a one-line error", { timeout: 20_000 }, async () => {
  const s = await startTestServer();
  const c = await TestClient.open(s.ws);
  await c.call({ type: "reset", data: {} });
  await assert.rejects(
    startServer({ app: s.app, port: s.running.port, host: "127.0.0.1" }),
    (e: unknown) => e instanceof InvalidConfigError && /127\.0\.0\.1:\d+ is in use/.test(e.message),
  );
  await s.close();
  assert.deepEqual(await c.closed, { code: 1001, reason: "the server is shutting down" });
  assert.equal(s.manager.size, 0);
  await assert.rejects(fetch(`${s.url}/health`));
});

test("shutdown with a step in flight: the step's reply is sent before the socket closes (1001)", { timeout: 20_000 }, async () => {
  // The env's step waits until the test lets it go, so the shutdown surely starts while it runs.
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let entered!: () => void;
  const stepping = new Promise<void>((r) => (entered = r));
  class GatedChain extends ChainEnv {
    override async step(a: string) {
      entered();
      await gate;
      return super.step(a);
    }
  }
  registerEnv("serve-test-gated", { create: () => new GatedChain(), tasks: (e) => e.tasks(3) });
  const s = await startTestServer({ host: { env: "serve-test-gated" } });
  try {
    const c = await TestClient.open(s.ws);
    await c.call({ type: "reset", data: {} });
    c.send({ type: "step", data: { action: "click[right]" } });
    await stepping;
    const closing = s.close();
    release();
    const reply = await c.next();
    assert.equal(reply.type, "observation");
    assert.equal(reply.data.observation.step, 1);
    assert.deepEqual(await c.closed, { code: 1001, reason: "the server is shutting down" });
    await closing;
    assert.equal(s.manager.size, 0);
  } finally {
    unregisterEnv("serve-test-gated");
  }
});

test("OpenEnv's task routes (PR #726): the env, its split, its tasks; a reset picks one by split and index", { timeout: 20_000 }, async () => {
  assert.deepEqual(await (await get(shop, "/list_environments")).json(), ["webshop"]);
  assert.deepEqual(await (await get(shop, "/webshop/splits")).json(), [{ name: "test", type: "test" }]);
  const all = await (await post(shop, "/webshop/tasks", { split: "test" })).json();
  assert.equal(all.env_name, "webshop");
  assert.equal(all.tasks.length, 500);
  assert.deepEqual(await (await post(shop, "/webshop/num_tasks", { split: "test" })).json(), { num_tasks: 500 });
  assert.deepEqual((await (await post(shop, "/webshop/task", { split: "test", index: 12 })).json()).task, all.tasks[12]);
  assert.deepEqual((await (await post(shop, "/webshop/task", { split: "test", index: -1 })).json()).task, all.tasks[499], "a Python index");
  const range = await (await post(shop, "/webshop/task_range", { split: "test", start: 3, stop: 6 })).json();
  assert.deepEqual(range.tasks, all.tasks.slice(3, 6));
  assert.equal((await (await post(shop, "/webshop/task_range", { split: "test", start: -2 })).json()).tasks.length, 2);
  // Refusals: another split, a bad index, an extra key, another env.
  const other = await post(shop, "/webshop/tasks", { split: "train" });
  assert.equal(other.status, 400);
  assert.match((await other.json()).message, /split 'train' is not served here: this server serves webshop split test/);
  assert.equal((await post(shop, "/webshop/task", { split: "test", index: 500 })).status, 400);
  assert.equal((await post(shop, "/webshop/task", { split: "test", index: 1, seed: 3 })).status, 422);
  assert.equal((await post(shop, "/alfworld/tasks", { split: "test" })).status, 404);
  // The index a client read from the routes picks the task of its reset.
  const c = await TestClient.open(shop.ws);
  const r = await c.call({ type: "reset", data: { split: "test", index: 12 } });
  assert.equal(r.data.observation.task_id, all.tasks[12].id);
  const wrong = await c.call({ type: "reset", data: { split: "train", index: 12 } });
  assert.equal(wrong.type, "error");
  assert.match(wrong.data.message, /split train is not served here/);
  await c.close();
});
