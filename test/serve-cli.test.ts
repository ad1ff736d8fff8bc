// `dreamgym serve` as a user runs it: the built CLI in a child process, a real WebSocket client, signals.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BIN, ROOT, runAsync, runInProcess } from "./helpers.ts";
import { SERVE_YOUNG_GENERATION_MB, serveThreadLimits } from "../src/cli/serve-thread.ts";
import { TestClient } from "./serve-kit.ts";

/** Starts `dreamgym serve`; resolves once it prints its line (or rejects with what it said when it exits first). */
function serve(args: string[], env: NodeJS.ProcessEnv = process.env) {
  const child = spawn(process.execPath, [BIN, "serve", ...args], { stdio: ["ignore", "pipe", "pipe"], env });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (status) => resolve({ status, stdout, stderr })),
  );
  const ready = new Promise<{ line: string; url: string }>((resolve, reject) => {
    child.stdout.on("data", (d) => {
      stdout += d;
      const line = stdout.split("\n")[0];
      if (stdout.includes("\n")) resolve({ line, url: /on (http:\/\/\S+)/.exec(line)![1] });
    });
    void exited.then((r) => reject(new Error(`serve exited ${r.status}: ${r.stderr}`)));
  });
  return { child, ready, exited };
}

test("dreamgym serve: prints where it serves (port 0: the port it got), serves OpenEnv behind its --token-file, and on SIGTERM closes sockets and envs and exits 0", {
  timeout: 60_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-serve-cli-"));
  const counts = join(dir, "open.txt");
  const tokenFile = join(dir, "token");
  writeFileSync(tokenFile, "t0ken-of-at-least-16-characters\n");
  const module = ["--env-module", join(ROOT, "test", "fixtures", "counted-env.mjs")];
  const s = serve([...module, "--env", "counted", "--port", "0", "--split", "test", "--token-file", tokenFile], { ...process.env, DREAMGYM_OPEN_ENVS: counts });
  const { line, url } = await s.ready;
  assert.match(line, /^serving counted \(real, split test, 500 tasks\) on http:\/\/127\.0\.0\.1:\d+ {2}OpenEnv: ws:\/\/127\.0\.0\.1:\d+\/ws/);
  assert.notEqual(new URL(url).port, "0");
  assert.deepEqual(await (await fetch(`${url}/health`)).json(), { status: "healthy", sessions: 0, max_sessions: 256 });
  assert.equal((await fetch(`${url}/metadata`)).status, 401);
  assert.equal((await fetch(`${url}/metadata`, { headers: { authorization: "Bearer t0ken-of-at-least-16-characters" } })).status, 200);

  const ws = `${url.replace("http", "ws")}/ws`;
  const clients = [
    await TestClient.open(ws, { headers: { authorization: "Bearer t0ken-of-at-least-16-characters" } }),
    await TestClient.open(ws, { headers: { authorization: "Bearer t0ken-of-at-least-16-characters" } }),
  ];
  for (const c of clients) assert.equal((await c.call({ type: "reset", data: {} })).type, "observation");
  s.child.kill("SIGTERM");
  for (const c of clients) assert.deepEqual(await c.closed, { code: 1001, reason: "the server is shutting down" });
  const r = await s.exited;
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /^SIGTERM: stopped \(2 open sessions closed; 2 served\)\n$/);
  assert.equal(readFileSync(counts, "utf8").trim().split("\n").at(-1), "0", "every env it built is closed");
});

test("dreamgym serve: off loopback without a token, a missing token file, a port in use: one line, exit 2", { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-serve-cli-"));
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  const port = (holder.address() as { port: number }).port;
  const env = { ...process.env };
  delete env.DREAMGYM_TOKEN;
  const open = serve(["--env", "webshop", "--host", "0.0.0.0", "--port", "0"], env);
  open.ready.catch(() => {});
  // Independent processes: run side by side.
  const [offLoopback, noTokenFile, inUse] = await Promise.all([
    open.exited,
    runAsync(["serve", "--env", "webshop", "--token-file", join(dir, "missing")]),
    runAsync(["serve", "--env", "webshop", "--port", String(port)]),
  ]);
  await new Promise((resolve) => holder.close(resolve));
  const oneLine = (r: { status: number | null; stderr: string }, pattern: RegExp) => {
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, pattern);
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
  };
  oneLine(
    offLoopback,
    /^error: serving on 0\.0\.0\.0 lets other machines in: give a bearer token \(--token-file F, or the DREAMGYM_TOKEN environment variable\)/,
  );
  oneLine(noTokenFile, /^error: cannot read --token-file .*missing: no such file/);
  oneLine(inUse, new RegExp(`^error: 127\\.0\\.0\\.1:${port} is in use: stop what holds it or choose another --port`));
});

// In this process, with a timeout: a run that stopped refusing would serve and wait for a signal.
test("dreamgym oracle-model serve: a port in use is one line and exit 2, as serve's", { timeout: 60_000 }, async () => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  try {
    const port = (holder.address() as { port: number }).port;
    const r = await runInProcess(["oracle-model", "serve", "--env", "webshop", "--port", String(port)]);
    assert.equal(r.stderr, `error: 127.0.0.1:${port} is in use: stop what holds it or choose another --port\n`);
    assert.equal(r.status, 2);
    assert.equal(r.stdout, "");
  } finally {
    await new Promise((resolve) => holder.close(resolve));
  }
});

