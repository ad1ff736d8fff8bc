import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, describe, test } from "node:test";
import { WebSocketServer } from "ws";
import { abstractEnv, ResetNeededError, type Env, type Task } from "../core/index.ts";
import { createEnv, createPolicy, envTasks, findEnv, runEpisode, syntheticSupport } from "../envs/index.ts";
import { OraclePolicy, RulePolicy, webshopAbstraction } from "../envs/webshop/index.ts";
import { createServeApp, EnvHost, SessionManager, startServer, type RunningServer } from "../server/index.ts";
import { httpBase, RemoteEnv, RemoteEnvError, remoteEnvInfo, useRemoteEnv, wsEndpoint } from "./index.ts";

/** A real dreamgym server on loopback, serving WebShop's test split (abstract observations). */
async function serve(o: { maxSessions?: number; token?: string; split?: string } = {}): Promise<RunningServer & { manager: SessionManager }> {
  const host = await EnvHost.open({ env: "webshop", split: o.split ?? "test" });
  const manager = new SessionManager(host, { maxSessions: o.maxSessions ?? 8, idleTimeout: 0, connectedIdleTimeout: 300 });
  const server = await startServer({ app: createServeApp({ manager, token: o.token, heartbeat: 0 }), port: 0, host: "127.0.0.1" });
  return Object.assign(server, { manager });
}

/** A port nothing listens on (taken from the OS, then given back). */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** A bare WebSocket endpoint for a test to script (`ws` options beside its port), and the observation it answers with. */
async function bareServer(options: { perMessageDeflate?: { threshold: number } } = {}) {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1", ...options });
  await new Promise((resolve) => wss.once("listening", resolve));
  const port = (wss.address() as { port: number }).port;
  const obs = {
    type: "observation",
    data: { observation: { text: "hello", available_actions: ["go"], task_id: "t", instruction: "" }, reward: null, done: false },
  };
  return { wss, port, obs };
}

const rejectsRemote = (p: Promise<unknown>, pattern: RegExp) =>
  assert.rejects(p, (e: unknown) => e instanceof RemoteEnvError && pattern.test(e.message) && !e.message.includes("\n"));

test("URLs: http → ws and back, as OpenEnv's client makes them", () => {
  assert.equal(wsEndpoint("http://h:8000"), "ws://h:8000/ws");
  assert.equal(wsEndpoint("https://h/"), "wss://h/ws");
  assert.equal(wsEndpoint("ws://h:1/ws"), "ws://h:1/ws");
  assert.equal(httpBase("wss://h:1/"), "https://h:1");
  assert.throws(() => wsEndpoint("webshop"), RemoteEnvError);
});

