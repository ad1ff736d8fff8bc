// A dead, garbage or hanging LLM endpoint stops every command that calls it: exit 2, one line naming
// the URL, within the configured timeout. Single failures stay counted no-op steps.
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chatServer, type Served } from "../src/testing/index.ts";
import { metricsOf, run, runAsync, runInProcess } from "./helpers.ts";

const root = mkdtempSync(join(tmpdir(), "dreamgym-endpoint-"));
const seed = join(root, "seed.db");
const real = join(root, "real.jsonl");

before(async () => {
  const c = await runInProcess(["collect", "--env", "webshop", "--policy", "oracle", "--episodes", "20", "--split", "train", "--out", real]);
  assert.equal(c.status, 0, c.stderr);
  const i = await runInProcess(["buffer", "import", real, "--abstract", "--buffer", seed]);
  assert.equal(i.status, 0, i.stderr);
});

/** An experience model that ends each episode at once: reward 1 for tasks of odd length, 0.5 else. */
function experience(body: Record<string, unknown>): string {
  const messages = body.messages as { role: string; content: string }[];
  const task = /^Task: (.*)$/m.exec(messages[1]?.content ?? "")?.[1] ?? "";
  const reward = task.length % 2 === 1 ? 1 : 0.5;
  return JSON.stringify({ reasoning: "bought", next_state: `page: done\ninstruction: \nbought B000000000\nscore: ${reward}`, reward, terminated: true });
}

/** Each command that calls an LLM, against `model`, writing under `dir`. */
function commands(model: string, dir: string): Record<string, string[]> {
  const buffer = join(dir, "b.db");
  copyFileSync(seed, buffer); // each run its own copy: collect writes to it
  return {
    collect: [
      "collect",
      "--env",
      "webshop",
      "--experience",
      model,
      "--buffer",
      buffer,
      "--policy",
      "random",
      "--episodes",
      "4",
      "--out",
      join(dir, "syn.jsonl"),
    ],
    rollout: ["rollout", "--env", "webshop", "--model", model, "--tasks", "2", "--group", "2", "--out", join(dir, "r.jsonl")],
    audit: ["audit", "--env", "webshop", "--trajectories", real, "--experience", model, "--limit", "2"],
    train: [
      "train",
      "--mode",
      "dreamgym",
      "--experience",
      model,
      "--buffer",
      seed,
      "--budget",
      "8",
      "--tasks-per-iter",
      "2",
      "--group",
      "2",
      "--concurrency",
      "2",
      "--eval-every",
      "0",
      "--final-eval-tasks",
      "2",
      "--no-curriculum",
      "--set",
      "policy.dim=1024",
      "--out",
      join(dir, "run"),
    ],
  };
}

test("a dead, garbage or hanging endpoint stops collect, rollout, audit and train: exit 2, one line naming the URL, within the timeout", async () => {
  const dead = await chatServer();
  await dead.close();
  const garbage = await chatServer({ fault: () => "malformed" });
  const hung = await chatServer({ fault: () => "timeout" });
  const servers: Record<string, [Served, RegExp]> = {
    dead: [dead, /Connection error\. \(ECONNREFUSED\)/],
    garbage: [garbage, /chat completion failed: /],
    hung: [hung, /Request timed out/],
  };
  // Every command against the hanging server (where the timeout matters); dead and garbage servers
  // once each here (the model's own tests try every fault on every path).
  const cases: [string, string][] = [
    ["collect", "hung"],
    ["rollout", "hung"],
    ["audit", "hung"],
    ["train", "hung"],
    ["rollout", "dead"],
    ["audit", "garbage"],
  ];
  try {
    await Promise.all(
      cases.map(async ([command, server]) => {
        const [s, last] = servers[server];
        const dir = mkdtempSync(join(root, `${command}-${server}-`));
        const started = performance.now();
        const args = [...commands(`${s.url}#tiny`, dir)[command], "--request-timeout", "1", "--max-failures", "2"];
        // train has started its run (a run lock, maybe threads) when the endpoint stops it: a process of its own.
        // The others stop at their first calls: in this process, without a child's ~0.4 s of CPU start-up each.
        const r = command === "train" ? await runAsync(args) : await runInProcess(args);
        const seconds = (performance.now() - started) / 1000;
        const what = `${command} against a ${server} endpoint`;
        assert.equal(r.status, 2, `${what}: ${r.stderr}`);
        const lines = r.stderr.trim().split("\n");
        assert.equal(lines.length, 1, `${what}: one line, got ${r.stderr}`);
        assert.match(lines[0], new RegExp(`^error: LLM endpoint ${s.url}/chat/completions cannot be reached; last error: `), what);
        assert.match(lines[0], last, what);
        // The default timeout is 60 s: stopping well before it shows the flag took effect.
        assert.ok(seconds < 60, `${what}: ${seconds.toFixed(1)} s`);
        if (command === "train") assert.match(lines[0], /the run stopped, checkpointed at iteration 0: continue it with dreamgym train --resume /);
      }),
    );
    assert.ok(hung.requests.length >= 4 && garbage.requests.length >= 1, "the endpoints were called");
  } finally {
    await garbage.close();
    await hung.close();
  }
});

