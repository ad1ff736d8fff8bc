// `npm run experiment:webshop`: the paper's Table 1 and Table 2 in miniature, on WebShop with the
// embedded defaults (or `-- --experience <chat model>` for the reasoning model). Each training run is
// `dreamgym train` in a child process, two at a time (one per core); writes results.md.
//
//   npm run experiment:webshop -- [--seeds 3] [--real 80000] [--synthetic 80000] [--parallel 2] [--out runs/experiment-webshop]
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { readJsonlAll, type Trajectory } from "../src/core/index.ts";
import { ReplayBuffer } from "../src/buffer/index.ts";
import { createEnv, syntheticSupport } from "../src/envs/index.ts";
import { auditModel, EmbeddedExperienceModel } from "../src/experience/index.ts";
import { playScripted, seedWebShopBuffer } from "../src/cli/seed-data.ts";

const { values: args } = parseArgs({
  options: {
    seeds: { type: "string", default: "3" },
    real: { type: "string", default: "80000" },
    synthetic: { type: "string", default: "80000" },
    parallel: { type: "string", default: "2" },
    out: { type: "string", default: "runs/experiment-webshop" },
    experience: { type: "string", default: "default" },
  },
});
const seeds = Number(args.seeds);
const N = Number(args.real);
const tenth = Math.round(N / 10);
const M = Number(args.synthetic);
const out = args.out!;
const BIN = join(import.meta.dirname, "..", "bin", "dreamgym");
const started = performance.now();
mkdirSync(out, { recursive: true });

// 1. Data: the seed buffer (train goals) and held-out real trajectories for the audit (test goals).
const seedDb = join(out, "seed.db");
if (!existsSync(seedDb)) {
  console.log("seeding the buffer: 1,000 oracle + 500 random train episodes");
  await seedWebShopBuffer(out, seedDb);
}
const held = join(out, "held");
if (!existsSync(join(held, "random.jsonl"))) {
  mkdirSync(held, { recursive: true });
  await playScripted("oracle", "test", 100, join(held, "oracle.jsonl"));
  await playScripted("random", "test", 100, join(held, "random.jsonl"));
}

// 2. The audit of the embedded model on held-out test episodes.
const buffer = ReplayBuffer.open(seedDb, { readonly: true });
const abstraction = syntheticSupport("webshop", createEnv("webshop", {})).abstraction;
const heldOut: Trajectory[] = [...(await readJsonlAll<Trajectory>(join(held, "oracle.jsonl"))), ...(await readJsonlAll<Trajectory>(join(held, "random.jsonl")))];
const audit = await auditModel(heldOut, { model: new EmbeddedExperienceModel({ abstraction }), abstraction, buffer });
buffer.close();
const auditText = `ε_R ${(100 * audit.rewardErrorRate).toFixed(1)}%, state kind ${(100 * audit.stateKindAccuracy).toFixed(1)}%, element F1 ${audit.elementF1.toFixed(2)}`;
console.log(`audit of the embedded model on ${heldOut.length} held-out test episodes: ${auditText}`);

// 3. The rule baseline.
const rule = await playScripted("rule", "test", 500);

