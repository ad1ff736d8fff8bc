// `npm run experiment:fidelity`: how good must an experience model be? (issue 19, docs/fidelity.md)
// DreamGym (GRPO, 0 real steps) on WebShop with the oracle experience model — the real env behind the
// reasoning model's chat protocol, corrupted by known amounts — over a grid of reward noise ε_R (at
// ε_P = 0) and state noise ε_P (at ε_R = 0), against real-env GRPO. Each point: the audit's measured
// ε_R / ε_P of the oracle at that setting (held-out test episodes), the test score, and the on-policy
// audit's exploitation rate. Each run is an oracle server and `dreamgym train` in child processes,
// `--parallel` at a time. Resumable: finished runs are skipped, killed ones resume (fixed ports).
//
//   npm run experiment:fidelity -- [--budget 80000] [--seeds 2] [--grid "R:0,2,5,10,20,40 P:2,5,10,20,40"]
//     [--real-budget 80000] [--parallel 2] [--pessimism] [--reward-noise kinds] [--state-noise kinds]
//     [--final-eval-tasks 500] [--port-base 18400] [--report-only] [--out runs/experiment-fidelity]
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { closing, readJsonlAll, type Trajectory } from "../src/core/index.ts";
import { importJsonl, ReplayBuffer } from "../src/buffer/index.ts";
import { createEnv, syntheticSupport } from "../src/envs/index.ts";
import { abstractTrajectory, auditModel, ReasoningExperienceModel } from "../src/experience/index.ts";
import { OpenAIChatModel } from "../src/llm/index.ts";
import { parseNoiseKinds, REWARD_NOISE_KINDS, startOracleServer, STATE_NOISE_KINDS } from "../src/oracle/index.ts";
import { playScripted } from "../src/cli/seed-data.ts";

const { values: args } = parseArgs({
  options: {
    budget: { type: "string", default: "80000" },
    seeds: { type: "string", default: "2" },
    grid: { type: "string", default: "R:0,2,5,10,20,40 P:2,5,10,20,40" },
    "real-budget": { type: "string", default: "80000" },
    "real-from": { type: "string", default: "runs/experiment-webshop" },
    parallel: { type: "string", default: "2" },
    pessimism: { type: "boolean", default: false },
    "reward-noise": { type: "string", default: REWARD_NOISE_KINDS.join(",") },
    "state-noise": { type: "string", default: STATE_NOISE_KINDS.join(",") },
    "final-eval-tasks": { type: "string", default: "500" },
    "port-base": { type: "string", default: "18400" },
    /** Only the table and the chart, from the runs already in --out (a sweep stopped early; missing runs are left out). */
    "report-only": { type: "boolean", default: false },
    out: { type: "string", default: "runs/experiment-fidelity" },
  },
});
const budget = Number(args.budget);
const seeds = Number(args.seeds);
const realBudget = Number(args["real-budget"]);
const out = args.out!;
const BIN = join(import.meta.dirname, "..", "bin", "dreamgym");
const started = performance.now();
const rewardNoise = args["reward-noise"]!;
const stateNoise = args["state-noise"]!;
parseNoiseKinds(rewardNoise, REWARD_NOISE_KINDS, "reward");
parseNoiseKinds(stateNoise, STATE_NOISE_KINDS, "state");
mkdirSync(out, { recursive: true });

// The grid: "R:0,5,20 P:5,20" → points (ε_R, ε_P) in percent; P points at ε_R = 0, R points at ε_P = 0.
interface Point {
  knob: "R" | "P";
  pct: number;
  epsilonR: number;
  epsilonP: number;
  name: string;
}
const points: Point[] = [];
for (const part of args.grid!.split(/[\s;]+/).filter(Boolean)) {
  const m = /^([RP]):([\d.,]+)$/i.exec(part);
  if (!m) throw new Error(`--grid: "${part}" is not R:<percents> or P:<percents>`);
  for (const v of m[2].split(",").filter(Boolean).map(Number)) {
    const knob = m[1].toUpperCase() as "R" | "P";
    if (knob === "P" && v === 0 && points.some((p) => p.epsilonR === 0 && p.epsilonP === 0)) continue;
    points.push({ knob, pct: v, epsilonR: knob === "R" ? v / 100 : 0, epsilonP: knob === "P" ? v / 100 : 0, name: v === 0 ? "ε = 0" : `ε_${knob} = ${v}%` });
  }
}

