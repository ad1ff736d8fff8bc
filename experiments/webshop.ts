// `npm run experiment:webshop`: the paper's Table 1 and Table 2 in miniature, on WebShop with the
// embedded models, no verifier (the paper's setting), plus the hybrid as an extra row. The full method's
// experience model is the learned model (trained here from the seed buffer), `-- --experience default`
// the kNN model, `-- --experience <chat model>` the reasoning model. Rows: the rule baseline, behaviour
// cloning on the seed buffer (0 RL), real-env GRPO at N and N/10 real steps, DreamGym (0 real), DreamGym-S2R
// (3× the synthetic steps, then N/10 real), the hybrid, and the ablations (no replay, no curriculum, no pessimism, kNN instead of the
// learned model). Every RL run starts from the BC row's policy of its seed (`--init bc`, the default;
// `--init scratch`: fresh weights). Each training run is `dreamgym
// train` in a child process, two at a time (one per core); writes results.md.
//
//   npm run experiment:webshop -- [--seeds 3] [--real 80000] [--synthetic 80000] [--s2r-synthetic 240000] [--parallel 2] [--out runs/experiment-webshop]
//     [--init scratch|bc] [--synthetic-tasks seed|split] [--experience learned|default|<chat model>] [--rows bc,real,real-tenth,dreamgym,s2r,hybrid,no-replay,no-curriculum,no-pessimism,knn] [--only-seeds 2] [--final-eval-tasks 500]
//     [--real-screen 4] [--real-batch-advantage 2]
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { readJsonlAll, type Trajectory } from "../src/core/index.ts";
import { ReplayBuffer } from "../src/buffer/index.ts";
import { createEnv, syntheticSupport } from "../src/envs/index.ts";
import { auditModel, EmbeddedExperienceModel, loadLearnedModel, trainLearnedModel, type ExperienceModel } from "../src/experience/index.ts";
import { writeFileAtomic } from "../src/core/index.ts";
import { latestPolicyFile, readMetrics } from "../src/train/index.ts";
import { playScripted, seedWebShopBuffer } from "../src/cli/seed-data.ts";

/** Bad flags: one line and exit 2, before anything is written (seeding alone takes minutes). */
const usage = (message: string): never => {
  console.error(`error: ${message}`);
  process.exit(2);
};
const OPTIONS = {
  seeds: { type: "string", default: "3" },
  real: { type: "string", default: "80000" },
  synthetic: { type: "string", default: "80000" },
  /**
   * The S2R row's synthetic phase (default 3 × --synthetic): synthetic steps cost no real
   * interaction, and from 80k the 8k real steps do not catch up with real-env GRPO (docs/results.md).
   */
  "s2r-synthetic": { type: "string" },
  parallel: { type: "string", default: "2" },
  /** Where every RL run starts: scratch (fresh weights from its seed) or bc (the BC row's policy of the same seed). */
  init: { type: "string", default: "bc" },
  out: { type: "string", default: "runs/experiment-webshop" },
  experience: { type: "string", default: "learned" },
  /** Only these rows (keys as in the header), e.g. for a reduced run. */
  rows: { type: "string" },
  /** Only these seeds of the --seeds (e.g. 2: rerun one lost seed into the same --out). */
  "only-seeds": { type: "string" },
  "final-eval-tasks": { type: "string", default: "500" },
  /**
   * The synthetic rows' tasks: seed (the seed buffer's tasks and the curriculum's variations of
   * them, the paper's seed task set) or split (every train goal).
   */
  "synthetic-tasks": { type: "string", default: "seed" },
  /**
   * The S2R row's real phase: its tasks screened in the synthetic env (`--real-screen`) and GRPO's
   * batch term there (`--real-batch-advantage`), as chosen on the dev split (docs/results.md).
   */
  "real-screen": { type: "string", default: "4" },
  "real-batch-advantage": { type: "string", default: "2" },
} as const;
const args = (() => {
  try {
    return parseArgs({ options: OPTIONS }).values;
  } catch (e) {
    return usage((e as Error).message);
  }
})();
const count = (flag: "seeds" | "real" | "synthetic" | "s2r-synthetic" | "parallel" | "final-eval-tasks") => {
  const n = Number(args[flag]);
  return Number.isInteger(n) && n > 0 ? n : usage(`--${flag} must be a positive integer, got "${args[flag]}"`);
};
const seeds = count("seeds");
const N = count("real");
const tenth = Math.round(N / 10);
const M = count("synthetic");
const S2R_M = args["s2r-synthetic"] === undefined ? 3 * M : count("s2r-synthetic");
const parallel = count("parallel");
const finalEvalTasks = String(count("final-eval-tasks"));
const ROW_KEYS = ["bc", "real", "real-tenth", "dreamgym", "s2r", "no-replay", "no-curriculum", "no-pessimism", "knn", "hybrid"];
const wanted = args.rows?.split(",").map((k) => k.trim());
const unknown = wanted?.filter((k) => !ROW_KEYS.includes(k) || (k === "knn" && args.experience === "default")) ?? [];
if (unknown.length > 0) usage(`unknown rows ${unknown.join(", ")} (rows: ${ROW_KEYS.filter((k) => k !== "knn" || args.experience !== "default").join(", ")})`);
const onlySeeds = args["only-seeds"]?.split(",").map(Number);
if (onlySeeds?.some((s) => !Number.isInteger(s) || s < 0 || s >= seeds)) usage(`--only-seeds takes seeds below --seeds ${seeds}, not ${args["only-seeds"]}`);
if (args["synthetic-tasks"] !== "seed" && args["synthetic-tasks"] !== "split") usage(`--synthetic-tasks is seed or split, not ${args["synthetic-tasks"]}`);
if (args.init !== "scratch" && args.init !== "bc") usage(`--init is scratch or bc, not ${args.init}`);
if (args.init === "bc" && wanted && !wanted.includes("bc")) usage("--init bc needs the bc row");
const out = args.out!;
const BIN = join(import.meta.dirname, "..", "bin", "dreamgym");
const started = performance.now();
mkdirSync(out, { recursive: true });

