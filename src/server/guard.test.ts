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
    const req = request({ host: u.hostname, port: u.port, method: o.method ?? "GET", path: o.path, headers: { ...(o.body !== undefined ? { "content-length": String(Buffer.byteLength(o.body)) } : {}), ...o.headers } }, (res) => {
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
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
    const csrf = await send(server.url, { method: "POST", path: "/agentgym/close", headers: { origin: "http://evil.example", "content-type": "text/plain" }, body: '{"env_idx":1}' });
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
