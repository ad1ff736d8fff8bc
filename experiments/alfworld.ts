// `npm run experiment:alfworld`: the paper's ALFWorld rows (Table 1) in miniature, with the embedded
// ALFWorld experience model and no verifier. Rows: the expert and random (scripted), behaviour cloning
// on the seed buffer's expert episodes (0 RL), real-env GRPO at N and N/10 real steps, DreamGym (0 real),
// DreamGym-S2R (N/10 real), and the ablations no replay and no curriculum. Every RL run starts from the
// BC policy of its seed (`--init bc`, the default: from a blank policy a 50-step sparse-reward episode
// gives GRPO no signal) or from fresh weights (`--init scratch`). Success on valid_unseen (134 games)
// and valid_seen (140) as a second column, and per task type; each final policy is evaluated greedily
// on every game of both splits. Each training run is `dreamgym train` in a child process, two at a time;
// finished runs are kept, so a rerun resumes (a killed run continues from its checkpoint). Writes results.md.
// Real-env GRPO's curve: its run is evaluated on every valid_unseen game every `--curve-every` iterations
// (0: only at the end), and the table gives success against real steps, from BC (0 real) to N.
// An extra row, not run unless asked (`--rows …,hybrid`): DreamGym with ALFWorld's hybrid verifier (the
// synthetic episode replayed in the real game while it admits its commands; rewards and ends from there).
//
// A seed is a *data* seed: seed s plays the expert on 150 of the 200 valid_train games (a window
// starting at game 40·s) and the random policy 200 episodes from its own seed, and seeds the RL. The
// teach ratio table gives, per seed, (row − BC) / (real-env GRPO − BC) on valid_unseen, with the in-run
// audits' exploitation, order agreement and return gap.
//
//   npm run experiment:alfworld -- [--seeds 5] [--real 40000] [--synthetic 40000] [--epochs 8] [--parallel 2] [--curve-every 2]
//     [--init bc|scratch] [--rows bc,real,real-tenth,dreamgym,s2r,no-replay,no-curriculum,hybrid] [--out runs/experiment-alfworld]
// A larger N in a folder of its own (a finished run of another budget is never reused):
//   npm run experiment:alfworld -- --real 80000 --rows bc,real --seeds 1 --out runs/experiment-alfworld-80k
import { spawn } from "node:child_process";
import { existsSync, realpathSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { abstractEnv, playEpisodes, writeFileAtomic, type Env, type Policy } from "../src/core/index.ts";
import {
  AlfWorldEnv,
  AlfWorldExpert,
  alfworldAbstraction,
  alfworldFeatures,
  TASK_TYPES,
  type AlfWorldSplit,
  type AlfWorldTask,
} from "../src/envs/alfworld/index.ts";
import { RandomPolicy } from "../src/envs/policies.ts";
import { NeuralPolicy } from "../src/rl/index.ts";
import type { OnPolicyAuditSummary } from "../src/experience/index.ts";

const { values: args } = parseArgs({
  options: {
    seeds: { type: "string", default: "5" },
    real: { type: "string", default: "40000" },
    synthetic: { type: "string", default: "40000" },
    epochs: { type: "string", default: "8" },
    parallel: { type: "string", default: "2" },
    init: { type: "string", default: "bc" },
    out: { type: "string", default: "runs/experiment-alfworld" },
    rows: { type: "string" },
    "curve-every": { type: "string", default: "2" },
    /** RL runs per data seed of each RL row (RL seeds s, 1000 + s, …): a data seed's score is their mean. */
    "rl-seeds": { type: "string", default: "1" },
  },
});
const seeds = Number(args.seeds);
const rlSeeds = Number(args["rl-seeds"]);
if (!(Number.isInteger(rlSeeds) && rlSeeds > 0)) throw new Error(`--rl-seeds takes a positive integer, not ${args["rl-seeds"]}`);
const N = Number(args.real);
const tenth = Math.round(N / 10);
const M = Number(args.synthetic);
const curveEvery = Number(args["curve-every"]);
const out = args.out!;
const BIN = join(import.meta.dirname, "..", "bin", "dreamgym");
const started = performance.now();
const SPLITS: AlfWorldSplit[] = ["valid_unseen", "valid_seen"];
if (args.init !== "scratch" && args.init !== "bc") throw new Error(`--init is scratch or bc, not ${args.init}`);
mkdirSync(out, { recursive: true });

/** Runs the CLI; rejects with its last stderr lines. */
const cli = (argv: string[]) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...argv], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let err = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("exit", (code) => (code === 0 ? resolve(stdout) : reject(new Error(`dreamgym ${argv.join(" ")}: ${err.trim().split("\n").slice(-3).join(" ")}`))));
  });