describe("RemoteEnv against a real server", () => {
  let server: RunningServer & { manager: SessionManager };
  let tasks: Task[];
  before(async () => {
    server = await serve();
    tasks = (await remoteEnvInfo(server.url)).tasks;
  });
  after(() => server.close());

  test("remoteEnvInfo reads the dreamgym metadata and every task (paged)", async () => {
    const info = await remoteEnvInfo(server.url.replace("http", "ws"));
    assert.equal(info.env, "webshop");
    assert.equal(info.split, "test");
    assert.equal(info.mode, "real");
    assert.equal(info.observation, "abstract");
    assert.deepEqual(info.rewards, { min: 0, max: 1, dense: false });
    const local = createEnv("webshop", { split: "test" });
    assert.deepEqual(info.tasks, JSON.parse(JSON.stringify(local.tasks())));
  });

  test("equals the local env step for step (abstract observations, actions, rewards, ends)", async () => {
    const local = createEnv("webshop", { split: "test" });
    const seen = abstractEnv(local, webshopAbstraction(local.catalogue));
    const remote = new RemoteEnv(server.url, { tasks });
    try {
      for (const task of tasks.slice(0, 3)) {
        const oracle = new OraclePolicy(local);
        const [a, b] = [await seen.reset({ task, seed: 1 }), await remote.reset({ task, seed: 1 })];
        assert.equal(b.observation, a.observation);
        assert.deepEqual(b.info.task, a.info.task);
        oracle.reset();
        let [observation, info] = [a.observation, a.info];
        for (let steps = 0; ; steps++) {
          assert.deepEqual(remote.availableActions(), seen.availableActions());
          // An invalid action on the way: a no-op step on both sides.
          const action =
            steps === 1 ? "click[no such button]" : oracle.choose({ task, observation, actions: seen.availableActions(), history: [], trace: [], info });
          const [x, y] = [await seen.step(action), await remote.step(action)];
          assert.equal(y.observation, x.observation, `step ${steps} ${action}`);
          assert.equal(y.reward, x.reward);
          assert.equal(y.terminated, x.terminated);
          assert.equal(y.truncated, x.truncated);
          assert.equal(y.info.invalid === true, x.info.invalid === true);
          [observation, info] = [x.observation, x.info];
          if (x.terminated || x.truncated) break;
        }
        await assert.rejects(remote.step("click[buy now]"), ResetNeededError);
      }
      // A seed without a task samples the same task on both sides.
      const [a, b] = [await seen.reset({ seed: 42 }), await remote.reset({ seed: 42 })];
      assert.equal(b.observation, a.observation);
      assert.equal((b.info.task as Task).id, (a.info.task as Task).id);
    } finally {
      await remote.close();
      await seen.close();
    }
  });

  test("an episode loop over it gives the local env's trajectory (rule policy)", async () => {
    const local = createEnv("webshop", { split: "test" });
    const seen = abstractEnv(local, webshopAbstraction(local.catalogue));
    const remote = await RemoteEnv.connect(server.url, { tasks });
    try {
      for (const task of tasks.slice(5, 8)) {
        const strip = (t: { created_at?: string }) => ({ ...t, created_at: "" });
        const x = await runEpisode(seen, new RulePolicy(), { envName: "webshop", task, seed: 3 });
        const y = await runEpisode(remote, new RulePolicy(), { envName: "webshop", task, seed: 3 });
        // The server does not carry the env's own info (page kinds, purchase details): compare the rest.
        const core = (t: typeof x) => ({ ...strip(t), steps: t.steps.map(({ info, ...s }) => ({ ...s, invalid: info?.invalid === true })) });
        assert.deepEqual(core(y), core(x));
      }
    } finally {
      await remote.close();
      await seen.close();
    }
  });

  test("an error reply is a RemoteEnvError with the server's code; the connection stays usable", async () => {
    const remote = new RemoteEnv(server.url);
    try {
      await assert.rejects(
        remote.reset({ task: { id: "webshop:nope", instruction: "" } }),
        (e: unknown) =>
          e instanceof RemoteEnvError && e.serverCode === "VALIDATION_ERROR" && e.message.includes(wsEndpoint(server.url)) && /unknown task id/.test(e.message),
      );
      await assert.rejects(remote.step("click[x]"), ResetNeededError);
      const r = await remote.reset({ task: tasks[0] });
      assert.match(r.observation, /^page: search/);
    } finally {
      await remote.close();
    }
    assert.equal(server.manager.size, 0); // close() freed the session
  });

  test("a session the server dropped: the step fails clearly, the next reset reconnects", async () => {
    const remote = new RemoteEnv(server.url, { tasks });
    try {
      await remote.reset({ task: tasks[0] });
      await server.manager.reapIdle(Date.now() + 301_000); // as the idle reaper does (--ws-idle-timeout 300)
      await rejectsRemote(remote.step("search[shoes]"), /step failed: .*idle|episode is lost|closed the connection/);
      const r = await remote.reset({ task: tasks[1] });
      assert.match(r.observation, /^page: search/);
      assert.equal((await remote.step("search[shoes]")).info.invalid, undefined);
    } finally {
      await remote.close();
    }
  });

  test("past the server's capacity: CAPACITY_REACHED, not a hang", async () => {
    const small = await serve({ maxSessions: 1 });
    const [a, b] = [new RemoteEnv(small.url), new RemoteEnv(small.url)];
    try {
      await a.reset({ seed: 0 });
      await assert.rejects(b.reset({ seed: 0 }), (e: unknown) => e instanceof RemoteEnvError && /CAPACITY_REACHED|capacity/.test(e.message));
    } finally {
      await a.close();
      await b.close();
      await small.close();
    }
  });
});

