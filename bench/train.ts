// `npm run bench:train`: what a DreamGym iteration costs against a real-env one, all in. Real-env GRPO
// and DreamGym with the learned model, from the same BC policy, the same budget and seed, each
// `dreamgym train` in its own process, one after the other. The data (a seed buffer of data seed 0,
// its learned model and the BC policy) is made once into --data and kept. Prints the wall time
// of each (training only: the final evaluation is the same for both and left out), steps/s, and
// the ratio; each process's CPU time, all threads (Linux), and the CPU ratio: on c cores a process
// takes at least its CPU time / c. Timings, never assertions. Then the same DreamGym run served
// (`dreamgym serve --mode dreamgym`) and trained through `train --env ws://… --set realTasks=server`:
// the session server's overhead per synthetic step against the in-process run (issue 35's target:
// ≤ 15%).
//
//   npm run bench:train -- [--budget 20000] [--data runs/bench-train] [--runs 1]
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ReplayBuffer } from "../src/buffer/index.ts";
import { writeFileAtomic } from "../src/core/index.ts";
import { createEnv, syntheticSupport } from "../src/envs/index.ts";
import { trainLearnedModel } from "../src/experience/index.ts";
import { latestPolicyFile, readMetrics } from "../src/train/index.ts";
import { seedWebShopBuffer } from "../src/cli/seed-data.ts";
import { median } from "./stats.ts";

const { values: args } = parseArgs({
  options: { budget: { type: "string", default: "20000" }, data: { type: "string", default: "runs/bench-train" }, runs: { type: "string", default: "1" } },
});
const budget = Number(args.budget);
const runs = Number(args.runs);
if (!(Number.isInteger(budget) && budget > 0) || !(Number.isInteger(runs) && runs > 0)) {
  console.error("error: --budget and --runs take positive integers");
  process.exit(2);
}
const data = args.data!;
// Every run works out WebShop's search index and title nouns itself (no cache folder: docs/cli.md), as each did
// before there was one: the figures depend neither on what ran before nor on the runs' order.
process.env.DREAMGYM_CACHE = "off";
const BIN = join(import.meta.dirname, "..", "bin", "dreamgym");
const dreamgym = (argv: string[]) => {
  const r = spawnSync(process.execPath, [BIN, ...argv], { stdio: ["ignore", "ignore", "inherit"] });
  if (r.status !== 0) {
    console.error(`error: dreamgym ${argv.join(" ")} exited ${r.status}`);
    process.exit(2);
  }
};

// The data, once: seed buffer, learned model, BC policy.
mkdirSync(data, { recursive: true });
const seedDb = join(data, "seed.db");
const modelFile = join(data, "model.bin");
const bcDir = join(data, "bc");
if (!existsSync(seedDb)) {
  console.log(`making ${data}: the seed buffer of data seed 0 (2,000 scripted episodes), once`);
  await seedWebShopBuffer(data, seedDb, 0);
}
if (!existsSync(modelFile)) {
  const support = await (async () => {
    const env = createEnv("webshop", {});
    try {
      return syntheticSupport("webshop", env);
    } finally {
      await env.close();
    }
  })();
  const buffer = ReplayBuffer.open(seedDb, { readonly: true });
  writeFileAtomic(modelFile, trainLearnedModel(buffer, { abstraction: support.abstraction, rewards: support.rewards, seed: 0 }).model.save());
  buffer.close();
}
if (!existsSync(join(bcDir, "summary.json"))) {
  rmSync(bcDir, { recursive: true, force: true });
  dreamgym(["train", "--env", "webshop", "--mode", "bc", "--seed", "0", "--buffer", seedDb, "--eval-every", "0", "--final-eval-tasks", "1", "--out", bcDir]);
}
const init = latestPolicyFile(bcDir);

/**
 * CPU seconds of the child processes waited for so far, all their threads (Linux: `cutime` + `cstime`
 * of /proc/self/stat, in the kernel's USER_HZ ticks, 100 a second whatever its own tick rate); undefined elsewhere.
 */
const childrenCpu = (): number | undefined => {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // from the 3rd field on
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return undefined;
  }
};

