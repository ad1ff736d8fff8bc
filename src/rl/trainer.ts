import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { abstractEnv, DataError, InvalidConfigError, Rng, writeFileAtomic, type Env, type Task, type Trajectory } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { Curriculum, curriculumConfigSchema, LlmTaskGenerator, WebShopTaskGenerator, type TaskGenerator } from "../curriculum/index.ts";
import { createEnv, defaultSplits, syntheticSupport, type EnvName } from "../envs/index.ts";
import type { WebShopEnv } from "../envs/webshop/index.ts";
import { EmbeddedExperienceModel, ReasoningExperienceModel, SyntheticEnv, type ExperienceModel } from "../experience/index.ts";
import { createChatModel, EndpointFailedError, type ChatModel, type ModelStats } from "../llm/index.ts";
import { parseConfig } from "./config.ts";
import { deriveSeed, playEpisodes, type Episode } from "./episode.ts";
import { grpoConfigSchema, grpoUpdate } from "./grpo.ts";
import { NeuralPolicy, type NeuralStepRecord } from "./neural-policy.ts";
import { ppoConfigSchema, ppoUpdate } from "./ppo.ts";
import { readMetrics, writeReport } from "./report.ts";

export const trainConfigSchema = z.strictObject({
  env: z.string().default("webshop"),
  /** real: RL in the real env; dreamgym: RL in the synthetic env; s2r: dreamgym, then RL in the real env. */
  mode: z.enum(["real", "dreamgym", "s2r"]).default("real"),
  algo: z.enum(["grpo", "ppo"]).default("grpo"),
  /**
   * Training interactions of the first phase: real env steps (real), synthetic steps (dreamgym, and
   * s2r's synthetic phase). The last iteration may run past it by less than one iteration.
   */
  budget: z.number().int().min(1).default(20_000),
  /** s2r: real env steps of the second phase. */
  realBudget: z.number().int().min(0).default(0),
  /** Stop after this much training wall time too (0: no limit), e.g. to compare at equal wall time. */
  maxSeconds: z.number().min(0).default(0),
  /** dreamgym/s2r: the buffer with offline trajectories (abstract states) that grounds the experience model; copied into the run folder. */
  buffer: z.string().optional(),
  /** dreamgym/s2r: "default" (the embedded model) or a chat model (http://host/v1#model, openai:model, gguf:file). */
  experience: z.string().default("default"),
  /** Terminal rewards from the real env's verifier instead of the experience model. */
  hybrid: z.boolean().default(false),
  /** Grow the buffer with the synthetic episodes and give the model retrieved demos (off: the ablation). */
  replay: z.boolean().default(true),
  /** Retrieved demos per synthetic step. */
  demos: z.number().int().min(0).default(5),
  /**
   * Synthetic transitions the run's buffer keeps besides the offline seed (which always stays): the
   * oldest episodes go first, at each checkpoint. Bounds retrieval time as the buffer grows (0: no bound).
   */
  bufferCapacity: z.number().int().min(0).default(40_000),
  /** A chat model's response cache (SQLite). */
  cache: z.string().optional(),
  /** Seconds a chat model's HTTP attempt may take (a timed-out attempt fails its call, not retried). */
  requestTimeout: z.number().positive().max(86_400).default(60),
  /**
   * Failed chat calls in a row, or tasks with failed synthetic steps and no good step between, that stop the run,
   * checkpointed (an endpoint that never answered stops it at the first call).
   */
  maxFailures: z.number().int().min(1).default(10),
  curriculum: curriculumConfigSchema.prefault({}),
  seed: z.number().int().min(0).default(0),
  /** Tasks sampled per iteration, each rolled out `rolloutsPerTask` times (GRPO's group size G). */
  tasksPerIteration: z.number().int().min(1).default(16),
  rolloutsPerTask: z.number().int().min(2).default(8),
  /** Episodes played at once (envs in the pool). */
  concurrency: z.number().int().min(1).default(4),
  /** Tasks to train on (default: webshop train, alfworld valid_train). */
  trainSplit: z.string().optional(),
  /** Tasks to evaluate on (default: webshop test, alfworld valid_unseen). */
  evalSplit: z.string().optional(),
  /** Evaluate every this many iterations (0: only at the end). */
  evalEvery: z.number().int().min(0).default(10),
  /** Tasks (the first of the eval split) in an interval evaluation. */
  evalTasks: z.number().int().min(1).default(100),
  /** Tasks in the final evaluation. */
  finalEvalTasks: z.number().int().min(1).default(500),
  checkpointEvery: z.number().int().min(1).default(5),
  maxSteps: z.number().int().min(1).optional(),
  dataDir: z.string().optional(),
  /** Start from this policy file (a run's `checkpoints/iter-*.policy`) instead of fresh weights, e.g. S2R from a DreamGym run. */
  initPolicy: z.string().optional(),
  policy: z.strictObject({ dim: z.number().int().min(16).default(32768), hidden: z.number().int().min(1).default(16) }).prefault({}),
  grpo: grpoConfigSchema.prefault({}),
  ppo: ppoConfigSchema.prefault({}),
});
/** The config with each env's default splits filled in (what config.json stores). */
export type TrainConfig = z.infer<typeof trainConfigSchema> & { trainSplit: string; evalSplit: string };
function withSplits(c: z.infer<typeof trainConfigSchema>): TrainConfig {
  const d = defaultSplits(c.env);
  return { ...c, trainSplit: c.trainSplit ?? d.train, evalSplit: c.evalSplit ?? d.eval };
}
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
  /** Synthetic env steps used for training so far. */
  syntheticInteractions: number;
  /** "real" or "synthetic": where this iteration's episodes ran. */
  phase: "real" | "synthetic";
  /** Episodes left out of the update because the experience model kept failing in them (all so far). */
  droppedEpisodes: number;
  /** LLM tokens so far (experience model and task generator). */
  tokens: number;
  curriculum?: { meanVariance: number; selected: number; added: number; infeasible: number; duplicates: number; pool: number; generatorFailures: number; lastFailure?: string; generatedInBatch: number };
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
  /** LLM tokens so far, across resumes. */
  tokens?: number;
  realInteractions: number;
  evalInteractions: number;
  syntheticInteractions: number;
  droppedEpisodes: number;
  episodes: number;
  wallSeconds: number;
}

