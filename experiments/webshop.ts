// `npm run experiment:webshop`: the paper's Table 1 and Table 2 in miniature, on WebShop with the
// embedded models, no verifier (the paper's setting), plus the hybrid as an extra row. The full method's
// experience model is the learned model (trained here from the seed buffer), `-- --experience default`
// the kNN model, `-- --experience <chat model>` the reasoning model. Rows: the rule baseline, behaviour
// cloning on the seed buffer (0 RL), real-env GRPO at N and N/10 real steps, DreamGym (0 real), DreamGym-S2R
// (3× the synthetic steps, then N/10 real), the hybrid, and the ablations (no replay, no curriculum, no pessimism, kNN instead of the
// learned model). A seed is a *data* seed: seed s draws its own seed buffer (1,000 of the 5,410 train
// goals, its own scripted episodes), trains its own learned model, and seeds every run's RL. Every RL
// run starts from the BC row's policy of its seed (`--init bc`, the default; `--init scratch`: fresh
// weights). The table gives each row's median and minimum over seeds and its teach ratio,
// (row − BC) / (real-env GRPO − BC), per seed. Choose on `--eval-split dev`; the test split is for the
// final table. Each training run is `dreamgym train` in a child process, two at a time (one per core);
// writes results.md.
//
//   npm run experiment:webshop -- [--seeds 5] [--eval-split test|dev] [--real 80000] [--synthetic 80000] [--s2r-synthetic 240000] [--parallel 2] [--out runs/experiment-webshop]
//     [--init scratch|bc] [--synthetic-tasks seed|split] [--experience learned|default|<chat model>] [--rows bc,real,real-seed-tasks,real-tenth,real-kl,dreamgym,dreamgym-split-tasks,dreamgym-plain,dreamgym-std-floor,dreamgym-kl,dreamgym-refit,s2r,hybrid,no-replay,no-curriculum,no-pessimism,knn] [--only-seeds 2] [--final-eval-tasks 500]
//     [--real-screen 4] [--real-batch-advantage 2] [--std-floor 0.1] [--kl-coef 0.05] [--rl-seeds 1]
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { readJsonlAll, type Trajectory } from "../src/core/index.ts";
import { ReplayBuffer } from "../src/buffer/index.ts";
import { createEnv, resolveDataDir, syntheticSupport } from "../src/envs/index.ts";
import {
  auditModel,
  EmbeddedExperienceModel,
  loadLearnedModel,
  orderAgreementByMargin,
  trainLearnedModel,
  type AuditPair,
  type ExperienceModel,
} from "../src/experience/index.ts";
import { writeFileAtomic } from "../src/core/index.ts";
import { auditFiles, latestPolicyFile, readMetrics } from "../src/train/index.ts";
import { playScripted, seedWebShopBuffer } from "../src/cli/seed-data.ts";

