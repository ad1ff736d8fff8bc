import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReplayBuffer } from "../src/buffer/index.ts";
import type { IterationMetrics } from "../src/train/index.ts";
import { BIN, killAfterCheckpoint, metricsOf, run, runInProcess } from "./helpers.ts";

const ARGS = [
  "train",
  "--env",
  "webshop",
  "--mode",
  "real",
  "--algo",
  "grpo",
  "--budget",
  "6000",
  "--seed",
  "3",
  "--tasks-per-iter",
  "4",
  "--group",
  "4",
  "--concurrency",
  "2",
  "--eval-every",
  "3",
  "--eval-tasks",
  "10",
  "--final-eval-tasks",
  "30",
  "--checkpoint-every",
  "2",
  "--set",
  "policy.dim=4096",
  "--set",
  "grpo.klCoef=0.02",
];
test("train writes a run folder; a run killed with SIGKILL resumes to the same results", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-train-"));
  const whole = join(root, "whole");
  const r = run([...ARGS, "--out", whole]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /final evaluation on 30 test tasks: score \d+\.\d, success \d+\.\d%/);
  for (const f of ["config.json", "metrics.jsonl", "summary.json", "report.html", "checkpoints/latest.json"]) assert.ok(existsSync(join(whole, f)), f);
  const metrics = metricsOf(whole) as unknown as IterationMetrics[];
  assert.ok(metrics.length >= 8, `${metrics.length} iterations`);
  metrics.forEach((m, i) => assert.equal(m.iteration, i + 1));
  const last = metrics.at(-1)!;
  assert.ok(last.realInteractions >= 6000 && metrics.at(-2)!.realInteractions < 6000, "stops at the budget");
  assert.equal(last.eval?.tasks, 30);
  assert.ok(last.kl! > 0, "the KL to the reference policy is measured");
  assert.equal(
    last.evalInteractions,
    metrics.reduce((s, m) => s + (m.eval?.steps ?? 0), 0),
  );
  assert.equal(metrics[2].eval?.tasks, 10);
  for (const k of ["meanReward", "success", "policyLoss", "entropy", "kl", "approxKl", "realInteractions", "evalInteractions"] as const)
    assert.equal(typeof last[k], "number", k);

  // The report opens with no network: inline SVG, no scripts, no remote references.
  const html = readFileSync(join(whole, "report.html"), "utf8");
  assert.equal(html.match(/<svg /g)?.length, 4);
  assert.doesNotMatch(html, /<script|src=|href=/);
  assert.doesNotMatch(html.replaceAll('xmlns="http://www.w3.org/2000/svg"', ""), /https?:/);

  // Kill a second run after its second checkpoint, then resume it.
  const killed = join(root, "killed");
  await killAfterCheckpoint(ARGS, killed, 4);
  assert.ok(!existsSync(join(killed, "summary.json")), "the run was killed before it finished");
  // Refusals run in this process: refused before anything starts, they need no child process's start-up.
  const refused = await runInProcess(["train", "--resume", killed, "--seed", "9"]);
  assert.equal(refused.status, 2);
  assert.match(refused.stderr, /--resume continues a run with its own config; drop --seed/);
  const resumed = run(["train", "--resume", killed]);
  assert.equal(resumed.status, 0, resumed.stderr);
  assert.match(resumed.stdout, /resumed from iteration \d+/);
  assert.deepEqual(metricsOf(killed), metricsOf(whole));
  const final = (dir: string) => JSON.parse(readFileSync(join(dir, "summary.json"), "utf8")).final;
  assert.deepEqual(final(killed), final(whole));

  // The folder is not reused by accident.
  const again = await runInProcess([...ARGS, "--out", whole]);
  assert.equal(again.status, 2);
  assert.match(again.stderr, /already holds a run; resume it with --resume/);
});