interface LatestCheckpoint {
  iteration: number;
  /** False for a checkpoint taken when the run stopped between scheduled ones: its buffer was not trimmed. */
  trimmed?: boolean;
  policyFile: string;
  state: RunState;
  curriculum?: ReturnType<Curriculum["toJSON"]>;
}

export interface TrainSummary {
  runDir: string;
  config: TrainConfig;
  iterations: number;
  realInteractions: number;
  syntheticInteractions: number;
  droppedEpisodes: number;
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
  const config = withSplits(parseConfig(trainConfigSchema, input, "training config"));
  if (existsSync(join(runDir, "config.json"))) {
    throw new InvalidConfigError(`${runDir} already holds a run; resume it with --resume ${runDir} or choose another --out`);
  }
  // Fail on a bad env or split before the folder is made.
  for (const split of [config.trainSplit, config.evalSplit]) await Promise.all(makeEnvs({ ...config, concurrency: 1 }, split).envs.map((e) => e.close()));
  if (config.initPolicy && !existsSync(config.initPolicy)) throw new InvalidConfigError(`initPolicy ${config.initPolicy} does not exist`);
  if (config.mode === "s2r" && config.realBudget === 0) throw new InvalidConfigError("invalid training config:\n  realBudget: mode s2r needs real steps after the synthetic phase (--real-budget N > 0)");
  if (config.mode !== "s2r" && config.realBudget > 0) throw new InvalidConfigError(`invalid training config:\n  realBudget: only mode s2r has a real phase (mode is ${config.mode})`);
  if (config.mode !== "real") {
    const probe = createEnv(config.env as EnvName, { split: config.trainSplit as never, dataDir: config.dataDir });
    const support = syntheticSupport(config.env, probe);
    const first = (probe as unknown as { tasks(): Task[] }).tasks()[0];
    if (first && support.abstraction.actions(support.abstraction.abstract(support.initialState(first))) === undefined) {
      throw new InvalidConfigError(`mode ${config.mode} needs a synthetic ${config.env} whose states list their actions (the neural policy picks among them); ${config.env} has none yet — use --mode real`);
    }
    if (config.hybrid && !support.verifier) throw new InvalidConfigError(`--hybrid needs a verifier of ${config.env}'s rewards; ${config.env} has none`);
    if (!config.buffer) throw new InvalidConfigError(`mode ${config.mode} needs a buffer of offline ${config.env} trajectories (--buffer B.db; dreamgym buffer import F.jsonl --abstract --buffer B.db)`);
    if (!existsSync(config.buffer)) throw new InvalidConfigError(`buffer ${config.buffer} does not exist`);
  }
  mkdirSync(join(runDir, "checkpoints"), { recursive: true });
  writeFileSync(join(runDir, "metrics.jsonl"), "");
  if (config.buffer && config.mode !== "real") {
    // The run grows its own copy, so the seed buffer stays as it was and a resume finds the run's.
    const src = ReplayBuffer.open(config.buffer, { readonly: true });
    src.close();
    copyFileSync(config.buffer, join(runDir, "buffer.db"));
  }
  // config.json last: a folder holds a run once it is whole.
  const runId = `${Date.now().toString(36)}${process.pid.toString(36)}`;
  writeFileAtomic(join(runDir, "config.json"), JSON.stringify({ ...config, runId, createdAt: new Date().toISOString() }, null, 2) + "\n");
  return runTraining(runDir, config, runId, undefined, hooks);
}

