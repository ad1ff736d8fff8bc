// `npm run experiment:web`: equal wall time on the browser WebShop (the paper's WebArena setting in
// miniature: real interactions are slow and capped at 4 parallel contexts). Per seed, the same
// wall-clock budget W for each row:
//   - real-env GRPO trained in the browser (W of training);
//   - DreamGym: a seed buffer collected in the browser (oracle + random episodes on train goals, 4
//     contexts; its time counts), then synthetic training with the embedded model for the rest of W;
//   - DreamGym-S2R: the same seed buffer, half the rest synthetic, then GRPO in the browser until W.
// Each row's policy is evaluated in the browser on the same test goals (evaluation time not counted).
// Training runs are `dreamgym train` in a child process, one at a time (the browser is the shared
// resource); writes results.md into --out.
//
//   npm run experiment:web -- [--seconds 600] [--seeds 3] [--eval-tasks 100] [--seed-episodes 120] [--tasks-per-iter 4] [--group 4] [--out runs/experiment-web]
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { episodeTrajectory, JsonlWriter, playEpisodes, type EpisodeJob } from "../src/core/index.ts";
import { importJsonl, ReplayBuffer } from "../src/buffer/index.ts";
import { createPolicy } from "../src/envs/index.ts";
import { createWebShopBrowserEnv } from "../src/envs/webshop-site/index.ts";

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
  },
});
const W = Number(args.seconds);
const seeds = Number(args.seeds);
const evalTasks = args["eval-tasks"]!;
const seedEpisodes = Number(args["seed-episodes"]);
const out = args.out!;
const BIN = join(import.meta.dirname, "..", "bin", "dreamgym");
mkdirSync(out, { recursive: true });
const started = performance.now();

/** The seed buffer, collected in the browser over 4 contexts: 2/3 oracle, 1/3 random episodes on train goals. */
async function collectSeed(seed: number, dir: string): Promise<{ seconds: number; transitions: number; oracleScore: number }> {
  const t0 = performance.now();
  const envs = Array.from({ length: 4 }, () => createWebShopBrowserEnv({ split: "train", contexts: 4, seed }));
  const file = join(dir, "seed.jsonl");
  const writer = new JsonlWriter(file, { append: false });
  let oracleTotal = 0;
  try {
    const tasks = envs[0].tasks();
    const oracleN = Math.round((2 * seedEpisodes) / 3);
    for (const [name, n, offset] of [["oracle", oracleN, 0], ["random", seedEpisodes - oracleN, oracleN]] as const) {
      // One policy per env: the oracle reads its own env's goal.
      const jobs: EpisodeJob[] = Array.from({ length: n }, (_, i) => ({ task: tasks[(seed * 997 + offset + i) % tasks.length], rngSeed: seed * 100_000 + offset + i }));
      const share = envs.map((env) => ({ env, policy: createPolicy("webshop-browser", name, env, { seed: seed + offset }) }));
      await Promise.all(share.map(async ({ env, policy }, k) => {
        const mine = jobs.filter((_, i) => i % envs.length === k);
        for (const e of await playEpisodes([env], policy, mine)) {
          writer.write(episodeTrajectory(e, { env: "webshop-browser", policy: name }));
          if (name === "oracle") oracleTotal += e.totalReward;
        }
      }));
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

function train(runDir: string, extra: string[]): Promise<void> {
  if (existsSync(join(runDir, "summary.json"))) return Promise.resolve();
  const argv = [BIN, "train", "--env", "webshop-browser", "--concurrency", "4", "--final-eval-tasks", evalTasks, "--eval-every", "0", "--tasks-per-iter", args["tasks-per-iter"]!, "--group", args.group!, "--out", runDir, ...extra];
  console.log(`  dreamgym ${argv.slice(1).join(" ")}`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { stdio: ["ignore", "inherit", "inherit"] });
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`train exited ${code} (${runDir})`))));
  });
}

