import type { Command } from "commander";
import { createHash } from "node:crypto";
import { closeSync, existsSync, fstatSync, ftruncateSync, openSync, readFileSync, rmSync } from "node:fs";
import {
  abstractEnv,
  DataError,
  deriveSeed,
  InvalidConfigError,
  playEpisodes,
  writeAll,
  type Env,
  type Episode,
  type EpisodeJob,
  type StateAbstraction,
  type Task,
} from "../core/index.ts";
import { createEnv, defaultSplits, envTasks, syntheticSupport } from "../envs/index.ts";
import { createChatModel, parseModelSpec } from "../llm/index.ts";
import { groupLines, LlmPolicy, type LlmStepRecord } from "../rl/index.ts";
import { endpointOptions, endpointSettings } from "./endpoint-options.ts";
import { parseIntOption } from "./episodes.ts";
import { parseNumberOption } from "./options.ts";
import { checkOutputFile } from "./output.ts";
import { progressBar } from "./progress.ts";
import { exitOnSignal } from "./signals.ts";
import { cliConsole as console } from "./io.ts";

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
  requestTimeout?: number;
  maxFailures?: number;
}

/** What an episode in the output adds to the summary. */
interface Done {
  reward: number;
  success: boolean;
  steps: number;
  failed: number;
}

/**
 * The options that decide what a group's lines hold. Every line carries their hash, so a rerun with
 * the same `--out` continues only its own run (`--tasks` may grow: a group does not depend on it).
 */
function runIdOf(o: RolloutOptions): string {
  const key = [o.env, o.model, o.split, o.start, o.group, o.seed, o.temperature, o.maxSteps ?? null, o.maxTokens ?? null, o.format];
  return createHash("sha256").update(JSON.stringify(key)).digest("hex").slice(0, 16);
}

/**
 * The whole groups an earlier run with the same options left in `file`, in order, and the byte after
 * the last of them (`end`): a torn line or a partial group past it (a killed run) is to be cut off
 * and played again. Reads only: the cut is the appender's, once nothing else can fail.
 */
function readDone(file: string, o: RolloutOptions, runId: string): { groups: Done[][]; end: number } {
  if (!existsSync(file)) return { groups: [], end: 0 };
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch (e) {
    throw new DataError(`cannot read the output to continue it: ${(e as Error).message}`, { file }, e);
  }
  type Group = { g: number; episodes: Map<number, Done & { lines: number }> };
  const whole = (c: Group) => c.episodes.size === o.group && [...c.episodes.values()].every((e) => e.lines === (o.format === "steps" ? e.steps : 1));
  const summaries = (c: Group) => [...c.episodes.entries()].sort((a, b) => a[0] - b[0]).map(([, { lines: _, ...e }]) => e);
  const groups: Done[][] = [];
  let wholeEnd = 0; // the byte after the last whole group
  let current = null as Group | null;
  let currentEnd = 0;
  for (let pos = 0, n = 1; pos < buf.length; n++) {
    const nl = buf.indexOf(10, pos);
    if (nl < 0) break; // a torn last line
    const line = buf.subarray(pos, nl).toString("utf8");
    const lineStart = pos;
    pos = nl + 1;
    if (line.trim() === "") continue;
    let row: Record<string, unknown>;
    try {
      row = JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw new DataError("is not JSON, so this is no rollout output to continue: use another --out", { file, line: n });
    }
    if (row.run_id !== runId) {
      throw new InvalidConfigError(
        `${file} holds other output (a rollout with other options, or not a rollout); continue it with the same options, or use another --out`,
      );
    }
    const g = row.group as number;
    if (current?.g !== g) {
      if (current) {
        if (!whole(current)) break;
        groups.push(summaries(current));
        wholeEnd = lineStart;
      }
      current = null;
      if (g !== groups.length) break;
      current = { g, episodes: new Map() };
    }
    const r = row.rollout as number;
    const trajectory = o.format === "trajectories" ? (row.steps as { failed?: string }[]) : null;
    const e = current.episodes.get(r) ?? {
      reward: (trajectory ? row.total_reward : row.episode_reward) as number,
      success: row.success as boolean,
      steps: trajectory ? trajectory.length : (row.episode_steps as number),
      failed: 0,
      lines: 0,
    };
    e.lines++;
    e.failed += trajectory ? trajectory.filter((x) => x.failed).length : row.failed ? 1 : 0;
    current.episodes.set(r, e);
    currentEnd = pos;
  }
  if (current && whole(current)) {
    groups.push(summaries(current));
    wholeEnd = currentEnd;
  }
  return { groups, end: wholeEnd };
}

