import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { closing, InvalidConfigError, type ActionSource, type Task } from "../core/index.ts";
import { checkBufferEnv, ReplayBuffer } from "../buffer/index.ts";
import { Curriculum } from "../curriculum/index.ts";
import { createEnv, envEntry, envTasks, hasSyntheticSupport, remoteUrl, syntheticSupport } from "../envs/index.ts";
import { isLocalExperience, LEARNED_PREFIX, loadLearnedModel } from "../experience/index.ts";
import { EndpointFailedError, probeEndpoint } from "../llm/index.ts";
import { httpBase, useRemoteEnv } from "../remote/index.ts";
import { NeuralPolicy } from "../rl/index.ts";
import {
  resolveTrainConfig,
  type EvalResult,
  type ResumeOverrides,
  type TrainConfig,
  type TrainConfigInput,
  type TrainHooks,
  type TrainSummary,
} from "./config.ts";
import { candidateSource, makeEnvPool, makePolicy, makeSyntheticPool, type Parts, type TrainParts } from "./compose.ts";
import { trainingLoop } from "./loop.ts";
import { behaviourCloningLoop, countDemonstrations } from "./bc.ts";
import { lockRun, RunFolder, type Checkpoint } from "./run-folder.ts";
import { NEW_RUN, type RunState } from "./run-sink.ts";

/**
 * Starts a new run in `runDir` (which must not hold one): `train(dir, { env, mode: "dreamgym",
 * buffer: "b.db" })`. Everything is checked before the folder is made; a start that
 * fails anyway (before the first iteration) removes what it created. `parts` passes ready objects
 * (a policy, an experience model, a task generator, candidate actions) instead of config names.
 */
export async function train(runDir: string, input: TrainConfigInput, hooks: TrainHooks = {}, parts: TrainParts = {}): Promise<TrainSummary> {
  return withRemote(input, async (input) => {
    const config = resolveTrainConfig(input);
    await checkStart(config, parts);
    return RunFolder.create(runDir, config, async (run, started) => {
      const release = lockRun(run.dir);
      try {
        return await run_(run, undefined, hooks, parts, started);
      } finally {
        release();
      }
    });
  });
}

/**
 * Runs `fn` with the env server of `input.remote` standing for its env (`useRemoteEnv`), unless the
 * caller has already made `input.env` mean that server (as the CLI does); `env` defaults to the served env.
 */
async function withRemote<T>(input: TrainConfigInput, fn: (input: TrainConfigInput) => Promise<T>): Promise<T> {
  const url = input.remote;
  if (typeof url !== "string" || !/^(wss?|https?):\/\/./i.test(url)) return fn(input); // none, or the config check tells
  if (input.env !== undefined && remoteUrl(input.env) === httpBase(url)) return fn(input);
  const remote = await useRemoteEnv(url, { dataDir: input.dataDir });
  try {
    if (input.env !== undefined && input.env !== remote.name) {
      throw new InvalidConfigError(`the env server ${remote.url} serves ${remote.name}, not ${input.env}: set env to ${remote.name} (or leave it out)`);
    }
    return await fn({ ...input, env: remote.name });
  } finally {
    await remote.release();
  }
}

/** Continues the run in `runDir` from its last checkpoint; the results are those it would have had. */
export async function resumeTraining(runDir: string, hooks: TrainHooks = {}, overrides: ResumeOverrides = {}, parts: TrainParts = {}): Promise<TrainSummary> {
  // A run on an env server: connect first, so the config's env (perhaps known only to the server) checks out.
  const saved = savedRemote(runDir);
  if (saved) return withRemote(saved, () => resumeOpened(runDir, hooks, overrides, parts));
  return resumeOpened(runDir, hooks, overrides, parts);
}

/** The `env`, `remote` and `dataDir` a run folder's config.json records, when it names an env server. */
function savedRemote(runDir: string): TrainConfigInput | undefined {
  try {
    const c = JSON.parse(readFileSync(join(runDir, "config.json"), "utf8")) as Record<string, unknown>;
    if (typeof c.remote !== "string") return undefined;
    return { env: typeof c.env === "string" ? c.env : undefined, remote: c.remote, dataDir: typeof c.dataDir === "string" ? c.dataDir : undefined };
  } catch {
    return undefined; // RunFolder.open says what is wrong with the folder
  }
}

