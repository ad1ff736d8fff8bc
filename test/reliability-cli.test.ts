import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, watch, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BIN, ROOT, run, runInProcess } from "./helpers.ts";

test("--version prints package.json's version", () => {
  const r = run(["--version"]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version);
});

test("env play: an empty Enter spends no step; the prompt counts steps", () => {
  const r = run(["env", "play", "webshop", "--task", "0"], ["search[pillow]", "", "  ", "3", "quit"].join("\n") + "\n");
  assert.equal(r.status, 0, r.stderr);
  const prompts = [...r.stdout.matchAll(/step (\d+)\/15 > /g)].map((m) => Number(m[1]));
  assert.deepEqual(prompts, [1, 2, 2, 2, 3]);
});

test("train: a start that fails removes only what it created, and the folder can be used again", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-start-"));
  const trajectories = join(dir, "o.jsonl");
  assert.equal((await runInProcess(["collect", "--env", "webshop", "--policy", "oracle", "--episodes", "5", "--out", trajectories])).status, 0);
  const seed = join(dir, "seed.db");
  assert.equal((await runInProcess(["buffer", "import", trajectories, "--buffer", seed, "--abstract"])).status, 0);
  // The run folder exists with the user's file and a folder where the run's buffer copy would go: the copy fails.
  const out = join(dir, "run");
  mkdirSync(join(out, "buffer.db"), { recursive: true });
  writeFileSync(join(out, "mine.txt"), "keep\n");
  // The failed starts run in this process: refused before training starts (no thread, lock or signal
  // handler yet), they need no child process's start-up; the run that trains is a process of its own.
  const r = await runInProcess(["train", "--mode", "dreamgym", "--buffer", seed, "--budget", "50", "--out", out]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^error: cannot copy .*buffer\.db.*EISDIR/);
  assert.deepEqual(readdirSync(out).sort(), ["buffer.db", "mine.txt"]);
  // A failed start in a new folder leaves no folder; the same --out then starts (not "already holds a run").
  const fresh = join(dir, "runs", "fresh");
  const bad = await runInProcess(["train", "--mode", "real", "--budget", "50", "--set", `initPolicy=${trajectories}`, "--out", fresh]);
  assert.equal(bad.status, 2);
  assert.equal(existsSync(join(dir, "runs")), false);
  const good = run(["train", "--mode", "real", "--budget", "50", "--tasks-per-iter", "2", "--group", "2", "--final-eval-tasks", "3", "--out", fresh]);
  assert.equal(good.status, 0, good.stderr);
  assert.match(good.stdout, /final evaluation on 3 test tasks/);
});

// Quick commands and a refusal, checked by their output and files: in this process (the same runCli),
// with no child process's start-up each.
test("buffer stats reports the integrity check; collect --append keeps what was there when it fails", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-rel-"));
  const file = join(dir, "o.jsonl");
  assert.equal((await runInProcess(["collect", "--env", "webshop", "--policy", "rule", "--episodes", "3", "--out", file])).status, 0);
  const db = join(dir, "b.db");
  assert.equal((await runInProcess(["buffer", "import", file, "--buffer", db])).status, 0);
  const s = await runInProcess(["buffer", "stats", "--buffer", db, "--json"]);
  assert.equal(s.status, 0, s.stderr);
  assert.equal(JSON.parse(s.stdout).integrity, "ok");
  // A failing append (a bad option value is caught before; an unknown policy after the file is checked) leaves the file as it was.
  const before = readFileSync(file, "utf8");
  const r = await runInProcess(["collect", "--env", "webshop", "--policy", "nobody", "--episodes", "3", "--out", file, "--append"]);
  assert.equal(r.status, 2);
  assert.equal(readFileSync(file, "utf8"), before);
});