// 4. The runs: every row × seed, as child processes.
interface Row { name: string; args: string[]; audit: string }
const hybridAudit = `${auditText} (purchase rewards exact)`;
const rows: Row[] = [
  { name: `real-env GRPO, ${N.toLocaleString("en-US")} real steps`, args: ["--mode", "real", "--budget", String(N)], audit: "—" },
  { name: `real-env GRPO, ${tenth.toLocaleString("en-US")} real steps`, args: ["--mode", "real", "--budget", String(tenth)], audit: "—" },
  { name: "DreamGym (model rewards), 0 real", args: ["--mode", "dreamgym", "--budget", String(M)], audit: auditText },
  { name: "DreamGym (hybrid rewards), 0 real", args: ["--mode", "dreamgym", "--hybrid", "--budget", String(M)], audit: hybridAudit },
  { name: `DreamGym-S2R (hybrid), ${tenth.toLocaleString("en-US")} real`, args: ["--mode", "s2r", "--hybrid", "--budget", String(M), "--real-budget", String(tenth)], audit: hybridAudit },
  { name: "ablation: hybrid without replay", args: ["--mode", "dreamgym", "--hybrid", "--no-replay", "--budget", String(M)], audit: hybridAudit },
  { name: "ablation: hybrid without curriculum", args: ["--mode", "dreamgym", "--hybrid", "--no-curriculum", "--budget", String(M)], audit: hybridAudit },
];
if (args.experience !== "default") {
  for (const r of rows.slice(2)) r.args.push("--experience", args.experience!);
  rows.push({ name: "ablation: without reasoning (embedded model), hybrid", args: ["--mode", "dreamgym", "--hybrid", "--budget", String(M)], audit: hybridAudit });
}
const jobs = rows.flatMap((row, r) => Array.from({ length: seeds }, (_, s) => ({ row: r, seed: s, dir: join(out, `row${r}-seed${s}`) })));
let done = 0;
const failures: string[] = [];
const runJob = (job: (typeof jobs)[number]) =>
  new Promise<void>((resolve) => {
    if (existsSync(join(job.dir, "summary.json"))) return resolve();
    // A run the experiment started before (killed with it) continues from its checkpoint.
    const args = existsSync(join(job.dir, "config.json"))
      ? ["train", "--resume", job.dir]
      : ["train", "--env", "webshop", "--algo", "grpo", "--seed", String(job.seed), "--buffer", seedDb, "--eval-every", "0", ...rows[job.row].args, "--out", job.dir];
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    child.on("exit", (code) => {
      done++;
      console.log(`[${done}/${jobs.length}] ${rows[job.row].name}, seed ${job.seed}: ${code === 0 ? "done" : `failed (${code})`} at ${((performance.now() - started) / 60000).toFixed(1)} min`);
      // A failed run is reported and left out of the table; the others go on.
      if (code !== 0) failures.push(`${job.dir}: ${err.trim().split("\n").slice(-3).join(" ")}`);
      resolve();
    });
  });
let next = 0;
await Promise.all(Array.from({ length: Number(args.parallel) }, async () => {
  while (next < jobs.length) await runJob(jobs[next++]);
}));

// 5. The table: mean ± standard deviation over seeds.
const stat = (xs: number[]) => {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1)) : 0;
  return { m, sd };
};
const lines = [
  `WebShop, neural policy (GRPO), test split (500 goals, greedy); ${seeds} seeds, mean ± standard deviation; synthetic runs ${M.toLocaleString("en-US")} synthetic steps; experience model: ${args.experience === "default" ? "embedded kNN" : args.experience}.`,
  "",
  "| method | score | success | real training steps | synthetic steps | wall time | experience model audit (held-out test episodes) |",
  "|---|---|---|---|---|---|---|",
  `| rule baseline | ${rule.score.toFixed(1)} | ${(100 * rule.success).toFixed(1)}% | 0 | 0 | — | — |`,
];
rows.forEach((row, r) => {
  const sums = jobs.filter((j) => j.row === r && existsSync(join(j.dir, "summary.json"))).map((j) => JSON.parse(readFileSync(join(j.dir, "summary.json"), "utf8")));
  if (sums.length === 0) return void lines.push(`| ${row.name} | failed | | | | | |`);
  const score = stat(sums.map((s) => s.final.score));
  const success = stat(sums.map((s) => 100 * s.final.success));
  const realSteps = stat(sums.map((s) => s.realInteractions));
  const syn = stat(sums.map((s) => s.syntheticInteractions));
  const wall = stat(sums.map((s) => s.wallSeconds));
  lines.push(`| ${row.name} | ${score.m.toFixed(1)} ± ${score.sd.toFixed(1)} | ${success.m.toFixed(1)} ± ${success.sd.toFixed(1)}% | ${Math.round(realSteps.m).toLocaleString("en-US")} | ${Math.round(syn.m).toLocaleString("en-US")} | ${wall.m.toFixed(0)} s | ${row.audit} |`);
});
if (failures.length > 0) lines.push("", "Failed runs:", ...failures.map((f) => `- ${f}`));
lines.push("", `Total time ${((performance.now() - started) / 60000).toFixed(1)} min (${args.parallel} runs at a time).`);
writeFileSync(join(out, "results.md"), lines.join("\n") + "\n");
console.log(`\n${lines.join("\n")}\n\nwritten to ${join(out, "results.md")}`);
