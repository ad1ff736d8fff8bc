// Shared by the server tests: a server on a loopback port and a WebSocket client that
// queues what it receives. Not exported from the package.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocket, type ClientOptions } from "ws";
import { ReplayBuffer } from "../src/buffer/index.ts";
import { runEpisode } from "../src/envs/index.ts";
import { OraclePolicy, WebShopEnv, webshopAbstraction } from "../src/envs/webshop/index.ts";
import { abstractTrajectory } from "../src/experience/index.ts";
import { createServeApp, startServer, type RunningServer, type ServeApp, type ServeAppOptions } from "../src/server/app.ts";
import { EnvHost, type EnvHostOptions } from "../src/server/env-host.ts";
import { SessionManager, type SessionManagerOptions } from "../src/server/sessions.ts";

export interface TestServer {
  url: string;
  ws: string;
  app: ServeApp;
  manager: SessionManager;
  running: RunningServer;
  close(): Promise<void>;
}

/** A real server on 127.0.0.1 and a free port. */
export async function startTestServer(
  o: { host?: EnvHostOptions; sessions?: SessionManagerOptions; app?: Omit<ServeAppOptions, "manager"> } = {},
): Promise<TestServer> {
  const host = await EnvHost.open(o.host ?? { env: "webshop" });
  const manager = new SessionManager(host, o.sessions);
  const app = createServeApp({ manager, ...o.app });
  const running = await startServer({ app, port: 0, host: "127.0.0.1" });
  return { url: running.url, ws: `${running.url.replace("http", "ws")}/ws`, app, manager, running, close: () => running.close() };
}

/** A WebSocket client that keeps every message it receives, in order. */
export class TestClient {
  private readonly received: unknown[] = [];
  private readonly waiters: ((m: unknown) => void)[] = [];
  /** Resolves with the close code and reason once the connection has closed. */
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => {
      const m = JSON.parse(data.toString()) as unknown;
      const w = this.waiters.shift();
      if (w) w(m);
      else this.received.push(m);
    });
    this.closed = new Promise((resolve) => ws.on("close", (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  /** Connects; rejects with the HTTP status and body when the upgrade is refused. */
  static open(url: string, opts: ClientOptions = {}): Promise<TestClient> {
    const ws = new WebSocket(url, opts);
    const client = new TestClient(ws);
    return new Promise((resolve, reject) => {
      ws.once("open", () => resolve(client));
      ws.once("unexpected-response", (_req, res) => {
        let body = "";
        res.on("data", (d: Buffer) => (body += d));
        res.on("end", () => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode, body: JSON.parse(body) })));
      });
      ws.once("error", reject);
    });
  }

  send(message: unknown): void {
    this.ws.send(typeof message === "string" ? message : JSON.stringify(message));
  }

  /** The next message received (already, or when it comes). */
  next(): Promise<any> {
    if (this.received.length) return Promise.resolve(this.received.shift());
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  call(message: unknown): Promise<any> {
    this.send(message);
    return this.next();
  }

  async close(): Promise<void> {
    if (this.ws.readyState !== WebSocket.CLOSED) this.ws.close();
    await this.closed;
  }
}

/** Waits (turn by turn of the event loop, bounded) until `cond` holds: for effects of a socket closing on the other side. */
export async function until(cond: () => boolean, what: string, turns = 20_000): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (cond()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`gave up waiting until ${what}`);
}

/** A WebShop seed buffer: the oracle's episodes of the first `goals` train goals, as abstract states. */
export async function webshopSeedBuffer(goals: number): Promise<string> {
  const real = new WebShopEnv({ split: "train" });
  const abs = webshopAbstraction(real.catalogue);
  const db = join(mkdtempSync(join(tmpdir(), "dreamgym-seed-")), "seed.db");
  const buffer = ReplayBuffer.open(db);
  const oracle = new OraclePolicy(real);
  const trajectories = [];
  for (const [i, task] of real.tasks().slice(0, goals).entries())
    trajectories.push(abstractTrajectory(await runEpisode(real, oracle, { envName: "webshop", task, seed: i }), abs));
  await buffer.appendTrajectories(trajectories, { seed: true });
  buffer.close();
  await real.close();
  return db;
}
