import { test } from "node:test";
import assert from "node:assert/strict";
import { request } from "node:http";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { createServeApp, startServer } from "./app.ts";
import { EnvHost } from "./env-host.ts";
import { SessionManager } from "./sessions.ts";
import { createViewApp } from "./view/view-app.ts";

/** One raw HTTP request (node:http lets a test set Host, as a rebound DNS name would). */
function send(url: string, o: { method?: string; path: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; text: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        method: o.method ?? "GET",
        path: o.path,
        headers: { ...(o.body !== undefined ? { "content-length": String(Buffer.byteLength(o.body)) } : {}), ...o.headers },
      },
      (res) => {
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", reject);
    req.end(o.body);
  });
}

/** Whether a WebSocket handshake with these headers is accepted. */
function handshake(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${url.replace("http", "ws")}/ws`, { headers });
    ws.on("open", () => {
      ws.close();
      resolve(101);
    });
    ws.on("unexpected-response", (_req, res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    ws.on("error", () => {});
  });
}

test("a loopback server refuses web pages: foreign Host (DNS rebinding), foreign Origin, non-JSON bodies; its own clients pass (issue 34, item 13)", async () => {
  const manager = new SessionManager(await EnvHost.open({ env: "webshop" }), { maxSessions: 4, idleTimeout: 300 });
  const server = await startServer({ app: createServeApp({ manager }), port: 0, host: "127.0.0.1" });
  try {
    const json = { "content-type": "application/json" };
    // A trainer as it is: no Origin, a loopback Host, JSON.
    assert.equal((await send(server.url, { method: "POST", path: "/reset", headers: json, body: "{}" })).status, 200);
    assert.equal((await send(server.url, { path: "/health", headers: { host: `localhost:${server.port}` } })).status, 200);
    // A page's simple POST (text/plain, no preflight), from another origin: refused before any route.
    const csrf = await send(server.url, {
      method: "POST",
      path: "/agentgym/close",
      headers: { origin: "http://evil.example", "content-type": "text/plain" },
      body: '{"env_idx":1}',
    });
    assert.equal(csrf.status, 403);
    assert.match(csrf.text, /web page at http:\/\/evil\.example is refused/);
    // The same body, typed text/plain without an Origin: not JSON, refused.
    assert.equal((await send(server.url, { method: "POST", path: "/reset", headers: { "content-type": "text/plain" }, body: "{}" })).status, 415);
    // A rebound DNS name pointing here: the Host is not loopback.
    const rebound = await send(server.url, { path: "/health", headers: { host: `attacker.example:${server.port}` } });
    assert.equal(rebound.status, 403);
    assert.match(rebound.text, /is not this loopback server's name/);
    // WebSockets: a page's handshake is refused; a client's is accepted.
    assert.equal(await handshake(server.url, { origin: "http://evil.example" }), 403);
    assert.equal(await handshake(server.url, { host: `attacker.example:${server.port}` }), 403);
    assert.equal(await handshake(server.url, {}), 101);
    assert.equal(await handshake(server.url, { origin: server.url }), 101, "the server's own origin");
  } finally {
    await server.close();
  }
  // The view: a rebound name cannot read runs.
  const view = await startServer({ app: createViewApp({ runs: mkdtempSync(join(tmpdir(), "dreamgym-guard-runs-")) }), port: 0, host: "127.0.0.1" });
  try {
    assert.equal((await send(view.url, { path: "/api/runs" })).status, 200);
    assert.equal((await send(view.url, { path: "/api/runs", headers: { host: `attacker.example:${view.port}` } })).status, 403);
  } finally {
    await view.close();
  }
});

/** Resolves once `cond` holds (checked every 10 ms): the server's counters move on its own schedule. */
const until = (cond: () => boolean) =>
  new Promise<void>((resolve) => {
    const timer = setInterval(() => cond() && (clearInterval(timer), resolve()), 10);
  });

test("a WebSocket client that sends and never reads is held: the server stops reading and answering it, its unsent replies stay bounded, and what it took in is dropped once the client goes (issue 34, item 12)", async () => {
  const { connect } = await import("node:net");
  const { MAX_UNSENT_BYTES } = await import("./openenv-socket.ts");
  const manager = new SessionManager(await EnvHost.open({ env: "webshop" }), { maxSessions: 4, idleTimeout: 300 });
  const app = createServeApp({ manager });
  const server = await startServer({ app, port: 0, host: "127.0.0.1" });
  const socket = connect(server.port, "127.0.0.1");
  const stats = app.sockets.stats;
  try {
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write(
      `GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    socket.pause(); // never reads: not the handshake's answer, not a reply
    // Masked text frames (as a client must send them), each a reset: its reply is a whole start page.
    const payload = Buffer.from(JSON.stringify({ type: "reset", data: {} }));
    const frame = Buffer.alloc(2 + 4 + payload.length);
    frame[0] = 0x81;
    frame[1] = 0x80 | payload.length;
    const mask = [1, 2, 3, 4];
    frame.set(mask, 2);
    for (let i = 0; i < payload.length; i++) frame[6 + i] = payload[i] ^ mask[i % 4];
    const frames = 20_000;
    socket.write(Buffer.concat(Array.from({ length: frames }, () => frame)));
    // The server answers until the replies waiting to go out reach the bound, then holds the rest:
    // it stops reading, and the messages it had already parsed (ws parses a whole chunk, over a
    // thousand of these) wait for their turn instead of piling more replies up.
    await until(() => stats.unsentBytes >= MAX_UNSENT_BYTES && (stats.stalled === 1 || stats.answered === stats.received));
    assert.equal(stats.stalled, 1, `${stats.answered} of ${stats.received} messages taken in are answered: answering did not stop at the bound`);
    const answered = stats.answered;
    assert.ok(stats.received < frames, `${stats.received} of ${frames} messages read: reading stopped`);
    assert.ok(stats.received > answered, `${stats.received - answered} messages held unanswered`);
    // Past the bound by the one reply that crossed it (a start page is under 1 KB).
    assert.ok(stats.unsentBytes < MAX_UNSENT_BYTES + 64 * 1024, `${stats.unsentBytes} bytes unsent`);
    // The client goes: its session closes, and the messages held are dropped, not computed for no one.
    socket.destroy();
    await until(() => manager.size === 0 && stats.answered + stats.dropped === stats.received);
    assert.equal(stats.answered, answered, "no message answered after the client went");
    assert.ok(stats.dropped > 0);
    assert.equal(stats.unsentBytes, 0);
    assert.equal(stats.stalled, 0);
  } finally {
    socket.destroy();
    await server.close();
  }
});
