import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync, appendFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { abstractEnv, DataError, InvalidConfigError, Rng, type Env, type Task } from "../core/index.ts";
import { createEnv, syntheticSupport, type EnvName } from "../envs/index.ts";
import { parseConfig } from "./config.ts";
import { deriveSeed, playEpisodes, type Episode } from "./episode.ts";
import { grpoConfigSchema, grpoUpdate } from "./grpo.ts";
import { NeuralPolicy, type NeuralStepRecord } from "./neural-policy.ts";
import { ppoConfigSchema, ppoUpdate } from "./ppo.ts";
import { writeReport } from "./report.ts";

export const trainConfigSchema = z.strictObject({
  env: z.string().default("webshop"),
  mode: z.enum(["real"]).default("real"),
  algo: z.enum(["grpo", "ppo"]).default("grpo"),
  /** Real env steps to train on (the last iteration may run past it by less than one iteration). */
  budget: z.number().int().min(1).default(20_000),
  seed: z.number().int().min(0).default(0),
  /** Tasks sampled per iteration, each rolled out `rolloutsPerTask` times (GRPO's group size G). */
  tasksPerIteration: z.number().int().min(1).default(16),
  rolloutsPerTask: z.number().int().min(2).default(8),
  /** Episodes played at once (envs in the pool). */
  concurrency: z.number().int().min(1).default(4),
  trainSplit: z.string().default("train"),
  evalSplit: z.string().default("test"),
  /** Evaluate every this many iterations (0: only at the end). */
  evalEvery: z.number().int().min(0).default(10),
  /** Tasks (the first of the eval split) in an interval evaluation. */
  evalTasks: z.number().int().min(1).default(100),
  /** Tasks in the final evaluation. */
  finalEvalTasks: z.number().int().min(1).default(500),
  checkpointEvery: z.number().int().min(1).default(5),
  maxSteps: z.number().int().min(1).optional(),
  dataDir: z.string().optional(),
  policy: z.strictObject({ dim: z.number().int().min(16).default(32768), hidden: z.number().int().min(1).default(16) }).prefault({}),
  grpo: grpoConfigSchema.prefault({}),
  ppo: ppoConfigSchema.prefault({}),
});
export type TrainConfig = z.infer<typeof trainConfigSchema>;
export type TrainConfigInput = z.input<typeof trainConfigSchema>;

export interface EvalResult {
  tasks: number;
  /** Real env steps the evaluation took (not training interaction). */
  steps: number;
  /** Mean reward × 100 (WebShop's score). */
  score: number;
  /** Share of episodes with reward 1. */
  success: number;
}

/** One line of metrics.jsonl. */
export interface IterationMetrics {
  iteration: number;
  episodes: number;
  steps: number;
  meanReward: number;
  success: number;
  /** Real env steps used for training so far (evaluation is not counted here). */
  realInteractions: number;
  /** Real env steps of evaluations so far. */
  evalInteractions: number;
  syntheticInteractions: number;
  policyLoss: number;
  valueLoss?: number;
  entropy: number;
  kl?: number;
  approxKl: number;
  clipFraction: number;
  gradNorm: number;
  rolloutSeconds: number;
  updateSeconds: number;
  evalSeconds: number;
  /** Seconds of training so far (across resumes). */
  wallSeconds: number;
  eval?: EvalResult;
}

interface RunState {
  iteration: number;
  realInteractions: number;
  evalInteractions: number;
  episodes: number;
  wallSeconds: number;
}

interface LatestCheckpoint {
  iteration: number;
  policyFile: string;
  state: RunState;
}

export interface TrainSummary {
  runDir: string;
  config: TrainConfig;
  iterations: number;
  realInteractions: number;
  wallSeconds: number;
  final: EvalResult;
  /** The iteration the run resumed from, if it did. */
  resumedFrom?: number;
}

export interface TrainHooks {
  onIteration?: (m: IterationMetrics, config: TrainConfig) => void;
}

/** Starts a new run in `runDir` (which must not hold one). */
export async function train(runDir: string, input: TrainConfigInput, hooks: TrainHooks = {}): Promise<TrainSummary> {
  const config = parseConfig(trainConfigSchema, input, "training config");
  if (existsSync(join(runDir, "config.json"))) {
    throw new InvalidConfigError(`${runDir} already holds a run; resume it with --resume ${runDir} or choose another --out`);
  }
  // Fail on a bad env or split before the folder is made.
  for (const split of [config.trainSplit, config.evalSplit]) await Promise.all(makeEnvs({ ...config, concurrency: 1 }, split).envs.map((e) => e.close()));
  mkdirSync(join(runDir, "checkpoints"), { recursive: true });
  writeFileSync(join(runDir, "metrics.jsonl"), "");
  // config.json last: a folder holds a run once it is whole.
  writeDurably(join(runDir, "config.json"), Buffer.from(JSON.stringify({ ...config, createdAt: new Date().toISOString() }, null, 2) + "\n"));
  return runTraining(runDir, config, undefined, hooks);
}

