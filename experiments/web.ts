// `npm run experiment:web`: equal wall time on the browser WebShop (the paper's WebArena setting in
// miniature: real interactions are slow and capped at 4 parallel contexts). Every row of a seed gets
// the same wall-clock budget W, and every row starts the same way, paying for it inside W:
//   - a seed buffer collected once in the browser (oracle + random episodes on train goals, 4
//     contexts) and shared by the seeds: its collection time counts against every row of every seed;
//   - behaviour cloning on its successes (per seed): every RL row starts from it, its time counts;
// then, for the rest of W:
//   - real-env GRPO trained in the browser;
//   - DreamGym: synthetic training with the learned experience model (`dreamgym model train` on the
//     seed buffer: its time counts too), model rewards, no verifier, on the seed buffer's tasks and
//     the curriculum's variations of them (syntheticTasks=seed);
//   - DreamGym-S2R: the same, half the rest synthetic, then GRPO in the browser until W.
// Each row's policy (and the BC start) is evaluated in the browser on the same test goals, and on
// --pages-eval-tasks test goals in webshop-pages (the same pages in-process), neither counted. Training runs are `dreamgym train` in a child process, one at a time (the browser is the
// shared resource); writes results.md into --out.
//
//   npm run experiment:web -- [--seconds 600] [--seeds 3] [--eval-tasks 100] [--pages-eval-tasks 500] [--seed-episodes 120] [--tasks-per-iter 4] [--group 4] [--out runs/experiment-web]
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { episodeTrajectory, JsonlWriter, playEpisodes, type EpisodeJob } from "../src/core/index.ts";
import { importJsonl, ReplayBuffer } from "../src/buffer/index.ts";
import { createPolicy } from "../src/envs/index.ts";
import { createWebShopBrowserEnv, WebShopPagesEnv } from "../src/envs/webshop-site/index.ts";
import { latestPolicyFile } from "../src/train/index.ts";
import { NeuralPolicy } from "../src/rl/index.ts";

const { values: args } = parseArgs({
  options: {
    seconds: { type: "string", default: "600" },
    seeds: { type: "string", default: "3" },
    "eval-tasks": { type: "string", default: "100" },
    "seed-episodes": { type: "string", default: "120" },
    out: { type: "string", default: "runs/experiment-web" },
    /** Small iterations: the wall-clock limit is checked between iterations, and a browser iteration is slow. */
    "tasks-per-iter": { type: "string", default: "4" },
    group: { type: "string", default: "4" },
    /** Test goals of the in-process evaluation (webshop-pages: the browser's pages without Chromium). */
    "pages-eval-tasks": { type: "string", default: "500" },
  },
});
const W = Number(args.seconds);
const seeds = Number(args.seeds);
const evalTasks = args["eval-tasks"]!;
const seedEpisodes = Number(args["seed-episodes"]);
const pagesEvalTasks = Number(args["pages-eval-tasks"]);
const out = args.out!;
const BIN = join(import.meta.dirname, "..", "bin", "dreamgym");
mkdirSync(out, { recursive: true });
const started = performance.now();