async function resumeOpened(runDir: string, hooks: TrainHooks, overrides: ResumeOverrides, parts: TrainParts): Promise<TrainSummary> {
  // Taken before the folder is read or changed, so a run still training elsewhere is not touched.
  const release = existsSync(join(runDir, "config.json")) ? lockRun(runDir) : () => {};
  try {
    return await resumeLocked(runDir, hooks, overrides, parts);
  } finally {
    release();
  }
}

async function resumeLocked(runDir: string, hooks: TrainHooks, overrides: ResumeOverrides, parts: TrainParts): Promise<TrainSummary> {
  const { folder, latest, warnings } = RunFolder.open(runDir, overrides);
  // What a fresh start checks, a resume checks too (a config.json edited since may name what cannot
  // run). The run's own copy of the buffer stands for the seed buffer, and the checkpoint for initPolicy.
  const copy = existsSync(folder.bufferFile) ? folder.bufferFile : folder.config.buffer;
  const synthetic = (folder.config.mode === "dreamgym" || folder.config.mode === "s2r") && folder.config.buffer !== undefined;
  await checkStart({ ...folder.config, buffer: synthetic ? copy : folder.config.buffer, initPolicy: latest ? undefined : folder.config.initPolicy }, parts);
  for (const w of warnings) hooks.onWarning?.(w);
  if (folder.config.mode === "dreamgym" || folder.config.mode === "s2r") {
    // Synthetic episodes the killed run stored after its checkpoint are written again by the replay.
    const buffer = ReplayBuffer.open(folder.bufferFile);
    const from = (latest?.iteration ?? 0) + 1;
    await buffer.deleteTrajectories({ policies: Array.from({ length: folder.config.checkpointEvery }, (_, i) => folder.episodeLabel(from + i)) });
    buffer.close();
  }
  return run_(folder, latest, hooks, parts);
}

/** Composes the run's parts, runs the loop, writes the summary; closes everything it opened. */
async function run_(run: RunFolder, latest: Checkpoint | undefined, hooks: TrainHooks, given: TrainParts, started = () => {}): Promise<TrainSummary> {
  const config = run.config;
  const t0 = performance.now();
  const parts = await compose(config, run, latest, given);
  let final: EvalResult;
  const state = latest ? { ...latest.state } : { ...NEW_RUN };
  try {
    started(); // everything is open: from here a failure leaves a run to resume
    final = config.mode === "bc" ? await behaviourCloningLoop(config, parts, state, run, hooks) : await trainingLoop(config, parts, state, run, hooks);
  } catch (e) {
    if (e instanceof EndpointFailedError) keepDoneIterations(e, run, parts, state);
    throw e;
  } finally {
    await parts.close();
  }
  const summary: TrainSummary = {
    runDir: run.dir,
    config,
    iterations: state.iteration,
    realInteractions: state.realInteractions,
    syntheticInteractions: state.syntheticInteractions,
    auditInteractions: state.auditInteractions ?? 0,
    droppedEpisodes: state.droppedEpisodes,
    wallSeconds: state.wallSeconds,
    final,
    ...(latest ? { resumedFrom: latest.iteration } : {}),
  };
  run.writeSummary({ ...summary, runSeconds: (performance.now() - t0) / 1000 });
  run.writeReport();
  return summary;
}

/**
 * The experience model's endpoint is down: the run stops instead of spending its budget on dropped
 * episodes. The loop calls LLMs only before an iteration changes anything, so the policy, the
 * curriculum and `state` are as the last whole iteration left them: they are checkpointed when that
 * iteration was not yet (off schedule: the buffer is trimmed only at scheduled checkpoints), and a
 * resume gives what an uninterrupted run would have.
 */
function keepDoneIterations(e: EndpointFailedError, run: RunFolder, parts: Parts, state: RunState): void {
  if (state.iteration > run.lastCheckpoint()) run.saveCheckpoint(parts.policy.save(), state, parts.curriculum?.toJSON(), false);
  e.message += `; the run stopped, checkpointed at iteration ${run.lastCheckpoint()}: continue it with dreamgym train --resume ${run.dir}`;
}