/** One run's training seconds (wall time less its evaluations) and steps, and its process's CPU seconds and wall time (set-up and final evaluation included). */
const time = (name: string, extra: string[], env = "webshop") => {
  const dir = join(data, `run-${name}`);
  rmSync(dir, { recursive: true, force: true });
  const cpu0 = childrenCpu();
  const t0 = performance.now();
  dreamgym([
    "train",
    "--env",
    env,
    "--algo",
    "grpo",
    "--seed",
    "0",
    ...(env === "webshop" ? ["--buffer", seedDb] : []),
    "--budget",
    String(budget),
    "--eval-every",
    "0",
    "--final-eval-tasks",
    "1",
    "--set",
    `initPolicy=${init}`,
    ...extra,
    "--out",
    dir,
  ]);
  const processSeconds = (performance.now() - t0) / 1000;
  const cpu1 = childrenCpu();
  const m = readMetrics(dir);
  const last = m[m.length - 1];
  const evalSeconds = m.reduce((s, x) => s + x.evalSeconds, 0);
  const steps = last.realInteractions + last.syntheticInteractions;
  rmSync(dir, { recursive: true, force: true });
  return { seconds: last.wallSeconds - evalSeconds, steps, processSeconds, cpuSeconds: cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0 };
};
/** A process's CPU seconds and wall time, as printed (their ratio: how many cores it kept busy). */
const cpuOf = (r: { processSeconds: number; cpuSeconds?: number }) =>
  r.cpuSeconds === undefined ? "" : `, process CPU ${r.cpuSeconds.toFixed(1)} s in ${r.processSeconds.toFixed(1)} s`;
const fmt = (r: { seconds: number; steps: number }) => `${r.seconds.toFixed(1)} s (${Math.round(r.steps / r.seconds).toLocaleString("en-US")} steps/s)`;
/** The DreamGym run served: a session server in its own process, and `train --env ws://…` as its trainer. */
const served = async () => {
  const dir = join(data, "run-served");
  rmSync(dir, { recursive: true, force: true });
  const server = spawn(
    process.execPath,
    [
      BIN,
      "serve",
      "--env",
      "webshop",
      "--mode",
      "dreamgym",
      "--run",
      dir,
      "--buffer",
      seedDb,
      "--experience",
      `learned:${modelFile}`,
      "--budget",
      String(budget),
      "--seed",
      "0",
      "--port",
      "0",
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    server.stdout!.on("data", (d: Buffer) => {
      out += d;
      const m = / on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1].replace(/^http/, "ws"));
    });
    server.once("exit", (code) => reject(new Error(`serve exited ${code}`)));
  });
  try {
    return time("client", ["--mode", "real", "--set", "realTasks=server", "--set", "grpo.klCoef=0.05", "--set", "grpo.stdFloor=0.1"], url);
  } finally {
    server.kill("SIGTERM");
    await new Promise((resolve) => server.once("exit", resolve));
    rmSync(dir, { recursive: true, force: true });
  }
};
const ratios: number[] = [];
const cpuRatios: number[] = [];
for (let i = 0; i < runs; i++) {
  const real = time("real", ["--mode", "real"]);
  const dg = time("dreamgym", ["--mode", "dreamgym", "--experience", `learned:${modelFile}`]);
  const sv = await served();
  ratios.push(dg.seconds / real.seconds);
  if (real.cpuSeconds && dg.cpuSeconds !== undefined) cpuRatios.push(dg.cpuSeconds / real.cpuSeconds);
  const cpuRatio = real.cpuSeconds && dg.cpuSeconds !== undefined ? `; CPU DreamGym / real ${(dg.cpuSeconds / real.cpuSeconds).toFixed(2)}×` : "";
  console.log(
    `run ${i + 1}: ${budget.toLocaleString("en-US")} steps each; real-env GRPO ${fmt(real)}${cpuOf(real)}; DreamGym (learned model) ${fmt(dg)}${cpuOf(dg)}; DreamGym / real ${(dg.seconds / real.seconds).toFixed(2)}×${cpuRatio}; served (serve --mode dreamgym + train --env ws://) ${fmt(sv)}, ${(100 * (sv.seconds / dg.seconds - 1)).toFixed(0)}% over in-process`,
  );
}
// This machine's speed moves from one run to the next (the same code's ratio spans 1.4–2.1× within an hour), so
// several runs' median says more than any one of them.
if (runs > 1) {
  const cpu = cpuRatios.length === runs ? `, CPU ${median(cpuRatios).toFixed(2)}×` : "";
  console.log(`median of ${runs} runs: DreamGym / real ${median(ratios).toFixed(2)}×${cpu} (each run: ${ratios.map((r) => r.toFixed(2)).join(" / ")})`);
}