test("serveThreadLimits: the larger young generation, unless node's command line sizes the semi-spaces", () => {
  const larger = { maxYoungGenerationSizeMb: SERVE_YOUNG_GENERATION_MB };
  assert.deepEqual(serveThreadLimits([]), larger);
  assert.deepEqual(serveThreadLimits(["--max-old-space-size=4096"], "--enable-source-maps"), larger);
  assert.deepEqual(serveThreadLimits(["--max-semi-space-size=32"]), {});
  assert.deepEqual(serveThreadLimits([], "--enable-source-maps  --max_semi_space_size 8"), {});
  assert.deepEqual(serveThreadLimits(["--min-semi-space-size=4"]), {});
});

test("dreamgym serve runs in a thread of its own with the larger young generation; a signal before it has a handler ends it as the signal does", {
  timeout: 60_000,
}, async (t) => {
  // Held in the probe (an env module, loaded before the command runs), so that no env is loaded: the first
  // test of this file serves and stops through the thread.
  const probe = ["--env-module", join(ROOT, "test", "fixtures", "thread-probe.mjs")];
  /** `serve` with the probe, held there and sent SIGTERM once the probe printed: its line and how it ended. */
  const probed = (env: NodeJS.ProcessEnv) => {
    const child = spawn(process.execPath, [BIN, ...probe, "serve", "--env", "webshop", "--port", "0"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...env, DREAMGYM_PROBE_HOLD: "1" },
    });
    t.after(() => child.kill("SIGKILL"));
    let stdout = "";
    let stderr = "";
    let sent = false;
    child.stderr.on("data", (d) => (stderr += d));
    child.stdout.on("data", (d) => {
      stdout += d;
      if (!sent && stdout.includes("\n")) {
        sent = true;
        child.kill("SIGTERM");
      }
    });
    return new Promise<{ line: string; status: number | null; signal: string | null; stderr: string }>((resolve) =>
      child.on("close", (status, sig) => resolve({ line: stdout.split("\n")[0], status, signal: sig, stderr })),
    );
  };
  const [ours, sized] = await Promise.all([
    probed(process.env),
    probed({ ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --max-semi-space-size=8` }),
  ]);
  const thread = (r: { line: string; stderr: string }) => {
    assert.match(r.line, /^\{"isMainThread"/, r.stderr);
    return JSON.parse(r.line) as { isMainThread: boolean; resourceLimits: Record<string, number> };
  };
  assert.equal(thread(ours).isMainThread, false);
  assert.equal(thread(ours).resourceLimits.maxYoungGenerationSizeMb, SERVE_YOUNG_GENERATION_MB);
  assert.equal(thread(sized).isMainThread, false);
  assert.notEqual(thread(sized).resourceLimits.maxYoungGenerationSizeMb, SERVE_YOUNG_GENERATION_MB, "the thread is not given ours");
  // Before any handler: ended by the signal, as a process without the thread would be.
  for (const r of [ours, sized]) assert.deepEqual([r.status, r.signal, r.stderr], [null, "SIGTERM", ""]);
});

test("the serve thread: a first signal reaches its handler, a second exits 130 from the thread (its exit handlers run); one before any handler ends the process as it would have; a bug exits 1 with the error as node prints it", {
  timeout: 60_000,
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-serve-thread-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const mark = join(dir, "exit.txt");
  const run = (env: NodeJS.ProcessEnv, signals: NodeJS.Signals[] = []) => {
    const child = spawn(process.execPath, [join(ROOT, "test", "fixtures", "signal-thread.mjs")], { stdio: ["ignore", "pipe", "pipe"], env });
    t.after(() => child.kill("SIGKILL"));
    let stdout = "";
    let stderr = "";
    let lines = 0;
    child.stderr.on("data", (d) => (stderr += d));
    // Each signal once the thread has printed the line before it: "waiting", then "stopping: …".
    child.stdout.on("data", (d) => {
      stdout += d;
      while (lines < stdout.split("\n").length - 1) if (signals[lines++]) child.kill(signals[lines - 1]);
    });
    return new Promise<{ status: number | null; signal: string | null; stdout: string; stderr: string }>((resolve) =>
      child.on("close", (status, signal) => resolve({ status, signal, stdout, stderr })),
    );
  };
  const [stopped, bug, held, heldBesideAListener] = await Promise.all([
    run({ ...process.env, DREAMGYM_EXIT_MARK: mark }, ["SIGINT", "SIGTERM"]),
    run({ ...process.env, DREAMGYM_THREAD_BUG: "1" }),
    run({ ...process.env, DREAMGYM_THREAD_HOLD: "1" }, ["SIGTERM"]),
    run({ ...process.env, DREAMGYM_THREAD_HOLD: "1", DREAMGYM_MAIN_LISTENER: "1" }, ["SIGTERM"]),
  ]);
  // No handler in the thread yet: the process ends by the signal; where another listener would keep it alive, it exits as if it had (128 + 15).
  assert.deepEqual([held.status, held.signal, held.stdout], [null, "SIGTERM", "held\n"]);
  assert.deepEqual([heldBesideAListener.status, heldBesideAListener.signal], [143, null]);
  assert.equal(stopped.status, 130, stopped.stderr);
  assert.equal(stopped.stdout, "waiting\nstopping: SIGINT\n");
  assert.equal(readFileSync(mark, "utf8"), "exit handlers ran: 130");
  assert.equal(bug.status, 1);
  assert.match(bug.stderr, /^Error: a bug in the thread\n/);
  assert.match(bug.stderr, /code: 'E_BUG'/);
});
