import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReplayBuffer } from "../src/buffer/index.ts";
import { makeTrajectory } from "../src/testing/index.ts";
import { run, runInProcess } from "./helpers.ts";

test("buffer import / stats / search / export from the command line", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-buffer-cli-"));
  const data = join(dir, "oracle.jsonl");
  const db = join(dir, "b.db");
  assert.equal((await runInProcess(["collect", "--env", "webshop", "--policy", "oracle", "--episodes", "30", "--out", data])).status, 0);
  writeFileSync(data, readFileSync(data, "utf8") + "{broken line\n");
  // The file's one run of the binary for the buffer commands (the rest run in this process): an import.
  const imp = run(["buffer", "import", data, "--buffer", db, "--few-shot"]);
  assert.equal(imp.status, 0, imp.stderr);
  assert.match(imp.stdout, /30 trajectories added \(\d+ transitions\), 0 already present, 1 malformed lines/);
  assert.match(imp.stdout, /line 31: malformed line|line 31: /);
  assert.match(imp.stdout, /alfworld\.json: 24 transcripts added/);
  assert.match(imp.stdout, /react_trajectories\.jsonl: 500 trajectories added/);
  const again = await runInProcess(["buffer", "import", data, "--buffer", db]);
  assert.match(again.stdout, /0 trajectories added \(0 transitions\), 30 already present/);

  const stats = await runInProcess(["buffer", "stats", "--buffer", db, "--json"]);
  assert.equal(stats.status, 0, stats.stderr);
  const s = JSON.parse(stats.stdout);
  assert.equal(s.trajectories, 30 + 60 + 500);
  assert.deepEqual(
    s.groups.map((g: { env: string }) => g.env),
    ["alfworld", "webshop"],
  );

  // The binary's run of a query command (the other queries run in this process).
  const search = run(["buffer", "search", "click[buy now]", "--buffer", db, "-k", "3", "--env", "webshop", "--json"]);
  assert.equal(search.status, 0, search.stderr);
  const hits = JSON.parse(search.stdout);
  assert.equal(hits.length, 3);
  assert.ok(hits.every((h: { transition: { env: string } }) => h.transition.env === "webshop"));
  assert.equal(hits[0].transition.action.toLowerCase(), "click[buy now]");

  const out = join(dir, "out.jsonl");
  const exp = await runInProcess(["buffer", "export", "--buffer", db, "--out", out, "--env", "alfworld"]);
  assert.match(exp.stdout, /wrote 60 trajectories/);
  assert.equal(readFileSync(out, "utf8").trim().split("\n").length, 60);
});

test("buffer errors: corrupt file, bad source, nothing to import", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-buffer-cli-"));
  const bad = join(dir, "bad.db");
  writeFileSync(bad, "not a database ".repeat(100));
  const r = await runInProcess(["buffer", "stats", "--buffer", bad]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /bad\.db: cannot open buffer: .*not a dreamgym buffer or is corrupt/);
  assert.equal(readFileSync(bad, "utf8"), "not a database ".repeat(100));
  const src = await runInProcess(["buffer", "search", "x", "--buffer", bad, "--source", "fake"]);
  assert.equal(src.status, 2);
  const missing = await runInProcess(["buffer", "import", join(dir, "nope.jsonl"), "--buffer", join(dir, "never.db")]);
  assert.equal(missing.status, 2);
  assert.match(missing.stderr, /nope\.jsonl: no such file to import/);
  assert.equal(existsSync(join(dir, "never.db")), false, "no buffer file is created for a failed import");
  const none = await runInProcess(["buffer", "import", "--buffer", join(dir, "new.db")]);
  assert.equal(none.status, 2);
  assert.match(none.stderr, /give trajectory JSONL files to import, or --few-shot/);
});

test("buffer search shows control and direction characters from the data escaped, never raw (issue 34, item 15)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-buffer-esc-"));
  const data = join(dir, "hostile.jsonl");
  const db = join(dir, "b.db");
  const hostile = "look \u001b[2J\u0000 here \u202eevil";
  const step = {
    observation: `room ${hostile}`,
    action: `open ${hostile}`,
    reward: 1,
    next_observation: `done ${hostile}`,
    terminated: true,
    truncated: false,
  };
  writeFileSync(
    data,
    JSON.stringify({ env: "webshop", task: { id: `t\u001b[31m1`, instruction: "open it" }, steps: [step], total_reward: 1, success: true }) + "\n",
  );
  const imp = await runInProcess(["buffer", "import", data, "--buffer", db]);
  assert.equal(imp.status, 0, imp.stderr);
  const search = await runInProcess(["buffer", "search", "open", "--buffer", db]);
  assert.equal(search.status, 0, search.stderr);
  assert.doesNotMatch(search.stdout, /[\u0000\u001b\u202e]/);
  assert.match(search.stdout, /\\u\{1b\}\[2J\\u\{0\} here \\u\{202e\}evil/);
  assert.match(search.stdout, /task t\\u\{1b\}\[31m1/);
});

