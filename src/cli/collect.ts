import type { Command } from "commander";
import { JsonlWriter } from "../core/index.ts";
import { parseIntOption, playEpisodes } from "./episodes.ts";

export function registerCollect(program: Command): void {
  program
    .command("collect")
    .description("collect offline trajectories of a scripted policy as JSONL (DESIGN.md trajectory format)")
    .requiredOption("--env <name>", "environment")
    .requiredOption("--policy <name>", "scripted policy (oracle | rule | random)")
    .requiredOption("--out <file>", "output JSONL file")
    .option("--episodes <n>", "number of episodes", parseIntOption("episodes", 1), 100)
    .option("--split <split>", "task split", "train")
    .option("--start <n>", "first task index within the split", parseIntOption("start"), 0)
    .option("--seed <n>", "seed (episode i uses seed + i)", parseIntOption("seed"), 0)
    .option("--max-steps <n>", "steps before truncation", parseIntOption("max-steps", 1))
    .option("--append", "append to --out instead of replacing it")
    .option("--data <dir>", "data folder")
    .action(async (o) => {
      let out: JsonlWriter | null = null;
      let steps = 0;
      try {
        const r = await playEpisodes(
          o,
          `collect ${o.policy}`,
          (t) => {
            out!.write(t);
            steps += t.steps.length;
          },
          () => (out = new JsonlWriter(o.out, { append: Boolean(o.append) })),
        );
        console.log(`wrote ${r.episodes} trajectories (${steps} steps) to ${o.out}: score ${(100 * r.score).toFixed(1)}, success ${(100 * r.success).toFixed(1)}%`);
      } finally {
        (out as JsonlWriter | null)?.close();
      }
    });
}