// 1. Data: a small seed buffer (the oracle reads no demos: runs use --no-replay, so it only has to
// exist) and held-out real test episodes for the offline audit of each setting.
const seedDb = join(out, "seed.db");
if (!existsSync(seedDb)) {
  await playScripted("oracle", "train", 50, join(out, "seed-oracle.jsonl"));
  const buffer = ReplayBuffer.open(seedDb);
  const abstraction = await closing(createEnv("webshop", {}), (env) => syntheticSupport("webshop", env).abstraction);
  await importJsonl(buffer, join(out, "seed-oracle.jsonl"), { seed: true, transform: (t) => abstractTrajectory(t, abstraction) });
  buffer.close();
}
const held = join(out, "held");
if (!existsSync(join(held, "random.jsonl"))) {
  mkdirSync(held, { recursive: true });
  await playScripted("oracle", "test", 50, join(held, "oracle.jsonl"));
  await playScripted("random", "test", 50, join(held, "random.jsonl"));
}

// 2. The offline audit of the oracle at each setting (in-process server; a few seconds a point).
const abstraction = await closing(createEnv("webshop", {}), (env) => syntheticSupport("webshop", env).abstraction);
const heldOut: Trajectory[] = [
  ...(await readJsonlAll<Trajectory>(join(held, "oracle.jsonl"))),
  ...(await readJsonlAll<Trajectory>(join(held, "random.jsonl"))),
];
const auditFile = join(out, "audit.json");
const audits: Record<string, { epsilonR: number; epsilonP: number; steps: number; stateKind: number; requestsPerSecond: number }> = existsSync(auditFile)
  ? JSON.parse(readFileSync(auditFile, "utf8"))
  : {};
for (const p of points) {
  const key = `${p.epsilonR}/${p.epsilonP}`;
  if (audits[key]) continue;
  const server = await startOracleServer({
    noise: {
      epsilonR: p.epsilonR,
      epsilonP: p.epsilonP,
      seed: 0,
      rewardKinds: parseNoiseKinds(rewardNoise, REWARD_NOISE_KINDS, "reward"),
      stateKinds: parseNoiseKinds(stateNoise, STATE_NOISE_KINDS, "state"),
    },
  });
  try {
    const chat = new OpenAIChatModel({ baseURL: server.url, model: "oracle" });
    const a = await auditModel(heldOut, { model: new ReasoningExperienceModel({ chat, abstraction }), abstraction });
    audits[key] = {
      epsilonR: a.rewardErrorRate,
      epsilonP: 1 - a.identicalStates,
      steps: a.steps,
      stateKind: a.stateKindAccuracy,
      requestsPerSecond: server.stats.requests / server.stats.busySeconds,
    };
  } finally {
    await server.close();
  }
  writeFileSync(auditFile, JSON.stringify(audits, null, 2));
}
console.log(
  `audit of the oracle on ${heldOut.length} held-out test episodes: ${points.map((p) => `${p.name}: ε_R ${(100 * audits[`${p.epsilonR}/${p.epsilonP}`].epsilonR).toFixed(1)}%, ε_P ${(100 * audits[`${p.epsilonR}/${p.epsilonP}`].epsilonP).toFixed(1)}%`).join("; ")}`,
);