// Config errors, refused before anything starts: in this process, with no child process's start-up.
test("train names every bad config key with what is allowed", async () => {
  const r = await runInProcess([
    "train",
    "--algo",
    "sac",
    "--set",
    "grpo.clipRange=3",
    "--set",
    "ppo.bogus=1",
    "--set",
    "policy.hidden=0",
    "--out",
    join(tmpdir(), "never"),
  ]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /algo: "sac" is not allowed \(allowed: "grpo", "ppo"\)/);
  assert.match(r.stderr, /grpo\.clipRange: 3 is out of range \(must be <=1\)/);
  assert.match(
    r.stderr,
    /ppo\.bogus: unknown key \(allowed: learningRate, gamma, gaeLambda, clipRange, valueCoef, entropyCoef, epochs, minibatchSize, normalizeAdvantages, maxGradNorm\)/,
  );
  assert.match(r.stderr, /policy\.hidden: 0 is out of range \(must be >=1\)/);
  const out = join(mkdtempSync(join(tmpdir(), "dreamgym-train-")), "x");
  const env = await runInProcess(["train", "--env", "nowhere", "--budget", "10", "--out", out]);
  assert.equal(env.status, 2);
  assert.match(env.stderr, /unknown environment "nowhere" \(known: webshop/);
  const split = await runInProcess(["train", "--budget", "10", "--set", "evalSplit=tset", "--out", out]);
  assert.equal(split.status, 2);
  assert.match(split.stderr, /unknown WebShop split "tset" \(known: /);
  assert.ok(!existsSync(out), "nothing is written for a config that cannot run");
});

// A --config file is read before the flags are set on it: one that is not an object is refused as the
// schema refuses it, whatever flags come with it (they once crashed on a null or a number).
test("train refuses a --config that is not an object, with or without flags", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-train-"));
  const out = join(root, "run");
  for (const [name, json, type] of [
    ["null", "null", "null"],
    ["number", "5", "number"],
    ["string", '"x"', "string"],
    ["array", "[1, 2]", "array"],
  ]) {
    const file = join(root, `${name}.json`);
    writeFileSync(file, json);
    for (const flags of [[], ["--budget", "100"], ["--set", "budget=100"], ["--set", "grpo.klCoef=0.1"]]) {
      const r = await runInProcess(["train", "--config", file, ...flags, "--out", out]);
      assert.deepEqual(
        { status: r.status, stderr: r.stderr },
        { status: 2, stderr: `error: invalid training config: (top level): Invalid input: expected object, received ${type}\n` },
        `${json} ${flags.join(" ")}`,
      );
      assert.ok(!existsSync(out), "no run folder");
    }
  }
});

test("train refuses a folder as --buffer, as the buffer commands do", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-train-"));
  const out = join(root, "run");
  const folder = join(root, "seed.db");
  mkdirSync(folder);
  for (const mode of ["dreamgym", "bc", "real"]) {
    const r = await runInProcess(["train", "--mode", mode, "--buffer", folder, "--out", out]);
    assert.deepEqual({ status: r.status, stderr: r.stderr }, { status: 2, stderr: `error: ${folder}: --buffer is a folder; give the buffer file\n` }, mode);
    assert.ok(!existsSync(out), "no run folder");
  }
});

test("train says a missing --config or a folder as one as the other commands say a missing or folder input", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-train-"));
  const out = join(root, "run");
  const missing = join(root, "missing.json");
  const r = await runInProcess(["train", "--config", missing, "--out", out]);
  assert.deepEqual({ status: r.status, stderr: r.stderr }, { status: 2, stderr: `error: ${missing}: no such config file\n` });
  const folder = join(root, "config.json");
  mkdirSync(folder);
  const f = await runInProcess(["train", "--config", folder, "--out", out]);
  assert.deepEqual({ status: f.status, stderr: f.stderr }, { status: 2, stderr: `error: ${folder}: not a file; give a JSON training config file\n` });
  assert.ok(!existsSync(out), "no run folder");
  // A pipe is read as a file is (`--config <(…)`, `… | dreamgym train --config /dev/stdin`): a shell's pipe, as a user's.
  const piped = spawnSync("bash", ["-c", 'printf %s "$CONFIG" | "$NODE" "$BIN" train --config /dev/stdin --out "$OUT" --eval-every 0 --final-eval-tasks 1'], {
    encoding: "utf8",
    env: {
      ...process.env,
      CONFIG: JSON.stringify({ mode: "real", budget: 8, tasksPerIteration: 2, rolloutsPerTask: 2 }),
      NODE: process.execPath,
      BIN,
      OUT: out,
    },
  });
  assert.equal(piped.status, 0, piped.stderr);
  assert.equal(JSON.parse(readFileSync(join(out, "config.json"), "utf8")).budget, 8);
});