/** Bad flags: one line and exit 2, before anything is written (seeding alone takes minutes). */
const usage = (message: string): never => {
  console.error(`error: ${message}`);
  process.exit(2);
};
const OPTIONS = {
  seeds: { type: "string", default: "5" },
  /** Where the policies are scored: test (the final table, read once) or dev (where choices are made). */
  "eval-split": { type: "string", default: "test" },
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
  /**
   * RL runs per data seed for every RL row (each its own RL seed, the same data, model and BC start):
   * a row's score for a data seed is their mean, since one RL run cannot tell close variants apart.
   */
  "rl-seeds": { type: "string", default: "1" },
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
  /** The dreamgym-std-floor and dreamgym-kl rows' σ_min under GRPO's group standard deviation (`pessimism.stdFloor`). */
  "std-floor": { type: "string", default: "0.1" },
  /** The dreamgym-kl row's β of GRPO's KL penalty to the BC start (`pessimism.kl`), and real-kl's (`grpo.klCoef`). */
  "kl-coef": { type: "string", default: "0.05" },
} as const;
const args = (() => {
  try {
    return parseArgs({ options: OPTIONS }).values;
  } catch (e) {
    return usage((e as Error).message);
  }
})();
const count = (flag: "seeds" | "rl-seeds" | "real" | "synthetic" | "s2r-synthetic" | "parallel" | "final-eval-tasks") => {
  const n = Number(args[flag]);
  return Number.isInteger(n) && n > 0 ? n : usage(`--${flag} must be a positive integer, got "${args[flag]}"`);
};
const seeds = count("seeds");
const rlSeeds = count("rl-seeds");
/** Run r of data seed s: the first keeps the folder name runs had before there were several. */
const runDir = (key: string, s: number, r: number) => join(out, r === 0 ? `${key}-seed${s}` : `${key}-seed${s}-rl${r}`);
/** Its RL seed: the data seed's for the first run, others derived from it. */
const rlSeed = (s: number, r: number) => (r === 0 ? s : 1000 * r + s);
const N = count("real");
const tenth = Math.round(N / 10);
const M = count("synthetic");
const S2R_M = args["s2r-synthetic"] === undefined ? 3 * M : count("s2r-synthetic");
const parallel = count("parallel");
const finalEvalTasks = String(count("final-eval-tasks"));
const ROW_KEYS = [
  "bc",
  "real",
  "real-seed-tasks",
  "real-tenth",
  "real-kl",
  "dreamgym",
  "dreamgym-split-tasks",
  "dreamgym-plain",
  "dreamgym-std-floor",
  "dreamgym-kl",
  "dreamgym-refit",
  "s2r",
  "no-replay",
  "no-curriculum",
  "no-pessimism",
  "knn",
  "hybrid",
];
const wanted = args.rows?.split(",").map((k) => k.trim());
const unknown = wanted?.filter((k) => !ROW_KEYS.includes(k) || (k === "knn" && args.experience === "default")) ?? [];
if (unknown.length > 0) usage(`unknown rows ${unknown.join(", ")} (rows: ${ROW_KEYS.filter((k) => k !== "knn" || args.experience !== "default").join(", ")})`);
const onlySeeds = args["only-seeds"]?.split(",").map(Number);
if (onlySeeds?.some((s) => !Number.isInteger(s) || s < 0 || s >= seeds)) usage(`--only-seeds takes seeds below --seeds ${seeds}, not ${args["only-seeds"]}`);
if (args["synthetic-tasks"] !== "seed" && args["synthetic-tasks"] !== "split") usage(`--synthetic-tasks is seed or split, not ${args["synthetic-tasks"]}`);
if (args.init !== "scratch" && args.init !== "bc") usage(`--init is scratch or bc, not ${args.init}`);
const evalSplit = args["eval-split"] as "test" | "dev";
if (evalSplit !== "test" && evalSplit !== "dev") usage(`--eval-split is test or dev, not ${args["eval-split"]}`);
if (args.init === "bc" && wanted && !wanted.includes("bc")) usage("--init bc needs the bc row");
const stdFloor = Number(args["std-floor"]);
if (!(Number.isFinite(stdFloor) && stdFloor >= 0)) usage(`--std-floor must be a number ≥ 0, got "${args["std-floor"]}"`);
const klCoef = Number(args["kl-coef"]);
if (!(Number.isFinite(klCoef) && klCoef >= 0)) usage(`--kl-coef must be a number ≥ 0, got "${args["kl-coef"]}"`);
// The data pack is found before anything is written (its absence is one line, not a half-made folder).
try {
  resolveDataDir({ subdir: "webshop" });
} catch (e) {
  usage((e as Error).message);
}
const out = args.out!;
const BIN = join(import.meta.dirname, "..", "bin", "dreamgym");
const started = performance.now();
mkdirSync(out, { recursive: true });