test("collect --append: a torn last line is cut off, and said, before the new records; a file that is not trajectory JSONL is refused, untouched", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-append-"));
  const collect = (out: string, episodes: number, ...rest: string[]) =>
    runInProcess(["collect", "--env", "webshop", "--policy", "rule", "--episodes", String(episodes), "--out", out, ...rest]);
  const whole = join(dir, "whole.jsonl");
  assert.equal((await collect(whole, 3)).status, 0);
  const records = readFileSync(whole);
  // Two whole records, then what a killed append leaves: the start of a record, no line end.
  const kept = records.subarray(0, records.indexOf(10, records.indexOf(10) + 1) + 1);
  const torn = join(dir, "torn.jsonl");
  writeFileSync(torn, Buffer.concat([kept, records.subarray(0, 300)]));
  const r = await collect(torn, 2, "--append");
  assert.equal(r.status, 0, r.stderr);
  assert.equal(
    r.stderr,
    `warning: ${torn}: a torn last line (300 bytes from byte ${kept.length}, no line end: an interrupted write's) was cut off before appending\n`,
  );
  const after = readFileSync(torn);
  assert.ok(after.subarray(0, kept.length).equals(kept), "the whole records stay as they were");
  const lines = after.toString("utf8").split("\n");
  assert.equal(lines.pop(), "");
  assert.deepEqual(
    lines.map((l) => JSON.parse(l).env),
    ["webshop", "webshop", "webshop", "webshop"],
  );

  // A last record that only lacks its newline is whole: it gets one, and nothing is cut or said.
  const unended = join(dir, "unended.jsonl");
  writeFileSync(unended, kept.subarray(0, kept.length - 1));
  const u = await collect(unended, 1, "--append");
  assert.equal(u.status, 0, u.stderr);
  assert.equal(u.stderr, "");
  assert.ok(readFileSync(unended).subarray(0, kept.length).equals(kept));
  assert.equal(readFileSync(unended, "utf8").trimEnd().split("\n").length, 3);

  // Not trajectory JSONL: refused before anything is played, the file's bytes as they were.
  const elf = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(200), Buffer.from("\n[1]\n")]);
  const refused: [string, Buffer | string, string][] = [
    ["ls", elf, "not a text file (binary bytes)"],
    ["arrays.jsonl", "[1,2,3]\n[4]\n", "its last line (from byte 8) is not a trajectory: expected a JSON object"],
    ["objects.jsonl", '{"a":1}\n', 'its last line (from byte 0) is not a trajectory: "env" must be a non-empty string'],
    ["fragment.jsonl", records.subarray(0, 300), "no whole line in it (300 bytes with no line end)"],
    ["array-unended.jsonl", Buffer.concat([kept, Buffer.from("[1]")]), `its last line (from byte ${kept.length}) is not a trajectory: expected a JSON object`],
  ];
  for (const [name, bytes, why] of refused) {
    const file = join(dir, name);
    writeFileSync(file, bytes);
    const before = readFileSync(file);
    const x = await collect(file, 2, "--append");
    assert.equal(x.status, 2, name);
    assert.equal(x.stderr, `error: ${file}: ${why}; --append adds to a trajectory JSONL file: choose another --out, or drop --append to replace the file\n`);
    assert.equal(x.stdout, "");
    assert.ok(readFileSync(file).equals(before), `${name} is unchanged`);
  }
  assert.deepEqual(readdirSync(dir).sort(), [
    "array-unended.jsonl",
    "arrays.jsonl",
    "fragment.jsonl",
    "ls",
    "objects.jsonl",
    "torn.jsonl",
    "unended.jsonl",
    "whole.jsonl",
  ]);
});