// 1. Data, per data seed: expert episodes on 150 of the 200 valid_train games and random episodes,
//    both drawn by the seed, into the seed's buffer (abstract states).
const dataDir = (s: number) => join(out, `data-seed${s}`);
const seedDb = (s: number) => join(dataDir(s), "seed.db");
for (let s = 0; s < seeds; s++) {
  if (existsSync(seedDb(s))) continue;
  mkdirSync(dataDir(s), { recursive: true });
  console.log(`data seed ${s}: seeding the buffer: 150 expert (games from ${(40 * s) % 200}) + 200 random valid_train episodes`);
  await cli([
    "collect",
    "--env",
    "alfworld",
    "--policy",
    "expert",
    "--episodes",
    "150",
    "--start",
    String((40 * s) % 200),
    "--out",
    join(dataDir(s), "expert.jsonl"),
  ]);
  await cli([
    "collect",
    "--env",
    "alfworld",
    "--policy",
    "random",
    "--episodes",
    "200",
    "--start",
    String((40 * s + 100) % 200),
    "--seed",
    String(1000 * s),
    "--out",
    join(dataDir(s), "random.jsonl"),
  ]);
  await cli(["buffer", "import", join(dataDir(s), "expert.jsonl"), join(dataDir(s), "random.jsonl"), "--abstract", "--buffer", seedDb(s)]);
}

// 2. The offline audit of the ALFWorld model on held-out valid_unseen episodes (other games), over seed 0's buffer.
const auditFile = join(out, "audit.txt");
if (!existsSync(auditFile)) {
  console.log("auditing the ALFWorld model on held-out valid_unseen episodes");
  await cli(["collect", "--env", "alfworld", "--policy", "expert", "--split", "valid_unseen", "--episodes", "134", "--out", join(out, "held-expert.jsonl")]);
  await cli(["collect", "--env", "alfworld", "--policy", "random", "--split", "valid_unseen", "--episodes", "60", "--out", join(out, "held-random.jsonl")]);
  writeFileSync(join(out, "held.jsonl"), readFileSync(join(out, "held-expert.jsonl"), "utf8") + readFileSync(join(out, "held-random.jsonl"), "utf8"));
  writeFileAtomic(auditFile, await cli(["audit", "--env", "alfworld", "--trajectories", join(out, "held.jsonl"), "--buffer", seedDb(0)]));
}
const audit = readFileSync(auditFile, "utf8");

