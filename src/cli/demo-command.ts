import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { InvalidConfigError } from "../core/index.ts";
import { join } from "node:path";
import type { Command } from "commander";
import { resumeTraining, train, type TrainSummary } from "../train/index.ts";
import { parseIntOption } from "./episodes.ts";
import { checkOutputFolder } from "./output.ts";
import { playScripted, seedWebShopBuffer } from "./seed-data.ts";
import { progressHook } from "./train-command.ts";

const MARKER = ".dreamgym-demo";

interface DemoOptions {
  out: string;
  budget: number;
  realBudget: number;
  seed: number;
}

async function demo(o: DemoOptions): Promise<void> {
  const started = performance.now();
  mkdirSync(o.out, { recursive: true });
  console.log(`DreamGym on WebShop with the embedded defaults (no LLM, no server); everything goes to ${o.out}\n`);

  // 1. Offline data, as the paper seeds WebShop: oracle (demonstration-like) and random trajectories.
  console.log("1. offline trajectories: 1,000 oracle + 500 random episodes on train goals → the seed buffer");
  const seedBuffer = join(o.out, "seed.db");
  const seeded = await seedWebShopBuffer(o.out, seedBuffer);
  console.log(`   seed buffer: ${seeded} transitions`);

  // 2. The rule baseline.
  console.log("2. rule baseline on the 500 test goals");
  const rule = await playScripted("rule", "test", 500);

  // 3. DreamGym: RL in the synthetic env only, 0 real training interactions.
  const common = { env: "webshop", algo: "grpo" as const, seed: o.seed, evalEvery: 10, buffer: seedBuffer };
  const run = async (name: string, label: string, input: Parameters<typeof train>[1]): Promise<TrainSummary> => {
    console.log(label);
    const hook = progressHook();
    try {
      return await train(join(o.out, name), input, hook);
    } finally {
      hook.stop();
    }
  };
  const hybrid = await run("dreamgym", `3. DreamGym: GRPO in the synthetic env (embedded model; purchase rewards from WebShop's reward function), ${o.budget} synthetic steps, 0 real`, { ...common, mode: "dreamgym", hybrid: true, budget: o.budget });
  // 4. Real-env RL given the same wall time as DreamGym.
  const realRl = await run("real", `4. real-env GRPO for the same wall time (${hybrid.wallSeconds.toFixed(0)} s)`, { ...common, mode: "real", budget: 10_000_000, maxSeconds: hybrid.wallSeconds });
  // 5. Sim-to-real: the DreamGym run (a copy) goes on in the real env for a small real budget, as
  //    `train --resume <copy> --mode s2r --real-budget N` does.
  console.log(`5. DreamGym-S2R: the DreamGym run goes on with ${o.realBudget} real steps`);
  cpSync(join(o.out, "dreamgym"), join(o.out, "s2r"), { recursive: true });
  const s2rHook = progressHook();
  let s2r: TrainSummary;
  try {
    s2r = await resumeTraining(join(o.out, "s2r"), s2rHook, { mode: "s2r", realBudget: o.realBudget });
  } finally {
    s2rHook.stop();
  }
  // 6. Real-env RL with as many real steps as S2R used.
  const realSmall = await run("real-small", `6. real-env GRPO with S2R's real steps (${s2r.realInteractions})`, { ...common, mode: "real", budget: s2r.realInteractions });

  const rows: [string, number, number, number, number, number][] = [
    ["rule baseline", rule.score, rule.success, 0, 0, 0],
    ["real-env GRPO (same wall time as DreamGym)", realRl.final.score, realRl.final.success, realRl.realInteractions, 0, realRl.wallSeconds],
    ["real-env GRPO (same real steps as S2R)", realSmall.final.score, realSmall.final.success, realSmall.realInteractions, 0, realSmall.wallSeconds],
    ["DreamGym (0 real)", hybrid.final.score, hybrid.final.success, 0, hybrid.syntheticInteractions, hybrid.wallSeconds],
    ["DreamGym-S2R", s2r.final.score, s2r.final.success, s2r.realInteractions, s2r.syntheticInteractions, s2r.wallSeconds],
  ];
  const table = [
    "| method | test score | test success | real training steps | synthetic steps | training wall time |",
    "|---|---|---|---|---|---|",
    ...rows.map(([name, score, success, realSteps, syn, wall]) =>
      `| ${name} | ${score.toFixed(1)} | ${(100 * success).toFixed(1)}% | ${realSteps.toLocaleString("en-US")} | ${syn.toLocaleString("en-US")} | ${wall ? `${wall.toFixed(0)} s` : "-"} |`),
  ].join("\n");
  console.log(`\n${table}\n\nWebShop test split, 500 goals, greedy policies. Total demo time ${((performance.now() - started) / 1000 / 60).toFixed(1)} min. Runs (metrics, report.html): ${o.out}/*/`);
}

export function registerDemo(program: Command): void {
  program
    .command("demo")
    .description("the whole method on WebShop with the embedded defaults: seed a buffer, train in the synthetic env, compare on the real test split")
    .option("--out <dir>", "where the data and runs go (replaced)", "runs/demo")
    .option("--budget <n>", "synthetic steps of the DreamGym run", parseIntOption("budget", 1), 50_000)
    .option("--real-budget <n>", "real steps of the S2R phase", parseIntOption("real-budget", 1), 5_000)
    .option("--seed <n>", "seed", parseIntOption("seed"), 0)
    .action(async (o) => {
      checkOutputFolder(o.out);
      // Only a folder the demo made (it leaves a marker) is replaced.
      if (existsSync(o.out) && readdirSync(o.out).length > 0 && !existsSync(join(o.out, MARKER))) {
        throw new InvalidConfigError(`${o.out} exists and is not a demo folder; choose another --out`);
      }
      rmSync(o.out, { recursive: true, force: true });
      mkdirSync(o.out, { recursive: true });
      writeFileSync(join(o.out, MARKER), "made by dreamgym demo\n");
      await demo(o as DemoOptions);
    });
}