test("buffer import takes success from the env's rule and the total from the steps, and says what it set right (issue 34, item 4)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-buffer-trust-"));
  const data = join(dir, "claims.jsonl");
  const db = join(dir, "b.db");
  const step = (reward: number, last: boolean) => ({
    observation: "page",
    action: last ? "click[buy now]" : "search[x]",
    reward,
    next_observation: "next",
    terminated: last,
    truncated: false,
  });
  const t = (id: string, rewards: number[], over: Record<string, unknown>) =>
    JSON.stringify({ env: "webshop", task: { id, instruction: "buy x" }, steps: rewards.map((r, i) => step(r, i === rewards.length - 1)), ...over });
  writeFileSync(
    data,
    [
      t("claims-success", [0, 0], { total_reward: 0, success: true }),
      t("claims-total", [0, 0], { total_reward: 1 }),
      t("honest", [0, 1], { total_reward: 1, success: true }),
    ].join("\n") + "\n",
  );
  const imp = await runInProcess(["buffer", "import", data, "--buffer", db]);
  assert.equal(imp.status, 0, imp.stderr);
  assert.match(imp.stdout, /2 trajectories imported with a field set right/);
  assert.match(imp.stdout, /line 1: "success" true disagrees with webshop's rule on the total reward 0: false/);
  assert.match(imp.stdout, /line 2: "total_reward" 1 disagrees with its steps' rewards \(sum 0\): recomputed as 0/);
  const stats = JSON.parse((await runInProcess(["buffer", "stats", "--buffer", db, "--json"])).stdout);
  const exported = join(dir, "out.jsonl");
  await runInProcess(["buffer", "export", "--buffer", db, "--out", exported]);
  const back = readFileSync(exported, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { task: { id: string }; success: boolean; total_reward: number });
  assert.deepEqual(back.map((x) => [x.task.id, x.success, x.total_reward]).sort(), [
    ["claims-success", false, 0],
    ["claims-total", false, 0],
    ["honest", true, 1],
  ]);
  assert.equal(stats.trajectories, 3);
});

test("buffer search and export refuse an --env that is neither registered nor in the buffer: one line, exit 2, no file", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-buffer-env-"));
  const db = join(dir, "b.db");
  // A buffer with a user's env ("mine", registered in the process that wrote it, not in this one) beside WebShop's.
  const b = ReplayBuffer.open(db);
  await b.appendTrajectories([0, 1, 2].map((i) => makeTrajectory(i, { env: "webshop" })));
  await b.appendTrajectories([3, 4].map((i) => makeTrajectory(i, { env: "mine" })));
  b.close();
  const refusal =
    'error: unknown environment "nope" (known: webshop, alfworld, webarena, webshop-browser, webshop-pages); register yours with registerEnv() and load it with --env-module <file>; this buffer also holds mine\n';
  const search = await runInProcess(["buffer", "search", "shelf", "--buffer", db, "--env", "nope"]);
  assert.deepEqual(search, { status: 2, stdout: "", stderr: refusal });
  const out = join(dir, "out.jsonl");
  const exp = await runInProcess(["buffer", "export", "--buffer", db, "--out", out, "--env", "nope"]);
  assert.deepEqual(exp, { status: 2, stdout: "", stderr: refusal });
  assert.deepEqual(readdirSync(dir), ["b.db"], "no output file, whole or partial");
  // The env the buffer holds needs no --env-module to be read; a registered env it lacks matches nothing.
  const mine = await runInProcess(["buffer", "export", "--buffer", db, "--out", out, "--env", "mine"]);
  assert.deepEqual(mine, { status: 0, stdout: `wrote 2 trajectories to ${out}\n`, stderr: "" });
  const hits = await runInProcess(["buffer", "search", "shelf", "--buffer", db, "--env", "mine", "--json"]);
  assert.equal(hits.status, 0, hits.stderr);
  assert.ok((JSON.parse(hits.stdout) as { transition: { env: string } }[]).every((h) => h.transition.env === "mine"));
  assert.deepEqual(await runInProcess(["buffer", "search", "shelf", "--buffer", db, "--env", "alfworld"]), {
    status: 0,
    stdout: "no transitions match\n",
    stderr: "",
  });
});

test("buffer import --few-shot from a data folder without the envs' data: the missing-data error, exit 2, no buffer", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-buffer-fewshot-"));
  const empty = join(dir, "empty");
  mkdirSync(empty);
  const data = join(dir, "t.jsonl");
  writeFileSync(data, `${JSON.stringify(makeTrajectory(0, { env: "webshop" }))}\n`);
  const refusal = `error: data folder ${empty}/webshop is missing entirely (expected: react_trajectories.jsonl; data root from --data/dataDir). Get the data pack (WebShop, ALFWorld, WebArena files; see docs/data-formats.md) and pass --data <folder>, set DREAMGYM_DATA=<folder>, or place it at ../shared/data beside the project.\n`;
  for (const files of [[], [data]]) {
    const r = await runInProcess(["buffer", "import", ...files, "--few-shot", "--buffer", join(dir, "b.db"), "--data", empty]);
    assert.deepEqual(r, { status: 2, stdout: "", stderr: refusal }, files.join(" "));
    assert.deepEqual(readdirSync(dir).sort(), ["empty", "t.jsonl"], "no buffer file");
  }
});

test("buffer import of several files into a new buffer that fails at a later file says that nothing is kept, and keeps nothing", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-buffer-later-"));
  const good = join(dir, "good.jsonl");
  const bad = join(dir, "bad.jsonl");
  writeFileSync(good, `${JSON.stringify(makeTrajectory(0, { env: "webshop" }))}\n`);
  writeFileSync(bad, "[1]\n");
  const db = join(dir, "b.db");
  const r = await runInProcess(["buffer", "import", good, bad, "--buffer", db]);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stdout, /good\.jsonl: 1 trajectories added/);
  assert.match(
    r.stderr,
    new RegExp(
      `^error: ${bad}: no line is a trajectory \\(1 malformed; line 1: .*\\); nothing is kept: the new buffer ${db} is removed \\(import again once this is fixed\\)\\n$`,
    ),
  );
  assert.deepEqual(readdirSync(dir).sort(), ["bad.jsonl", "good.jsonl"], "no buffer file");
});