// 1. Data: the seed buffer (train goals) and held-out real trajectories for the audit (test goals).
const seedDb = join(out, "seed.db");
if (!existsSync(seedDb)) {
  console.log("seeding the buffer: 1,000 oracle + 500 slipping-oracle + 500 random train episodes");
  await seedWebShopBuffer(out, seedDb);
}
const held = join(out, "held");
if (!existsSync(join(held, "random.jsonl"))) {
  mkdirSync(held, { recursive: true });
  await playScripted("oracle", "test", 100, join(held, "oracle.jsonl"));
  await playScripted("random", "test", 100, join(held, "random.jsonl"));
}

// 2. The experience models: the learned one trained from the seed buffer (unless a chat model or kNN is
//    the full method), and the offline audit of each local model on held-out test episodes.
const support = syntheticSupport("webshop", createEnv("webshop", {}));
const abstraction = support.abstraction;
const modelFile = join(out, "model.bin");
const local = args.experience === "default" || args.experience === "learned";
const buffer = ReplayBuffer.open(seedDb, { readonly: true });
if (args.experience === "learned" && !existsSync(modelFile)) {
  console.log("training the learned experience model on the seed buffer");
  writeFileAtomic(modelFile, trainLearnedModel(buffer, { abstraction, rewards: support.rewards, seed: 0 }).model.save());
}
const heldOut: Trajectory[] = [...(await readJsonlAll<Trajectory>(join(held, "oracle.jsonl"))), ...(await readJsonlAll<Trajectory>(join(held, "random.jsonl")))];
const auditOf = async (model: ExperienceModel) => {
  const a = await auditModel(heldOut, { model, abstraction, buffer });
  return `ε_R ${(100 * a.rewardErrorRate).toFixed(1)}%`;
};
const knnAudit = await auditOf(new EmbeddedExperienceModel({ abstraction }));
const learnedAudit = args.experience === "learned" ? await auditOf(loadLearnedModel(modelFile, abstraction, support.rewards)) : undefined;
buffer.close();
const fullAudit = args.experience === "learned" ? learnedAudit! : args.experience === "default" ? knnAudit : "not measured here (dreamgym audit --experience <model>)";
console.log(`offline audit on ${heldOut.length} held-out test episodes: kNN ${knnAudit}${learnedAudit ? `, learned ${learnedAudit}` : ""}`);