/** Continues the run in `runDir` from its last checkpoint; the results are those it would have had. */
export async function resumeTraining(runDir: string, hooks: TrainHooks = {}): Promise<TrainSummary> {
  const configFile = join(runDir, "config.json");
  if (!existsSync(configFile)) throw new InvalidConfigError(`${runDir} holds no run (no config.json)`);
  const { createdAt: _, ...stored } = JSON.parse(readFileSync(configFile, "utf8"));
  const config = parseConfig(trainConfigSchema, stored, `config of ${configFile}`);
  const latestFile = join(runDir, "checkpoints", "latest.json");
  const latest: LatestCheckpoint | undefined = existsSync(latestFile) ? JSON.parse(readFileSync(latestFile, "utf8")) : undefined;
  // Lines after the checkpoint are replayed, so drop them (and a torn last line).
  truncateMetrics(join(runDir, "metrics.jsonl"), latest?.iteration ?? 0);
  return runTraining(runDir, config, latest, hooks);
}

async function runTraining(runDir: string, config: TrainConfig, latest: LatestCheckpoint | undefined, hooks: TrainHooks): Promise<TrainSummary> {
  const started = performance.now();
  const policy = new NeuralPolicy({ ...config.policy, seed: config.seed });
  // GRPO's reference is the initial policy, which the seed recreates exactly on resume.
  const reference = config.algo === "grpo" && config.grpo.klCoef > 0 ? policy.clone() : undefined;
  const state: RunState = latest ? { ...latest.state } : { iteration: 0, realInteractions: 0, evalInteractions: 0, episodes: 0, wallSeconds: 0 };
  if (latest) {
    const file = join(runDir, "checkpoints", latest.policyFile);
    if (!existsSync(file)) throw new DataError(`checkpoint ${file} named by latest.json is missing`, { file });
    policy.load(readFileSync(file), file);
  }

  const train = makeEnvs(config, config.trainSplit);
  const evaluation = makeEnvs(config, config.evalSplit);
  const metricsFile = join(runDir, "metrics.jsonl");
  let finalEval: EvalResult | undefined;

  try {
    while (state.realInteractions < config.budget) {
      const iteration = state.iteration + 1;
      const t0 = performance.now();

      // 1. Roll out G episodes for each of the iteration's tasks.
      const tasks = new Rng(deriveSeed(config.seed, "tasks", iteration)).sample(train.tasks, Math.min(config.tasksPerIteration, train.tasks.length));
      const jobs = tasks.flatMap((task, t) =>
        Array.from({ length: config.rolloutsPerTask }, (_, g) => ({
          task, seed: deriveSeed(config.seed, "env", iteration, t, g), rngSeed: deriveSeed(config.seed, "rollout", iteration, t, g),
        })));
      const episodes = await playEpisodes(train.envs, policy, jobs);
      const steps = episodes.reduce((s, e) => s + e.steps.length, 0);
      state.realInteractions += steps;
      state.episodes += episodes.length;
      const t1 = performance.now();

      // 2. Update the policy.
      const updateRng = new Rng(deriveSeed(config.seed, "update", iteration));
      const groups = tasks.map((_, t) => episodes.slice(t * config.rolloutsPerTask, (t + 1) * config.rolloutsPerTask));
      const stats = config.algo === "grpo"
        ? grpoUpdate(policy, reference, groups, config.grpo, updateRng)
        : ppoUpdate(policy, episodes, config.ppo, updateRng);
      const t2 = performance.now();

      // 3. Evaluate on the eval split (not counted as training interaction).
      const last = state.realInteractions >= config.budget;
      let evalResult: EvalResult | undefined;
      if (last) evalResult = finalEval = await evaluate(policy, evaluation, config.finalEvalTasks);
      else if (config.evalEvery > 0 && iteration % config.evalEvery === 0) evalResult = await evaluate(policy, evaluation, config.evalTasks);
      const t3 = performance.now();
      state.evalInteractions += evalResult?.steps ?? 0;

      // 4. Log, checkpoint.
      state.iteration = iteration;
      state.wallSeconds += (t3 - t0) / 1000;
      const m: IterationMetrics = {
        iteration, episodes: episodes.length, steps,
        meanReward: mean(episodes.map((e) => e.totalReward)),
        success: mean(episodes.map((e) => (e.success ? 1 : 0))),
        realInteractions: state.realInteractions, evalInteractions: state.evalInteractions, syntheticInteractions: 0,
        policyLoss: stats.policyLoss,
        ...("valueLoss" in stats ? { valueLoss: stats.valueLoss } : {}),
        entropy: stats.entropy,
        ...("kl" in stats && stats.kl !== undefined ? { kl: stats.kl } : {}),
        approxKl: stats.approxKl, clipFraction: stats.clipFraction, gradNorm: stats.gradNorm,
        rolloutSeconds: (t1 - t0) / 1000, updateSeconds: (t2 - t1) / 1000, evalSeconds: (t3 - t2) / 1000,
        wallSeconds: state.wallSeconds,
        ...(evalResult ? { eval: evalResult } : {}),
      };
      appendFileSync(metricsFile, JSON.stringify(m) + "\n");
      if (last || iteration % config.checkpointEvery === 0) {
        saveCheckpoint(runDir, policy, state);
        writeReport(runDir);
      }
      hooks.onIteration?.(m, config);
    }
    if (!finalEval) {
      // Resumed after the last iteration's checkpoint: evaluate again (deterministic: greedy).
      finalEval = await evaluate(policy, evaluation, config.finalEvalTasks);
    }
  } finally {
    await Promise.all([...train.envs, ...evaluation.envs].map((e) => e.close()));
  }
  const summary: TrainSummary = {
    runDir, config, iterations: state.iteration, realInteractions: state.realInteractions, wallSeconds: state.wallSeconds, final: finalEval,
    ...(latest ? { resumedFrom: latest.iteration } : {}),
  };
  writeFileSync(join(runDir, "summary.json"), JSON.stringify({ ...summary, runSeconds: (performance.now() - started) / 1000 }, null, 2) + "\n");
  writeReport(runDir);
  return summary;
}