/** The seed buffer, collected in the browser over 4 contexts: 2/3 oracle, 1/3 random episodes on train goals. */
async function collectSeed(dir: string): Promise<{ seconds: number; transitions: number; oracleScore: number }> {
  const t0 = performance.now();
  const seed = 0;
  const envs = Array.from({ length: 4 }, () => createWebShopBrowserEnv({ split: "train", contexts: 4, seed }));
  const file = join(dir, "seed.jsonl");
  const writer = new JsonlWriter(file, { append: false });
  let oracleTotal = 0;
  try {
    const tasks = envs[0].tasks();
    const oracleN = Math.round((2 * seedEpisodes) / 3);
    for (const [name, n, offset] of [
      ["oracle", oracleN, 0],
      ["random", seedEpisodes - oracleN, oracleN],
    ] as const) {
      // One policy per env: the oracle reads its own env's goal.
      const jobs: EpisodeJob[] = Array.from({ length: n }, (_, i) => ({
        task: tasks[(seed * 997 + offset + i) % tasks.length],
        rngSeed: seed * 100_000 + offset + i,
      }));
      const share = envs.map((env) => ({ env, policy: createPolicy("webshop-browser", name, env, { seed: seed + offset }) }));
      await Promise.all(
        share.map(async ({ env, policy }, k) => {
          const mine = jobs.filter((_, i) => i % envs.length === k);
          for (const e of await playEpisodes([env], policy, mine)) {
            writer.write(episodeTrajectory(e, { env: "webshop-browser", policy: name }));
            if (name === "oracle") oracleTotal += e.totalReward;
          }
        }),
      );
    }
  } finally {
    writer.close();
    for (const e of envs) await e.close();
  }
  const db = join(dir, "seed.db");
  ReplayBuffer.remove(db);
  const buffer = ReplayBuffer.open(db);
  try {
    await importJsonl(buffer, file, { seed: true }); // browser states already are abstract states
    return { seconds: (performance.now() - t0) / 1000, transitions: buffer.count(), oracleScore: (100 * oracleTotal) / Math.round((2 * seedEpisodes) / 3) };
  } finally {
    buffer.close();
  }
}

function run(argv: string[], what: string): Promise<void> {
  console.log(`  dreamgym ${argv.join(" ")}`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...argv], { stdio: ["ignore", "inherit", "inherit"] });
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`dreamgym exited ${code} (${what})`))));
  });
}

// No on-policy audits: they replay synthetic episodes in the browser, which is not training and would eat the synthetic rows' W.
function train(runDir: string, extra: string[]): Promise<void> {
  if (existsSync(join(runDir, "summary.json"))) return Promise.resolve();
  return run(
    [
      "train",
      "--env",
      "webshop-browser",
      "--concurrency",
      "4",
      "--final-eval-tasks",
      evalTasks,
      "--eval-every",
      "0",
      "--tasks-per-iter",
      args["tasks-per-iter"]!,
      "--group",
      args.group!,
      "--set",
      "onPolicyAudit.every=0",
      "--out",
      runDir,
      ...extra,
    ],
    runDir,
  );
}

/** A run's summary: its final score is already ×100, its success a fraction; `train`: its wall time less the final evaluation's. */
function summaryOf(runDir: string): { score: number; success: number; real: number; synthetic: number; wall: number; train: number } {
  const s = JSON.parse(readFileSync(join(runDir, "summary.json"), "utf8")) as {
    final: { score: number; success: number };
    realInteractions: number;
    syntheticInteractions: number;
    wallSeconds: number;
  };
  const last = JSON.parse(readFileSync(join(runDir, "metrics.jsonl"), "utf8").trim().split("\n").at(-1)!) as { evalSeconds?: number };
  return {
    score: s.final.score,
    success: 100 * s.final.success,
    real: s.realInteractions,
    synthetic: s.syntheticInteractions,
    wall: s.wallSeconds,
    train: s.wallSeconds - (last.evalSeconds ?? 0),
  };
}

/**
 * The run's final policy on the first `pagesEvalTasks` test goals of `webshop-pages` (the browser's
 * pages written in-process: the same states and rewards, tested against Chromium), greedy as the
 * final evaluation: ten times the browser evaluation's goals for seconds, not counted in W.
 */
async function pagesEval(runDir: string): Promise<{ score: number; success: number }> {
  const file = join(runDir, "pages-eval.json");
  if (!existsSync(file)) {
    const env = new WebShopPagesEnv({ split: "test" });
    const policy = new NeuralPolicy();
    const policyFile = latestPolicyFile(runDir);
    policy.load(readFileSync(policyFile), policyFile);
    const tasks = env.tasks().slice(0, pagesEvalTasks);
    const eps = await playEpisodes(
      [env],
      policy,
      tasks.map((task, i) => ({ task, seed: i, rngSeed: i })),
      { greedy: true, isSuccess: (r: number) => r >= 1 },
    );
    await env.close();
    writeFileSync(
      file,
      JSON.stringify({
        tasks: tasks.length,
        score: (100 * eps.reduce((a, e) => a + e.totalReward, 0)) / eps.length,
        success: (100 * eps.filter((e) => e.success).length) / eps.length,
      }),
    );
  }
  return JSON.parse(readFileSync(file, "utf8")) as { score: number; success: number };
}

