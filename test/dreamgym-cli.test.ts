import { test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { chatServer } from "../src/testing/index.ts";
import { killAfterCheckpoint, metricsOf, run, runAsync, runInProcess } from "./helpers.ts";

/** Synthetic trajectories per iteration label, and transitions in all. */
function bufferContent(dir: string) {
  const db = new Database(dir.endsWith(".db") ? dir : existsSync(join(dir, "buffer.db")) ? join(dir, "buffer.db") : join(dir, "seed.db"), { readonly: true });
  const rows = db.prepare("SELECT policy, count(*) AS n, sum(n_steps) AS steps FROM trajectories WHERE source = 'synthetic' GROUP BY policy").all() as {
    policy: string;
    n: number;
    steps: number;
  }[];
  const transitions = (db.prepare("SELECT count(*) AS n FROM transitions").get() as { n: number }).n;
  db.close();
  return { byIteration: Object.fromEntries(rows.map((r) => [r.policy.split("#")[1], [r.n, r.steps]])), transitions };
}

test("dreamgym mode trains in the synthetic env; killed with SIGKILL and resumed, the buffer has nothing lost or duplicated", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-dg-"));
  for (const [policy, n] of [
    ["oracle", "60"],
    ["random", "30"],
  ]) {
    const r = await runInProcess([
      "collect",
      "--env",
      "webshop",
      "--policy",
      policy,
      "--episodes",
      n,
      "--split",
      "train",
      "--out",
      join(root, `${policy}.jsonl`),
    ]);
    assert.equal(r.status, 0, r.stderr);
  }
  const imp = await runInProcess(["buffer", "import", join(root, "oracle.jsonl"), join(root, "random.jsonl"), "--abstract", "--buffer", join(root, "seed.db")]);
  assert.equal(imp.status, 0, imp.stderr);
  const ARGS = [
    "train",
    "--env",
    "webshop",
    "--mode",
    "dreamgym",
    "--hybrid",
    "--buffer",
    join(root, "seed.db"),
    "--budget",
    "3000",
    "--seed",
    "5",
    "--tasks-per-iter",
    "4",
    "--group",
    "4",
    "--concurrency",
    "2",
    "--eval-every",
    "0",
    "--final-eval-tasks",
    "20",
    "--checkpoint-every",
    "2",
    "--set",
    "policy.dim=4096",
    "--set",
    "bufferCapacity=400",
  ];
  const whole = join(root, "whole");
  const r = run([...ARGS, "--out", whole]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /webshop dreamgym grpo: \d+ iterations, 0 real interactions/);
  const metrics = metricsOf(whole);
  const last = metrics.at(-1)!;
  assert.equal(last.realInteractions, 0);
  assert.ok((last.syntheticInteractions as number) >= 3000);
  assert.ok((last.evalInteractions as number) > 0, "the final evaluation ran in the real env");
  // The on-policy audit ran (its real steps counted apart) and is part of what the resume below must repeat.
  const audited = metrics.filter((m) => m.onPolicyAudit);
  assert.ok(audited.length >= 2 && (last.auditInteractions as number) > 0, `${audited.length} audits, ${last.auditInteractions} audit steps`);
  assert.equal(
    last.auditInteractions,
    audited.reduce((n, m) => n + (m.onPolicyAudit as { steps: number }).steps, 0),
  );
  // The same audit of the finished run, from its buffer.
  const table = run(["audit", "--run", whole, "--episodes", "4"]);
  assert.equal(table.status, 0, table.stderr);
  assert.match(
    table.stdout,
    /^iteration\s+episodes\s+return syn\/real\s+gap\s+success syn\/real\s+agreement\s+exploitation\s+order agree \(pairs\)\s+adv\. corr/m,
  );
  assert.match(table.stdout, /^all\s+\d+\s+\d\.\d{3}\/\d\.\d{3}/m);
  assert.ok(metrics.every((m) => m.phase === "synthetic"));
  // The buffer grew with the kept episodes, labelled by iteration, and was trimmed to the seed + 400
  // synthetic transitions at checkpoints (so the oldest iterations are gone).
  const content = bufferContent(whole);
  const seedTransitions = bufferContent(join(root)).transitions;
  assert.ok(Object.keys(content.byIteration).length < metrics.length, "old synthetic episodes were evicted");
  assert.ok(content.transitions - seedTransitions <= 400 + 300, `${content.transitions - seedTransitions} synthetic transitions kept`);
  // The seed buffer itself is untouched.
  const seedDb = new Database(join(root, "seed.db"), { readonly: true });
  assert.equal((seedDb.prepare("SELECT count(*) AS n FROM trajectories WHERE source = 'synthetic'").get() as { n: number }).n, 0);
  seedDb.close();

  const killed = join(root, "killed");
  await killAfterCheckpoint(ARGS, killed, 2);
  assert.ok(!existsSync(join(killed, "summary.json")), "killed before the end");
  const resumed = run(["train", "--resume", killed]);
  assert.equal(resumed.status, 0, resumed.stderr);
  assert.deepEqual(metricsOf(killed), metrics);
  assert.deepEqual(bufferContent(killed), content);
  // The audited episodes kept for dreamgym view: the same files, byte for byte, one per audited iteration.
  const auditOf = (dir: string) => Object.fromEntries(readdirSync(join(dir, "audit")).map((f) => [f, readFileSync(join(dir, "audit", f), "utf8")]));
  assert.equal(Object.keys(auditOf(whole)).length, audited.length);
  assert.deepEqual(auditOf(killed), auditOf(whole));
});