describe("remoteEnvInfo over Node's HTTP client", () => {
  /** A bare HTTP server on `port` serving a dreamgym block and one task, calling `after` once each answer is sent; null where the port is taken. */
  async function infoServer(port: number, after: () => void = () => {}): Promise<import("node:http").Server | null> {
    const { createServer } = await import("node:http");
    const server = createServer((req, res) => {
      const body = req.url?.startsWith("/metadata")
        ? { description: "d", dreamgym: { env: "webshop", split: "test" } }
        : { total: 1, tasks: [{ id: "t", instruction: "buy" }] };
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(body));
      after();
    });
    return new Promise((resolve) => {
      server.once("error", () => resolve(null));
      server.listen(port, "127.0.0.1", () => resolve(server));
    });
  }
  const urlOf = (s: import("node:http").Server) => `ws://127.0.0.1:${(s.address() as { port: number }).port}`;
  const close = async (s: import("node:http").Server) => {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  };

  test("a server on a port fetch refuses (6000, 6665–6669, 10080) is read", async (t) => {
    let server: import("node:http").Server | null = null;
    for (const port of [6000, 6665, 6666, 6667, 6668, 6669, 10080]) if ((server = await infoServer(port))) break;
    if (!server) return t.skip("every port fetch refuses is taken here");
    try {
      const info = await remoteEnvInfo(urlOf(server));
      assert.deepEqual([info.env, info.split, info.tasks.map((x) => x.id)], ["webshop", "test", ["t"]]);
    } finally {
      await close(server);
    }
  });

  test("an answer that came in time is read when the process stalls past the timeout before reading it", async () => {
    // Each answer sent, the process stalls (a collector's pause, a loaded machine) past the 0.6 s timeout.
    const server = (await infoServer(0, () => {
      const until = performance.now() + 800;
      while (performance.now() < until);
    }))!;
    try {
      assert.equal((await remoteEnvInfo(urlOf(server), { timeout: 0.6 })).tasks.length, 1);
    } finally {
      await close(server);
    }
  });

  test("a redirect whose short body never comes leaves no connection behind (the process could not exit)", async () => {
    const { createServer: createHttpServer } = await import("node:http");
    let held: Promise<unknown> | undefined;
    const server = createHttpServer((req, res) => {
      if (req.url === "/metadata") {
        // A body of 10 bytes declared, 3 sent: the client reads it off, for good unless it lets it go.
        held = new Promise((resolve) => req.socket.once("close", resolve));
        res.writeHead(302, { location: "/metadata/", "content-length": "10" });
        return void res.write("abc");
      }
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify(
          req.url?.startsWith("/metadata") ? { dreamgym: { env: "webshop", split: "test" } } : { total: 1, tasks: [{ id: "t", instruction: "buy" }] },
        ),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      assert.equal((await remoteEnvInfo(urlOf(server))).env, "webshop");
      const closed = await Promise.race([held, new Promise((resolve) => setTimeout(resolve, 2000, "still open"))]);
      assert.notEqual(closed, "still open", "the redirect's connection is still open after the answer");
    } finally {
      await close(server);
    }
  });
});