// 3. Evaluation on every game of both splits, per task type (cached per policy in its folder).
interface SplitEval {
  success: number;
  byType: Record<string, number>;
}
type Evaluation = Record<string, SplitEval>;
async function evaluatePolicy(makePolicy: (env: AlfWorldEnv) => Policy<unknown>, abstract: boolean): Promise<Evaluation> {
  const result: Evaluation = {};
  for (const split of SPLITS) {
    const raw = [new AlfWorldEnv({ split }), new AlfWorldEnv({ split })];
    const policies = raw.map(makePolicy);
    const tasks = raw[0].tasks();
    const byType: Record<string, number[]> = {};
    // One env per policy (the expert reads its own env's state): split the games between the two.
    const envs: Env[] = raw.map((e) => (abstract ? abstractEnv(e, alfworldAbstraction) : e));
    const halves = [tasks.filter((_, i) => i % 2 === 0), tasks.filter((_, i) => i % 2 === 1)];
    const episodes = (
      await Promise.all(
        halves.map((h, k) =>
          playEpisodes(
            [envs[k]],
            policies[k],
            h.map((task, i) => ({ task, seed: i, rngSeed: i })),
            { greedy: true, isSuccess: (r) => r >= 1 },
          ),
        ),
      )
    ).flat();
    for (const e of episodes) (byType[(e.task as AlfWorldTask).task_type] ??= []).push(e.success ? 1 : 0);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / (xs.length || 1);
    result[split] = {
      success: mean(episodes.map((e) => (e.success ? 1 : 0))),
      byType: Object.fromEntries(Object.entries(byType).map(([t, xs]) => [t, mean(xs)])),
    };
  }
  return result;
}
const cached = async (file: string, run: () => Promise<Evaluation>): Promise<Evaluation> => {
  if (existsSync(file)) return JSON.parse(readFileSync(file, "utf8")) as Evaluation;
  const e = await run();
  writeFileAtomic(file, JSON.stringify(e));
  return e;
};
/** A run's final policy (its last checkpoint), evaluated on both splits. */
const runEval = (dir: string) =>
  cached(join(dir, "splits-eval.json"), async () => {
    const config = JSON.parse(readFileSync(join(dir, "config.json"), "utf8")) as { seed: number; policy: { dim: number; hidden: number } };
    const bytes = readFileSync(policyFile(dir));
    return evaluatePolicy(() => {
      // The features the run trained with (ALFWorld's own, as `train` gives the policy).
      const p = new NeuralPolicy({ ...config.policy, seed: config.seed, features: alfworldFeatures });
      p.load(bytes, dir);
      return p as Policy<unknown>;
    }, true);
  });
const policyFile = (dir: string) =>
  join(dir, "checkpoints", (JSON.parse(readFileSync(join(dir, "checkpoints", "latest.json"), "utf8")) as { policyFile: string }).policyFile);

console.log("evaluating the expert and random on valid_unseen and valid_seen");
const expert = await cached(join(out, "expert-eval.json"), () => evaluatePolicy((env) => new AlfWorldExpert(env), false));
const random = await cached(join(out, "random-eval.json"), () => evaluatePolicy(() => new RandomPolicy() as Policy<unknown>, true));