type Row = {
  seed: number;
  row: string;
  score: number;
  success: number;
  all: { score: number; success: number };
  real: number;
  synthetic: number;
  start: number;
  train: number;
};
const rows: Row[] = [];
// 1. The seed buffer, once for all seeds, and the learned experience model on it (their times count in every row that uses them).
const shared = join(out, "seed");
mkdirSync(shared, { recursive: true });
const seedInfo = join(shared, "seed.json");
if (!existsSync(seedInfo)) {
  console.log(`collecting ${seedEpisodes} seed episodes in the browser (shared by the seeds)`);
  writeFileSync(seedInfo, JSON.stringify(await collectSeed(shared)));
}
const collected = JSON.parse(readFileSync(seedInfo, "utf8")) as { seconds: number; transitions: number; oracleScore: number };
const seedDb = join(shared, "seed.db");
const modelFile = join(shared, "model.bin");
const modelInfo = join(shared, "model.json");
if (!existsSync(modelInfo)) {
  const t0 = performance.now();
  await run(["model", "train", "--env", "webshop-browser", "--buffer", seedDb, "--out", modelFile], "model train");
  writeFileSync(modelInfo, JSON.stringify({ seconds: (performance.now() - t0) / 1000 }));
}
const modelSeconds = (JSON.parse(readFileSync(modelInfo, "utf8")) as { seconds: number }).seconds;
console.log(
  `seed buffer: ${collected.transitions} transitions in ${collected.seconds.toFixed(0)} s (oracle score ${collected.oracleScore.toFixed(1)}); learned model: ${modelSeconds.toFixed(0)} s`,
);