// 1. Data, per data seed: the seed buffer (train goals) and the learned model trained on it; and
//    held-out real trajectories of the eval split for the models' offline audit.
const seedList = Array.from({ length: seeds }, (_, s) => s).filter((s) => !onlySeeds || onlySeeds.includes(s));
const dataDir = (s: number) => join(out, `data-seed${s}`);
const seedDb = (s: number) => join(dataDir(s), "seed.db");
const modelFile = (s: number) => join(dataDir(s), "model.bin");
const held = join(out, `held-${evalSplit}`);
if (!existsSync(join(held, "random.jsonl"))) {
  mkdirSync(held, { recursive: true });
  await playScripted("oracle", evalSplit, 100, join(held, "oracle.jsonl"));
  await playScripted("random", evalSplit, 100, join(held, "random.jsonl"));
}
const heldOut: Trajectory[] = [
  ...(await readJsonlAll<Trajectory>(join(held, "oracle.jsonl"))),
  ...(await readJsonlAll<Trajectory>(join(held, "random.jsonl"))),
];
const support = syntheticSupport("webshop", createEnv("webshop", {}));
const abstraction = support.abstraction;
const local = args.experience === "default" || args.experience === "learned";
const audits: { knn: string[]; learned: string[] } = { knn: [], learned: [] };
for (const s of seedList) {
  mkdirSync(dataDir(s), { recursive: true });
  if (!existsSync(seedDb(s))) {
    console.log(`data seed ${s}: seeding the buffer: 1,000 oracle + 500 slipping-oracle + 500 random episodes on 1,000 train goals drawn by the seed`);
    await seedWebShopBuffer(dataDir(s), seedDb(s), s);
  }
  const buffer = ReplayBuffer.open(seedDb(s), { readonly: true });
  if (args.experience === "learned" && !existsSync(modelFile(s))) {
    console.log(`data seed ${s}: training the learned experience model on its seed buffer`);
    writeFileAtomic(modelFile(s), trainLearnedModel(buffer, { abstraction, rewards: support.rewards, seed: s }).model.save());
  }
  const auditOf = async (model: ExperienceModel) => 100 * (await auditModel(heldOut, { model, abstraction, buffer })).rewardErrorRate;
  audits.knn.push(`${(await auditOf(new EmbeddedExperienceModel({ abstraction }))).toFixed(1)}`);
  if (args.experience === "learned") audits.learned.push(`${(await auditOf(loadLearnedModel(modelFile(s), abstraction, support.rewards))).toFixed(1)}`);
  buffer.close();
}
const knnAudit = `ε_R ${audits.knn.join(" / ")}%`;
const learnedAudit = args.experience === "learned" ? `ε_R ${audits.learned.join(" / ")}%` : undefined;
const fullAudit =
  args.experience === "learned" ? learnedAudit! : args.experience === "default" ? knnAudit : "not measured here (dreamgym audit --experience <model>)";
console.log(`offline audit on ${heldOut.length} held-out ${evalSplit} episodes, per seed: kNN ${knnAudit}${learnedAudit ? `, learned ${learnedAudit}` : ""}`);

// 3. The rule baseline.
const rule = await playScripted("rule", evalSplit, Number(finalEvalTasks));