// 4. The runs: every row × seed. RL rows start from the BC policy of their seed (or fresh weights).
/** `extra`: run only when `--rows` names it. */
interface Row {
  key: string;
  name: string;
  args: string[];
  extra?: boolean;
}
const allRows: Row[] = [
  { key: "bc", name: `behaviour cloning on the seed buffer's expert episodes (${args.epochs} epochs), 0 RL`, args: ["--mode", "bc", "--epochs", args.epochs!] },
  {
    key: "real",
    name: `real-env GRPO, ${N.toLocaleString("en-US")} real steps`,
    args: ["--mode", "real", "--budget", String(N), ...(curveEvery > 0 ? ["--eval-every", String(curveEvery), "--eval-tasks", "134"] : [])],
  },
  { key: "real-tenth", name: `real-env GRPO, ${tenth.toLocaleString("en-US")} real steps`, args: ["--mode", "real", "--budget", String(tenth)] },
  { key: "dreamgym", name: "DreamGym, 0 real", args: ["--mode", "dreamgym", "--budget", String(M)] },
  { key: "s2r", name: `DreamGym-S2R, ${tenth.toLocaleString("en-US")} real`, args: ["--mode", "s2r", "--budget", String(M), "--real-budget", String(tenth)] },
  { key: "no-replay", name: "ablation: no replay, 0 real", args: ["--mode", "dreamgym", "--budget", String(M), "--no-replay"] },
  { key: "no-curriculum", name: "ablation: no curriculum, 0 real", args: ["--mode", "dreamgym", "--budget", String(M), "--no-curriculum"] },
  {
    key: "hybrid",
    name: "extra: DreamGym, hybrid (rewards and ends from the real game replaying the episode while it admits its commands), 0 real",
    args: ["--mode", "dreamgym", "--budget", String(M), "--hybrid"],
    extra: true,
  },
];
const wanted = args.rows?.split(",").map((k) => k.trim());
const unknown = wanted?.filter((k) => !allRows.some((r) => r.key === k)) ?? [];
if (unknown.length > 0) throw new Error(`unknown rows ${unknown.join(", ")} (rows: ${allRows.map((r) => r.key).join(", ")})`);
const rows = wanted ? allRows.filter((r) => wanted.includes(r.key)) : allRows.filter((r) => !r.extra);
if (args.init === "bc" && !rows.some((r) => r.key === "bc")) throw new Error("--init bc needs the bc row");
const jobs: { row: number; seed: number; rl: number; dir: string; init?: string }[] = rows.flatMap((row, r) =>
  Array.from({ length: seeds }, (_, s) =>
    Array.from({ length: row.key === "bc" ? 1 : rlSeeds }, (_, k) => ({
      row: r,
      seed: s,
      rl: k,
      dir: join(out, `${row.key}-seed${s}${k === 0 ? "" : `-rl${k}`}`),
    })),
  ).flat(),
);
let done = 0;
const failures: string[] = [];
/** Why a run folder of this job cannot be kept: it was started with other budgets (another --real or --synthetic). */
function staleBudget(job: (typeof jobs)[number]): string | undefined {
  if (!existsSync(join(job.dir, "config.json"))) return undefined;
  const config = JSON.parse(readFileSync(join(job.dir, "config.json"), "utf8")) as { budget: number; realBudget: number; buffer?: string };
  // The same file by another path (a folder of runs shared by symlink) is the same buffer.
  const same = (a: string | undefined, b: string) => a === b || (a !== undefined && existsSync(a) && existsSync(b) && realpathSync(a) === realpathSync(b));
  if (!same(config.buffer, seedDb(job.seed))) return `trained on ${config.buffer}, not data seed ${job.seed}'s ${seedDb(job.seed)}: give another --out`;
  const a = rows[job.row].args;
  const want = (flag: string) => (a.includes(flag) ? Number(a[a.indexOf(flag) + 1]) : undefined);
  const budget = want("--budget");
  const realBudget = want("--real-budget") ?? 0;
  if (budget !== undefined && (config.budget !== budget || config.realBudget !== realBudget)) {
    return `trained with budget ${config.budget} (real ${config.realBudget}), not ${budget} (real ${realBudget}): give this N another --out`;
  }
  return undefined;
}
const runJob = async (job: (typeof jobs)[number]) => {
  if (existsSync(join(job.dir, "summary.json")) && !staleBudget(job)) return;
  // A run the experiment started before (killed with it) continues from its checkpoint.
  const argv = existsSync(join(job.dir, "config.json"))
    ? ["train", "--resume", job.dir]
    : [
        "train",
        "--env",
        "alfworld",
        "--algo",
        "grpo",
        "--seed",
        String(job.rl === 0 ? job.seed : 1000 * job.rl + job.seed),
        "--buffer",
        seedDb(job.seed),
        "--eval-every",
        "0",
        "--final-eval-tasks",
        "134",
        // Runs side by side share the cores: a run's helper threads would slow the others (the same results).
        ...(Number(args.parallel) > 1 ? ["--set", "helperThreads=false"] : []),
        ...rows[job.row].args,
        ...(job.init ? ["--set", `initPolicy=${job.init}`] : []),
        "--out",
        job.dir,
      ];
  const stale = staleBudget(job);
  if (stale) {
    failures.push(`${job.dir}: ${stale}`);
    return;
  }
  try {
    await cli(argv);
    console.log(
      `[${++done}/${jobs.length}] ${rows[job.row].name}, seed ${job.seed}${job.rl ? ` run ${job.rl}` : ""}: done at ${((performance.now() - started) / 60000).toFixed(1)} min`,
    );
  } catch (e) {
    // A failed run is reported and left out of the table; the others go on.
    console.log(`[${++done}/${jobs.length}] ${rows[job.row].name}, seed ${job.seed}: failed`);
    failures.push(`${job.dir}: ${(e as Error).message}`);
  }
};
const runAll = async (list: typeof jobs) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: Number(args.parallel) }, async () => {
      while (next < list.length) await runJob(list[next++]);
    }),
  );
};
if (args.init === "bc") {
  await runAll(jobs.filter((j) => rows[j.row].key === "bc"));
  for (const j of jobs.filter((j) => rows[j.row].key !== "bc")) {
    const bcDir = join(out, `bc-seed${j.seed}`);
    if (!existsSync(join(bcDir, "checkpoints", "latest.json"))) throw new Error(`--init bc: the BC run of seed ${j.seed} has no checkpoint (${bcDir})`);
    j.init = policyFile(bcDir);
  }
  await runAll(jobs.filter((j) => rows[j.row].key !== "bc"));
} else await runAll(jobs);

