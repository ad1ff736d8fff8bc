import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { InvalidConfigError } from "../core/index.ts";
import { join } from "node:path";
import type { Command } from "commander";
import { closing, writeFileAtomic } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { createEnv, syntheticSupport } from "../envs/index.ts";
import { loadCatalogue } from "../envs/webshop/index.ts";
import { loadLearnedModel, parseExperienceSpec, trainLearnedModel } from "../experience/index.ts";
import { probeEndpoint } from "../llm/index.ts";
import { latestPolicyFile, readMetrics, resumeTraining, train, type TrainSummary } from "../train/index.ts";
import { DEFAULT_REQUEST_TIMEOUT_S } from "./endpoint-options.ts";
import { parseIntOption } from "./episodes.ts";
import { checkOutputFolder } from "./output.ts";
import { playScripted, seedWebShopBuffer } from "./seed-data.ts";
import { progressHook } from "./train-command.ts";
import { cliConsole as console } from "./io.ts";

const MARKER = ".dreamgym-demo";

interface DemoOptions {
  out: string;
  budget: number;
  realBudget: number;
  seed: number;
  experience: string;
  bcEpochs: number;
  init: "bc" | "scratch";
}

/** The figures of a row: test score and success, real and synthetic training steps, wall time, and the last on-policy audit's exploitation rate. */
type Row = [name: string, score: number, success: number, realSteps: number, synthetic: number, wall: number, exploitation: string];

/** The exploitation rate of a run's last on-policy audit ("-": none, or no synthetic success to check). */
function lastExploitation(runDir: string): string {
  const audit = readMetrics(runDir)
    .filter((m) => m.onPolicyAudit)
    .at(-1)?.onPolicyAudit;
  if (!audit) return "-";
  return audit.exploitationRate === null
    ? `- (${audit.episodes} episodes, no synthetic success)`
    : `${(100 * audit.exploitationRate).toFixed(0)}% of ${Math.round(audit.syntheticSuccess * audit.episodes)}`;
}

/**
 * The experience model, checked before any work: a wrong name, a model file that does not load or an
 * endpoint that does not answer is said now, not after minutes of seeding and cloning.
 */
async function checkDemoExperience(experience: string): Promise<void> {
  if (experience === "learned") return; // trained here, from the seed buffer
  const spec = parseExperienceSpec(experience);
  if (spec.kind === "chat") await probeEndpoint(spec.spec, 1000 * DEFAULT_REQUEST_TIMEOUT_S);
  else if (spec.kind === "learned") {
    const support = await closing(createEnv("webshop", {}), (env) => syntheticSupport("webshop", env));
    loadLearnedModel(spec.file, support.abstraction, support.rewards);
  }
}