test("train stopped with SIGINT exits 130 at once, says where the run stands and how to go on, and leaves no lock", { timeout: 120_000 }, async () => {
  const out = join(mkdtempSync(join(tmpdir(), "dreamgym-train-int-")), "run");
  const args = ["train", "--env", "webshop", "--mode", "real", "--budget", "1000000", "--tasks-per-iter", "2", "--group", "2"];
  const child = spawn(process.execPath, [BIN, ...args, "--eval-every", "0", "--checkpoint-every", "1", "--final-eval-tasks", "1", "--out", out], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  let code: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => child.on("close", (c) => resolve((code = c))));
  // Signal once the run has checkpointed (polled: the folder is made by the child), unless it ended first.
  while (!existsSync(join(out, "checkpoints", "latest.json"))) {
    assert.equal(code, undefined, `train ended before its first checkpoint: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  child.kill("SIGINT");
  assert.equal(await exited, 130, stderr);
  const at = JSON.parse(readFileSync(join(out, "checkpoints", "latest.json"), "utf8")).iteration;
  assert.ok(at >= 1);
  const last = stderr
    .split(/[\r\n]/)
    .filter((l) => l.trim() !== "")
    .at(-1);
  assert.equal(last, `stopped by SIGINT: the run is kept to its checkpoint of iteration ${at}; continue it with dreamgym train --resume ${out}`);
  assert.equal(existsSync(join(out, "run.lock")), false, "the lock is released");
  assert.ok(existsSync(join(out, "config.json")));
});

test("collect stopped with SIGINT keeps the episodes it played, whole, and leaves no temporary file (issue 34, item 17)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-collect-int-"));
  const out = join(dir, "o.jsonl");
  const child = spawn(process.execPath, [BIN, "collect", "--env", "webshop", "--policy", "random", "--episodes", "1000000", "--out", out], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  // Signal once the output holds a few episodes (its temporary file, beside it).
  const tmp = `${out}.${child.pid}.tmp`;
  await new Promise<void>((resolve) => {
    const watcher = watch(dir, () => {
      if (existsSync(tmp) && statSync(tmp).size > 20_000) {
        watcher.close();
        resolve();
      }
    });
  });
  child.kill("SIGINT");
  assert.equal(await exited, 130);
  assert.deepEqual(readdirSync(dir), ["o.jsonl"]);
  const lines = readFileSync(out, "utf8").trimEnd().split("\n");
  assert.ok(lines.length >= 1);
  for (const l of lines) assert.equal(JSON.parse(l).env, "webshop");
  assert.match(stderr, new RegExp(`stopped by SIGINT after ${lines.length} of 1000000 episodes`));
});

test("NaN stops training: a diverging run exits 2 in one line, and a checkpoint holding NaN is refused (issue 34, item 2)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-nan-"));
  const T = [
    "train",
    "--env",
    "webshop",
    "--mode",
    "real",
    "--budget",
    "600",
    "--tasks-per-iter",
    "4",
    "--group",
    "2",
    "--checkpoint-every",
    "2",
    "--eval-every",
    "0",
    "--final-eval-tasks",
    "5",
  ];
  const diverged = run([...T, "--set", "grpo.learningRate=1e300", "--out", join(dir, "diverged")]);
  assert.equal(diverged.status, 2);
  assert.match(diverged.stderr, /^error: training diverged at iteration \d+: policyLoss NaN.*has no checkpoint yet/);
  assert.equal(diverged.stderr.trim().split("\n").length, 1);
  assert.ok(!existsSync(join(dir, "diverged", "summary.json")));
  // A good run's checkpoint with NaN written into its parameters: a resume and an initPolicy refuse it.
  const good = join(dir, "good");
  assert.equal(run([...T, "--out", good]).status, 0);
  const latest = JSON.parse(readFileSync(join(good, "checkpoints", "latest.json"), "utf8")) as { policyFile: string };
  const file = join(good, "checkpoints", latest.policyFile);
  const bytes = readFileSync(file);
  bytes.writeFloatLE(Number.NaN, bytes.length - 4);
  writeFileSync(file, bytes);
  // Both refusals run in this process: refused before training starts (the resume takes the run's lock
  // and gives it back; no thread here, with no KL reference), they need no child process's start-up.
  const resumed = await runInProcess(["train", "--resume", good, "--budget", "1200"]);
  assert.equal(resumed.status, 2, resumed.stderr);
  assert.match(resumed.stderr, /holds parameters that are not finite numbers/);
  const init = await runInProcess([...T, "--set", `initPolicy=${file}`, "--out", join(dir, "from-nan")]);
  assert.equal(init.status, 2);
  assert.match(init.stderr, /holds parameters that are not finite numbers/);
});

test("a run still training is not resumed by a second process; once its process is gone, the resume goes on (issue 34, item 1)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-lock-"));
  const out = join(dir, "run");
  const first = spawn(
    process.execPath,
    [
      BIN,
      "train",
      "--env",
      "webshop",
      "--mode",
      "real",
      "--budget",
      "3000",
      "--tasks-per-iter",
      "4",
      "--group",
      "2",
      "--checkpoint-every",
      "1",
      "--eval-every",
      "0",
      "--final-eval-tasks",
      "5",
      "--out",
      out,
    ],
    { stdio: "ignore" },
  );
  const exited = new Promise<void>((resolve) => first.on("close", () => resolve()));
  // Once it has written a checkpoint it is training: frozen there (SIGSTOP), it holds the run.
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      if (!existsSync(join(out, "checkpoints", "latest.json"))) return;
      clearInterval(timer);
      first.kill("SIGSTOP");
      resolve();
    }, 5);
  });
  const before = readFileSync(join(out, "metrics.jsonl"), "utf8");
  const second = run(["train", "--resume", out]);
  assert.equal(second.status, 2);
  assert.match(second.stderr, new RegExp(`is being trained by process ${first.pid} now`));
  assert.equal(readFileSync(join(out, "metrics.jsonl"), "utf8"), before, "the refused resume changed nothing");
  first.kill("SIGKILL");
  await exited;
  assert.ok(existsSync(join(out, "run.lock")), "a killed process leaves its lock");
  const resumed = run(["train", "--resume", out]);
  assert.equal(resumed.status, 0, resumed.stderr);
  assert.ok(!existsSync(join(out, "run.lock")), "released at the end");
});

test("demo finds its data before any work: a missing data folder is one line, exit 2, and no demo folder", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-demo-nodata-"));
  const out = join(root, "demo");
  const missing = join(root, "no-data");
  const saved = process.env.DREAMGYM_DATA;
  process.env.DREAMGYM_DATA = missing;
  try {
    const r = await runInProcess(["demo", "--out", out]);
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, new RegExp(`^error: data folder not found \\(looked in ${missing}; from DREAMGYM_DATA\\)\\. [^\\n]*\\n$`));
    assert.equal(existsSync(out), false, "no demo folder");
  } finally {
    if (saved === undefined) delete process.env.DREAMGYM_DATA;
    else process.env.DREAMGYM_DATA = saved;
  }
});