/** Settings a resumed run may change: they decide when it stops, not what it computes. */
export type ResumeOverrides = Partial<Pick<TrainConfig, "requestTimeout" | "maxFailures">>;

/** Continues the run in `runDir` from its last checkpoint; the results are those it would have had. */
export async function resumeTraining(runDir: string, hooks: TrainHooks = {}, overrides: ResumeOverrides = {}): Promise<TrainSummary> {
  const configFile = join(runDir, "config.json");
  if (!existsSync(configFile)) throw new InvalidConfigError(`${runDir} holds no run (no config.json)`);
  const { createdAt: _, runId, ...stored } = JSON.parse(readFileSync(configFile, "utf8"));
  const config = withSplits(parseConfig(trainConfigSchema, { ...stored, ...definedOnly(overrides) }, `config of ${configFile}`));
  const latestFile = join(runDir, "checkpoints", "latest.json");
  const latest: LatestCheckpoint | undefined = existsSync(latestFile) ? JSON.parse(readFileSync(latestFile, "utf8")) : undefined;
  truncateMetrics(runDir, latest?.iteration ?? 0);
  if (config.mode !== "real") {
    // Synthetic episodes the killed run stored after its checkpoint are written again by the replay.
    const buffer = ReplayBuffer.open(join(runDir, "buffer.db"));
    const from = (latest?.iteration ?? 0) + 1;
    await buffer.deleteTrajectories({ policies: Array.from({ length: config.checkpointEvery }, (_, i) => episodeLabel(runId, from + i)) });
    buffer.close();
  }
  return runTraining(runDir, config, runId, latest, hooks);
}