// 3. The runs: real-env GRPO (reused from the webshop experiment where it has the run), then every point × seed.
interface Job {
  label: string;
  dir: string;
  args: string[];
  point?: Point;
  seed: number;
  port?: number;
}
const finalEval = ["--final-eval-tasks", args["final-eval-tasks"]!];
const jobs: Job[] = [];
for (let s = 0; s < seeds; s++) {
  const cached = join(args["real-from"]!, `row0-seed${s}`);
  const reuse = existsSync(join(cached, "summary.json")) && JSON.parse(readFileSync(join(cached, "config.json"), "utf8")).budget === realBudget;
  jobs.push({
    label: `real-env GRPO ${realBudget}, seed ${s}`,
    dir: reuse ? cached : join(out, `real-seed${s}`),
    seed: s,
    args: ["--mode", "real", "--budget", String(realBudget), ...finalEval],
  });
}
points.forEach((p, i) => {
  for (let s = 0; s < seeds; s++) {
    jobs.push({
      label: `${p.name}, seed ${s}`,
      dir: join(out, `${p.knob}${p.pct}-seed${s}`),
      point: p,
      seed: s,
      port: Number(args["port-base"]) + i * 16 + s,
      args: [
        "--mode",
        "dreamgym",
        "--budget",
        String(budget),
        "--buffer",
        seedDb,
        "--no-replay",
        "--no-curriculum",
        ...(args.pessimism ? [] : ["--no-pessimism"]),
        "--concurrency",
        "8",
        "--set",
        "onPolicyAudit.episodes=32",
        ...finalEval,
      ],
    });
  }
});

/** Starts the oracle server of a point on its fixed port; resolves once it listens. */
function startOracle(job: Job): Promise<ChildProcess> {
  const p = job.point!;
  const child = spawn(
    process.execPath,
    [
      BIN,
      "oracle-model",
      "serve",
      "--epsilon-r",
      String(p.epsilonR),
      "--epsilon-p",
      String(p.epsilonP),
      "--reward-noise",
      rewardNoise,
      "--state-noise",
      stateNoise,
      "--seed",
      String(job.seed),
      "--port",
      String(job.port),
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let err = "";
  child.stderr!.on("data", (d) => (err += d));
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", () => resolve(child));
    child.once("exit", (code) => reject(new Error(`oracle server exited (${code}): ${err.trim()}`)));
  });
}

let done = 0;
const failures: string[] = [];
async function runJob(job: Job): Promise<void> {
  if (existsSync(join(job.dir, "summary.json"))) return;
  let oracle: ChildProcess | undefined;
  let oracleLog = "";
  try {
    if (job.point) {
      oracle = await startOracle(job);
      oracle.stderr!.on("data", (d) => (oracleLog += d));
    }
    // A run the experiment started before (killed with it) continues from its checkpoint.
    const trainArgs = existsSync(join(job.dir, "config.json"))
      ? ["train", "--resume", job.dir]
      : [
          "train",
          "--env",
          "webshop",
          "--algo",
          "grpo",
          "--seed",
          String(job.seed),
          "--eval-every",
          "0",
          ...job.args,
          ...(job.port ? ["--experience", `http://127.0.0.1:${job.port}/v1#oracle`] : []),
          "--out",
          job.dir,
        ];
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, [BIN, ...trainArgs], { stdio: ["ignore", "ignore", "pipe"] });
      let err = "";
      child.stderr!.on("data", (d) => (err += d));
      child.on("exit", (c) => {
        if (c !== 0) failures.push(`${job.dir}: ${err.trim().split("\n").slice(-3).join(" ")}`);
        resolve(c);
      });
    });
    done++;
    console.log(
      `[${done}/${jobs.length}] ${job.label}: ${code === 0 ? "done" : `failed (${code})`} at ${((performance.now() - started) / 60000).toFixed(1)} min`,
    );
  } finally {
    if (oracle) {
      const exited = new Promise((r) => oracle!.once("exit", r));
      oracle.kill("SIGTERM");
      await exited;
      writeFileSync(`${job.dir}.oracle.log`, oracleLog);
    }
  }
}
let next = args["report-only"] ? jobs.length : 0;
await Promise.all(
  Array.from({ length: Number(args.parallel) }, async () => {
    while (next < jobs.length) {
      const job = jobs[next++];
      await runJob(job).catch((e) => failures.push(`${job.dir}: ${(e as Error).message}`));
    }
  }),
);