test("train refuses an endpoint that does not answer before it writes anything", async () => {
  const dead = await chatServer();
  await dead.close();
  const dir = mkdtempSync(join(root, "train-dead-"));
  const out = join(dir, "run"); // where the train command writes
  // Refused at its probe of the endpoint, before anything starts: in this process.
  const r = await runInProcess([...commands(`${dead.url}#tiny`, dir).train, "--request-timeout", "1"]);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, new RegExp(`^error: LLM endpoint does not answer: ECONNREFUSED; start the server or fix the model URL \\(${dead.url}/models\\)\n$`));
  assert.equal(existsSync(out), false, "no run folder");
});

test("single failures stay counted no-op steps: collect --experience against an endpoint that fails now and then", async () => {
  // Every 5th call is refused with HTTP 400 (not retried): that step fails, the next ones do not.
  const s = await chatServer({ fault: (n) => (n % 5 === 0 ? "400" : undefined), reply: experience });
  try {
    const dir = mkdtempSync(join(root, "intermittent-"));
    // A short collect, checked by its output: in this process (its Ctrl-C handlers go when it ends).
    const r = await runInProcess([...commands(`${s.url}#tiny`, dir).collect, "--episodes", "12", "--concurrency", "2", "--max-failures", "2"]);
    assert.equal(r.status, 0, r.stderr);
    const failed = Number(/wrote 12 synthetic trajectories \((\d+) steps, (\d+) failed model steps\)/.exec(r.stdout)?.[2]);
    assert.ok(failed > 0, r.stdout);
  } finally {
    await s.close();
  }
});

test("train --mode dreamgym stops, checkpointed, when its endpoint hangs mid-run; --resume gives the uninterrupted run's numbers", async () => {
  let hanging = false;
  const s = await chatServer({ fault: (n) => (hanging && n > 20 ? "timeout" : undefined), reply: experience });
  try {
    // 8 calls an iteration (4 tasks × 2 rollouts, one synthetic step each), 4 iterations.
    const args = (out: string) => [
      "train",
      "--mode",
      "dreamgym",
      "--experience",
      `${s.url}#tiny`,
      "--buffer",
      seed,
      "--budget",
      "32",
      "--tasks-per-iter",
      "4",
      "--group",
      "2",
      "--concurrency",
      "2",
      "--eval-every",
      "0",
      "--final-eval-tasks",
      "3",
      "--no-curriculum",
      "--set",
      "policy.dim=1024",
      "--out",
      out,
      "--request-timeout",
      "1",
      "--max-failures",
      "2",
    ];
    const whole = join(root, "whole");
    const a = await runAsync(args(whole));
    assert.equal(a.status, 0, a.stderr);
    const calls = s.requests.length;
    assert.equal(metricsOf(whole).length, 4);

    // From the 21st call on (the third iteration) the server accepts and never answers.
    hanging = true;
    s.requests.length = 0;
    const stopped = join(root, "stopped");
    const b = await runAsync(args(stopped));
    assert.equal(b.status, 2, b.stderr);
    const line = b.stderr.trim();
    assert.ok(!line.includes("\n"), JSON.stringify(b.stderr));
    assert.match(
      line,
      new RegExp(
        `^error: LLM endpoint ${s.url}/chat/completions failed 2 calls in a row; last error: .*Request timed out.*the run stopped, checkpointed at iteration 2: continue it with dreamgym train --resume ${stopped}$`,
      ),
    );
    assert.equal(JSON.parse(readFileSync(join(stopped, "checkpoints", "latest.json"), "utf8")).iteration, 2, "the iterations done are kept");
    assert.equal(metricsOf(stopped).length, 2);
    assert.ok(!existsSync(join(stopped, "summary.json")));

    // The server is back: the resumed run ends where the uninterrupted one did, paying only for what was lost.
    hanging = false;
    s.requests.length = 0;
    const c = await runAsync(["train", "--resume", stopped, "--request-timeout", "5"]);
    assert.equal(c.status, 0, c.stderr);
    assert.match(c.stdout, /resumed from iteration 2/);
    assert.deepEqual(metricsOf(stopped), metricsOf(whole));
    const final = (dir: string) => JSON.parse(readFileSync(join(dir, "summary.json"), "utf8")).final;
    assert.deepEqual(final(stopped), final(whole));
    assert.equal(s.requests.length, calls / 2, "the resumed run made only the last two iterations' calls");
  } finally {
    await s.close();
  }
});

test("buffer import with a hanging embedder: exit 2, one line naming the URL, each attempt bounded by --request-timeout", async () => {
  const s = await chatServer({ fault: () => "timeout" });
  try {
    const db = join(mkdtempSync(join(root, "embedder-")), "e.db");
    // Stopped after its retries, checked by its output: in this process (checked: no request is left after it).
    const r = await runInProcess(["buffer", "import", real, "--buffer", db, "--embedder", `${s.url}#embed`, "--request-timeout", "0.3"]);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`^error: embeddings request failed after retries: Request timed out\\. \\(${s.url}/embeddings\\)\\n$`));
    assert.equal(s.requests.length, 5, "one attempt and 4 retries, each cut at 0.3 s");
  } finally {
    await s.close();
  }
});

test("demo refuses an endpoint that does not answer before it seeds anything", async () => {
  const dead = await chatServer();
  await dead.close();
  const out = join(mkdtempSync(join(root, "demo-dead-")), "demo");
  const r = await runInProcess(["demo", "--experience", `${dead.url}#tiny`, "--out", out]);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, new RegExp(`^error: LLM endpoint does not answer: ECONNREFUSED; start the server or fix the model URL \\(${dead.url}/models\\)\n$`));
  assert.equal(existsSync(out), false, "no demo folder");
});