/** A pool of envs (observations as abstract states, as in the synthetic env) and the split's tasks. */
function makeEnvs(config: TrainConfig, split: string): { envs: Env[]; tasks: Task[] } {
  const envs: Env[] = [];
  let tasks: Task[] = [];
  for (let i = 0; i < config.concurrency; i++) {
    const env = createEnv(config.env as EnvName, { split: split as never, dataDir: config.dataDir, maxSteps: config.maxSteps });
    if (i === 0) {
      if (typeof (env as { tasks?: unknown }).tasks !== "function") throw new InvalidConfigError(`environment "${config.env}" cannot list its tasks`);
      tasks = (env as unknown as { tasks(): Task[] }).tasks();
    }
    envs.push(abstractEnv(env, syntheticSupport(config.env, env).abstraction));
  }
  return { envs, tasks };
}

/** Greedy episodes on the first `count` tasks of the eval split. */
export async function evaluate(policy: NeuralPolicy, pool: { envs: Env[]; tasks: Task[] }, count: number): Promise<EvalResult> {
  const tasks = pool.tasks.slice(0, count);
  const episodes: Episode<NeuralStepRecord>[] = await playEpisodes(pool.envs, policy, tasks.map((task, i) => ({ task, seed: i, rngSeed: i })), { greedy: true });
  return {
    tasks: tasks.length,
    steps: episodes.reduce((s, e) => s + e.steps.length, 0),
    score: 100 * mean(episodes.map((e) => e.totalReward)),
    success: mean(episodes.map((e) => (e.success ? 1 : 0))),
  };
}

function saveCheckpoint(runDir: string, policy: NeuralPolicy, state: RunState): void {
  const dir = join(runDir, "checkpoints");
  const policyFile = `iter-${String(state.iteration).padStart(6, "0")}.policy`;
  writeDurably(join(dir, policyFile), policy.save());
  const latest: LatestCheckpoint = { iteration: state.iteration, policyFile, state };
  writeDurably(join(dir, "latest.json"), Buffer.from(JSON.stringify(latest, null, 2) + "\n"));
  // Keep the last two policy files.
  const old = readdirSync(dir).filter((f) => /^iter-\d+\.policy$/.test(f)).sort().slice(0, -2);
  for (const f of old) rmSync(join(dir, f), { force: true });
}

/** Write to a temporary file, flush it to disk, rename over the target: a reader sees the old or the new file. */
function writeDurably(file: string, bytes: Uint8Array): void {
  const tmp = `${file}.tmp`;
  const fd = openSync(tmp, "w");
  try {
    writeFileSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}

function truncateMetrics(file: string, iteration: number): void {
  if (!existsSync(file)) return;
  const keep: string[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    try {
      if ((JSON.parse(line) as IterationMetrics).iteration <= iteration) keep.push(line);
    } catch {
      // A torn line from a kill mid-write.
    }
  }
  writeDurably(file, Buffer.from(keep.map((l) => l + "\n").join("")));
}

/** The metrics of a run folder, in order. */
export function readMetrics(runDir: string): IterationMetrics[] {
  const file = join(runDir, "metrics.jsonl");
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8").split("\n").filter((l) => l.trim()).flatMap((l) => {
    try {
      return [JSON.parse(l) as IterationMetrics];
    } catch {
      return [];
    }
  });
}

const mean = (xs: number[]) => (xs.length === 0 ? 0 : xs.reduce((s, x) => s + x, 0) / xs.length);
