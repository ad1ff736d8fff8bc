// The DreamGym session server (serve --mode dreamgym): a trainer's sessions play the run's plan, the
// run (curriculum, buffer, audit, metrics) lives server side, and a killed server resumes its run.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, test } from "node:test";
import { ReplayBuffer } from "../src/buffer/index.ts";
import { createServeApp, EnvHost, SessionManager, startServer, type RunningServer } from "../src/server/index.ts";
import { ServedRun, train } from "../src/train/index.ts";
import { BIN, metricsOf, runInProcess } from "./helpers.ts";
import { TestClient, webshopSeedBuffer } from "./serve-kit.ts";

let db: string;
before(async () => {
  db = await webshopSeedBuffer(30); // the oracle's episodes of 30 train goals
});

test("train --env ws://… with realTasks server trains on a served DreamGym run: the server's curriculum, buffer, audit and metrics", {
  timeout: 120_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-served-run-"));
  let running: RunningServer | undefined;
  let clientDone: Promise<Awaited<ReturnType<typeof train>>> | undefined;
  const served = ServedRun.run(
    join(dir, "server"),
    { env: "webshop", buffer: db, budget: 150, rolloutsPerTask: 2, tasksPerIteration: 2, seed: 3, onPolicyAudit: { every: 1, episodes: 2 } },
    async (run) => {
      const manager = new SessionManager(EnvHost.served(run));
      running = await startServer({ app: createServeApp({ manager }), port: 0, host: "127.0.0.1" });
      // The trainer: GRPO over the served env, its groups named, its curriculum the server's.
      clientDone = train(join(dir, "client"), {
        remote: running.url,
        mode: "real",
        realTasks: "server",
        budget: 150,
        rolloutsPerTask: 2,
        tasksPerIteration: 2,
        evalEvery: 0,
        finalEvalTasks: 3,
      });
    },
  );
  try {
    const summary = await served;
    const client = await clientDone!;
    assert.ok(summary && summary.iterations >= 2);
    assert.equal(client.iterations, summary.iterations, "one server iteration per trainer batch");
    assert.equal(client.syntheticInteractions, summary.syntheticInteractions, "the trainer counts the run's synthetic steps as synthetic");
    assert.equal(client.realInteractions, 0);
    assert.equal(client.final.tasks, 3, "the trainer evaluates through the server (resets naming a task)");
    const metrics = metricsOf(join(dir, "server"));
    assert.deepEqual(
      metrics.map((m) => m.iteration),
      Array.from({ length: summary.iterations }, (_, i) => i + 1),
    );
    for (const m of metrics as any[]) {
      assert.equal(m.phase, "synthetic");
      assert.equal(m.episodes, 4);
      assert.equal(m.policyLoss, undefined, "the trainer updates; the server reports no loss");
      assert.ok(m.curriculum, "the curriculum scored the groups");
      assert.ok(m.onPolicyAudit, "audited every iteration");
    }
    // Checkpointed every iteration, but the server's policy (the trainer's is the one trained) written once.
    const checkpoints = join(dir, "server", "checkpoints");
    assert.deepEqual(
      readdirSync(checkpoints).filter((f) => f.endsWith(".policy")),
      ["iter-000001.policy"],
    );
    assert.equal(JSON.parse(readFileSync(join(checkpoints, "latest.json"), "utf8")).iteration, summary.iterations);
    assert.equal(JSON.parse(readFileSync(join(checkpoints, "latest.json"), "utf8")).policyFile, "iter-000001.policy");
    const buffer = ReplayBuffer.open(join(dir, "server", "buffer.db"), { readonly: true });
    const grown = buffer.count({ env: "webshop", source: "synthetic" });
    buffer.close();
    const kept = metrics.reduce((n, m) => n + (m.steps as number), 0);
    assert.ok(grown > 0 && grown <= kept, `the buffer grew with the played episodes (${grown} of ${kept} steps)`);
  } finally {
    await running?.close();
  }
});

/** Plays one episode on a session: the first listed action each step, to the end. */
async function playEpisode(c: TestClient, reset: Record<string, unknown>): Promise<{ taskId: string; steps: number }> {
  const r = await c.call({ type: "reset", data: reset });
  assert.equal(r.type, "observation", JSON.stringify(r));
  let obs = r.data;
  let steps = 0;
  while (!obs.done) {
    const actions: string[] | null = obs.observation.available_actions;
    obs = (await c.call({ type: "step", data: { action: actions?.[0] ?? "search[shoes]" } })).data;
    steps++;
  }
  return { taskId: r.data.observation.task_id, steps };
}