// 5. The table: mean ± standard deviation over seeds; success per task type on valid_unseen.
const stat = (xs: number[]) => {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1)) : 0;
  return { m, sd };
};
const pct = (xs: number[]) => {
  const { m, sd } = stat(xs.map((x) => 100 * x));
  return xs.length > 1 ? `${m.toFixed(1)} ± ${sd.toFixed(1)}` : m.toFixed(1);
};
const isFinished = (j: (typeof jobs)[number]) => existsSync(join(j.dir, "summary.json")) && !staleBudget(j);
interface Metric {
  iteration: number;
  steps: number;
  phase: string;
  realInteractions: number;
  eval?: { tasks: number; success: number };
  verifiedSteps?: number;
}
const metricsOf = (dir: string) =>
  readFileSync(join(dir, "metrics.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Metric);
const SHORT: Record<string, string> = {
  pick_and_place_simple: "pick",
  look_at_obj_in_light: "look",
  pick_clean_then_place_in_recep: "clean",
  pick_heat_then_place_in_recep: "heat",
  pick_cool_then_place_in_recep: "cool",
  pick_two_obj_and_place: "two",
};
const typeCells = (evals: Evaluation[]) => TASK_TYPES.map((t) => pct(evals.map((e) => e.valid_unseen.byType[t] ?? 0))).join(" | ");
const lines = [
  `ALFWorld, neural policy (GRPO) with the ALFWorld features, greedy on every game: valid_unseen (134) and valid_seen (140), success %; ${seeds} seed(s), mean ± standard deviation; synthetic runs ${M.toLocaleString("en-US")} synthetic steps with the embedded ALFWorld model, no verifier${rows.some((r) => r.key === "hybrid") ? " (but the extra hybrid row)" : ""}; ${args.init === "bc" ? "every RL run starts from the BC policy of its seed" : "every RL run from fresh weights"}${rlSeeds > 1 ? `; ${rlSeeds} RL runs per data seed of each RL row (RL seeds s, 1000 + s, …): mean ± sd over all runs, teach ratios of each seed's mean` : ""}. Per task type: valid_unseen.`,
  "",
  `| method | valid_unseen | valid_seen | real training steps | synthetic steps | wall time | ${TASK_TYPES.map((t) => SHORT[t]).join(" | ")} |`,
  `|---|---|---|---|---|---|${TASK_TYPES.map(() => "---").join("|")}|`,
  `| expert (plans from the game state) | ${pct([expert.valid_unseen.success])} | ${pct([expert.valid_seen.success])} | 0 | 0 | — | ${typeCells([expert])} |`,
  `| random | ${pct([random.valid_unseen.success])} | ${pct([random.valid_seen.success])} | 0 | 0 | — | ${typeCells([random])} |`,
];
for (const [r, row] of rows.entries()) {
  const finished = jobs.filter((j) => j.row === r && isFinished(j));
  if (finished.length === 0) {
    lines.push(`| ${row.name} | failed | | | | | ${TASK_TYPES.map(() => "").join(" | ")} |`);
    continue;
  }
  const sums = finished.map(
    (j) => JSON.parse(readFileSync(join(j.dir, "summary.json"), "utf8")) as { realInteractions: number; syntheticInteractions: number; wallSeconds: number },
  );
  const evals: Evaluation[] = [];
  for (const j of finished) evals.push(await runEval(j.dir));
  lines.push(
    `| ${row.name} | ${pct(evals.map((e) => e.valid_unseen.success))} | ${pct(evals.map((e) => e.valid_seen.success))} | ${Math.round(stat(sums.map((s) => s.realInteractions)).m).toLocaleString("en-US")} | ${Math.round(stat(sums.map((s) => s.syntheticInteractions)).m).toLocaleString("en-US")} | ${stat(sums.map((s) => s.wallSeconds)).m.toFixed(0)} s | ${typeCells(evals)} |`,
  );
}
// The teach ratio per data seed, (row − BC) / (real-env GRPO − BC) on valid_unseen, and the in-run audits.
/** A row's valid_unseen success for data seed s: the mean over its RL runs (all of them finished, else undefined). */
const successOf = async (key: string, s: number) => {
  const js = jobs.filter((x) => rows[x.row].key === key && x.seed === s);
  if (js.length === 0 || !js.every(isFinished)) return undefined;
  let sum = 0;
  for (const j of js) sum += 100 * (await runEval(j.dir)).valid_unseen.success;
  return sum / js.length;
};
const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};
const teachRows: string[] = [];
for (const row of rows.filter((r) => r.key !== "bc" && r.key !== "real")) {
  const per: string[] = [];
  const ratios: number[] = [];
  const audits: string[] = [];
  for (let s = 0; s < seeds; s++) {
    const [x, bc, real] = [await successOf(row.key, s), await successOf("bc", s), await successOf("real", s)];
    const t = x === undefined || bc === undefined || real === undefined || real === bc ? undefined : (x - bc) / (real - bc);
    if (t !== undefined) ratios.push(t);
    per.push(`${s}: ${x?.toFixed(1) ?? "—"} (${t?.toFixed(2) ?? "—"})`);
    const dir = join(out, `${row.key}-seed${s}`);
    const a = existsSync(join(dir, "metrics.jsonl"))
      ? metricsOf(dir)
          .map((m) => (m as { onPolicyAudit?: OnPolicyAuditSummary }).onPolicyAudit)
          .filter((x) => x !== undefined)
      : [];
    if (a.length > 0) {
      const tail = a.slice(-Math.max(1, Math.ceil(a.length / 4)));
      const syn = tail.reduce((n, x) => n + x.syntheticSuccess * x.episodes, 0);
      const bad = tail.reduce((n, x) => n + (x.exploitationRate ?? 0) * x.syntheticSuccess * x.episodes, 0);
      const pairs = a.reduce((n, x) => n + (x.advantage?.pairs ?? 0), 0);
      const agree = a.reduce((n, x) => n + (x.advantage?.orderAgreement ?? 0) * (x.advantage?.pairs ?? 0), 0);
      audits.push(
        `${s}: ${syn === 0 ? "—" : `${((100 * bad) / syn).toFixed(0)}%`} / ${pairs === 0 ? "—" : `${((100 * agree) / pairs).toFixed(0)}%`} / ${(tail.reduce((n, x) => n + (x.returnGap ?? x.syntheticReturn - x.realReturn), 0) / tail.length).toFixed(3)}`,
      );
    }
  }
  teachRows.push(
    `| ${row.name} | ${per.join(", ")} | ${ratios.length ? `${median(ratios).toFixed(2)} / ${Math.min(...ratios).toFixed(2)}` : "—"} | ${audits.join(", ") || "—"} |`,
  );
}
lines.push(
  "",
  "Teach ratio, (row − BC) / (real-env GRPO − BC) on valid_unseen, per data seed; audits: exploitation over the last quarter of the in-run audits / order agreement within GRPO groups over all of them / return gap over the last quarter:",
  "",
  "| method | valid_unseen (teach ratio) per seed | teach ratio median / min | audits per seed |",
  "|---|---|---|---|",
  ...teachRows,
);
// Real-env GRPO's curve: valid_unseen success against real steps, from the BC start (0 real) through the
// real run's evaluations on all 134 games (every --curve-every iterations) to its end; seeds grouped by iteration.
const rowJobs = (key: string) => jobs.filter((j) => rows[j.row].key === key && isFinished(j));
if (rowJobs("real").length > 0) {
  const points = new Map<string, { real: number[]; success: number[] }>();
  const add = (label: string, real: number, success: number) => {
    const p = points.get(label) ?? { real: [], success: [] };
    p.real.push(real);
    p.success.push(success);
    points.set(label, p);
  };
  for (const j of rowJobs("bc")) add("BC start", 0, (await runEval(j.dir)).valid_unseen.success);
  for (const j of rowJobs("real")) {
    const ms = metricsOf(j.dir);
    const last = ms.at(-1)!;
    for (const m of ms) if (m.eval && m.eval.tasks >= 134 && m !== last) add(`iteration ${m.iteration}`, m.realInteractions, m.eval.success);
    add(`end (iteration ${last.iteration})`, last.realInteractions, (await runEval(j.dir)).valid_unseen.success);
  }
  for (const j of rowJobs("real-tenth"))
    add("the N/10 run's end", JSON.parse(readFileSync(join(j.dir, "summary.json"), "utf8")).realInteractions, (await runEval(j.dir)).valid_unseen.success);
  const sorted = [...points.entries()].sort((a, b) => stat(a[1].real).m - stat(b[1].real).m);
  lines.push(
    "",
    `Real-env GRPO's curve (valid_unseen success, all 134 games, greedy; evaluated ${curveEvery > 0 ? `every ${curveEvery} iterations of the N run` : "at the end of each run only"}):`,
    "",
    "| point | real training steps | valid_unseen success | seeds |",
    "|---|---|---|---|",
    ...sorted.map(([label, p]) => `| ${label} | ${Math.round(stat(p.real).m).toLocaleString("en-US")} | ${pct(p.success)} | ${p.success.length} |`),
  );
}
// The hybrid row: how much of its synthetic experience the real game could judge.
if (rowJobs("hybrid").length > 0) {
  const ms = rowJobs("hybrid").flatMap((j) => metricsOf(j.dir).filter((m) => m.phase === "synthetic"));
  const verified = ms.reduce((a, m) => a + (m.verifiedSteps ?? 0), 0);
  const steps = ms.reduce((a, m) => a + m.steps, 0);
  lines.push(
    "",
    `Hybrid: the real game judged ${((100 * verified) / Math.max(1, steps)).toFixed(1)}% of the hybrid runs' ${steps.toLocaleString("en-US")} synthetic steps (the rest came after the synthetic world let the agent do what the real game would not, where the model's own reward stands).`,
  );
}
lines.push(
  "",
  "Offline audit of the ALFWorld model (buffer: data seed 0's seed buffer; held out: 134 expert + 60 random valid_unseen episodes):",
  "",
  "```",
  audit.trim(),
  "```",
);
if (failures.length > 0) lines.push("", "Failed runs:", ...failures.map((f) => `- ${f}`));
lines.push("", `Total time ${((performance.now() - started) / 60000).toFixed(1)} min (${args.parallel} runs at a time).`);
writeFileSync(join(out, "results.md"), lines.join("\n") + "\n");
console.log(`\n${lines.join("\n")}\n\nwritten to ${join(out, "results.md")}`);