/**
 * Appends whole groups to the output, each in one write; a write that fails is taken back. Opening
 * it cuts what follows the earlier run's last whole group (`end`, from `readDone`).
 */
class GroupAppender {
  private readonly fd: number;
  /** This run made the file (a run that stops before its first group leaves nothing behind). */
  private readonly created: boolean;
  constructor(
    readonly file: string,
    end: number,
  ) {
    this.created = !existsSync(file);
    try {
      this.fd = openSync(file, "a");
    } catch (e) {
      throw new DataError(`cannot write the output: ${(e as Error).message}`, { file }, e);
    }
    try {
      if (fstatSync(this.fd).size > end) ftruncateSync(this.fd, end);
    } catch (e) {
      closeSync(this.fd);
      throw new DataError(`cannot cut the unfinished group off the output: ${(e as Error).message}`, { file }, e);
    }
  }
  append(rows: Record<string, unknown>[]): void {
    const data = Buffer.from(rows.map((r) => JSON.stringify(r) + "\n").join(""));
    const size = fstatSync(this.fd).size;
    try {
      writeAll(this.fd, data);
    } catch (e) {
      try {
        ftruncateSync(this.fd, size);
      } catch {
        // the write's own error says more
      }
      throw new DataError(`cannot write the output: ${(e as Error).message}`, { file: this.file }, e);
    }
  }
  close(): void {
    const empty = fstatSync(this.fd).size === 0;
    closeSync(this.fd);
    if (this.created && empty) rmSync(this.file, { force: true });
  }
}

async function rollout(o: RolloutOptions): Promise<void> {
  if (o.format !== "steps" && o.format !== "trajectories") throw new InvalidConfigError(`--format must be steps or trajectories, got "${o.format}"`);
  const format = o.format;
  o.split ??= defaultSplits(o.env).eval;
  checkOutputFile(o.out); // a bad --out fails before any model call is paid for
  parseModelSpec(o.model); // and a malformed model string before the output is opened
  // Envs first (a bad env, split or data folder fails before the model's cache is opened).
  const real = Array.from({ length: o.concurrency }, () => createEnv(o.env, { dataDir: o.data, split: o.split, maxSteps: o.maxSteps }));
  let abstraction: StateAbstraction;
  let all: Task[];
  try {
    abstraction = syntheticSupport(o.env, real[0]).abstraction;
    all = envTasks(o.env, real[0]);
  } catch (e) {
    await Promise.all(real.map((x) => x.close()));
    throw e;
  }
  const envs: Env[] = real.map((e) => abstractEnv(e, abstraction));
  const tasks = Array.from({ length: o.tasks }, (_, i) => all[(o.start + i) % all.length]);

  // The earlier output read before the model: a foreign --out fails before anything is paid for, and
  // the whole groups of an earlier run with the same options are kept and not played again. Then the
  // model's cache, then the output opened: a cache that cannot be opened leaves no output, nor a cut one.
  const runId = runIdOf(o);
  let out: GroupAppender;
  let done: Done[][];
  let model: ReturnType<typeof createChatModel> | undefined;
  try {
    const earlier = readDone(o.out, o, runId);
    done = earlier.groups.slice(0, o.tasks);
    model = createChatModel(o.model, { concurrency: o.concurrency, cache: o.cache, ...endpointSettings(o) });
    out = new GroupAppender(o.out, earlier.end);
  } catch (e) {
    await model?.close?.();
    await Promise.all(envs.map((x) => x.close()));
    throw e;
  }
  const resumed = done.length;
  const policy = new LlmPolicy({ model, temperature: o.temperature, maxTokens: o.maxTokens, profile: abstraction.profile });

  // Seeds from the run seed, task and rollout: a task's group does not depend on --start or scheduling.
  const jobs: EpisodeJob[] = tasks
    .slice(resumed)
    .flatMap((task) =>
      Array.from({ length: o.group }, (_, g) => ({ task, seed: deriveSeed(o.seed, "env", task.id, g), rngSeed: deriveSeed(o.seed, "policy", task.id, g) })),
    );
  const summary = (e: Episode<LlmStepRecord>): Done => ({
    reward: e.totalReward,
    success: e.success,
    steps: e.steps.length,
    failed: e.steps.filter((s) => s.failed).length,
  });

  const bar = progressBar(`rollout ${policy.name}`, o.tasks * o.group, { score: "0.0", success: "0.0%" });
  const finished = new Map<number, Done>(); // episodes of groups not yet written, by job
  const show = () => {
    const eps = [...done.flat(), ...finished.values()];
    const n = Math.max(1, eps.length);
    bar.update(eps.length, {
      score: ((100 * eps.reduce((a, e) => a + e.reward, 0)) / n).toFixed(1),
      success: `${((100 * eps.filter((e) => e.success).length) / n).toFixed(1)}%`,
    });
  };
  show();
  // Groups are appended whole and in task order as they complete: the file is the same however the
  // episodes were scheduled, and a run that stops keeps every group it finished.
  const pending = new Map<number, Episode<LlmStepRecord>[]>();
  let lines = 0;
  // Ctrl-C or SIGTERM stops at once (exit 130): each finished group is already in the file, whole (one
  // write), and a rerun of the same command plays only the groups that are not.
  const releaseSignals = exitOnSignal((signal) => {
    bar.stop();
    out.close();
    console.error(
      done.length > 0
        ? `stopped by ${signal} after ${done.length} of ${o.tasks} tasks (groups of ${o.group} rollouts); those are in ${o.out}: the same command continues it`
        : `stopped by ${signal} before the first task's group of ${o.group} rollouts was done: nothing is kept; the same command starts it again`,
    );
  });
  try {
    await playEpisodes(envs, policy, jobs, {
      onEpisode: (e, j) => {
        const t = resumed + Math.floor(j / o.group);
        const group = pending.get(t) ?? [];
        group[j % o.group] = e;
        pending.set(t, group);
        finished.set(j, summary(e));
        for (let next = done.length; pending.get(next)?.filter(Boolean).length === o.group; next = done.length) {
          const episodes = pending.get(next)!;
          pending.delete(next);
          const rows = groupLines(episodes, next, { env: o.env, format, extra: { run_id: runId } });
          out.append(rows);
          lines += rows.length;
          done.push(episodes.map(summary));
          for (let r = 0; r < o.group; r++) finished.delete((next - resumed) * o.group + r);
        }
        show();
      },
    });
  } finally {
    releaseSignals();
    bar.stop();
    out.close();
    await Promise.all(envs.map((e) => e.close()));
    await model.close?.();
  }

  const eps = done.flat();
  const steps = eps.reduce((n, e) => n + e.steps, 0);
  const failed = eps.reduce((n, e) => n + e.failed, 0);
  const pct = (x: number) => ((100 * x) / Math.max(1, eps.length)).toFixed(1);
  const stats = model.stats;
  const tokens = stats ? `, tokens ${stats.promptTokens} prompt + ${stats.completionTokens} completion (${stats.cacheHits} cached responses)` : "";
  console.log(
    `wrote ${format === "steps" ? `${steps} steps` : `${eps.length} trajectories`} (${o.tasks} tasks × ${o.group} rollouts, ${steps} steps) to ${o.out}: ` +
      `score ${pct(eps.reduce((a, e) => a + e.reward, 0))}, success ${pct(eps.filter((e) => e.success).length)}%, failed steps ${failed}${tokens}` +
      (resumed > 0 ? `; continued a run that had done ${resumed} of the tasks (${lines} lines added)` : ""),
  );
}

