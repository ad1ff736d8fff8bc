// The webarena commands as a user runs them (bin/dreamgym in a child process); the quick commands and the
// refusals, checked by their output, status and files, run in this process (no child to start).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chatServer } from "../src/testing/index.ts";
import { ROOT, run, runAsync, runInProcess } from "./helpers.ts";

const DATA = process.env.DREAMGYM_DATA ?? join(ROOT, "..", "shared", "data");

test("dreamgym webarena tasks: counts; a malformed task file is one line naming the file and the field, exit 2", async () => {
  const ok = await runInProcess(["webarena", "tasks", "--split", "lite", "--data", DATA]);
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /^165 tasks in webarena split lite\n  shopping: 45\n  shopping_admin: 35\n/);
  const dir = mkdtempSync(join(tmpdir(), "webarena-cli-"));
  try {
    mkdirSync(join(dir, "webarena"));
    const tasks = JSON.parse(readFileSync(join(DATA, "webarena", "test_webarena_lite.raw.json"), "utf8")) as Record<string, any>[];
    tasks[40].eval.program_html = [{ url: "last", required_contents: { must_include: ["x"] } }]; // no locator
    tasks[40].eval.eval_types = ["program_html"];
    const file = join(dir, "webarena", "test_webarena_lite.raw.json");
    writeFileSync(file, JSON.stringify(tasks));
    const bad = await runInProcess(["webarena", "tasks", "--split", "lite", "--data", dir]);
    assert.equal(bad.status, 2);
    assert.equal(bad.stdout, "");
    const lines = bad.stderr.trim().split("\n");
    assert.equal(lines.length, 1, bad.stderr);
    assert.match(lines[0], new RegExp(`${file.replace(/[.]/g, "\\.")}: task \\[40\\] \\(task_id 40\\) eval\\.program_html\\.0\\.locator: `));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("dreamgym webarena import-traces, then buffer import: the published traces in a buffer", async () => {
  const dir = mkdtempSync(join(tmpdir(), "webarena-cli-"));
  try {
    const out = join(dir, "traces.jsonl");
    // The file's one binary run of a webarena command (the train below is train's).
    const r = run(["webarena", "import-traces", join(ROOT, "test", "fixtures", "webarena-traces"), "--out", out, "--data", DATA, "--policy", "gpt-4-cot"]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^2 trajectories \(1 passed\), 5 steps → /);
    assert.match(r.stdout, /skipped .*render_5\.html: no \[Result\] line for task 5/);
    const lines = readFileSync(out, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { policy: string });
    assert.deepEqual(
      lines.map((l) => l.policy),
      ["gpt-4-cot", "gpt-4-cot"],
    );
    const b = await runInProcess(["buffer", "import", out, "--buffer", join(dir, "b.db")]);
    assert.equal(b.status, 0, b.stderr);
    assert.match(b.stdout + b.stderr, /2 trajectories|added 2|2 added/);
    const missing = await runInProcess(["webarena", "import-traces", join(dir, "nope"), "--out", join(dir, "x.jsonl")]);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr.trim(), /nope: not a folder/);
    assert.equal(existsSync(join(dir, "x.jsonl")), false);
    // A folder with its log and no trace, or with no trace that can be imported, is refused too: one line, no file.
    const fixtures = join(ROOT, "test", "fixtures", "webarena-traces");
    for (const [name, traces, message] of [
      ["log-only", [], "no render_<id>.html trace: give a WebArena result folder"],
      ["unmatched", ["render_5.html"], "its one trace cannot be imported (render_5.html: no [Result] line for task 5 in "],
    ] as const) {
      const folder = join(dir, name);
      mkdirSync(folder);
      for (const f of ["merged_log.txt", ...traces]) writeFileSync(join(folder, f), readFileSync(join(fixtures, f)));
      const r = await runInProcess(["webarena", "import-traces", folder, "--out", join(dir, "x.jsonl"), "--data", DATA]);
      assert.equal(r.status, 2, r.stderr);
      assert.equal(r.stdout, "");
      assert.ok(r.stderr.startsWith(`error: ${folder}: ${message}`) && r.stderr.split("\n").length === 2, r.stderr);
      assert.equal(existsSync(join(dir, "x.jsonl")), false);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("dreamgym train --mode dreamgym --env webarena --cold-start --synthetic-only over a local OpenAI-protocol server", async () => {
  const server = await chatServer({
    reply: (body) => {
      const schema = (body.response_format as { json_schema?: { name?: string } } | undefined)?.json_schema?.name;
      if (schema === "task_variations") return JSON.stringify({ tasks: [] });
      const user = (body.messages as { role: string; content: string }[])[1].content;
      const stop = /\nAction: stop/.test(user);
      return JSON.stringify({ reasoning: "r", next_state: 'url: __GITLAB__/\ntitle: Projects\n[1] link "Projects"', reward: 0, terminated: stop });
    },
  });
  const dir = mkdtempSync(join(tmpdir(), "webarena-cli-"));
  try {
    const out = join(dir, "run");
    const r = await runAsync([
      "train",
      "--mode",
      "dreamgym",
      "--env",
      "webarena",
      "--experience",
      `${server.url}#m`,
      "--cold-start",
      "--synthetic-only",
      "--budget",
      "12",
      "--tasks-per-iter",
      "2",
      "--group",
      "2",
      "--concurrency",
      "1",
      "--set",
      "maxSteps=3",
      "--set",
      "policy.dim=4096",
      "--out",
      out,
      "--data",
      DATA,
    ]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /webarena dreamgym grpo: \d+ iterations, 0 real interactions, \d+ synthetic/);
    assert.match(r.stdout, /no evaluation \(synthetic only\)/);
    assert.ok(existsSync(join(out, "buffer.db")));
    // A refusal (exit 2, one line): in-process.
    const noFlag = await runInProcess([
      "train",
      "--mode",
      "dreamgym",
      "--env",
      "webarena",
      "--experience",
      `${server.url}#m`,
      "--out",
      join(dir, "run2"),
      "--data",
      DATA,
    ]);
    assert.equal(noFlag.status, 2);
    assert.match(noFlag.stderr.trim(), /--cold-start/);
    assert.equal(noFlag.stderr.trim().split("\n").length, 1);
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