// 4. The table and the chart.
interface Summary {
  final: { score: number; success: number };
  wallSeconds: number;
  syntheticInteractions: number;
}
const summaryOf = (dir: string): Summary | null => (existsSync(join(dir, "summary.json")) ? JSON.parse(readFileSync(join(dir, "summary.json"), "utf8")) : null);
/** The on-policy audit's exploitation rate: over the run's audits in its second half (pooled by synthetic successes). */
function exploitation(dir: string): number | null {
  if (!existsSync(join(dir, "metrics.jsonl"))) return null;
  const audited = readFileSync(join(dir, "metrics.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l))
    .filter((m) => m.onPolicyAudit);
  const late = audited.slice(Math.floor(audited.length / 2));
  let successes = 0;
  let exploited = 0;
  for (const m of late) {
    const a = m.onPolicyAudit;
    const s = a.syntheticSuccess * a.episodes;
    successes += s;
    exploited += a.exploitationRate === null ? 0 : a.exploitationRate * s;
  }
  return successes === 0 ? null : exploited / successes;
}
const stat = (xs: number[]) => {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1)) : 0;
  return { m, sd };
};
const realSums = jobs
  .filter((j) => !j.point)
  .map((j) => summaryOf(j.dir))
  .filter((s): s is Summary => s !== null);
const real = realSums.length > 0 ? stat(realSums.map((s) => s.final.score)) : null;
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const lines = [
  `WebShop, neural policy (GRPO), test split (${args["final-eval-tasks"]} goals, greedy); ${seeds} seed${seeds === 1 ? "" : "s"}, mean ± standard deviation; DreamGym runs ${budget.toLocaleString("en-US")} synthetic steps, 0 real, the oracle experience model (reward noise ${rewardNoise}; state noise ${stateNoise}), no curriculum, no replay, pessimism ${args.pessimism ? "on (β 1; the oracle reports no u, so it changes nothing)" : "off"}.`,
  "",
  `Real-env GRPO, ${realBudget.toLocaleString("en-US")} real steps: ${real ? `${real.m.toFixed(1)} ± ${real.sd.toFixed(1)}` : "failed"}.`,
  "",
  "| setting | measured ε_R | measured ε_P | score | % of real GRPO | success | exploitation rate (on-policy) | wall time / run |",
  "|---|---|---|---|---|---|---|---|",
];
const curve: { knob: "R" | "P"; pct: number; ratio: number; sd: number }[] = [];
for (const p of points) {
  const a = audits[`${p.epsilonR}/${p.epsilonP}`];
  const dirs = jobs.filter((j) => j.point === p).map((j) => j.dir);
  const sums = dirs.map(summaryOf).filter((s): s is Summary => s !== null);
  if (sums.length === 0) {
    lines.push(`| ${p.name} | ${pct(a.epsilonR)} | ${pct(a.epsilonP)} | not run | | | | |`);
    continue;
  }
  const score = stat(sums.map((s) => s.final.score));
  const success = stat(sums.map((s) => 100 * s.final.success));
  const ex = dirs.map(exploitation).filter((x): x is number => x !== null);
  const wall = stat(sums.map((s) => s.wallSeconds));
  // Against real-env GRPO of the same seeds (a point short of seeds is compared on the ones it has).
  const realOf = (j: Job) => summaryOf(jobs.find((r) => !r.point && r.seed === j.seed)!.dir);
  const paired = jobs.filter((j) => j.point === p && summaryOf(j.dir) && realOf(j)).map((j) => summaryOf(j.dir)!.final.score / realOf(j)!.final.score);
  const ratio = real && paired.length > 0 ? paired.reduce((x, y) => x + y, 0) / paired.length : NaN;
  curve.push({ knob: p.knob, pct: p.pct, ratio, sd: real ? score.sd / real.m : 0 });
  lines.push(
    `| ${p.name} | ${pct(a.epsilonR)} | ${pct(a.epsilonP)} | ${score.m.toFixed(1)} ± ${score.sd.toFixed(1)}${sums.length < seeds ? ` (${sums.length} of ${seeds} seeds)` : ""} | ${real ? `${(100 * ratio).toFixed(0)}%` : "-"} | ${success.m.toFixed(1)}% | ${ex.length ? pct(ex.reduce((x, y) => x + y, 0) / ex.length) : "- (no synthetic success)"} | ${wall.m.toFixed(0)} s |`,
  );
}
if (failures.length > 0) lines.push("", "Failed runs:", ...failures.map((f) => `- ${f}`));
const rps = Object.values(audits).map((a) => a.requestsPerSecond);
lines.push(
  "",
  `Oracle server: ${Math.round(Math.min(...rps))}–${Math.round(Math.max(...rps))} requests/s of busy time (one core). Total time ${((performance.now() - started) / 60000).toFixed(1)} min (${args.parallel} runs at a time).`,
);
lines.push("", "![score as a share of real-env GRPO against the noise](fidelity.svg)");
writeFileSync(join(out, "results.md"), lines.join("\n") + "\n");
writeFileSync(join(out, "fidelity.svg"), chart(curve));
console.log(`\n${lines.join("\n")}\n\nwritten to ${join(out, "results.md")} and fidelity.svg`);