/** Starts `dreamgym serve --mode dreamgym` on a free port; resolves with its WebSocket URL once it serves. */
function startServe(args: string[]): Promise<{ child: ChildProcess; ws: string }> {
  const child = spawn(process.execPath, [BIN, "serve", "--env", "webshop", "--mode", "dreamgym", "--port", "0", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d));
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      out += d;
      const m = /OpenEnv: (ws:\/\/\S+)/.exec(out);
      if (m) resolve({ child, ws: m[1] });
    });
    child.once("exit", (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

test("a session server killed mid-iteration (SIGKILL) resumes its run: no episode lost or counted twice", { timeout: 120_000 }, async () => {
  const run = join(mkdtempSync(join(tmpdir(), "dreamgym-served-kill-")), "run");
  const first = await startServe(["--run", run, "--buffer", db, "--budget", "100000", "--group", "2", "--tasks-per-iter", "2", "--seed", "5"]);
  const c = await TestClient.open(first.ws);
  const d = await TestClient.open(first.ws);
  // Iteration 1, whole; iteration 2: group x2 played, group y2 begun (one episode on its way).
  for (const g of ["x1", "x1", "y1", "y1", "x2", "x2"]) await playEpisode(c, { group_id: g, seed: 1 });
  const begun = await d.call({ type: "reset", data: { group_id: "y2", seed: 2 } });
  const y2Task = begun.data.observation.task_id;
  first.child.kill("SIGKILL");
  await new Promise((resolve) => first.child.once("exit", resolve));
  assert.deepEqual(
    metricsOf(run).map((m) => m.iteration),
    [1],
  );

  const second = await startServe(["--run", run]);
  try {
    const e = await TestClient.open(second.ws);
    const refused = await e.call({ type: "reset", data: { group_id: "x2" } });
    assert.equal(refused.type, "error", "x2's two episodes were kept through the kill");
    assert.equal(refused.data.code, "SESSION_ERROR");
    assert.match(refused.data.message, /group x2 already has its 2 episodes/);
    const played = [await playEpisode(e, { group_id: "y2", seed: 2 }), await playEpisode(e, { group_id: "y2", seed: 3 })];
    assert.deepEqual(
      played.map((p) => p.taskId),
      [y2Task, y2Task],
      "the restarted plan gives y2 the task it had",
    );
    // Iteration 2 is complete: written once, with its four episodes.
    const f = await TestClient.open(second.ws);
    await playEpisode(f, { group_id: "x3", seed: 1 }); // iteration 3 opened: iteration 2 was written before it
    const metrics = metricsOf(run);
    assert.deepEqual(
      metrics.map((m) => m.iteration),
      [1, 2],
    );
    assert.equal(metrics[1].episodes, 4);
    const buffer = ReplayBuffer.open(join(run, "buffer.db"), { readonly: true });
    const labels = new Map<string, number>();
    for (const t of buffer.trajectories({ env: "webshop", source: "synthetic" })) labels.set(t.policy!, (labels.get(t.policy!) ?? 0) + 1);
    buffer.close();
    // (The embedded model fails actions it has no record of, and such episodes are dropped, not stored.)
    const stored = metrics.map((m) => 4 - ((m.droppedEpisodes as number) - ((metrics[(m.iteration as number) - 2]?.droppedEpisodes as number) ?? 0)));
    assert.ok([...labels.values()].every((n) => n <= 4) && labels.size <= 2, `each iteration's episodes stored once (${JSON.stringify([...labels])})`);
    assert.ok([...labels.values()].reduce((a, b) => a + b, 0) <= stored[0] + stored[1], "no more than the kept episodes");
    await Promise.all([e.close(), f.close()]);
  } finally {
    second.child.kill("SIGTERM");
    await new Promise((resolve) => second.child.once("exit", resolve));
  }
});

test("a restart on a served run refuses an --env or --mode other than the run's own, as it refuses the other flags: one line, exit 2", {
  timeout: 60_000,
}, async () => {
  const run = join(mkdtempSync(join(tmpdir(), "dreamgym-served-other-")), "run");
  // A run folder: started, then stopped before any episode.
  await ServedRun.run(run, { env: "webshop", buffer: db, budget: 1000, rolloutsPerTask: 2, tasksPerIteration: 2 }, (r) => r.stop());
  const before = readFileSync(join(run, "config.json"), "utf8");
  for (const [env, mode] of [
    ["vault", "dreamgym"],
    ["alfworld", "dreamgym"],
    ["webshop", "s2r"],
  ]) {
    // A server that resumes the run instead serves until a signal: one, so the test fails rather than hangs.
    const timer = setTimeout(() => process.kill(process.pid, "SIGTERM"), 10_000);
    const r = await runInProcess(["serve", "--env", env, "--mode", mode, "--run", run, "--port", "0"]);
    clearTimeout(timer);
    assert.equal(r.status, 2, r.stderr);
    assert.equal(
      r.stderr,
      `error: ${run} holds a run of webshop in --mode dreamgym: the server resumes it with its own config; give --env webshop --mode dreamgym\n`,
    );
    assert.equal(r.stdout, "", "nothing served");
  }
  assert.equal(readFileSync(join(run, "config.json"), "utf8"), before);
  // (The run's own --env and --mode resume it: the kill test above restarts so.)
});

test("what TRL sends (the dataset row as reset kwargs, an integer group_id) plays the plan; a reset naming a task is an evaluation outside it", {
  timeout: 60_000,
}, async () => {
  const dir = join(mkdtempSync(join(tmpdir(), "dreamgym-served-trl-")), "run");
  let stop!: () => void;
  let url = "";
  const gotUrl = new Promise<void>((resolve) => (stop = resolve));
  let running: RunningServer | undefined;
  let served: ServedRun | undefined;
  const finished = ServedRun.run(dir, { env: "webshop", buffer: db, budget: 100_000, rolloutsPerTask: 2, tasksPerIteration: 2, seed: 1 }, async (run) => {
    served = run;
    running = await startServer({ app: createServeApp({ manager: new SessionManager(EnvHost.served(run)) }), port: 0, host: "127.0.0.1" });
    url = running.url;
    stop();
  });
  await gotUrl;
  try {
    const meta = (await (await fetch(`${url}/metadata`)).json()) as any;
    assert.deepEqual(meta.dreamgym.run, { group: 2, tasks_per_iteration: 2, budget: 100_000, real_budget: 0, mode: "dreamgym" });
    const c = await TestClient.open(`${url.replace("http", "ws")}/ws`);
    // GRPOTrainer calls reset(**row): every column of the row, group_id among them, as the reset's data.
    const row = (g: number) => ({ prompt: [{ role: "user", content: "Buy what the instruction asks." }], group_id: g });
    const g0 = [await playEpisode(c, row(0)), await playEpisode(c, row(0))];
    const g1 = [await playEpisode(c, row(1)), await playEpisode(c, row(1))];
    assert.equal(g0[0].taskId, g0[1].taskId);
    assert.equal(g1[0].taskId, g1[1].taskId);
    assert.notEqual(g0[0].taskId, g1[0].taskId);
    // An evaluation: a task of the run's evaluation split by index, in the real env.
    const evalTask = ((await (await fetch(`${url}/tasks?limit=1`)).json()) as any).tasks[0];
    const ev = await playEpisode(c, { task_index: 0 });
    assert.equal(ev.taskId, evalTask.id);
    // AgentGym's clients name an item, a task: on a served run that is an evaluation too, not a slot of the plan.
    const agent = (path: string, body?: unknown) =>
      fetch(`${url}/agentgym/${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const env_idx = (await (await agent("create")).json()) as number;
    const page = await agent("reset", { session_id: 0, env_idx });
    assert.equal(page.status, 200, await page.clone().text());
    assert.equal(((await page.json()) as unknown[])[1], null);
    await agent("close", { env_idx });
    // The next plan's resets wait for the iteration to be written: then its line holds the four plan episodes only.
    await playEpisode(c, row(7));
    const metrics = metricsOf(dir);
    assert.equal(metrics.length, 1);
    assert.equal(metrics[0].episodes, 4);
    assert.equal(
      metrics[0].syntheticInteractions,
      [...g0, ...g1].reduce((n, e) => n + e.steps, 0),
    );
    await c.close();
  } finally {
    served?.stop();
    await running?.close();
    await finished;
  }
});

test("a served S2R run: after the synthetic budget its sessions play the real env, and the trainer counts each kind", { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-served-s2r-"));
  let running: RunningServer | undefined;
  let clientDone: Promise<Awaited<ReturnType<typeof train>>> | undefined;
  const served = ServedRun.run(
    join(dir, "server"),
    { env: "webshop", mode: "s2r", buffer: db, budget: 60, realBudget: 60, rolloutsPerTask: 2, tasksPerIteration: 2, seed: 4 },
    async (run) => {
      running = await startServer({ app: createServeApp({ manager: new SessionManager(EnvHost.served(run)) }), port: 0, host: "127.0.0.1" });
      clientDone = train(join(dir, "client"), {
        remote: running.url,
        mode: "real",
        realTasks: "server",
        budget: 60,
        realBudget: 60,
        rolloutsPerTask: 2,
        tasksPerIteration: 2,
        evalEvery: 0,
        finalEvalTasks: 2,
      });
    },
  );
  try {
    const summary = (await served)!;
    const client = await clientDone!;
    const phases = metricsOf(join(dir, "server")).map((m) => m.phase);
    assert.equal(phases[0], "synthetic");
    assert.equal(phases.at(-1), "real", `the real phase follows (${phases.join(", ")})`);
    assert.ok(summary.syntheticInteractions >= 60 && summary.realInteractions >= 60);
    assert.deepEqual([client.syntheticInteractions, client.realInteractions], [summary.syntheticInteractions, summary.realInteractions]);
  } finally {
    await running?.close();
  }
});
