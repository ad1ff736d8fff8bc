import type { Command } from "commander";
import { closing, InvalidConfigError, readJsonlAll, type Trajectory } from "../core/index.ts";
import { checkBufferEnv, parseTrajectory, ReplayBuffer } from "../buffer/index.ts";
import { createEnv, syntheticSupport, trajectoryRules } from "../envs/index.ts";
import { auditModel, createExperienceModel, isLocalExperience } from "../experience/index.ts";
import { endpointOptions, endpointSettings } from "./endpoint-options.ts";
import { parseIntOption } from "./episodes.ts";
import { ENV_OR_URL, withEnvOption } from "./env-option.ts";
import { inFile } from "./errors.ts";
import { checkInputFile, checkTrajectoryFile } from "./output.ts";
import { auditRun } from "./audit-run.ts";
import { auditJudge } from "./audit-judge.ts";
import { cliConsole as console } from "./io.ts";

export function registerAudit(program: Command): void {
  const cmd = program
    .command("audit")
    .description(
      "how faithful is an experience model: replay held-out real trajectories and compare rewards and next states; or, with --run, replay a run's synthetic episodes in the real env; or, with --judge, have a chat model score synthetic trajectories",
    )
    .option("--env <name>", ENV_OR_URL)
    .option("--trajectories <file>", "held-out real trajectories (JSONL), of tasks the buffer has not seen")
    .option("--run <dir>", "on-policy audit of a finished run: replay its synthetic episodes (from its buffer.db) in the real env, per iteration")
    .option(
      "--episodes <n>",
      "with --run: episodes replayed per iteration, at least, as whole groups (an iteration's episodes of one task; which, fixed by the run's seed)",
      parseIntOption("episodes", 1),
      16,
    )
    .option(
      "--experience <model>",
      "default (embedded kNN model), learned:FILE (dreamgym model train) or a chat model (http://host/v1#model, openai:model)",
      "default",
    )
    .option("--buffer <file>", "the buffer that grounds the model (demos of the audited task are left out)")
    .option("--limit <n>", "audit at most this many trajectories", parseIntOption("limit", 1))
    .option("--cache <file>", "with a chat model: its response cache")
    .option("--data <dir>", "data folder")
    .option(
      "--judge <model>",
      "an LLM judge (http://host/v1#model, openai:model, gguf:file) scores synthetic trajectories — of --run DIR, --buffer B.db or --trajectories F — for consistency, diversity, informativeness and hallucination (1–10)",
    )
    .option("--sample <n>", "with --judge: trajectories judged at most (a sample fixed by --seed)", parseIntOption("sample", 1), 50)
    .option("--seed <n>", "with --judge: seed of the sample", parseIntOption("seed"), 0)
    .option("--context <n>", "with --judge: other trajectories of the sample shown to the judge for diversity", parseIntOption("context"), 4)
    .option("--json", "print the report as JSON");
  endpointOptions(cmd).action(async (o, cmd: Command) => {
    if (o.judge) {
      const others = ["experience", "limit", "episodes"].filter((k) => cmd.getOptionValueSource(k) === "cli");
      if (others.length > 0)
        throw new InvalidConfigError(
          `--judge scores synthetic trajectories with a chat model; drop ${others.map((k) => `--${k}`).join(", ")} (--sample sets how many)`,
        );
      return auditJudge({ ...o, limit: o.sample });
    }
    const judgeOnly = ["sample", "seed", "context"].filter((k) => cmd.getOptionValueSource(k) === "cli");
    if (judgeOnly.length > 0) throw new InvalidConfigError(`${judgeOnly.map((k) => `--${k}`).join(", ")} go with --judge`);
    if (o.run) {
      const others = ["env", "trajectories", "experience", "buffer", "limit", "cache"].filter((k) => cmd.getOptionValueSource(k) === "cli");
      if (others.length > 0)
        throw new InvalidConfigError(`--run audits the run with its own config, env and buffer; drop ${others.map((k) => `--${k}`).join(", ")}`);
      return auditRun(o.run, { episodes: o.episodes, dataDir: o.data, json: o.json });
    }
    if (!o.env || !o.trajectories)
      throw new InvalidConfigError(
        "audit needs --env and --trajectories (an experience model on held-out trajectories), or --run DIR (a run's synthetic episodes in the real env)",
      );
    checkTrajectoryFile(o.trajectories);
    if (o.buffer) checkInputFile(o.buffer, "buffer file", "give the buffer file");
    if (isLocalExperience(o.experience) && !o.buffer)
      throw new InvalidConfigError(`the ${o.experience === "default" ? "embedded" : "learned"} model needs --buffer <file> to ground it`);
    await withEnvOption(o, async () => {
      const real = createEnv(o.env, { dataDir: o.data });
      const support = await closing(real, () => syntheticSupport(o.env, real));
      const all = await readJsonlAll<Trajectory>(o.trajectories, { parse: (v) => parseTrajectory(v, trajectoryRules()) });
      const trajectories = all.filter((t) => t.env === o.env && t.source === "real").slice(0, o.limit ?? Infinity);
      if (trajectories.length === 0) throw new InvalidConfigError(`${o.trajectories} has no real ${o.env} trajectories`);
      const { model, chat, tokens, close } = createExperienceModel(o.experience, {
        abstraction: support.abstraction,
        rewards: support.rewards,
        chat: { cache: o.cache, ...endpointSettings(o) },
      });
      let buffer: ReplayBuffer | undefined;
      try {
        buffer = o.buffer ? await inFile(o.buffer, () => ReplayBuffer.open(o.buffer, { readonly: true })) : undefined;
        if (buffer) checkBufferEnv(buffer, o.buffer, o.env);
      } catch (e) {
        buffer?.close();
        await close();
        throw e;
      }
      try {
        // Without a chat model (and its cache), the buffer is the only database a failure can come from.
        const audit = () => auditModel(trajectories, { model, abstraction: support.abstraction, buffer, tokensUsed: chat ? tokens : undefined });
        const r = chat ? await audit() : await inFile(o.buffer, audit);
        for (const w of r.warnings) console.error(`warning: ${w}`);
        if (o.json) return console.log(JSON.stringify(r, null, 2));
        const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
        const rows: [string, string][] = [
          ["model", r.model],
          ["trajectories / steps", `${r.trajectories} / ${r.steps}`],
          ["invalid outputs", pct(r.invalidRate)],
          ["ε_R: reward error rate (|Δr| > 0.01)", pct(r.rewardErrorRate)],
          ["reward MAE, all steps / ending steps", `${r.rewardMAE.toFixed(3)} / ${r.terminalRewardMAE.toFixed(3)}`],
          ["success TP / FP / FN / TN", `${r.success.truePositive} / ${r.success.falsePositive} / ${r.success.falseNegative} / ${r.success.trueNegative}`],
          ["termination accuracy", pct(r.terminationAccuracy)],
          ["ε_P proxies: state kind accuracy", pct(r.stateKindAccuracy)],
          ["element F1 / identical next states", `${r.elementF1.toFixed(3)} / ${pct(r.identicalStates)}`],
          ["latency / tokens per step", `${r.meanLatencyMs.toFixed(2)} ms / ${r.tokensPerStep.toFixed(0)}`],
        ];
        for (const [k, v] of rows) console.log(`${k.padEnd(40)} ${v}`);
        if (r.firstFailure) console.log(`${"first failure".padEnd(40)} ${r.firstFailure}`);
      } finally {
        buffer?.close();
        await close();
      }
    });
  });
}