async function runTraining(runDir: string, config: TrainConfig, runId: string, latest: LatestCheckpoint | undefined, hooks: TrainHooks): Promise<TrainSummary> {
  const started = performance.now();
  const policy = new NeuralPolicy({ ...config.policy, seed: config.seed });
  if (config.initPolicy) {
    if (!existsSync(config.initPolicy)) throw new InvalidConfigError(`initPolicy ${config.initPolicy} does not exist`);
    policy.load(readFileSync(config.initPolicy), config.initPolicy);
  }
  // GRPO's reference is the initial policy, which the seed (or initPolicy) recreates exactly on resume.
  const reference = config.algo === "grpo" && config.grpo.klCoef > 0 ? policy.clone() : undefined;
  const state: RunState = latest
    ? { ...latest.state }
    : { iteration: 0, realInteractions: 0, evalInteractions: 0, syntheticInteractions: 0, droppedEpisodes: 0, episodes: 0, wallSeconds: 0 };
  if (latest) {
    const file = join(runDir, "checkpoints", latest.policyFile);
    if (!existsSync(file)) throw new DataError(`checkpoint ${file} named by latest.json is missing`, { file });
    policy.load(readFileSync(file), file);
  }

  const real = makeEnvs(config, config.trainSplit);
  const evaluation = makeEnvs(config, config.evalSplit);
  const synthetic = config.mode === "real" ? undefined : makeSynthetic(config, runDir, real.tasks);
  // The curriculum belongs to the synthetic phase, where the env has a task generator.
  const curriculum = synthetic?.generator ? new Curriculum(config.curriculum, synthetic.generator, [...real.tasks, ...evaluation.tasks]) : undefined;
  if (latest?.curriculum && curriculum) curriculum.restore(latest.curriculum);
  // Contents evicted only at checkpoints (and again here, which repeats nothing if it already ran):
  // a resumed run then finds the buffer exactly as the checkpoint left it.
  if (synthetic && latest && latest.trimmed !== false) await synthetic.trim();
  const tokensAtStart = state.tokens ?? 0;
  const metricsFile = join(runDir, "metrics.jsonl");
  /** The phase of the next iteration, or null when the budgets are spent (`pending`: seconds of this iteration not yet counted). */
  const budgetLeft = (pending = 0): "real" | "synthetic" | null => {
    if (config.maxSeconds > 0 && state.wallSeconds + pending >= config.maxSeconds) return null;
    if (config.mode === "real") return state.realInteractions < config.budget ? "real" : null;
    if (state.syntheticInteractions < config.budget) return "synthetic";
    return config.mode === "s2r" && state.realInteractions < config.realBudget ? "real" : null;
  };
  let finalEval: EvalResult | undefined;
  let checkpointed = latest?.iteration ?? 0;
  // Until the policy update, an iteration has changed nothing that a checkpoint keeps.
  let updating = false;

  try {
    for (let phase = budgetLeft(); phase !== null; phase = budgetLeft()) {
      const iteration = state.iteration + 1;
      const t0 = performance.now();
      updating = false;

      // 1. Tasks (seed tasks, and at most λ of them generated by the curriculum); G episodes each.
      const taskRng = new Rng(deriveSeed(config.seed, "tasks", iteration));
      // The curriculum belongs to the synthetic phase; real-env RL trains on the seed tasks.
      const useCurriculum = phase === "synthetic" && config.curriculum.enabled && curriculum !== undefined;
      const tasks = useCurriculum ? curriculum!.sample(real.tasks, config.tasksPerIteration, taskRng) : taskRng.sample(real.tasks, Math.min(config.tasksPerIteration, real.tasks.length));
      const jobs = tasks.flatMap((task, t) =>
        Array.from({ length: config.rolloutsPerTask }, (_, g) => ({
          task, seed: deriveSeed(config.seed, "env", iteration, t, g), rngSeed: deriveSeed(config.seed, "rollout", iteration, t, g),
        })));
      const envs = phase === "synthetic" ? synthetic!.envs : real.envs;
      const played = await playEpisodes(envs, policy, jobs);
      const steps = played.reduce((s, e) => s + e.steps.length, 0);
      if (phase === "synthetic") state.syntheticInteractions += steps;
      else state.realInteractions += steps;
      state.episodes += played.length;
      // An episode where the experience model kept failing is dropped and counted; the run goes on.
      const failed = (e: Episode<NeuralStepRecord>) => e.steps.some((s) => s.info?.model_failed !== undefined);
      const groups = tasks.map((_, t) => played.slice(t * config.rolloutsPerTask, (t + 1) * config.rolloutsPerTask).filter((e) => !failed(e)));
      const dropped = played.length - groups.reduce((s, g) => s + g.length, 0);
      state.droppedEpisodes += dropped;
      const kept = groups.flat();
      const t1 = performance.now();

      // 2. Update the policy.
      updating = true;
      const updateRng = new Rng(deriveSeed(config.seed, "update", iteration));
      const stats = config.algo === "grpo"
        ? grpoUpdate(policy, reference, groups.filter((g) => g.length >= 2), config.grpo, updateRng)
        : ppoUpdate(policy, kept, config.ppo, updateRng);
      const t2 = performance.now();

      // 3. Synthetic phase: the buffer grows with the iteration's episodes (one transaction, labelled
      //    by iteration so a resume can take back what a killed run wrote after its checkpoint).
      if (phase === "synthetic" && config.replay && kept.length > 0) {
        await synthetic!.buffer.appendTrajectories(kept.map((e) => toTrajectory(e, config.env, episodeLabel(runId, iteration))));
      }
      // 4. The curriculum scores the groups by reward variance and varies the most informative tasks.
      const cur = !useCurriculum ? undefined : await curriculum!.update(groups.filter((g) => g.length > 0).map((g) => ({ task: g[0].task, rewards: g.map((e) => e.totalReward) })), new Rng(deriveSeed(config.seed, "curriculum", iteration)));

      // 5. Evaluate on the real eval split (not training interaction; counted apart).
      const last = budgetLeft((performance.now() - t0) / 1000) === null;
      let evalResult: EvalResult | undefined;
      if (last) evalResult = finalEval = await evaluate(policy, evaluation, config.finalEvalTasks);
      else if (config.evalEvery > 0 && iteration % config.evalEvery === 0) evalResult = await evaluate(policy, evaluation, config.evalTasks);
      const t3 = performance.now();

      // 6. Log, checkpoint.
      state.iteration = iteration;
      state.evalInteractions += evalResult?.steps ?? 0;
      state.wallSeconds += (t3 - t0) / 1000;
      state.tokens = tokensAtStart + (synthetic?.tokens() ?? 0);
      const m: IterationMetrics = {
        iteration, phase, episodes: played.length, steps,
        meanReward: mean(played.map((e) => e.totalReward)),
        success: mean(played.map((e) => (e.success ? 1 : 0))),
        realInteractions: state.realInteractions, evalInteractions: state.evalInteractions, syntheticInteractions: state.syntheticInteractions,
        droppedEpisodes: state.droppedEpisodes, tokens: state.tokens,
        policyLoss: stats.policyLoss,
        ...("valueLoss" in stats ? { valueLoss: stats.valueLoss } : {}),
        entropy: stats.entropy,
        ...("kl" in stats && stats.kl !== undefined ? { kl: stats.kl } : {}),
        approxKl: stats.approxKl, clipFraction: stats.clipFraction, gradNorm: stats.gradNorm,
        ...(cur ? { curriculum: { ...cur, generatedInBatch: tasks.filter((t) => "lineage" in t).length } } : {}),
        rolloutSeconds: (t1 - t0) / 1000, updateSeconds: (t2 - t1) / 1000, evalSeconds: (t3 - t2) / 1000,
        wallSeconds: state.wallSeconds,
        ...(evalResult ? { eval: evalResult } : {}),
      };
      appendFileSync(metricsFile, JSON.stringify(m) + "\n");
      if (last || iteration % config.checkpointEvery === 0) {
        saveCheckpoint(runDir, policy, state, curriculum);
        checkpointed = iteration;
        await synthetic?.trim();
        writeReport(runDir);
      }
      hooks.onIteration?.(m, config);
    }
    if (!finalEval) {
      // Resumed after the last iteration's checkpoint: evaluate again (deterministic: greedy).
      finalEval = await evaluate(policy, evaluation, config.finalEvalTasks);
    }
  } catch (e) {
    if (!(e instanceof EndpointFailedError)) throw e;
    // The experience model's endpoint is down: stop instead of spending the budget on dropped
    // episodes. The iterations done so far are kept when the interrupted one had not reached its
    // update (the episodes, where the experience model is called, come first), so a resume gives
    // what an uninterrupted run would have. Later (the curriculum's generator) the policy has moved
    // on: the last checkpoint stays. The buffer is trimmed only at scheduled checkpoints, as in an
    // uninterrupted run.
    if (!updating && state.iteration > checkpointed) {
      saveCheckpoint(runDir, policy, state, curriculum, false);
      checkpointed = state.iteration;
    }
    e.message += `; the run stopped, checkpointed at iteration ${checkpointed}: continue it with dreamgym train --resume ${runDir}`;
    throw e;
  } finally {
    await Promise.all([...real.envs, ...evaluation.envs, ...(synthetic?.envs ?? [])].map((e) => e.close()));
    synthetic?.close();
  }
  const summary: TrainSummary = {
    runDir, config, iterations: state.iteration, realInteractions: state.realInteractions, syntheticInteractions: state.syntheticInteractions,
    droppedEpisodes: state.droppedEpisodes, wallSeconds: state.wallSeconds, final: finalEval,
    ...(latest ? { resumedFrom: latest.iteration } : {}),
  };
  writeFileSync(join(runDir, "summary.json"), JSON.stringify({ ...summary, runSeconds: (performance.now() - started) / 1000 }, null, 2) + "\n");
  writeReport(runDir);
  return summary;
}

