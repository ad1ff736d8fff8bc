// The CLI against a real env server on loopback (in this process; the CLI runs in a child process).
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { abstractEnv, type Trajectory } from "../src/core/index.ts";
import { createEnv, envTasks, runEpisode } from "../src/envs/index.ts";
import { RulePolicy, webshopAbstraction } from "../src/envs/webshop/index.ts";
import { createServeApp, EnvHost, SessionManager, startServer, type RunningServer } from "../src/server/index.ts";
import { runAsync, runInProcess } from "./helpers.ts";

let server: RunningServer;
let manager: SessionManager;
let ws: string;
const dir = mkdtempSync(join(tmpdir(), "dreamgym-remote-cli-"));

before(async () => {
  const host = await EnvHost.open({ env: "webshop", split: "test" });
  manager = new SessionManager(host, { idleTimeout: 0 });
  server = await startServer({ app: createServeApp({ manager, heartbeat: 0 }), port: 0, host: "127.0.0.1" });
  ws = server.url.replace("http://", "ws://");
});
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

test("env eval --env ws://: the server's split, the score the local env gives over abstract states", async () => {
  const r = await runAsync(["env", "eval", "--env", ws, "--policy", "rule", "--episodes", "3", "--json"]);
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { env: string; split: string; episodes: number; score: number };
  assert.equal(out.env, "webshop");
  assert.equal(out.split, "test");
  assert.equal(out.episodes, 3);
  const local = createEnv("webshop", { split: "test" });
  const seen = abstractEnv(local, webshopAbstraction(local.catalogue));
  const tasks = envTasks("webshop", local);
  let total = 0;
  for (let i = 0; i < 3; i++) total += (await runEpisode(seen, new RulePolicy(), { envName: "webshop", task: tasks[i], seed: i })).total_reward;
  assert.ok(Math.abs(out.score - (100 * total) / 3) < 1e-9, `${out.score} vs ${(100 * total) / 3}`);
  assert.equal(manager.size, 0); // the CLI closed its session
});

test("collect --env ws://: trajectories labelled with the env's name; another split is a clear error", async () => {
  const out = join(dir, "c.jsonl");
  const r = await runAsync(["collect", "--env", `${server.url}/`, "--policy", "random", "--episodes", "3", "--seed", "5", "--out", out]);
  assert.equal(r.status, 0, r.stderr);
  const lines = readFileSync(out, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Trajectory);
  assert.equal(lines.length, 3);
  for (const t of lines) {
    assert.equal(t.env, "webshop");
    assert.equal(t.source, "real");
    assert.match(t.steps[0].observation, /^page: search/);
  }
  const bad = await runAsync(["collect", "--env", ws, "--policy", "random", "--split", "train", "--out", join(dir, "d.jsonl")]);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /^error: the env server http:\/\/127\.0\.0\.1:\d+ serves webshop split test, not train: .*\n$/);
  const oracle = await runAsync(["env", "eval", "--env", ws, "--policy", "oracle"]);
  assert.equal(oracle.status, 2);
  assert.match(oracle.stderr, /unknown policy "oracle" for webshop \(known: rule, random\)/);
});

test("a dead URL: exit 2, one line naming it", async () => {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  const r = await runAsync(["env", "eval", "--env", `ws://127.0.0.1:${port}`, "--policy", "random"]);
  assert.equal(r.status, 2);
  assert.equal(
    r.stderr,
    `error: env server http://127.0.0.1:${port}: GET /metadata: connection refused (is the server running? dreamgym serve --env <name> --port <port>)\n`,
  );
});

test("a server with a token, none given: one line saying to set DREAMGYM_TOKEN (clients have no --token-file)", async () => {
  const host = await EnvHost.open({ env: "webshop", split: "test" });
  const locked = await startServer({
    app: createServeApp({ manager: new SessionManager(host, { idleTimeout: 0 }), heartbeat: 0, token: "s3cret" }),
    port: 0,
    host: "127.0.0.1",
  });
  const saved = process.env.DREAMGYM_TOKEN;
  delete process.env.DREAMGYM_TOKEN;
  try {
    const r = await runInProcess(["env", "eval", "--env", locked.url.replace("http://", "ws://"), "--policy", "rule", "--episodes", "3"]);
    assert.equal(r.status, 2);
    assert.equal(
      r.stderr,
      `error: env server ${locked.url}: GET /metadata: 401 unauthorized: the server wants a token (set DREAMGYM_TOKEN to the server's token)\n`,
    );
  } finally {
    if (saved !== undefined) process.env.DREAMGYM_TOKEN = saved;
    await locked.close();
  }
});

test("train --mode real --env ws://: real steps and evaluations on the server; the run records the URL and a resume reconnects", async () => {
  const out = join(dir, "run");
  const args = [
    "--budget",
    "4",
    "--tasks-per-iter",
    "1",
    "--group",
    "2",
    "--concurrency",
    "2",
    "--eval-every",
    "1",
    "--eval-tasks",
    "2",
    "--final-eval-tasks",
    "2",
  ];
  const r = await runAsync(["train", "--mode", "real", "--env", ws, ...args, "--out", out]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`webshop at ${server.url} real grpo: 1 iterations`));
  const config = JSON.parse(readFileSync(join(out, "config.json"), "utf8")) as Record<string, unknown>;
  assert.equal(config.env, "webshop");
  assert.equal(config.remote, server.url);
  assert.equal(config.trainSplit, "test");
  assert.equal(config.evalSplit, "test");
  const resumed = await runAsync(["train", "--resume", out]);
  assert.equal(resumed.status, 0, resumed.stderr);
  assert.match(resumed.stdout, /final evaluation on 2 test tasks/);
  assert.equal(manager.size, 0);
});
