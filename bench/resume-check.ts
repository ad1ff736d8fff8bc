// `npm run check:resume`: a training run killed with SIGKILL at random iterations and resumed must
// finish exactly as the same run never stopped: same summary.json (timings and paths aside) and the
// same metrics.jsonl line for line (timings aside). Too slow for `npm test` at realistic settings
// (two 20k-step runs); prints what it compares and exits 1 on a mismatch.
//
//   npm run check:resume -- [--budget 20000] [--seed 3] [--kills 2] [--kill-seed N] [--out DIR]
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual, parseArgs } from "node:util";
import { Rng } from "../src/core/index.ts";
import { BIN, metricsOf } from "../test/helpers.ts";

const { values: args } = parseArgs({
  options: {
    budget: { type: "string", default: "20000" },
    seed: { type: "string", default: "3" },
    kills: { type: "string", default: "2" },
    "kill-seed": { type: "string" },
    out: { type: "string" },
  },
});
const TRAIN = ["train", "--mode", "real", "--budget", args.budget!, "--seed", args.seed!];
const kills = Number(args.kills);
// The kill points are random but printed, so a failing draw can be replayed.
const killSeed = args["kill-seed"] !== undefined ? Number(args["kill-seed"]) : Math.floor(Math.random() * 2 ** 31);
const root = args.out ?? mkdtempSync(join(tmpdir(), "dreamgym-resume-check-"));
const whole = join(root, "whole");
const killed = join(root, "killed");

function train(extra: string[]): void {
  const r = spawnSync(process.execPath, [BIN, ...extra], { encoding: "utf8" });
  if (r.status !== 0) {
    console.error(`dreamgym ${extra.join(" ")} exited ${r.status}:\n${r.stderr}`);
    process.exit(1);
  }
}

const linesOf = (dir: string) => {
  try {
    return readFileSync(join(dir, "metrics.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l !== "").length;
  } catch {
    return 0;
  }
};
const checkpointOf = (dir: string) => {
  try {
    return (JSON.parse(readFileSync(join(dir, "checkpoints", "latest.json"), "utf8")) as { iteration: number }).iteration;
  } catch {
    return 0; // none yet, or between write and rename
  }
};

const writtenSince = (dir: string, ms: number) => {
  try {
    return statSync(join(dir, "metrics.jsonl")).mtimeMs >= ms;
  } catch {
    return false;
  }
};

/** Runs `args` and kills it with SIGKILL once a checkpoint exists and iteration `at` is done. */
async function killAt(args: string[], at: number): Promise<boolean> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: "ignore" });
  let done = false;
  const exited = new Promise((resolve) => child.on("exit", () => resolve((done = true))));
  // A resumed run first cuts metrics.jsonl back to its checkpoint: count lines this process wrote.
  const started = Date.now();
  const ready = () => checkpointOf(killed) > 0 && linesOf(killed) >= at && writtenSince(killed, started);
  while (!done && !ready()) await new Promise((resolve) => setTimeout(resolve, 5));
  if (done) return false;
  child.kill("SIGKILL");
  await exited;
  return true;
}

let t0 = performance.now();
train([...TRAIN, "--out", whole]);
const wholeSeconds = (performance.now() - t0) / 1000;
const iterations = metricsOf(whole).length;
const every = (JSON.parse(readFileSync(join(whole, "config.json"), "utf8")) as { checkpointEvery: number }).checkpointEvery;

// Kill points: distinct iterations after the first checkpoint and before the last iteration.
const rng = new Rng(killSeed);
const candidates = Array.from({ length: Math.max(0, iterations - every - 1) }, (_, i) => every + 1 + i);
const points: number[] = [];
while (points.length < kills && candidates.length > 0) points.push(candidates.splice(rng.randbelow(candidates.length), 1)[0]);
points.sort((a, b) => a - b);

t0 = performance.now();
const actual: string[] = [];
for (const [i, at] of points.entries()) {
  const args = i === 0 ? [...TRAIN, "--out", killed] : ["train", "--resume", killed];
  if (!(await killAt(args, at))) {
    console.error(`the run finished before iteration ${at}: nothing was killed`);
    process.exit(1);
  }
  actual.push(`${linesOf(killed)} done, checkpoint ${checkpointOf(killed)}`);
}
train(["train", "--resume", killed]);
const killedSeconds = (performance.now() - t0) / 1000;

const IGNORED = new Set(["runDir", "runSeconds", "wallSeconds", "resumedFrom"]);
const summaryOf = (dir: string) => {
  const s = JSON.parse(readFileSync(join(dir, "summary.json"), "utf8")) as Record<string, unknown>;
  for (const k of IGNORED) delete s[k];
  return s;
};
const final = (dir: string) => summaryOf(dir).final as { score: number; success: number };
const show = (dir: string) => `score ${final(dir).score.toFixed(1)}, success ${(100 * final(dir).success).toFixed(1)}%`;

console.log(`dreamgym ${TRAIN.join(" ")}  (${iterations} iterations, checkpoint every ${every}; runs in ${root})`);
console.log(`uninterrupted: ${show(whole)}  (${wholeSeconds.toFixed(0)} s)`);
console.log(
  `killed with SIGKILL after iterations ${points.join(", ")} (kill seed ${killSeed}; at the kill: ${actual.join("; ")}), resumed: ${show(killed)}  (${killedSeconds.toFixed(0)} s)`,
);

const a = metricsOf(whole);
const b = metricsOf(killed);
let failed = false;
if (!isDeepStrictEqual(summaryOf(killed), summaryOf(whole))) {
  console.log(`summary.json differs:\n  uninterrupted ${JSON.stringify(summaryOf(whole))}\n  resumed       ${JSON.stringify(summaryOf(killed))}`);
  failed = true;
}
const first = a.findIndex((m, i) => !isDeepStrictEqual(m, b[i]));
if (a.length !== b.length || first >= 0) {
  const i = first >= 0 ? first : Math.min(a.length, b.length);
  console.log(
    `metrics.jsonl differs (${a.length} vs ${b.length} lines), first at iteration ${i + 1}:\n  uninterrupted ${JSON.stringify(a[i])}\n  resumed       ${JSON.stringify(b[i])}`,
  );
  failed = true;
}
console.log(failed ? "MISMATCH" : "same summary.json and metrics.jsonl (timings aside)");
// A temporary folder (about 50 MB) is kept only to look into a mismatch.
if (args.out === undefined) {
  if (failed) console.log(`(run folders kept in ${root})`);
  else rmSync(root, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