// 4. The runs: every row × seed, as child processes. RL rows start from fresh weights (their seed).
interface Row {
  key: string;
  name: string;
  args: string[];
  audit: string;
}
const syntheticTasks = ["--set", `syntheticTasks=${args["synthetic-tasks"]}`];
// The learned model's file is the seed's: `learned:` + MODEL is replaced per job.
const MODEL = "<model of the seed>";
const modelArgs = args.experience === "default" ? [] : ["--experience", args.experience === "learned" ? `learned:${MODEL}` : args.experience];
const experienceArgs = [...modelArgs, ...syntheticTasks];
const modelName = args.experience === "learned" ? "learned model" : args.experience === "default" ? "embedded kNN model" : args.experience;
const dg = (key: string, name: string, extra: string[], audit = fullAudit): Row => ({
  key,
  name,
  args: ["--mode", "dreamgym", "--budget", String(M), ...experienceArgs, ...extra],
  audit,
});
const allRows: Row[] = [
  { key: "bc", name: "behaviour cloning on the seed buffer's successes, 0 RL", args: ["--mode", "bc"], audit: "—" },
  { key: "real", name: `real-env GRPO, ${N.toLocaleString("en-US")} real steps`, args: ["--mode", "real", "--budget", String(N)], audit: "—" },
  {
    key: "real-seed-tasks",
    name: `real-env GRPO on the seed buffer's tasks only, ${N.toLocaleString("en-US")} real steps`,
    args: ["--mode", "real", "--budget", String(N), "--set", "realTasks=seed"],
    audit: "—",
  },
  { key: "real-tenth", name: `real-env GRPO, ${tenth.toLocaleString("en-US")} real steps`, args: ["--mode", "real", "--budget", String(tenth)], audit: "—" },
  {
    key: "real-kl",
    name: `real-env GRPO, ${N.toLocaleString("en-US")} real steps, KL β ${args["kl-coef"]} to the BC start`,
    args: ["--mode", "real", "--budget", String(N), "--set", `grpo.klCoef=${args["kl-coef"]}`],
    audit: "—",
  },
  dg("dreamgym", "DreamGym (model rewards), 0 real", []),
  // The synthetic phase's GRPO pessimism (`pessimism.stdFloor`, `pessimism.kl`; defaults 0.1 and 0.05), varied.
  dg("dreamgym-plain", "DreamGym (model rewards) without GRPO's std floor and KL penalty (the defaults before 2026-12-03), 0 real", [
    "--set",
    "pessimism.stdFloor=0",
    "--set",
    "pessimism.kl=0",
  ]),
  dg("dreamgym-std-floor", `DreamGym (model rewards), GRPO's group std floored at ${args["std-floor"]}, no KL penalty, 0 real`, [
    "--set",
    `pessimism.stdFloor=${args["std-floor"]}`,
    "--set",
    "pessimism.kl=0",
  ]),
  dg("dreamgym-kl", `DreamGym (model rewards), std floor ${args["std-floor"]}, KL β ${args["kl-coef"]} to the BC start, 0 real`, [
    "--set",
    `pessimism.stdFloor=${args["std-floor"]}`,
    "--set",
    `pessimism.kl=${args["kl-coef"]}`,
  ]),
  // Dyna: the audit's real replays (16 episodes every 5 iterations) train the learned model, and count as real steps.
  ...(args.experience !== "learned"
    ? []
    : [
        dg(
          "dreamgym-refit",
          `DreamGym (model rewards), std floor ${args["std-floor"]}, KL β ${args["kl-coef"]}, the model refit on the audit's real replays (Dyna)`,
          ["--set", `pessimism.stdFloor=${args["std-floor"]}`, "--set", `pessimism.kl=${args["kl-coef"]}`, "--refit"],
        ),
      ]),
  {
    key: "dreamgym-split-tasks",
    name: "DreamGym (model rewards) on every train goal (syntheticTasks=split), 0 real",
    args: ["--mode", "dreamgym", "--budget", String(M), ...modelArgs, "--set", "syntheticTasks=split"],
    audit: fullAudit,
  },
  {
    key: "s2r",
    name: `DreamGym-S2R (model rewards), ${S2R_M.toLocaleString("en-US")} synthetic then ${tenth.toLocaleString("en-US")} real (real tasks screened ×${args["real-screen"]}, batch term λ ${args["real-batch-advantage"]})`,
    args: [
      "--mode",
      "s2r",
      "--budget",
      String(S2R_M),
      "--real-budget",
      String(tenth),
      "--real-screen",
      args["real-screen"]!,
      "--real-batch-advantage",
      args["real-batch-advantage"]!,
      ...experienceArgs,
    ],
    audit: fullAudit,
  },
  dg("no-replay", "ablation: no replay", ["--no-replay"]),
  dg("no-curriculum", "ablation: no curriculum", ["--no-curriculum"]),
  dg("no-pessimism", "ablation: no pessimism", ["--no-pessimism"]),
  ...(args.experience === "learned"
    ? [
        {
          key: "knn",
          name: "ablation: kNN instead of the learned model",
          args: ["--mode", "dreamgym", "--budget", String(M), ...syntheticTasks],
          audit: knnAudit,
        },
      ]
    : !local
      ? [
          {
            key: "knn",
            name: "ablation: without reasoning (embedded kNN model)",
            args: ["--mode", "dreamgym", "--budget", String(M), ...syntheticTasks],
            audit: knnAudit,
          },
        ]
      : []),
  dg("hybrid", "extra: DreamGym (hybrid rewards: purchases scored by WebShop), 0 real", ["--hybrid"], `${fullAudit} (purchase rewards exact)`),
];
const rows = wanted ? allRows.filter((r) => wanted.includes(r.key)) : allRows;
const jobs: { row: number; seed: number; rl: number; dir: string; init?: string }[] = rows
  .flatMap((row, r) =>
    Array.from({ length: seeds }, (_, s) =>
      Array.from({ length: row.key === "bc" ? 1 : rlSeeds }, (_, k) => ({ row: r, seed: s, rl: k, dir: runDir(row.key, s, k) })),
    ).flat(),
  )
  .filter((j) => !onlySeeds || onlySeeds.includes(j.seed));
