import type { Command } from "commander";
import { closing, InvalidConfigError, readJsonlAll, type Trajectory } from "../core/index.ts";
import { checkBufferEnv, parseTrajectory, ReplayBuffer } from "../buffer/index.ts";
import { createEnv, syntheticSupport, trajectoryRules } from "../envs/index.ts";
import { buildSftData } from "../experience/index.ts";
import { createChatModel } from "../llm/index.ts";
import { endpointOptions, endpointSettings } from "./endpoint-options.ts";
import { parseIntOption } from "./episodes.ts";
import { inFile } from "./errors.ts";
import { parseNumberOption } from "./options.ts";
import { checkInputFile, checkTrajectoryFile, checkOutputFolder } from "./output.ts";
import { progressBar } from "./progress.ts";
import { cliConsole as console } from "./io.ts";

export function registerSft(program: Command): void {
  const sft = program.command("sft").description("training data for the reasoning experience model");
  const build = sft
    .command("build")
    .description("a teacher model explains each real transition; writes chat JSONL (train/val split by task); resumable")
    .requiredOption("--env <name>", "environment")
    .requiredOption("--teacher <model>", "the teacher chat model (http://host/v1#model, openai:model)")
    .requiredOption("--trajectories <file>", "real trajectories (JSONL) to annotate")
    .requiredOption("--out <dir>", "output folder (train.jsonl, val.jsonl)")
    .option("--buffer <file>", "ground the prompts with demos, as at inference")
    .option("--cache <file>", "the teacher's response cache (a resumed build pays nothing for finished calls)")
    .option("--concurrency <n>", "teacher calls at once", parseIntOption("concurrency", 1), 8)
    .option("--limit <n>", "annotate at most this many trajectories", parseIntOption("limit", 1))
    .option("--val <fraction>", "share of tasks held out for validation", parseNumberOption("val", 0, 1, { maxOpen: true }), 0.1)
    .option("--data <dir>", "data folder");
  endpointOptions(build).action(async (o) => {
    checkTrajectoryFile(o.trajectories);
    if (o.buffer) checkInputFile(o.buffer, "buffer file", "give the buffer file");
    checkOutputFolder(o.out);
    const support = await closing(createEnv(o.env, { dataDir: o.data }), (env) => syntheticSupport(o.env, env));
    const trajectories = (await readJsonlAll<Trajectory>(o.trajectories, { parse: (v) => parseTrajectory(v, trajectoryRules()) }))
      .filter((t) => t.env === o.env && t.source === "real")
      .slice(0, o.limit ?? Infinity);
    if (trajectories.length === 0) throw new InvalidConfigError(`${o.trajectories} has no real ${o.env} trajectories to annotate`);
    const teacher = createChatModel(o.teacher, { concurrency: o.concurrency, cache: o.cache, ...endpointSettings(o) });
    let buffer: ReplayBuffer | undefined;
    try {
      buffer = o.buffer ? await inFile(o.buffer, () => ReplayBuffer.open(o.buffer, { readonly: true })) : undefined;
      if (buffer) checkBufferEnv(buffer, o.buffer, o.env);
    } catch (e) {
      buffer?.close();
      await teacher.close?.();
      throw e;
    }
    const steps = trajectories.reduce((n, t) => n + t.steps.length, 0);
    const bar = progressBar("sft build", steps);
    try {
      const r = await buildSftData({
        teacher,
        abstraction: support.abstraction,
        trajectories,
        outDir: o.out,
        buffer,
        valFraction: o.val,
        concurrency: o.concurrency,
        onProgress: (d) => bar.update(d),
      });
      bar.stop();
      console.log(
        `${r.examples} new examples (${r.train} train, ${r.val} val), ${r.skipped} already built, ${r.failed} failed teacher calls${r.dropped ? `, ${r.dropped} lines that were not examples removed` : ""}; in ${o.out}`,
      );
      if (r.firstFailure) console.log(`first failure: ${r.firstFailure}`);
    } finally {
      bar.stop();
      buffer?.close();
      await teacher.close?.();
    }
  });
}