export function registerRollout(program: Command): void {
  const cmd = program
    .command("rollout")
    .description("play groups of LLM-policy rollouts per task in a real env (abstract states) and export them for an external GRPO trainer")
    .requiredOption("--env <name>", "environment")
    .requiredOption("--model <model>", "chat model: http(s)://host:port/v1#<model>, openai:<model> or gguf:<file>")
    .requiredOption("--out <file>", "output JSONL file: whole groups are appended as they finish; a rerun with the same options continues it")
    .option("--tasks <n>", "tasks, in split order from --start (wrapping around)", parseIntOption("tasks", 1), 10)
    .option("--group <n>", "rollouts per task (the GRPO group)", parseIntOption("group", 1), 4)
    .option("--split <split>", "task split (default: webshop test, alfworld valid_unseen)")
    .option("--start <n>", "first task index within the split", parseIntOption("start"), 0)
    .option("--concurrency <n>", "episodes at once (and model calls in flight)", parseIntOption("concurrency", 1), 4)
    .option("--seed <n>", "run seed (each episode's seeds derive from it, the task and the rollout)", parseIntOption("seed"), 0)
    .option("--temperature <t>", "sampling temperature", parseNumberOption("temperature", 0, 2), 0.7)
    .option("--max-steps <n>", "steps before truncation", parseIntOption("max-steps", 1))
    .option("--max-tokens <n>", "completion tokens per model call", parseIntOption("max-tokens", 1))
    .option("--cache <file>", "the model's response cache (SQLite): a rerun replays it")
    .option("--format <format>", "steps (one line per step) | trajectories (one line per episode)", "steps")
    .option("--data <dir>", "data folder");
  endpointOptions(cmd).action(rollout);
}