/** Builds what the config names (and takes what `given` holds): policy, env pools, synthetic env, curriculum. */
async function compose(config: TrainConfig, run: RunFolder, latest: Checkpoint | undefined, given: TrainParts): Promise<Parts> {
  const policy = makePolicy(config, given, config.initPolicy ? readFileSync(config.initPolicy) : undefined);
  // GRPO's reference is the initial policy, which the seed (or initPolicy) recreates exactly on resume.
  const anchored = config.grpo.klCoef > 0 || ((config.mode === "dreamgym" || config.mode === "s2r") && config.pessimism.kl > 0);
  const reference = config.algo === "grpo" && anchored ? policy.clone() : undefined;
  if (latest) policy.load(run.checkpointPolicy(latest), latest.policyFile);
  const synthetic_ = config.mode === "dreamgym" || config.mode === "s2r";
  const actions = candidateSource(config, synthetic_ ? run.bufferFile : config.buffer, given);
  const opened: { close(): Promise<void> }[] = [];
  const closeAll = async () => {
    await Promise.all(opened.map((o) => o.close()));
  };
  try {
    const split = makeEnvPool(config, config.trainSplit, actions);
    opened.push(...split.envs);
    const real = config.realTasks === "seed" ? { ...split, tasks: seedTasks(synthetic_ ? run.bufferFile : bufferOf(config), config.env, split.tasks) } : split;
    const evaluation = makeEnvPool(config, config.evalSplit, actions);
    opened.push(...evaluation.envs);
    const synthetic = !synthetic_
      ? undefined
      : await makeSyntheticPool(
          config,
          run.bufferFile,
          config.syntheticTasks === "seed" ? seedTasks(run.bufferFile, config.env, split.tasks) : split.tasks,
          given,
          actions,
        );
    if (synthetic) opened.push(synthetic, ...synthetic.envs);
    // The curriculum belongs to the synthetic phase, where there is a task generator.
    const curriculum = synthetic?.generator ? new Curriculum(config.curriculum, synthetic.generator, [...split.tasks, ...evaluation.tasks]) : undefined;
    if (latest?.curriculum && curriculum) curriculum.restore(latest.curriculum as ReturnType<Curriculum["toJSON"]>);
    // Contents evicted only at checkpoints (and again here, which repeats nothing if it already ran):
    // a resumed run then finds the buffer exactly as the checkpoint left it.
    if (synthetic && latest && latest.trimmed !== false) await synthetic.trim();
    return { policy, reference, real, evaluation, synthetic, curriculum, isSuccess: envEntry(config.env).success, actions, close: closeAll };
  } catch (e) {
    await closeAll();
    throw e;
  }
}