test("a reasoning model that keeps failing on some tasks: those episodes are dropped and counted, the run goes on", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-dg-llm-"));
  const r0 = await runInProcess(["collect", "--env", "webshop", "--policy", "oracle", "--episodes", "20", "--split", "train", "--out", join(root, "o.jsonl")]);
  assert.equal(r0.status, 0, r0.stderr);
  assert.equal((await runInProcess(["buffer", "import", join(root, "o.jsonl"), "--abstract", "--buffer", join(root, "seed.db")])).status, 0);
  // Tasks whose instruction has an even length get malformed output on every attempt; the others
  // end the episode at once with reward 0.5 (the curriculum's task generator gets no valid tasks).
  const s = await chatServer({
    reply: (body) => {
      const messages = body.messages as { role: string; content: string }[];
      const task = /^Task: (.*)$/m.exec(messages[1]?.content ?? "")?.[1];
      if (!task || task.length % 2 === 0) return "I cannot answer that";
      return JSON.stringify({ reasoning: "bought", next_state: "page: done\ninstruction: \nbought B000000000\nscore: 0.5", reward: 0.5, terminated: true });
    },
  });
  try {
    const dir = join(root, "run");
    const r = await runAsync([
      "train",
      "--mode",
      "dreamgym",
      "--experience",
      `${s.url}#tiny`,
      "--buffer",
      join(root, "seed.db"),
      "--budget",
      "40",
      "--tasks-per-iter",
      "4",
      "--group",
      "2",
      "--concurrency",
      "2",
      "--eval-every",
      "0",
      "--final-eval-tasks",
      "5",
      "--set",
      "policy.dim=1024",
      "--out",
      dir,
    ]);
    assert.equal(r.status, 0, r.stderr);
    const metrics = metricsOf(dir);
    const last = metrics.at(-1)!;
    assert.ok((last.droppedEpisodes as number) > 0, "some episodes were dropped");
    assert.ok((last.droppedEpisodes as number) < metrics.reduce((a, m) => a + (m.episodes as number), 0), "not all of them");
    assert.ok((last.tokens as number) > 0, "tokens are counted");
    assert.match(r.stdout, /\d+ episodes dropped/);
    // Only kept episodes reached the buffer.
    const kept = metrics.reduce(
      (a, m, i) => a + (m.episodes as number) - ((m.droppedEpisodes as number) - (i > 0 ? (metrics[i - 1].droppedEpisodes as number) : 0)),
      0,
    );
    const db = new Database(join(dir, "buffer.db"), { readonly: true });
    const stored = (db.prepare("SELECT count(*) AS n FROM trajectories WHERE source = 'synthetic'").get() as { n: number }).n;
    db.close();
    assert.ok(stored > 0 && stored <= kept, `${stored} stored of ${kept} kept`);
  } finally {
    await s.close();
  }
});