for (let seed = 0; seed < seeds; seed++) {
  const dir = join(out, `seed-${seed}`);
  mkdirSync(dir, { recursive: true });
  console.log(`seed ${seed}: W = ${W} s a row`);
  // 2. Behaviour cloning on the seed buffer's successes: every RL row's start.
  await train(join(dir, "bc"), ["--mode", "bc", "--buffer", seedDb, "--seed", String(seed)]);
  const bc = summaryOf(join(dir, "bc"));
  const init = ["--set", `initPolicy=${latestPolicyFile(join(dir, "bc"))}`];
  // BC's charge is its training, not its final evaluation in the browser (no row pays for its evaluation).
  rows.push({
    seed,
    row: "behaviour cloning on the seed buffer (0 RL)",
    score: bc.score,
    success: bc.success,
    all: await pagesEval(join(dir, "bc")),
    real: 0,
    synthetic: 0,
    start: collected.seconds + bc.train,
    train: 0,
  });
  const realStart = collected.seconds + bc.train;
  const dgStart = realStart + modelSeconds;
  // 3. Real-env GRPO in the browser for the rest of W.
  await train(join(dir, "real"), [
    "--mode",
    "real",
    "--budget",
    "1000000000",
    "--max-seconds",
    String(Math.max(1, Math.round(W - realStart))),
    "--seed",
    String(seed),
    ...init,
  ]);
  const real = summaryOf(join(dir, "real"));
  rows.push({
    seed,
    row: "real-env GRPO (browser)",
    score: real.score,
    success: real.success,
    all: await pagesEval(join(dir, "real")),
    real: real.real,
    synthetic: 0,
    start: realStart,
    train: real.train,
  });
  // 4. DreamGym: synthetic for the rest of W (learned model, model rewards).
  const rest = Math.max(1, Math.round(W - dgStart));
  // The synthetic phase plays the seed buffer's tasks (and the curriculum's variations of them): the paper's seed task set.
  const experience = ["--experience", `learned:${modelFile}`, "--set", "syntheticTasks=seed"];
  await train(join(dir, "dreamgym"), [
    "--mode",
    "dreamgym",
    "--buffer",
    seedDb,
    ...experience,
    "--budget",
    "1000000000",
    "--max-seconds",
    String(rest),
    "--seed",
    String(seed),
    ...init,
  ]);
  const dg = summaryOf(join(dir, "dreamgym"));
  rows.push({
    seed,
    row: "DreamGym (learned model, model rewards)",
    score: dg.score,
    success: dg.success,
    all: await pagesEval(join(dir, "dreamgym")),
    real: 0,
    synthetic: dg.synthetic,
    start: dgStart,
    train: dg.train,
  });
  // 5. S2R: half the rest synthetic (as many steps as DreamGym made in that time), then the browser until W.
  const half = Math.max(100, Math.round((dg.synthetic * (rest / 2)) / Math.max(1, dg.wall)));
  await train(join(dir, "s2r"), [
    "--mode",
    "s2r",
    "--buffer",
    seedDb,
    ...experience,
    "--budget",
    String(half),
    "--real-budget",
    "1000000000",
    "--max-seconds",
    String(rest),
    "--seed",
    String(seed),
    ...init,
  ]);
  const s2r = summaryOf(join(dir, "s2r"));
  rows.push({
    seed,
    row: "DreamGym-S2R (finished in the browser)",
    score: s2r.score,
    success: s2r.success,
    all: await pagesEval(join(dir, "s2r")),
    real: s2r.real,
    synthetic: s2r.synthetic,
    start: dgStart,
    train: s2r.train,
  });
}

// The table: mean ± std over seeds per row.
const names = [...new Set(rows.map((r) => r.row))];
const ms = (xs: number[]) => {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / Math.max(1, xs.length - 1));
  return xs.length > 1 ? `${m.toFixed(1)} ± ${sd.toFixed(1)}` : m.toFixed(1);
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const lines = [
  `# Equal wall time on the browser WebShop`,
  ``,
  `W = ${W} s a row, ${seeds} seed(s), final evaluation on ${evalTasks} test goals in the browser, 4 contexts. This invocation took ${((performance.now() - started) / 60_000).toFixed(1)} min (runs already in --out are reused). One seed buffer for all seeds (${seedEpisodes} browser episodes, ${collected.transitions} transitions, ${collected.seconds.toFixed(0)} s); every row starts from BC on it and pays for it in W ("start": collection + BC, + the learned model's ${modelSeconds.toFixed(0)} s for the synthetic rows). Training seconds are as the runs count them; the wall-clock limit is checked between iterations, so a row can overrun W by its last iteration.`,
  ``,
  `| method | test score (browser, ${evalTasks} goals) | test success | test score (${pagesEvalTasks} goals) | test success | real steps | synthetic steps | start (s) | training (s) | start + training (s) |`,
  `|---|---|---|---|---|---|---|---|---|---|`,
  ...names.map((n) => {
    const rs = rows.filter((r) => r.row === n);
    return `| ${n} | ${ms(rs.map((r) => r.score))} | ${ms(rs.map((r) => r.success))}% | ${ms(rs.map((r) => r.all.score))} | ${ms(rs.map((r) => r.all.success))}% | ${Math.round(mean(rs.map((r) => r.real)))} | ${Math.round(mean(rs.map((r) => r.synthetic)))} | ${mean(rs.map((r) => r.start)).toFixed(0)} | ${mean(rs.map((r) => r.train)).toFixed(0)} | ${mean(rs.map((r) => r.start + r.train)).toFixed(0)} |`;
  }),
];
writeFileSync(join(out, "results.md"), `${lines.join("\n")}\n`);
console.log(lines.join("\n"));