let done = 0;
const failures: string[] = [];
/** Why a run folder cannot stand for data seed s on this split: it was trained on another buffer (an older, shared seed buffer) or scored on another split. */
const stale = (dir: string, s: number): string | undefined => {
  if (!existsSync(join(dir, "config.json"))) return undefined;
  const c = JSON.parse(readFileSync(join(dir, "config.json"), "utf8")) as { buffer?: string; evalSplit?: string };
  // The same file by another path (a folder of runs shared by symlink) is the same buffer.
  const same = (a: string, b: string) => a === b || (existsSync(a) && existsSync(b) && realpathSync(a) === realpathSync(b));
  if (c.buffer === undefined || !same(c.buffer, seedDb(s))) return `${dir} was trained on ${c.buffer}, not data seed ${s}'s ${seedDb(s)}: give another --out`;
  if ((c.evalSplit ?? "test") !== evalSplit) return `${dir} is scored on the ${c.evalSplit ?? "test"} split, not ${evalSplit}: give another --out`;
  return undefined;
};
const runJob = (job: (typeof jobs)[number]) =>
  new Promise<void>((resolve) => {
    const why = stale(job.dir, job.seed);
    if (why) {
      failures.push(why);
      return resolve();
    }
    if (existsSync(join(job.dir, "summary.json"))) return resolve();
    // A run the experiment started before (killed with it) continues from its checkpoint.
    const argv = existsSync(join(job.dir, "config.json"))
      ? ["train", "--resume", job.dir]
      : [
          "train",
          "--env",
          "webshop",
          "--algo",
          "grpo",
          "--seed",
          String(rlSeed(job.seed, job.rl)),
          "--buffer",
          seedDb(job.seed),
          "--eval-every",
          "0",
          "--final-eval-tasks",
          finalEvalTasks,
          "--set",
          `evalSplit=${evalSplit}`,
          // Runs side by side share the cores: a run's helper threads would slow the others (the same results).
          ...(parallel > 1 ? ["--set", "helperThreads=false"] : []),
          ...rows[job.row].args.map((a) => a.replace(MODEL, modelFile(job.seed))),
          ...(job.init ? ["--set", `initPolicy=${job.init}`] : []),
          "--out",
          job.dir,
        ];
    const child = spawn(process.execPath, [BIN, ...argv], { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    child.on("exit", (code) => {
      done++;
      console.log(
        `[${done}/${jobs.length}] ${rows[job.row].name}, seed ${job.seed}${rlSeeds > 1 ? ` run ${job.rl}` : ""}: ${code === 0 ? "done" : `failed (${code})`} at ${((performance.now() - started) / 60000).toFixed(1)} min`,
      );
      // A failed run is reported and left out of the table; the others go on.
      if (code !== 0) failures.push(`${job.dir}: ${err.trim().split("\n").slice(-3).join(" ")}`);
      resolve();
    });
  });
/** Runs the jobs, `--parallel` at a time. */
const runAll = async (list: typeof jobs) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < list.length) await runJob(list[next++]);
    }),
  );
};
if (args.init === "bc") {
  // The BC runs first; every RL run of seed s then starts from the BC policy of seed s.
  await runAll(jobs.filter((j) => rows[j.row].key === "bc"));
  for (const j of jobs.filter((j) => rows[j.row].key !== "bc")) {
    j.init = latestPolicyFile(join(out, `bc-seed${j.seed}`));
  }
  await runAll(jobs.filter((j) => rows[j.row].key !== "bc"));
} else await runAll(jobs);