/** The policy label of a run's synthetic episodes of one iteration (so a resume can find them). */
const episodeLabel = (runId: string, iteration: number) => `neural@${runId}#${iteration}`;

function toTrajectory(e: Episode<NeuralStepRecord>, env: string, policy: string): Trajectory {
  return {
    env, task: e.task, source: "synthetic", policy, total_reward: e.totalReward, success: e.success, created_at: new Date(0).toISOString(),
    steps: e.steps.map((s) => ({
      observation: s.observation, action: s.action, reward: s.reward, next_observation: s.next_observation, terminated: s.terminated, truncated: s.truncated,
      ...(s.info?.reasoning ? { reasoning: String(s.info.reasoning) } : {}),
    })),
  };
}

function webshopGenerator(config: TrainConfig): TaskGenerator {
  const env = createEnv(config.env as EnvName, { split: config.evalSplit as never, dataDir: config.dataDir }) as WebShopEnv;
  return new WebShopTaskGenerator(env.catalogue, { excludeGoals: env.tasks().map((t) => env.catalogue.goal(t.goal_index as number)) });
}

/** The synthetic env pool: one experience model and buffer behind `concurrency` envs. */
function makeSynthetic(config: TrainConfig, runDir: string, tasks: Task[]) {
  const realEnv = createEnv(config.env as EnvName, { split: config.trainSplit as never, dataDir: config.dataDir });
  const support = syntheticSupport(config.env, realEnv);
  const chat: ChatModel | undefined = config.experience === "default" ? undefined : createChatModel(config.experience, {
    concurrency: config.concurrency, cache: config.cache, timeoutMs: 1000 * config.requestTimeout, maxFailures: config.maxFailures,
  });
  const model: ExperienceModel = chat ? new ReasoningExperienceModel({ chat, abstraction: support.abstraction }) : new EmbeddedExperienceModel({ abstraction: support.abstraction });
  const buffer = ReplayBuffer.open(join(runDir, "buffer.db"));
  // Without replay the reasoning model gets no demos; the embedded model is retrieval itself, so it
  // keeps reading the offline seed, which then never grows.
  const demos = config.replay || !chat ? config.demos : 0;
  const envs: Env[] = Array.from({ length: config.concurrency }, () => new SyntheticEnv({
    model, abstraction: support.abstraction, tasks, initialState: support.initialState, buffer, k: demos, maxSteps: config.maxSteps, record: false,
    verifier: config.hybrid ? support.verifier : undefined,
  }));
  const generator: TaskGenerator | undefined = chat
    ? new LlmTaskGenerator({ chat, profile: support.abstraction.profile })
    : config.env === "webshop" ? webshopGenerator(config) : undefined;
  const tokens = () => {
    const s = (chat as { stats?: ModelStats } | undefined)?.stats;
    return s ? s.promptTokens + s.completionTokens : 0;
  };
  const trim = async () => {
    if (config.bufferCapacity > 0) await buffer.trim(config.bufferCapacity);
  };
  return { envs, buffer, generator, tokens, trim, close: () => { buffer.close(); (chat as { close?: () => void } | undefined)?.close?.(); } };
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

function saveCheckpoint(runDir: string, policy: NeuralPolicy, state: RunState, curriculum: Curriculum | undefined, trimmed = true): void {
  const dir = join(runDir, "checkpoints");
  const policyFile = `iter-${String(state.iteration).padStart(6, "0")}.policy`;
  writeFileAtomic(join(dir, policyFile), policy.save());
  const latest: LatestCheckpoint = { iteration: state.iteration, ...(trimmed ? {} : { trimmed }), policyFile, state, ...(curriculum ? { curriculum: curriculum.toJSON() } : {}) };
  writeFileAtomic(join(dir, "latest.json"), JSON.stringify(latest, null, 2) + "\n");
  // Keep the last two policy files.
  const old = readdirSync(dir).filter((f) => /^iter-\d+\.policy$/.test(f)).sort().slice(0, -2);
  for (const f of old) rmSync(join(dir, f), { force: true });
}

/** Lines after the checkpoint are replayed, so they go (and a torn last line with them). */
function truncateMetrics(runDir: string, iteration: number): void {
  if (!existsSync(join(runDir, "metrics.jsonl"))) return;
  const keep = readMetrics(runDir).filter((m) => m.iteration <= iteration);
  writeFileAtomic(join(runDir, "metrics.jsonl"), keep.map((m) => JSON.stringify(m) + "\n").join(""));
}

const definedOnly = (o: object) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

const mean = (xs: number[]) => (xs.length === 0 ? 0 : xs.reduce((s, x) => s + x, 0) / xs.length);