// 3. The rule baseline.
const rule = await playScripted("rule", "test", 500);

// 4. The runs: every row × seed, as child processes. RL rows start from fresh weights (their seed).
interface Row { key: string; name: string; args: string[]; audit: string }
const syntheticTasks = ["--set", `syntheticTasks=${args["synthetic-tasks"]}`];
const experienceArgs = [...(args.experience === "default" ? [] : ["--experience", args.experience === "learned" ? `learned:${modelFile}` : args.experience]), ...syntheticTasks];
const modelName = args.experience === "learned" ? "learned model" : args.experience === "default" ? "embedded kNN model" : args.experience;
const dg = (key: string, name: string, extra: string[], audit = fullAudit): Row => ({ key, name, args: ["--mode", "dreamgym", "--budget", String(M), ...experienceArgs, ...extra], audit });
const allRows: Row[] = [
  { key: "bc", name: "behaviour cloning on the seed buffer's successes, 0 RL", args: ["--mode", "bc"], audit: "—" },
  { key: "real", name: `real-env GRPO, ${N.toLocaleString("en-US")} real steps`, args: ["--mode", "real", "--budget", String(N)], audit: "—" },
  { key: "real-tenth", name: `real-env GRPO, ${tenth.toLocaleString("en-US")} real steps`, args: ["--mode", "real", "--budget", String(tenth)], audit: "—" },
  dg("dreamgym", "DreamGym (model rewards), 0 real", []),
  { key: "s2r", name: `DreamGym-S2R (model rewards), ${S2R_M.toLocaleString("en-US")} synthetic then ${tenth.toLocaleString("en-US")} real (real tasks screened ×${args["real-screen"]}, batch term λ ${args["real-batch-advantage"]})`, args: ["--mode", "s2r", "--budget", String(S2R_M), "--real-budget", String(tenth), "--real-screen", args["real-screen"]!, "--real-batch-advantage", args["real-batch-advantage"]!, ...experienceArgs], audit: fullAudit },
  dg("no-replay", "ablation: no replay", ["--no-replay"]),
  dg("no-curriculum", "ablation: no curriculum", ["--no-curriculum"]),
  dg("no-pessimism", "ablation: no pessimism", ["--no-pessimism"]),
  ...(args.experience === "learned"
    ? [{ key: "knn", name: "ablation: kNN instead of the learned model", args: ["--mode", "dreamgym", "--budget", String(M), ...syntheticTasks], audit: knnAudit }]
    : !local ? [{ key: "knn", name: "ablation: without reasoning (embedded kNN model)", args: ["--mode", "dreamgym", "--budget", String(M), ...syntheticTasks], audit: knnAudit }] : []),
  dg("hybrid", "extra: DreamGym (hybrid rewards: purchases scored by WebShop), 0 real", ["--hybrid"], `${fullAudit} (purchase rewards exact)`),
];
const rows = wanted ? allRows.filter((r) => wanted.includes(r.key)) : allRows;
const jobs: { row: number; seed: number; dir: string; init?: string }[] = rows
  .flatMap((row, r) => Array.from({ length: seeds }, (_, s) => ({ row: r, seed: s, dir: join(out, `${row.key}-seed${s}`) })))
  .filter((j) => !onlySeeds || onlySeeds.includes(j.seed));
let done = 0;
const failures: string[] = [];
const runJob = (job: (typeof jobs)[number]) =>
  new Promise<void>((resolve) => {
    if (existsSync(join(job.dir, "summary.json"))) return resolve();
    // A run the experiment started before (killed with it) continues from its checkpoint.
    const argv = existsSync(join(job.dir, "config.json"))
      ? ["train", "--resume", job.dir]
      : ["train", "--env", "webshop", "--algo", "grpo", "--seed", String(job.seed), "--buffer", seedDb, "--eval-every", "0", "--final-eval-tasks", finalEvalTasks, ...rows[job.row].args, ...(job.init ? ["--set", `initPolicy=${job.init}`] : []), "--out", job.dir];
    const child = spawn(process.execPath, [BIN, ...argv], { stdio: ["ignore", "ignore", "pipe"] });
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
/** Runs the jobs, `--parallel` at a time. */
const runAll = async (list: typeof jobs) => {
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < list.length) await runJob(list[next++]);
  }));
};
if (args.init === "bc") {
  // The BC runs first; every RL run of seed s then starts from the BC policy of seed s.
  await runAll(jobs.filter((j) => rows[j.row].key === "bc"));
  for (const j of jobs.filter((j) => rows[j.row].key !== "bc")) {
    j.init = latestPolicyFile(join(out, `bc-seed${j.seed}`));
  }
  await runAll(jobs.filter((j) => rows[j.row].key !== "bc"));
} else await runAll(jobs);

