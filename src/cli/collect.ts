import type { Command } from "commander";
import { InvalidConfigError } from "../core/index.ts";
import { defaultSplits } from "../envs/index.ts";
import { endpointOptions } from "./endpoint-options.ts";
import { ENV_OR_URL, withEnvOption } from "./env-option.ts";
import { parseIntOption, playScriptedEpisodes } from "./episodes.ts";
import { checkAppendFile, checkOutputFile, JsonlOutput, type TornTail } from "./output.ts";
import { playSyntheticEpisodes, type SyntheticEpisodesOptions } from "./synthetic-episodes.ts";
import { cliConsole as console, setExitCode } from "./io.ts";

/**
 * Opens `--out` once everything else is valid. A torn last line an earlier run left (`torn`, found
 * up front) is cut before the first record, and said: it is no record any reader could use (they
 * report and skip it), `--append` keeps a file up to its last whole record, and a first record glued
 * onto it would be lost too; refusing would only leave the user to make the same cut by hand.
 */
function openOutput(o: { out: string; append?: boolean }, torn: TornTail | null): JsonlOutput {
  const out = new JsonlOutput(o.out, { append: Boolean(o.append) });
  if (torn)
    console.error(
      `warning: ${o.out}: a torn last line (${torn.bytes} bytes from byte ${torn.at}, no line end: an interrupted write's) was cut off before appending`,
    );
  return out;
}

async function collectSynthetic(o: SyntheticEpisodesOptions & { out: string; append?: boolean }, torn: TornTail | null): Promise<void> {
  if (!o.buffer) throw new InvalidConfigError("--experience needs --buffer <file> (the model is grounded in it, and the synthetic transitions go there)");
  let out: JsonlOutput | null = null;
  try {
    const r = await playSyntheticEpisodes(
      o,
      (t) => out!.write(t),
      () => (out = openOutput(o, torn)),
    );
    (out as JsonlOutput | null)?.commit();
    console.log(
      `wrote ${r.episodes} synthetic trajectories (${r.steps} steps, ${r.failedSteps} failed model steps) to ${o.out}: ` +
        `score ${(100 * r.score).toFixed(1)}, success ${(100 * r.success).toFixed(1)}% (${o.hybrid ? "hybrid: verified terminal rewards" : "model rewards"})`,
    );
  } finally {
    (out as JsonlOutput | null)?.abort(); // a no-op after commit()
  }
}

export function registerCollect(program: Command): void {
  const cmd = program
    .command("collect")
    .description("collect offline trajectories of a scripted policy as JSONL (format: docs/data-formats.md)")
    .requiredOption("--env <name>", ENV_OR_URL)
    .requiredOption("--policy <name>", "scripted policy (webshop: oracle | oracle-noisy | rule | random; alfworld: expert | random)")
    .requiredOption("--out <file>", "output JSONL file")
    .option("--episodes <n>", "number of episodes", parseIntOption("episodes", 1), 100)
    .option("--split <split>", "task split (default: webshop train, alfworld valid_train)")
    .option("--start <n>", "first task index within the split", parseIntOption("start"), 0)
    .option("--seed <n>", "seed (episode i uses seed + i)", parseIntOption("seed"), 0)
    .option("--max-steps <n>", "steps before truncation", parseIntOption("max-steps", 1))
    .option("--append", "append to --out instead of replacing it")
    .option("--data <dir>", "data folder")
    .option(
      "--experience <model>",
      "play in the synthetic env: default (embedded kNN model), learned:FILE (dreamgym model train) or a chat model (http://host/v1#model, openai:model)",
    )
    .option("--buffer <file>", "with --experience: the replay buffer that grounds the model and receives the synthetic transitions")
    .option("--concurrency <n>", "with --experience: episodes at once", parseIntOption("concurrency", 1), 8)
    .option("--hybrid", "with --experience: terminal rewards from the real env's verifier")
    .option("--cache <file>", "with a chat model: its response cache (SQLite)");
  endpointOptions(cmd).action(async (o) => {
    if (o.hybrid && !o.experience)
      throw new InvalidConfigError("--hybrid applies to synthetic episodes only: add --experience <model> --buffer <file>, or drop --hybrid");
    for (const flag of ["buffer", "cache"] as const) {
      if (o[flag] !== undefined && !o.experience)
        throw new InvalidConfigError(`--${flag} applies to synthetic episodes only: add --experience <model>, or drop --${flag}`);
    }
    checkOutputFile(o.out);
    // A file that is not trajectory JSONL is refused before any episode is played, and left as it is.
    const torn = o.append ? checkAppendFile(o.out) : null;
    await withEnvOption(o, async () => {
      o.split ??= defaultSplits(o.env).train;
      if (o.experience) return collectSynthetic(o, torn);
      let out: JsonlOutput | null = null;
      let steps = 0;
      try {
        const r = await playScriptedEpisodes(
          o,
          `collect ${o.policy}`,
          (t) => {
            out!.write(t);
            steps += t.steps.length;
          },
          () => (out = openOutput(o, torn)),
          true,
        );
        (out as JsonlOutput | null)?.commit();
        console.log(
          `wrote ${r.episodes} trajectories (${steps} steps) to ${o.out}: score ${(100 * r.score).toFixed(1)}, success ${(100 * r.success).toFixed(1)}%`,
        );
        if (r.stopped) {
          // Stopped by the user: what was played is kept, and the exit code says it was cut short.
          console.error(`stopped by ${r.stopped} after ${r.episodes} of ${o.episodes} episodes; those are in ${o.out}`);
          setExitCode(130);
        }
      } finally {
        (out as JsonlOutput | null)?.abort(); // a no-op after commit()
      }
    });
  });
}