describe("failures are one-line errors that name the URL, never a hang", () => {
  test("nothing listens there", async () => {
    const url = `ws://127.0.0.1:${await deadPort()}`;
    await rejectsRemote(RemoteEnv.connect(url), new RegExp(`${url}/ws: cannot connect: connection refused`));
    const lazy = new RemoteEnv(url);
    await rejectsRemote(lazy.reset(), /connection refused/);
    await lazy.close();
    await rejectsRemote(remoteEnvInfo(url), new RegExp(`env server ${url.replace("ws", "http")}: GET /metadata: connection refused`));
  });

  test("the server shuts down mid-episode", async () => {
    const server = await serve();
    const remote = new RemoteEnv(server.url);
    try {
      await remote.reset({ seed: 1 });
      await remote.step("search[red shoes]");
      await server.close();
      await rejectsRemote(remote.step("click[next >]"), /shutting down|closed the connection|episode is lost/);
      await rejectsRemote(remote.reset(), /cannot connect: connection refused/);
    } finally {
      await remote.close();
    }
  });

  test("a socket cut while a step waits, and a server that never answers (the timeout); a reply read late, the process stalled, is taken", async () => {
    // A bare WebSocket endpoint standing in for a broken server: it answers reset, then misbehaves.
    const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    await new Promise((resolve) => wss.once("listening", resolve));
    const port = (wss.address() as { port: number }).port;
    const obs = {
      type: "observation",
      data: {
        observation: { text: "hello", available_actions: ["go"], task_id: "t", instruction: "", terminated: false, truncated: false },
        reward: null,
        done: false,
      },
    };
    wss.on("connection", (ws) =>
      ws.on("message", (raw) => {
        const m = JSON.parse(raw.toString()) as { type: string; data?: { action?: string } };
        if (m.type === "reset") ws.send(JSON.stringify(obs));
        else if (m.data?.action === "cut") ws.terminate();
        else if (m.data?.action === "stall") {
          // The reply goes out at once, then the process stalls (a long step, a collector's pause, a
          // loaded machine) past the client's timeout, before the client has read it.
          ws.send(JSON.stringify(obs));
          const until = performance.now() + 300;
          while (performance.now() < until);
        }
        // "silent": no reply at all
      }),
    );
    const remote = new RemoteEnv(`ws://127.0.0.1:${port}`, { timeout: 0.2 });
    try {
      await remote.reset();
      assert.deepEqual(remote.availableActions(), ["go"]);
      assert.equal((await remote.step("stall")).observation, "hello", "a reply that came in time is taken, however late it is read");
      await rejectsRemote(remote.step("cut"), /step failed: the server closed the connection \(code 1006/);
      await remote.reset(); // reconnects
      await rejectsRemote(remote.step("silent"), /step failed: no reply to step within 0.2 s/);
      await rejectsRemote(remote.step("go"), /episode is lost/);
    } finally {
      await remote.close();
      await new Promise((resolve) => wss.close(resolve));
    }
  });

  test("a compressed reply read late, the process stalled, is taken (permessage-deflate, as a Python OpenEnv server offers it)", async () => {
    // A server that compresses its frames (uvicorn's default): the client inflates a reply on the
    // thread pool, so it is a message only after a later turn of the loop than the one that read it.
    const { wss, port, obs } = await bareServer({ perMessageDeflate: { threshold: 0 } });
    wss.on("connection", (ws) =>
      ws.on("message", (raw) => {
        ws.send(JSON.stringify(obs));
        if ((JSON.parse(raw.toString()) as { type: string }).type === "reset") return;
        // The reply goes out at once, then the process stalls past the client's timeout.
        const until = performance.now() + 300;
        while (performance.now() < until);
      }),
    );
    const remote = new RemoteEnv(`ws://127.0.0.1:${port}`, { timeout: 0.2 });
    try {
      await remote.reset();
      assert.equal((await remote.step("go")).observation, "hello", "a reply that came in time is taken, however late it is read");
    } finally {
      await remote.close();
      await new Promise((resolve) => wss.close(resolve));
    }
  });

  test("a connection accepted in time is taken when the process stalls past the timeout before reading the acceptance", async () => {
    const { wss, port, obs } = await bareServer();
    wss.on("connection", (ws) => {
      ws.on("message", () => ws.send(JSON.stringify(obs)));
      // The upgrade's answer has gone out; then the process stalls past the client's timeout.
      const until = performance.now() + 300;
      while (performance.now() < until);
    });
    const remote = new RemoteEnv(`ws://127.0.0.1:${port}`, { timeout: 0.2 });
    try {
      assert.equal((await remote.reset()).observation, "hello", "a connection accepted in time is taken, however late it is read");
    } finally {
      await remote.close();
      await new Promise((resolve) => wss.close(resolve));
    }
    // One never accepted still times out.
    const held: import("node:net").Socket[] = [];
    const mute = createServer((socket) => void held.push(socket));
    await new Promise<void>((resolve) => mute.listen(0, "127.0.0.1", resolve));
    try {
      const never = new RemoteEnv(`ws://127.0.0.1:${(mute.address() as { port: number }).port}`, { timeout: 0.2 });
      await rejectsRemote(never.reset(), /cannot connect: Opening handshake has timed out/);
      await never.close();
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => mute.close(resolve));
    }
  });

  test("a token: without it 401, with it the env works", async () => {
    const server = await serve({ token: "s3cret" });
    try {
      // The hint names what a client has (DREAMGYM_TOKEN), not the server's --token-file.
      const refused = /401 unauthorized: the server refused the token \(set DREAMGYM_TOKEN to the server's token\)$/;
      await rejectsRemote(remoteEnvInfo(server.url, { token: "wrong" }), refused);
      await rejectsRemote(RemoteEnv.connect(server.url, { token: "wrong" }), refused);
      assert.equal((await remoteEnvInfo(server.url, { token: "s3cret" })).env, "webshop");
      const remote = await RemoteEnv.connect(server.url, { token: "s3cret" });
      assert.match((await remote.reset({ seed: 0 })).observation, /^page: search/);
      await remote.close();
    } finally {
      await server.close();
    }
  });
});

test("useRemoteEnv: the server's env under its own name (its split, tasks, policies, the local synthetic side), until released", async () => {
  const server = await serve();
  try {
    const remote = await useRemoteEnv(server.url);
    let env: Env | undefined;
    try {
      assert.equal(remote.name, "webshop");
      assert.equal(remote.synthetic, true);
      const entry = findEnv("webshop")!;
      assert.deepEqual(entry.splits, { train: "test", eval: "test" });
      assert.deepEqual(entry.policies, ["rule", "random"]); // the oracle needs the real env's state
      assert.throws(() => createEnv("webshop", { split: "train" }), /serves webshop split test, not train: .*--split train/);
      assert.throws(() => createEnv("webshop", { split: "test", maxSteps: 5 }), /--max-steps 5/);
      env = createEnv("webshop", { split: "test" });
      assert.ok(env instanceof RemoteEnv);
      assert.equal(envTasks("webshop", env).length, remote.info.tasks.length);
      // The state abstraction is the local one, and abstract states pass through it unchanged.
      const support = syntheticSupport("webshop", env);
      const r = await env.reset({ seed: 0 });
      assert.equal(support.abstraction.abstract(r.observation), r.observation);
      const t = await runEpisode(env, createPolicy("webshop", "rule", env), { envName: "webshop", task: remote.info.tasks[0], seed: 0 });
      assert.equal(t.env, "webshop");
    } finally {
      await env?.close();
      await remote.release();
    }
    assert.equal(findEnv("webshop")!.builtin, true);
    assert.ok(!(createEnv("webshop", { split: "test" }) instanceof RemoteEnv));
  } finally {
    await server.close();
  }
});