/** The curve: score / real-env GRPO against the noise level, one line per knob, and the 90% line. */
function chart(data: typeof curve): string {
  const W = 560,
    H = 320,
    L = 56,
    R = 120,
    T = 24,
    B = 44;
  const levels = [...new Set(data.map((d) => d.pct))].sort((a, b) => a - b);
  const x = (v: number) => Math.round(10 * (L + (levels.length <= 1 ? 0 : (levels.indexOf(v) / (levels.length - 1)) * (W - L - R)))) / 10;
  const top = Math.max(1.2, ...data.map((d) => d.ratio + d.sd));
  const y = (r: number) => Math.round(10 * (T + (1 - r / top) * (H - T - B))) / 10;
  const colors = { R: "#c0392b", P: "#2471a3" };
  const names = { R: "reward noise ε_R (ε_P = 0)", P: "state noise ε_P (ε_R = 0)" };
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<line x1="${L}" y1="${y(0)}" x2="${W - R}" y2="${y(0)}" stroke="#444"/><line x1="${L}" y1="${T}" x2="${L}" y2="${y(0)}" stroke="#444"/>`,
  ];
  for (let r = 0; r <= top + 1e-9; r += 0.2)
    parts.push(
      `<text x="${L - 6}" y="${y(r) + 4}" text-anchor="end">${Math.round(100 * r)}%</text><line x1="${L}" y1="${y(r)}" x2="${W - R}" y2="${y(r)}" stroke="#eee"/>`,
    );
  for (const v of levels) parts.push(`<text x="${x(v)}" y="${H - B + 16}" text-anchor="middle">${v}%</text>`);
  parts.push(`<text x="${(L + W - R) / 2}" y="${H - 8}" text-anchor="middle">noise level (probability per step)</text>`);
  parts.push(`<text transform="translate(14 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">test score / real-env GRPO</text>`);
  parts.push(
    `<line x1="${L}" y1="${y(0.9)}" x2="${W - R}" y2="${y(0.9)}" stroke="#888" stroke-dasharray="4 3"/><text x="${W - R + 4}" y="${y(0.9) + 4}" fill="#666">90%</text>`,
  );
  (["R", "P"] as const).forEach((k, i) => {
    // ε = 0 belongs to both curves.
    const pts = data.filter((d) => d.knob === k || d.pct === 0).sort((a, b) => a.pct - b.pct);
    if (pts.length === 0) return;
    parts.push(`<polyline fill="none" stroke="${colors[k]}" stroke-width="2" points="${pts.map((d) => `${x(d.pct)},${y(d.ratio)}`).join(" ")}"/>`);
    for (const d of pts)
      parts.push(
        `<circle cx="${x(d.pct)}" cy="${y(d.ratio)}" r="3" fill="${colors[k]}"/>${d.sd > 0 ? `<line x1="${x(d.pct)}" y1="${y(d.ratio - d.sd)}" x2="${x(d.pct)}" y2="${y(d.ratio + d.sd)}" stroke="${colors[k]}"/>` : ""}`,
      );
    parts.push(
      `<rect x="${W - R + 4}" y="${T + 20 * i}" width="10" height="10" fill="${colors[k]}"/><text x="${W - R + 18}" y="${T + 9 + 20 * i}">${names[k].split(" (")[0]}</text>`,
    );
  });
  parts.push("</svg>");
  return parts.join("\n");
}