/** Every check a start can make without writing anything: the config, the env and splits, the files it names, the experience model. */
async function checkStart(config: TrainConfig, parts: TrainParts): Promise<void> {
  if (config.mode === "s2r" && config.realBudget === 0)
    throw new InvalidConfigError("invalid training config:\n  realBudget: mode s2r needs real steps after the synthetic phase (--real-budget N > 0)");
  if (config.mode !== "s2r" && config.realBudget > 0)
    throw new InvalidConfigError(`invalid training config:\n  realBudget: only mode s2r has a real phase (mode is ${config.mode})`);
  if ((config.mode === "real" || config.mode === "bc") && config.hybrid)
    throw new InvalidConfigError(`--hybrid applies to the synthetic env (mode dreamgym or s2r); mode ${config.mode} has no synthetic rewards: drop --hybrid`);
  if (config.coldStart && config.mode !== "dreamgym" && config.mode !== "s2r")
    throw new InvalidConfigError(`--cold-start applies to the synthetic modes (dreamgym, s2r); mode is ${config.mode}`);
  if (config.coldStart && config.buffer)
    throw new InvalidConfigError(`--cold-start starts from an empty buffer: drop --buffer ${config.buffer} (or drop --cold-start to ground the model in it)`);
  if (config.syntheticOnly && config.mode !== "dreamgym")
    throw new InvalidConfigError(`--synthetic-only trains in the synthetic env alone: it needs --mode dreamgym (mode is ${config.mode})`);
  if (config.initPolicy) {
    if (!existsSync(config.initPolicy)) throw new InvalidConfigError(`initPolicy ${config.initPolicy} does not exist`);
    (parts.policy ?? new NeuralPolicy({ ...config.policy, seed: config.seed })).load(readFileSync(config.initPolicy), config.initPolicy);
  }
  if (config.buffer) {
    if (!existsSync(config.buffer)) throw new InvalidConfigError(`buffer ${config.buffer} does not exist`);
    const b = ReplayBuffer.open(config.buffer, { readonly: true }); // a corrupt or foreign file fails here
    try {
      // Another env's buffer grounds nothing here: its states are in another format.
      if (config.mode !== "real") checkBufferEnv(b, config.buffer, config.env);
    } finally {
      b.close();
    }
  }
  if (config.mode === "bc") {
    if (!config.buffer)
      throw new InvalidConfigError(
        `mode bc clones the successful real episodes of a buffer: give --buffer B.db (dreamgym buffer import F.jsonl --abstract --buffer B.db)`,
      );
    if (countDemonstrations(config, config.buffer) === 0)
      throw new InvalidConfigError(`mode bc: buffer ${config.buffer} holds no successful real ${config.env} episodes to clone`);
  } else if (config.mode !== "real") {
    if (!hasSyntheticSupport(config.env))
      throw new InvalidConfigError(
        `mode ${config.mode} needs a synthetic ${config.env}: its env spec has no synthetic(env) (a state abstraction and start states); use --mode real`,
      );
    if (config.coldStart) {
      if (isLocalExperience(config.experience) && !parts.experienceModel) {
        throw new InvalidConfigError(
          `--cold-start needs a reasoning experience model (--experience http://host/v1#model, openai:model or gguf:file): the ${config.experience === "default" ? "embedded" : "learned"} model is built from a buffer's trajectories`,
        );
      }
    } else if (!config.buffer)
      throw new InvalidConfigError(
        `mode ${config.mode} needs a buffer of offline ${config.env} trajectories (--buffer B.db; dreamgym buffer import F.jsonl --abstract --buffer B.db), or --cold-start with a reasoning experience model to start from none`,
      );
    if (config.experience.startsWith(LEARNED_PREFIX) && !parts.experienceModel) {
      // A model file is read (and checked) before anything is written.
      await closing(createEnv(config.env, { split: config.trainSplit, dataDir: config.dataDir }), (env) => {
        const support = syntheticSupport(config.env, env);
        loadLearnedModel(config.experience.slice(LEARNED_PREFIX.length), support.abstraction, support.rewards);
      });
    } else if (!isLocalExperience(config.experience) && !parts.experienceModel) await probeEndpoint(config.experience, 1000 * config.requestTimeout);
  }
  // Each split opens, has tasks, and offers the policy something to pick from at its first state.
  const actions: ActionSource | undefined = candidateSource(config, config.buffer, parts);
  for (const split of [config.trainSplit, config.evalSplit]) {
    await closing(createEnv(config.env, { split, dataDir: config.dataDir, maxSteps: config.maxSteps }), async (env) => {
      const tasks = envTasks(config.env, env);
      if (tasks.length === 0) throw new InvalidConfigError(`${config.env} split ${split} has no tasks`);
      // An env that cannot be played here (WebArena with no deployment) can still train synthetic only.
      const why = config.syntheticOnly ? undefined : envEntry(config.env).spec.unavailable?.(env);
      if (why)
        throw new InvalidConfigError(`${why}; to train in its synthetic env alone: --mode dreamgym --synthetic-only (no evaluation, no on-policy audit)`);
      if (split !== config.trainSplit) return;
      const support = config.mode === "dreamgym" || config.mode === "s2r" ? syntheticSupport(config.env, env) : undefined;
      if (config.hybrid && !support?.verifier) throw new InvalidConfigError(`--hybrid needs a verifier of ${config.env}'s rewards; ${config.env} has none`);
      const listed = support
        ? support.abstraction.actions(support.abstraction.abstract(support.initialState(tasks[0])))
        : (await env.reset({ task: tasks[0], seed: 0 }), env.availableActions());
      if (listed === undefined && actions === undefined) {
        throw new InvalidConfigError(
          `${config.env} lists no actions, so the policy has no candidates: give its env spec candidateActions, or a --buffer of its trajectories to learn a command vocabulary from`,
        );
      }
    });
  }
}

/** The buffer a real-mode run names (`realTasks: "seed"` reads its tasks from it). */
function bufferOf(config: TrainConfig): string {
  if (config.buffer === undefined) throw new InvalidConfigError(`realTasks "seed" needs a buffer (--buffer B.db) whose real episodes name the tasks`);
  return config.buffer;
}

/** The train-split tasks the buffer's real episodes played (`syntheticTasks` or `realTasks` "seed"), in split order; an error when there are none. */
function seedTasks(bufferFile: string, env: string, split: readonly Task[]): Task[] {
  const ids = new Set<string>();
  const buffer = ReplayBuffer.open(bufferFile, { readonly: true });
  try {
    for (const t of buffer.trajectories({ env, source: "real" })) ids.add(t.task.id);
  } finally {
    buffer.close();
  }
  const tasks = split.filter((t) => ids.has(t.id));
  if (tasks.length === 0) throw new InvalidConfigError(`tasks "seed": the buffer holds no real ${env} episodes of the train split's tasks`);
  return tasks;
}