test("s2r trains in the synthetic env, then the real one; configs that cannot run are refused before anything is written", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-s2r-"));
  assert.equal((await runInProcess(["collect", "--env", "webshop", "--policy", "oracle", "--episodes", "30", "--out", join(root, "o.jsonl")])).status, 0);
  assert.equal((await runInProcess(["buffer", "import", join(root, "o.jsonl"), "--abstract", "--buffer", join(root, "seed.db")])).status, 0);
  const dir = join(root, "s2r");
  const r = run([
    "train",
    "--mode",
    "s2r",
    "--hybrid",
    "--buffer",
    join(root, "seed.db"),
    "--budget",
    "600",
    "--real-budget",
    "600",
    "--tasks-per-iter",
    "4",
    "--group",
    "2",
    "--eval-every",
    "0",
    "--final-eval-tasks",
    "10",
    "--set",
    "policy.dim=1024",
    "--out",
    dir,
  ]);
  assert.equal(r.status, 0, r.stderr);
  const metrics = metricsOf(dir);
  const phases = metrics.map((m) => m.phase);
  assert.ok(phases.indexOf("real") > 0 && phases.lastIndexOf("synthetic") < phases.indexOf("real"), phases.join(","));
  assert.ok((metrics.at(-1)!.realInteractions as number) >= 600 && (metrics.at(-1)!.syntheticInteractions as number) >= 600);

  // The same S2R as a DreamGym run that goes on in the real env: `--resume DIR --mode s2r --real-budget N`.
  const dg = join(root, "dg");
  const common = [
    "--hybrid",
    "--buffer",
    join(root, "seed.db"),
    "--budget",
    "600",
    "--tasks-per-iter",
    "4",
    "--group",
    "2",
    "--eval-every",
    "0",
    "--final-eval-tasks",
    "10",
    "--set",
    "policy.dim=1024",
  ];
  assert.equal(run(["train", "--mode", "dreamgym", ...common, "--out", dg]).status, 0);
  // The refusals below run in this process (runInProcess): each is refused before anything starts,
  // and a child process would spend ~0.4 s of CPU starting up to print its one error line.
  assert.match((await runInProcess(["train", "--resume", dg, "--mode", "real"])).stderr, /a resumed run can only go on to a real phase/);
  const screened = join(root, "dg-screened");
  cpSync(dg, screened, { recursive: true });
  assert.match((await runInProcess(["train", "--resume", screened, "--real-screen", "2"])).stderr, /a resumed run can only go on to a real phase/);
  const more = run(["train", "--resume", dg, "--mode", "s2r", "--real-budget", "600"]);
  assert.equal(more.status, 0, more.stderr);
  const a = JSON.parse(readFileSync(join(dir, "summary.json"), "utf8"));
  const b = JSON.parse(readFileSync(join(dg, "summary.json"), "utf8"));
  assert.deepEqual(
    [b.config.mode, b.realInteractions, b.syntheticInteractions, b.final],
    [a.config.mode, a.realInteractions, a.syntheticInteractions, a.final],
    "the same policy, counters and final evaluation as the S2R run",
  );
  // With --real-screen 2 each real iteration first plays 2 × 4 candidate tasks in the synthetic env (counted as synthetic steps);
  // --real-batch-advantage sets GRPO's batch term of the real phase, kept in the config.
  assert.match(
    (await runInProcess(["train", "--resume", screened, "--mode", "s2r", "--real-budget", "600", "--real-batch-advantage", "-1"])).stderr,
    /^error: --real-batch-advantage must be a number in \[0, 100\], got "-1"$/m,
  );
  const s = run(["train", "--resume", screened, "--mode", "s2r", "--real-budget", "600", "--real-screen", "2", "--real-batch-advantage", "1"]);
  assert.equal(s.status, 0, s.stderr);
  const realPhase = metricsOf(screened).filter((m) => m.phase === "real") as { screen?: { candidates: number; steps: number } }[];
  assert.ok(realPhase.length > 0 && realPhase.every((m) => m.screen?.candidates === 8 && m.screen.steps > 0));
  const c = JSON.parse(readFileSync(join(screened, "summary.json"), "utf8"));
  assert.equal(c.config.realScreen, 2);
  assert.equal(c.config.realBatchAdvantage, 1);
  assert.equal(c.syntheticInteractions, b.syntheticInteractions + realPhase.reduce((n, m) => n + m.screen!.steps, 0));

  // `--resume DIR --budget N` extends a run: 300 synthetic steps taken on to 600 end where a run of 600
  // from the start ends (its buffer trimmed at the same iterations: a capacity small enough to matter).
  const budgeted = (n: string) => common.map((a, i) => (common[i - 1] === "--budget" ? n : a)).concat("--set", "bufferCapacity=10");
  const whole = join(root, "dg-whole");
  const extended = join(root, "dg-extended");
  assert.equal(run(["train", "--mode", "dreamgym", ...budgeted("600"), "--out", whole]).status, 0);
  assert.equal(run(["train", "--mode", "dreamgym", ...budgeted("300"), "--out", extended]).status, 0);
  const shortRun = metricsOf(extended).length;
  // It stopped between scheduled checkpoints (every 5 iterations), where the run of 600 does not trim: nor does it.
  assert.ok(shortRun % 5 !== 0, `${shortRun} iterations`);
  assert.ok(bufferContent(extended).transitions - bufferContent(root).transitions > 10, "its buffer is not trimmed to the capacity yet");
  assert.match(
    (await runInProcess(["train", "--resume", extended, "--budget", "300"])).stderr,
    /--budget extends a resumed real, dreamgym or s2r run .* to more steps than its budget: this run's budget is 300$/m,
  );
  // A resume that fails before it starts (here: no data) changes nothing: the same command works once the data is back.
  // (A binary: the data folder is the child's environment, DREAMGYM_DATA.)
  const noData = run(["train", "--resume", extended, "--budget", "600"], undefined, { ...process.env, DREAMGYM_DATA: join(root, "no-data") });
  assert.equal(noData.status, 2, noData.stderr);
  assert.equal(JSON.parse(readFileSync(join(extended, "config.json"), "utf8")).budget, 300);
  const longer = run(["train", "--resume", extended, "--budget", "600"]);
  assert.equal(longer.status, 0, longer.stderr);
  const trace = (d: string) =>
    metricsOf(d).map(({ iteration, steps, meanReward, entropy, policyLoss, syntheticInteractions }) => ({
      iteration,
      steps,
      meanReward,
      entropy,
      policyLoss,
      syntheticInteractions,
    }));
  assert.ok(metricsOf(extended).length > shortRun, "it went on past 300 steps");
  assert.deepEqual(trace(extended), trace(whole));
  const [w, e] = [whole, extended].map((d) => JSON.parse(readFileSync(join(d, "summary.json"), "utf8")));
  assert.deepEqual([e.config.budget, e.syntheticInteractions, e.final], [600, w.syntheticInteractions, w.final]);
  assert.deepEqual(bufferContent(extended), bufferContent(whole), "the same synthetic episodes kept");
  // An s2r run whose real phase has begun cannot go back to the synthetic env.
  assert.match((await runInProcess(["train", "--resume", dg, "--budget", "5000"])).stderr, /this s2r run's real phase has begun/);
  // Nor does a real budget that does not extend its real phase, or a screening or batch term other than its real steps were played with:
  // refused, config.json untouched (a no-op resume wrote settings never used).
  const dgConfig = readFileSync(join(dg, "config.json"), "utf8");
  for (const budget of ["100", "600"]) {
    const x = await runInProcess(["train", "--resume", dg, "--mode", "s2r", "--real-budget", budget, "--real-screen", "4", "--real-batch-advantage", "2"]);
    assert.equal(x.status, 2, x.stderr);
    assert.match(
      x.stderr,
      /^error: --real-budget extends a resumed s2r run's real phase .*: this run's real budget is 600 \(to go on as it is: --resume .* alone\)\n$/,
    );
  }
  assert.equal(readFileSync(join(dg, "config.json"), "utf8"), dgConfig);
  assert.match(
    (await runInProcess(["train", "--resume", screened, "--mode", "s2r", "--real-budget", "5000", "--real-screen", "1", "--real-batch-advantage", "1"])).stderr,
    /^error: --real-screen cannot change once an s2r run's real phase has begun \(this run's: --real-screen 2\): drop it\n$/,
  );
  assert.match(
    (await runInProcess(["train", "--resume", dg, "--mode", "s2r", "--real-budget", "5000", "--real-screen", "2", "--real-batch-advantage", "1"])).stderr,
    /^error: --real-screen and --real-batch-advantage cannot change .* \(this run's: --real-screen 1, no --real-batch-advantage\): drop them\n$/,
  );
  const refuse = async (args: string[], message: RegExp) => {
    const out = join(root, `refused-${Math.random().toString(36).slice(2)}`);
    const x = await runInProcess(["train", ...args, "--out", out]);
    assert.equal(x.status, 2, x.stderr);
    assert.match(x.stderr, message);
    assert.ok(!existsSync(out), "nothing written");
  };
  await refuse(["--mode", "s2r", "--buffer", join(root, "seed.db"), "--budget", "10"], /realBudget: mode s2r needs real steps/);
  await refuse(["--mode", "real", "--real-budget", "10"], /realBudget: only mode s2r has a real phase/);
  await refuse(
    ["--env", "alfworld", "--mode", "dreamgym", "--buffer", join(root, "seed.db"), "--set", "trainSplit=valid_train", "--set", "evalSplit=valid_unseen"],
    /seed\.db holds webshop trajectories, not alfworld/,
  );
  await refuse(["--mode", "real", "--set", "initPolicy=/nope.policy", "--budget", "10"], /initPolicy \/nope\.policy does not exist/);
});