/** A run's summary: its final score is already ×100, its success a fraction. */
function summaryOf(runDir: string): { score: number; success: number; real: number; synthetic: number; wall: number } {
  const s = JSON.parse(readFileSync(join(runDir, "summary.json"), "utf8")) as {
    final: { score: number; success: number }; realInteractions: number; syntheticInteractions: number; wallSeconds: number;
  };
  return { score: s.final.score, success: 100 * s.final.success, real: s.realInteractions, synthetic: s.syntheticInteractions, wall: s.wallSeconds };
}

type Row = { seed: number; row: string; score: number; success: number; real: number; synthetic: number; collect: number; train: number };
const rows: Row[] = [];
for (let seed = 0; seed < seeds; seed++) {
  const dir = join(out, `seed-${seed}`);
  mkdirSync(dir, { recursive: true });
  console.log(`seed ${seed}: W = ${W} s a row`);
  // 1. Real-env GRPO in the browser.
  await train(join(dir, "real"), ["--mode", "real", "--budget", "1000000000", "--max-seconds", String(W), "--seed", String(seed)]);
  const real = summaryOf(join(dir, "real"));
  rows.push({ seed, row: "real-env GRPO (browser)", score: real.score, success: real.success, real: real.real, synthetic: 0, collect: 0, train: real.wall });
  // 2. The seed buffer, collected in the browser (its time counts against W).
  const seedInfo = join(dir, "seed.json");
  if (!existsSync(seedInfo)) {
    console.log(`  collecting ${seedEpisodes} seed episodes in the browser`);
    writeFileSync(seedInfo, JSON.stringify(await collectSeed(seed, dir)));
  }
  const collected = JSON.parse(readFileSync(seedInfo, "utf8")) as { seconds: number; transitions: number };
  const rest = Math.max(1, Math.round(W - collected.seconds));
  // 3. DreamGym: synthetic for the rest of W.
  await train(join(dir, "dreamgym"), ["--mode", "dreamgym", "--buffer", join(dir, "seed.db"), "--budget", "1000000000", "--max-seconds", String(rest), "--seed", String(seed)]);
  const dg = summaryOf(join(dir, "dreamgym"));
  rows.push({ seed, row: "DreamGym (seed buffer from the browser)", score: dg.score, success: dg.success, real: 0, synthetic: dg.synthetic, collect: collected.seconds, train: dg.wall });
  // 4. S2R: half the rest synthetic (as many steps as DreamGym made in that time), then the browser until W.
  const half = Math.max(100, Math.round(dg.synthetic * (rest / 2) / Math.max(1, dg.wall)));
  await train(join(dir, "s2r"), ["--mode", "s2r", "--buffer", join(dir, "seed.db"), "--budget", String(half), "--real-budget", "1000000000", "--max-seconds", String(rest), "--seed", String(seed)]);
  const s2r = summaryOf(join(dir, "s2r"));
  rows.push({ seed, row: "DreamGym-S2R (finished in the browser)", score: s2r.score, success: s2r.success, real: s2r.real, synthetic: s2r.synthetic, collect: collected.seconds, train: s2r.wall });
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
  `W = ${W} s a row, ${seeds} seed(s), final evaluation on ${evalTasks} test goals in the browser, 4 contexts. This invocation took ${((performance.now() - started) / 60_000).toFixed(1)} min (runs already in --out are reused). Training seconds are as the runs count them; the wall-clock limit is checked between iterations, so a row can overrun W by its last iteration (and its on-policy audits in the browser).`,
  ``,
  `| method | test score | test success | real steps | synthetic steps | seed collection (s) | training (s) |`,
  `|---|---|---|---|---|---|---|`,
  ...names.map((n) => {
    const rs = rows.filter((r) => r.row === n);
    return `| ${n} | ${ms(rs.map((r) => r.score))} | ${ms(rs.map((r) => r.success))}% | ${Math.round(mean(rs.map((r) => r.real)))} | ${Math.round(mean(rs.map((r) => r.synthetic)))} | ${mean(rs.map((r) => r.collect)).toFixed(0)} | ${mean(rs.map((r) => r.train)).toFixed(0)} |`;
  }),
];
writeFileSync(join(out, "results.md"), `${lines.join("\n")}\n`);
console.log(lines.join("\n"));