// 5. The tables: per seed, and each row's median and minimum over seeds, with its teach ratio
//    (row − BC) / (real-env GRPO − BC) of the same seed, and the in-run audits' figures.
const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length === 0 ? NaN : v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};
/**
 * A row's score for data seed s: the mean over its RL runs (all --rl-seeds of them finished, else
 * undefined), and over any further runs an earlier experiment left in --out (so a row added with
 * --rl-seeds 1 is compared with real-env GRPO's mean of three).
 */
const score = (key: string, s: number): number | undefined => {
  const runs = Array.from({ length: key === "bc" ? 1 : rlSeeds }, (_, r) => runDir(key, s, r));
  if (key !== "bc") for (let r = rlSeeds; existsSync(join(runDir(key, s, r), "summary.json")); r++) runs.push(runDir(key, s, r));
  const scores = runs.map((dir) =>
    existsSync(join(dir, "summary.json")) && !stale(dir, s) ? (JSON.parse(readFileSync(join(dir, "summary.json"), "utf8")).final.score as number) : undefined,
  );
  return scores.some((x) => x === undefined) ? undefined : scores.reduce((a, b) => a! + b!, 0)! / scores.length;
};
const teach = (key: string, s: number) => {
  const [x, bc, real] = [score(key, s), score("bc", s), score("real", s)];
  return x === undefined || bc === undefined || real === undefined || real === bc ? undefined : (x - bc) / (real - bc);
};
const fmt = (x: number | undefined, d = 1) => (x === undefined || Number.isNaN(x) ? "—" : x.toFixed(d));
const medMin = (xs: number[], d = 1) => (xs.length === 0 ? "—" : `${fmt(median(xs), d)} / ${fmt(Math.min(...xs), d)}`);
/** A run's audits: order agreement pooled over its pairs, advantage correlation (mean), and over its last quarter the return gap and the exploitation rate. */
const auditFigures = (dir: string) => {
  const a = readMetrics(dir)
    .map((m) => m.onPolicyAudit)
    .filter((x) => x !== undefined);
  if (a.length === 0) return undefined;
  const pairs = a.reduce((n, x) => n + (x.advantage?.pairs ?? 0), 0);
  const agree = a.reduce((n, x) => n + (x.advantage?.orderAgreement ?? 0) * (x.advantage?.pairs ?? 0), 0);
  const corr = a.map((x) => x.advantage?.correlation).filter((x): x is number => typeof x === "number");
  const tail = a.slice(-Math.max(1, Math.ceil(a.length / 4)));
  const synSuccesses = tail.reduce((n, x) => n + x.syntheticSuccess * x.episodes, 0);
  const exploited = tail.reduce((n, x) => n + (x.exploitationRate ?? 0) * x.syntheticSuccess * x.episodes, 0);
  return {
    order: pairs === 0 ? undefined : agree / pairs,
    pairs,
    corr: corr.length === 0 ? undefined : corr.reduce((p, c) => p + c, 0) / corr.length,
    gap: tail.reduce((n, x) => n + (x.returnGap ?? x.syntheticReturn - x.realReturn), 0) / tail.length,
    exploitation: synSuccesses === 0 ? undefined : exploited / synSuccesses,
    audits: a.length,
  };
};
const lines = [
  `WebShop, neural policy (GRPO), ${evalSplit} split (${finalEvalTasks} goals, greedy); data seeds ${seedList.join(", ")} (each its own seed buffer, learned model and RL seed); synthetic runs ${M.toLocaleString("en-US")} synthetic steps (S2R ${S2R_M.toLocaleString("en-US")}) on the ${args["synthetic-tasks"] === "seed" ? "seed buffer's tasks and the curriculum's" : "train split's tasks"}; experience model: ${modelName}, no verifier unless marked hybrid; ${args.init === "bc" ? "every RL run starts from the BC policy of its seed" : "every RL run from fresh weights"}; each RL row's score per data seed is the mean of its RL runs in --out (RL seeds s, 1000 + s, …; audit figures: the first run)${rlSeeds > 1 ? `, ${rlSeeds} here` : ""}.`,
  "",
  "Teach ratio: (row − BC) / (real-env GRPO − BC), per seed. Audit figures, per seed then pooled: order agreement within GRPO groups over the run's audits (pairs the synthetic or real returns tell apart; one side tied counts half), and over the last quarter of its audits the return gap (synthetic − real) and the exploitation rate (synthetic successes that fail for real).",
  "",
  "| method | score median / min | per seed | teach ratio median / min | teach per seed | offline ε_R per seed | order agreement | advantage corr. | return gap (last ¼) | exploitation (last ¼) |",
  "|---|---|---|---|---|---|---|---|---|---|",
  `| rule baseline | ${rule.score.toFixed(1)} | | | | | | | | |`,
];
rows.forEach((row) => {
  const got = seedList.filter((s) => score(row.key, s) !== undefined);
  if (got.length === 0) return void lines.push(`| ${row.name} | not run | | | | | | | | |`);
  const scores = got.map((s) => score(row.key, s)!);
  const teaches = row.key === "bc" || row.key === "real" ? [] : got.map((s) => teach(row.key, s)).filter((x): x is number => x !== undefined);
  const aud = got.map((s) => auditFigures(join(out, `${row.key}-seed${s}`)));
  const per = (f: (x: NonNullable<(typeof aud)[number]>) => number | undefined, d: number, pct = false) =>
    aud.every((x) => x === undefined)
      ? "—"
      : aud.map((x) => (x === undefined ? "—" : fmt(pct && f(x) !== undefined ? 100 * f(x)! : f(x), d))).join(" / ") + (pct ? "%" : "");
  lines.push(
    `| ${row.name} | ${medMin(scores)} | ${got.map((s) => `${s}: ${fmt(score(row.key, s))}`).join(", ")} | ${teaches.length ? medMin(teaches, 2) : "—"} | ${teaches.length ? got.map((s) => fmt(teach(row.key, s), 2)).join(" / ") : "—"} | ${row.audit} | ${per((x) => x.order, 0, true)} | ${per((x) => x.corr, 2)} | ${per((x) => x.gap, 3)} | ${per((x) => x.exploitation, 0, true)} |`,
  );
});
// Why the order within groups goes wrong where it does: agreement by how far apart the synthetic returns are, pooled over each synthetic row's runs.
const EDGES = [0, 0.01, 0.05, 0.2];
const marginRows = rows.flatMap((row) => {
  const pairs = seedList.flatMap((s) => {
    const dir = join(out, `${row.key}-seed${s}`);
    return existsSync(join(dir, "audit"))
      ? auditFiles(dir).flatMap((f) =>
          readFileSync(f.file, "utf8")
            .split("\n")
            .filter((l) => l.trim())
            .map((l) => JSON.parse(l) as AuditPair)
            .map((p) => (p.group === undefined ? p : { ...p, group: `${s}/${f.iteration}/${p.group}` })),
        )
      : [];
  });
  if (pairs.length === 0) return [];
  return [
    `| ${row.name} | ${orderAgreementByMargin(pairs, EDGES)
      .map((b) => `${b.orderAgreement === null ? "—" : `${(100 * b.orderAgreement).toFixed(0)}%`} (${b.pairs})`)
      .join(" | ")} |`,
  ];
});
if (marginRows.length > 0) {
  lines.push(
    "",
    "Order agreement within GRPO groups by |Δ synthetic return| of the pair (pairs in brackets), over every audit of every seed:",
    "",
    `| method | ${EDGES.map((e, k) => (EDGES[k + 1] === undefined ? `≥ ${e}` : `[${e}, ${EDGES[k + 1]})`)).join(" | ")} |`,
    `|---|${EDGES.map(() => "---").join("|")}|`,
    ...marginRows,
  );
}
if (failures.length > 0) lines.push("", "Failed runs:", ...failures.map((f) => `- ${f}`));
lines.push("", `Total time ${((performance.now() - started) / 60000).toFixed(1)} min (${parallel} runs at a time).`);
writeFileSync(join(out, "results.md"), lines.join("\n") + "\n");
console.log(`\n${lines.join("\n")}\n\nwritten to ${join(out, "results.md")}`);