async function demo(o: DemoOptions): Promise<void> {
  const started = performance.now();
  mkdirSync(o.out, { recursive: true });
  console.log(`DreamGym on WebShop with the embedded defaults (no LLM, no server); everything goes to ${o.out}\n`);

  // 1. Offline data, as the paper seeds WebShop: oracle (demonstration-like) and random trajectories.
  console.log("1. offline trajectories: 1,000 oracle + 500 slipping-oracle + 500 random episodes on train goals → the seed buffer");
  const seedBuffer = join(o.out, "seed.db");
  const seeded = await seedWebShopBuffer(o.out, seedBuffer);
  console.log(`   seed buffer: ${seeded} transitions`);

  // 2. The rule baseline.
  console.log("2. rule baseline on the 500 test goals");
  const rule = await playScripted("rule", "test", 500);

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
  // 3. Behaviour cloning: the offline data used directly (its successful episodes), no RL.
  const bc = await run("bc", `3. behaviour cloning on the seed buffer's successful episodes (${o.bcEpochs} epochs, 0 RL)`, {
    ...common,
    mode: "bc",
    bc: { epochs: o.bcEpochs },
  });
  // Every RL row starts the same way: from the BC policy (the paper's policies start from an
  // instruction-tuned LLM that already acts sensibly), or all from fresh weights.
  const start = o.init === "bc" ? { initPolicy: latestPolicyFile(join(o.out, "bc")) } : {};

  // The experience model: the embedded kNN model, or the learned one trained here from the seed buffer.
  let experience = o.experience;
  if (experience === "learned") {
    const file = join(o.out, "model.bin");
    console.log("   the learned experience model: trained on the seed buffer's real transitions");
    const support = await closing(createEnv("webshop", {}), (env) => syntheticSupport("webshop", env));
    const buffer = ReplayBuffer.open(seedBuffer, { readonly: true });
    try {
      writeFileAtomic(file, trainLearnedModel(buffer, { abstraction: support.abstraction, rewards: support.rewards, seed: o.seed }).model.save());
    } finally {
      buffer.close();
    }
    experience = `learned:${file}`;
  }
  const modelName = experience === "default" ? "embedded kNN model" : experience.startsWith("learned:") ? "learned model" : experience;

  // 4. DreamGym as the paper runs it: RL in the synthetic env only, every reward from the experience model, 0 real training interactions.
  const dg = await run("dreamgym", `4. DreamGym: GRPO in the synthetic env (${modelName}, its own rewards, no verifier), ${o.budget} synthetic steps, 0 real`, {
    ...common,
    ...start,
    mode: "dreamgym",
    experience,
    budget: o.budget,
  });
  // 5. The hybrid: purchase rewards from WebShop's reward function (a verifier an env of one's own usually lacks).
  const hybrid = await run(
    "dreamgym-hybrid",
    `5. DreamGym, hybrid: the same with purchase rewards from WebShop's reward function, ${o.budget} synthetic steps, 0 real`,
    { ...common, ...start, mode: "dreamgym", experience, hybrid: true, budget: o.budget },
  );
  // 6. Real-env RL given the same wall time as DreamGym.
  const realRl = await run("real", `6. real-env GRPO for the same wall time as DreamGym (${dg.wallSeconds.toFixed(0)} s)`, {
    ...common,
    ...start,
    mode: "real",
    budget: 10_000_000,
    maxSeconds: dg.wallSeconds,
  });
  // 7. Sim-to-real: the DreamGym run (a copy) goes on in the real env for a small real budget, as
  //    `train --resume <copy> --mode s2r --real-budget N` does.
  console.log(`7. DreamGym-S2R: the DreamGym run goes on with ${o.realBudget} real steps`);
  cpSync(join(o.out, "dreamgym"), join(o.out, "s2r"), { recursive: true });
  const s2rHook = progressHook();
  let s2r: TrainSummary;
  try {
    s2r = await resumeTraining(join(o.out, "s2r"), s2rHook, { mode: "s2r", realBudget: o.realBudget });
  } finally {
    s2rHook.stop();
  }
  // 8. Real-env RL with as many real steps as S2R used.
  const realSmall = await run("real-small", `8. real-env GRPO with S2R's real steps (${s2r.realInteractions})`, {
    ...common,
    ...start,
    mode: "real",
    budget: s2r.realInteractions,
  });

  const rows: Row[] = [
    ["rule baseline", rule.score, rule.success, 0, 0, 0, "-"],
    ["behaviour cloning (offline data, 0 RL)", bc.final.score, bc.final.success, 0, 0, bc.wallSeconds, "-"],
    ["real-env GRPO (same wall time as DreamGym)", realRl.final.score, realRl.final.success, realRl.realInteractions, 0, realRl.wallSeconds, "-"],
    ["real-env GRPO (same real steps as S2R)", realSmall.final.score, realSmall.final.success, realSmall.realInteractions, 0, realSmall.wallSeconds, "-"],
    [
      "DreamGym (0 real; model rewards)",
      dg.final.score,
      dg.final.success,
      0,
      dg.syntheticInteractions,
      dg.wallSeconds,
      lastExploitation(join(o.out, "dreamgym")),
    ],
    ["DreamGym-S2R", s2r.final.score, s2r.final.success, s2r.realInteractions, s2r.syntheticInteractions, s2r.wallSeconds, "-"],
    [
      "extra: DreamGym, hybrid (purchase rewards from WebShop's reward function)",
      hybrid.final.score,
      hybrid.final.success,
      0,
      hybrid.syntheticInteractions,
      hybrid.wallSeconds,
      lastExploitation(join(o.out, "dreamgym-hybrid")),
    ],
  ];
  const table = [
    "| method | test score | test success | real training steps | synthetic steps | training wall time | exploitation rate (last on-policy audit) |",
    "|---|---|---|---|---|---|---|",
    ...rows.map(
      ([name, score, success, realSteps, syn, wall, exploitation]) =>
        `| ${name} | ${score.toFixed(1)} | ${(100 * success).toFixed(1)}% | ${realSteps.toLocaleString("en-US")} | ${syn.toLocaleString("en-US")} | ${wall ? `${wall.toFixed(0)} s` : "-"} | ${exploitation} |`,
    ),
  ].join("\n");
  console.log(
    `\n${table}\n\nWebShop test split, 500 goals, greedy policies; experience model: ${modelName}. ${o.init === "bc" ? "Every RL run starts from the BC policy" : "Every RL run starts from fresh weights"} (seed ${o.seed}). Total demo time ${((performance.now() - started) / 1000 / 60).toFixed(1)} min. Runs (metrics, report.html): ${o.out}/*/`,
  );
  console.log(
    "One seed of one seed buffer: whether synthetic experience teaches is a question for several data seeds (each its own offline data): npm run experiment:webshop, and its table with teach ratios in docs/results.md.",
  );
}

export function registerDemo(program: Command): void {
  program
    .command("demo")
    .description("the whole method on WebShop with the embedded defaults: seed a buffer, train in the synthetic env, compare on the real test split")
    .option("--out <dir>", "where the data and runs go (replaced)", "runs/demo")
    .option("--budget <n>", "synthetic steps of each DreamGym run (model rewards, hybrid)", parseIntOption("budget", 1), 30_000)
    .option("--real-budget <n>", "real steps of the S2R phase", parseIntOption("real-budget", 1), 5_000)
    .option("--seed <n>", "seed", parseIntOption("seed"), 0)
    .option(
      "--experience <model>",
      "the experience model: learned (a learned model trained here from the seed buffer), default (the embedded kNN model) or a chat model (http://host/v1#model)",
      "learned",
    )
    .option("--bc-epochs <n>", "epochs of the behaviour-cloning row", parseIntOption("bc-epochs", 1), 8)
    .option("--init <start>", "where every RL row starts: bc (the BC row's policy) or scratch (fresh weights)", "bc")
    .action(async (o) => {
      checkOutputFolder(o.out);
      if (o.init !== "bc" && o.init !== "scratch") throw new InvalidConfigError(`--init is bc or scratch, not ${o.init}`);
      // Only a folder the demo made (it leaves a marker) is replaced.
      if (existsSync(o.out) && readdirSync(o.out).length > 0 && !existsSync(join(o.out, MARKER))) {
        throw new InvalidConfigError(`${o.out} exists and is not a demo folder; choose another --out`);
      }
      loadCatalogue(); // the data, found before any work too (the steps below use this catalogue, kept in memory)
      await checkDemoExperience(o.experience);
      rmSync(o.out, { recursive: true, force: true });
      mkdirSync(o.out, { recursive: true });
      writeFileSync(join(o.out, MARKER), "made by dreamgym demo\n");
      await demo(o as DemoOptions);
    });
}
