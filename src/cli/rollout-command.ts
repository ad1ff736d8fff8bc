import type { Command } from "commander";
import { abstractEnv, InvalidConfigError, type Env } from "../core/index.ts";
import { createEnv, defaultSplits, syntheticSupport, type EnvName } from "../envs/index.ts";
import { createChatModel, type ModelStats } from "../llm/index.ts";
import { deriveSeed, playEpisodes, type Episode, type EpisodeJob } from "../rl/episode.ts";
import { exportForTrainer } from "../rl/llm-export.ts";
import { LlmPolicy, type LlmStepRecord } from "../rl/llm-policy.ts";
import { parseIntOption } from "./episodes.ts";
import { checkOutputFile } from "./output.ts";
import { progressBar } from "./progress.ts";

interface RolloutOptions {
  env: string;
  model: string;
  out: string;
  tasks: number;
  group: number;
  split?: string;
  start: number;
  concurrency: number;
  seed: number;
  temperature: number;
  maxSteps?: number;
  maxTokens?: number;
  cache?: string;
  format: string;
  data?: string;
}

function parseTemperature(value: string): number {
  const t = Number(value);
  if (value.trim() === "" || !Number.isFinite(t) || t < 0 || t > 2) throw new InvalidConfigError(`--temperature must be a number in [0, 2], got "${value}"`);
  return t;
}

async function rollout(o: RolloutOptions): Promise<void> {
  if (o.format !== "steps" && o.format !== "trajectories") throw new InvalidConfigError(`--format must be steps or trajectories, got "${o.format}"`);
  const format = o.format;
  o.split ??= defaultSplits(o.env).eval;
  checkOutputFile(o.out); // a bad --out fails before any model call is paid for
  // Envs first (a bad env, split or data folder fails before the model's cache is opened).
  const real = Array.from({ length: o.concurrency }, () => createEnv(o.env as EnvName, { dataDir: o.data, split: o.split as never, maxSteps: o.maxSteps }));
  const { abstraction } = syntheticSupport(o.env, real[0]);
  const envs: Env[] = real.map((e) => abstractEnv(e, abstraction));
  const model = createChatModel(o.model, { concurrency: o.concurrency, cache: o.cache });
  const policy = new LlmPolicy({ model, temperature: o.temperature, maxTokens: o.maxTokens, profile: abstraction.profile });

  const all = real[0].tasks();
  const tasks = Array.from({ length: o.tasks }, (_, i) => all[(o.start + i) % all.length]);
  // Seeds from the run seed, task and rollout: a task's group does not depend on --start or scheduling.
  const jobs: EpisodeJob[] = tasks.flatMap((task) =>
    Array.from({ length: o.group }, (_, g) => ({ task, seed: deriveSeed(o.seed, "env", task.id, g), rngSeed: deriveSeed(o.seed, "policy", task.id, g) })),
  );

  let done = 0;
  let score = 0;
  let success = 0;
  const bar = progressBar(`rollout ${policy.name}`, jobs.length, { score: "0.0", success: "0.0%" });
  let episodes: Episode<LlmStepRecord>[];
  try {
    episodes = await playEpisodes(envs, policy, jobs, {
      onEpisode: (e) => {
        done++;
        score += e.totalReward;
        success += e.success ? 1 : 0;
        bar.update(done, { score: ((100 * score) / done).toFixed(1), success: `${((100 * success) / done).toFixed(1)}%` });
      },
    });
  } finally {
    bar.stop();
    await Promise.all(envs.map((e) => e.close()));
    (model as { close?: () => void }).close?.();
  }

  const groups = tasks.map((_, t) => episodes.slice(t * o.group, (t + 1) * o.group));
  const written = exportForTrainer(groups, o.out, { env: o.env, format });
  const steps = episodes.flatMap((e) => e.steps);
  const failed = steps.filter((s) => s.failed).length;
  const stats = (model as { stats?: ModelStats }).stats;
  const tokens = stats ? `, tokens ${stats.promptTokens} prompt + ${stats.completionTokens} completion (${stats.cacheHits} cached responses)` : "";
  console.log(
    `wrote ${written.lines} ${format === "steps" ? "steps" : "trajectories"} (${o.tasks} tasks × ${o.group} rollouts, ${written.steps} steps) to ${o.out}: ` +
      `score ${((100 * score) / jobs.length).toFixed(1)}, success ${((100 * success) / jobs.length).toFixed(1)}%, failed steps ${failed}${tokens}`,
  );
}

export function registerRollout(program: Command): void {
  program
    .command("rollout")
    .description("play groups of LLM-policy rollouts per task in a real env (abstract states) and export them for an external GRPO trainer")
    .requiredOption("--env <name>", "environment")
    .requiredOption("--model <model>", "chat model: http(s)://host:port/v1#<model>, openai:<model> or gguf:<file>")
    .requiredOption("--out <file>", "output JSONL file (written whole, then renamed into place)")
    .option("--tasks <n>", "tasks, in split order from --start (wrapping around)", parseIntOption("tasks", 1), 10)
    .option("--group <n>", "rollouts per task (the GRPO group)", parseIntOption("group", 1), 4)
    .option("--split <split>", "task split (default: webshop test, alfworld valid_unseen)")
    .option("--start <n>", "first task index within the split", parseIntOption("start"), 0)
    .option("--concurrency <n>", "episodes at once (and model calls in flight)", parseIntOption("concurrency", 1), 4)
    .option("--seed <n>", "run seed (each episode's seeds derive from it, the task and the rollout)", parseIntOption("seed"), 0)
    .option("--temperature <t>", "sampling temperature", parseTemperature, 0.7)
    .option("--max-steps <n>", "steps before truncation", parseIntOption("max-steps", 1))
    .option("--max-tokens <n>", "completion tokens per model call", parseIntOption("max-tokens", 1))
    .option("--cache <file>", "the model's response cache (SQLite): a rerun replays it")
    .option("--format <format>", "steps (one line per step) | trajectories (one line per episode)", "steps")
    .option("--data <dir>", "data folder")
    .action(rollout);
}