// 5. The table: mean ± standard deviation over seeds.
const stat = (xs: number[]) => {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1)) : 0;
  return { m, sd };
};
/** The last on-policy audit of a run: its exploitation rate (null: no synthetic success to check) and synthetic / real return. */
const lastAudit = (dir: string) => readMetrics(dir).filter((m) => m.onPolicyAudit).at(-1)?.onPolicyAudit;
const lines = [
  `WebShop, neural policy (GRPO), test split (${finalEvalTasks} goals, greedy); ${onlySeeds ? `seed(s) ${onlySeeds.join(", ")}` : `${seeds} seeds`}, mean ± standard deviation; synthetic runs ${M.toLocaleString("en-US")} synthetic steps (S2R ${S2R_M.toLocaleString("en-US")}) on the ${args["synthetic-tasks"] === "seed" ? "seed buffer's tasks and the curriculum's" : "train split's tasks"}; experience model: ${modelName}, no verifier unless marked hybrid; ${args.init === "bc" ? "every RL run starts from the BC policy of its seed" : "every RL run from fresh weights"}.`,
  "",
  "| method | score | success | real training steps | synthetic steps | wall time | offline ε_R (held-out test episodes) | on-policy exploitation rate (last audit) | synthetic / real return (last audit) |",
  "|---|---|---|---|---|---|---|---|---|",
  `| rule baseline | ${rule.score.toFixed(1)} | ${(100 * rule.success).toFixed(1)}% | 0 | 0 | — | — | — | — |`,
];
rows.forEach((row, r) => {
  const done = jobs.filter((j) => j.row === r && existsSync(join(j.dir, "summary.json")));
  const sums = done.map((j) => JSON.parse(readFileSync(join(j.dir, "summary.json"), "utf8")));
  if (sums.length === 0) return void lines.push(`| ${row.name} | failed | | | | | | | |`);
  const score = stat(sums.map((s) => s.final.score));
  const success = stat(sums.map((s) => 100 * s.final.success));
  const realSteps = stat(sums.map((s) => s.realInteractions));
  const syn = stat(sums.map((s) => s.syntheticInteractions));
  const wall = stat(sums.map((s) => s.wallSeconds));
  const audits = done.map((j) => lastAudit(j.dir)).filter((a) => a !== undefined);
  const rates = audits.map((a) => a.exploitationRate).filter((x): x is number => x !== null);
  const exploitation = audits.length === 0 ? "—" : rates.length === 0 ? `no synthetic success (${audits.length} runs)` : `${(100 * stat(rates).m).toFixed(0)}%${rates.length < audits.length ? ` (${rates.length} of ${audits.length} runs; the rest no synthetic success)` : ""}`;
  const returns = audits.length === 0 ? "—" : `${stat(audits.map((a) => a.syntheticReturn)).m.toFixed(3)} / ${stat(audits.map((a) => a.realReturn)).m.toFixed(3)}`;
  lines.push(`| ${row.name} | ${score.m.toFixed(1)} ± ${score.sd.toFixed(1)} | ${success.m.toFixed(1)} ± ${success.sd.toFixed(1)}% | ${Math.round(realSteps.m).toLocaleString("en-US")} | ${Math.round(syn.m).toLocaleString("en-US")} | ${wall.m.toFixed(0)} s | ${row.audit} | ${exploitation} | ${returns} |`);
});
if (failures.length > 0) lines.push("", "Failed runs:", ...failures.map((f) => `- ${f}`));
lines.push("", `Total time ${((performance.now() - started) / 60000).toFixed(1)} min (${parallel} runs at a time).`);
writeFileSync(join(out, "results.md"), lines.join("\n") + "\n");
console.log(`\n${lines.join("\n")}\n\nwritten to ${join(out, "results.md")}`);