// Refused before anything is written, as collect and serve refuse it: the embedded model dropped every
// synthetic episode ("1920 synthetic (128 episodes dropped)", score 0, exit 0, a run folder).
test("train refuses an empty buffer where a local experience model would play from it, and takes it where none does", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-train-"));
  const empty = join(root, "empty.db");
  ReplayBuffer.open(empty).close();
  const out = join(root, "run");
  const refusal = (env: string) =>
    `error: buffer ${empty} has no ${env} transitions to ground the embedded model: import offline trajectories first (dreamgym buffer import F.jsonl --buffer ${empty} --abstract)\n`;
  for (const [args, env] of [
    [["--mode", "dreamgym"], "webshop"],
    [["--mode", "dreamgym", "--hybrid"], "webshop"],
    [["--mode", "s2r", "--real-budget", "10"], "webshop"],
    [["--mode", "dreamgym", "--experience", `learned:${join(root, "none.bin")}`], "webshop"], // refused before its file is read
    [["--env", "alfworld", "--mode", "dreamgym"], "alfworld"], // ALFWorld's own model learns from them
  ] as const) {
    const r = await runInProcess(["train", ...args, "--buffer", empty, "--out", out]);
    assert.deepEqual({ status: r.status, stderr: r.stderr }, { status: 2, stderr: refusal(env) }, args.join(" "));
    assert.ok(!existsSync(out), "no run folder");
  }
  // A chat model plays without them (a cold start): what stops this one is the next check, the endpoint.
  const chat = await runInProcess(["train", "--mode", "dreamgym", "--experience", "http://127.0.0.1:9/v1#m", "--buffer", empty, "--out", out]);
  assert.equal(chat.status, 2);
  assert.match(chat.stderr, /^error: LLM endpoint does not answer: .*\(http:\/\/127\.0\.0\.1:9\/v1\/models\)\n$/);
  // Real mode reads nothing of it: the run trains.
  const real = run([
    "train",
    "--mode",
    "real",
    "--buffer",
    empty,
    "--budget",
    "10",
    "--tasks-per-iter",
    "1",
    "--group",
    "2",
    "--final-eval-tasks",
    "1",
    "--set",
    "policy.dim=1024",
    "--out",
    out,
  ]);
  assert.equal(real.status, 0, real.stderr);
  assert.match(real.stdout, /webshop real grpo: 1 iterations/);
});

test("train runs on ALFWorld in the real env, with its own default splits", () => {
  const out = join(mkdtempSync(join(tmpdir(), "dreamgym-train-alf-")), "run");
  const r = run([
    "train",
    "--env",
    "alfworld",
    "--budget",
    "100",
    "--tasks-per-iter",
    "2",
    "--group",
    "2",
    "--final-eval-tasks",
    "4",
    "--set",
    "policy.dim=1024",
    "--out",
    out,
  ]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /alfworld real grpo: 1 iterations/);
  assert.match(r.stdout, /final evaluation on 4 valid_unseen tasks/);
  const config = JSON.parse(readFileSync(join(out, "config.json"), "utf8"));
  assert.deepEqual([config.trainSplit, config.evalSplit], ["valid_train", "valid_unseen"]);
});
