import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { DataError, InvalidConfigError, type Task } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { Curriculum } from "../curriculum/index.ts";
import { envTasks } from "../envs/index.ts";
import { EndpointFailedError } from "../llm/index.ts";
import { LearnedExperienceModel } from "../experience/index.ts";
import { NeuralPolicy, ReferenceThread, type NeuralStepRecord } from "../rl/index.ts";
import {
  resolveTrainConfig,
  type EvalResult,
  type ResumeOverrides,
  type TrainConfig,
  type TrainConfigInput,
  type TrainHooks,
  type TrainSummary,
} from "./config.ts";
import { envTaskGenerator, helperThreads, openSyntheticBuffer, policyOf, syntheticPool } from "./compose.ts";
import type { Parts, TrainParts } from "./parts.ts";
import { trainingLoop } from "./loop.ts";
import { needsReference } from "./phases.ts";
import { behaviourCloningLoop } from "./bc.ts";
import { resolveRun, runEnvEntry, savedRemote, withRemote, type ResolvedRun } from "./resolve.ts";
import { auditFiles, lockRun, readAuditPairs, RunFolder, type Checkpoint } from "./run-folder.ts";
import { refitOnAudit } from "./on-policy-audit.ts";
import { NEW_RUN, type RunState } from "./run-sink.ts";

/**
 * Starts a new run in `runDir` (which must not hold one): `train(dir, { env, mode: "dreamgym",
 * buffer: "b.db" })`. Everything is checked, and the envs opened, before the folder is made; a start
 * that fails anyway (before the first iteration) removes what it created. `parts` passes ready
 * objects instead of config names: a policy, an experience model, a task generator, candidate
 * actions, and the real env's instances or factories (`parts.envs: { train, eval }`, each an `Env`
 * or a `() => Env`; `env` then names it, registered or not).
 */
export async function train(runDir: string, input: TrainConfigInput, hooks: TrainHooks = {}, parts: TrainParts = {}): Promise<TrainSummary> {
  if (parts.envs && input.env === undefined)
    throw new InvalidConfigError("the run is given its envs (parts.envs): name their env in the config (env), for its buffer and its runs");
  return withRemote(input, async (input) => {
    // An env passed as parts needs no registration: an unregistered name gets the default splits.
    const config = resolveTrainConfig(input, undefined, (env) => runEnvEntry(env, parts).splits);
    const resolved = await resolveRun(config, parts);
    try {
      return await RunFolder.create(runDir, config, async (run, started) => {
        const release = lockRun(run.dir);
        try {
          return await run_(run, undefined, hooks, parts, resolved, started);
        } finally {
          release();
        }
      });
    } finally {
      await resolved.close(); // closed already, unless the folder could not be made
    }
  });
}

/** Continues the run in `runDir` from its last checkpoint; the results are those it would have had. */
export async function resumeTraining(runDir: string, hooks: TrainHooks = {}, overrides: ResumeOverrides = {}, parts: TrainParts = {}): Promise<TrainSummary> {
  return withRemote(savedRemote(runDir), () => resumeOpened(runDir, hooks, overrides, parts));
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
  const resolved = await resolveRun(folder.config, parts, {
    buffer: synthetic ? copy : folder.config.buffer,
    initPolicy: latest ? undefined : folder.config.initPolicy,
  });
  try {
    for (const w of warnings) hooks.onWarning?.(w);
    if (folder.config.mode === "dreamgym" || folder.config.mode === "s2r") {
      // Synthetic episodes the killed run stored after its checkpoint are written again by the replay.
      const buffer = ReplayBuffer.open(folder.bufferFile);
      const from = (latest?.iteration ?? 0) + 1;
      await buffer.deleteTrajectories({ policies: Array.from({ length: folder.config.checkpointEvery }, (_, i) => folder.episodeLabel(from + i)) });
      buffer.close();
    }
    return await run_(folder, latest, hooks, parts, resolved);
  } finally {
    await resolved.close();
  }
}

/** Composes the run's parts, runs the loop, writes the summary; closes everything it opened. */
async function run_(
  run: RunFolder,
  latest: Checkpoint | undefined,
  hooks: TrainHooks,
  given: TrainParts,
  resolved: ResolvedRun,
  started = () => {},
): Promise<TrainSummary> {
  const config = run.config;
  const t0 = performance.now();
  const parts = await compose(run, latest, given, resolved);
  let final: EvalResult;
  const state = latest ? { ...latest.state } : { ...NEW_RUN };
  try {
    started(); // everything is open: from here a failure leaves a run to resume
    hooks.onStart?.(run.dir);
    run.saveConfigChanges(); // a resume's larger budget or real phase, now that the run goes on
    final =
      config.mode === "bc"
        ? await behaviourCloningLoop(config, parts, state, run, hooks, resolved.train.support?.abstraction)
        : await trainingLoop(config, parts, state, run, hooks);
  } catch (e) {
    if (e instanceof EndpointFailedError) keepDoneIterations(e, run, parts, state);
    throw e;
  } finally {
    await parts.close();
  }
  const summary = runSummary(run, state, final, latest);
  run.writeSummary({ ...summary, runSeconds: (performance.now() - t0) / 1000 });
  run.writeReport();
  return summary;
}

/** A run's summary: its counters, its final evaluation, and where it resumed from. */
export function runSummary(run: RunFolder, state: RunState, final: EvalResult, latest: Checkpoint | undefined): TrainSummary {
  return {
    runDir: run.dir,
    config: run.config,
    iterations: state.iteration,
    realInteractions: state.realInteractions,
    syntheticInteractions: state.syntheticInteractions,
    auditInteractions: state.auditInteractions ?? 0,
    droppedEpisodes: state.droppedEpisodes,
    wallSeconds: state.wallSeconds,
    final,
    ...(latest ? { resumedFrom: latest.iteration } : {}),
  };
}

/**
 * The experience model's endpoint is down: the run stops instead of spending its budget on dropped
 * episodes. The loop calls LLMs only before an iteration changes anything, so the policy, the
 * curriculum and `state` are as the last whole iteration left them: they are checkpointed when that
 * iteration was not yet (off schedule: the buffer is trimmed only at scheduled checkpoints), and a
 * resume gives what an uninterrupted run would have.
 */
function keepDoneIterations(e: EndpointFailedError, run: RunFolder, parts: Parts, state: RunState): void {
  if (state.iteration > run.lastCheckpoint())
    run.saveCheckpoint(parts.policy.save(), state, parts.curriculum?.toJSON(), false, parts.synthetic?.takeRefitState);
  e.message += `; the run stopped, checkpointed at iteration ${run.lastCheckpoint()}: continue it with dreamgym train --resume ${run.dir}`;
}

/**
 * The run's parts from what `resolveRun` opened (the env pools, the synthetic support, the experience
 * model) and what `given` holds: policy, synthetic env, curriculum. On failure it closes everything.
 */
export async function compose(run: RunFolder, latest: Checkpoint | undefined, given: TrainParts, resolved: ResolvedRun): Promise<Parts> {
  const config = run.config;
  const { env, actions } = resolved;
  const opened: { close(): Promise<void> }[] = [resolved];
  const closeAll = async () => {
    await Promise.all(opened.map((o) => o.close()));
  };
  try {
    const synthetic_ = config.mode === "dreamgym" || config.mode === "s2r";
    // Opened first: its search thread reads the offline rows meanwhile (see `openSyntheticBuffer`).
    const syntheticBuffer = synthetic_ ? openSyntheticBuffer(config, run.bufferFile, given.experienceModel ?? resolved.learned) : undefined;
    if (syntheticBuffer) opened.push({ close: async () => syntheticBuffer.close() });
    // The learned model's new estimates on the second core too, for the whole run.
    const estimates = synthetic_ && helperThreads(config) ? resolved.learned : undefined;
    if (estimates instanceof LearnedExperienceModel) {
      void estimates.startEstimateThread(); // estimates are worked out here until it is up
      opened.push({ close: async () => estimates.closeEstimateThread() });
    }
    const policy = policyOf(config, given, env.plugs.features, config.initPolicy ? readFileSync(config.initPolicy) : undefined);
    // GRPO's reference is the initial policy, which the seed (or initPolicy) recreates exactly on resume.
    const reference = needsReference(config) ? policy.clone() : undefined;
    // Its scores of each update's steps on the second core, where it is the built-in neural policy itself
    // (a subclass may score otherwise; the thread's copy is made from the bytes) and GRPO updates will ask.
    const referenceThread =
      reference && Object.getPrototypeOf(reference) === NeuralPolicy.prototype && config.mode !== "bc" && helperThreads(config)
        ? new ReferenceThread(reference as NeuralPolicy)
        : undefined;
    if (referenceThread) opened.push({ close: async () => referenceThread.close() });
    if (latest) policy.load(run.checkpointPolicy(latest), latest.policyFile);
    const split = { envs: resolved.train.envs, tasks: resolved.train.tasks };
    const real = config.realTasks === "seed" ? { ...split, tasks: seedTasks(synthetic_ ? run.bufferFile : bufferOf(config), config.env, split.tasks) } : split;
    const evaluation = { envs: resolved.eval.envs, tasks: resolved.eval.tasks };
    const evalEnv = resolved.eval.first;
    const synthetic = !synthetic_
      ? undefined
      : await syntheticPool(
          config,
          syntheticBuffer!,
          config.syntheticTasks === "seed" ? seedTasks(run.bufferFile, config.env, split.tasks) : split.tasks,
          given,
          actions,
          {
            support: resolved.support!,
            model: given.experienceModel ?? resolved.learned ?? resolved.experience!,
            llmTasks: env.plugs.llmTasks,
            // The env's own generator over the eval pool's first env (it reads the split's data, and plays no episode).
            envGenerator: () => envTaskGenerator(env.plugs.taskGenerator, config, evalEnv, envTasks(env.entry, evalEnv)),
          },
        );
    if (synthetic) opened.push(synthetic, ...synthetic.envs);
    if (synthetic && config.onPolicyAudit.refit) {
      if (!synthetic.refit)
        throw new InvalidConfigError(
          `--refit needs an experience model that learns from real steps (--experience learned:FILE); ${given.experienceModel?.id ?? config.experience} cannot`,
        );
      // A resumed run's model: the one it started with, refit again from the audits it kept (each the
      // same: ~34 ms an audit on WebShop); where its checkpoint kept a refit state, as that state left it,
      // refit again from the audits after it only.
      const kept = latest && synthetic.loadRefitState ? run.checkpointRefitState(latest) : undefined;
      if (kept) synthetic.loadRefitState!(kept.bytes, kept.path);
      let refitSteps = kept?.realInteractions ?? 0;
      for (const f of auditFiles(run.dir))
        if (f.iteration > (kept?.iteration ?? 0) && f.iteration <= (latest?.iteration ?? 0))
          refitSteps += refitOnAudit(config, synthetic, readAuditPairs(f.file), f.iteration);
      // Before any real phase, the run's real steps are exactly the refits': a difference means audit files went missing.
      const beforeRealPhase = config.mode === "dreamgym" || (latest?.state.syntheticInteractions ?? 0) < config.budget;
      if (latest && beforeRealPhase && refitSteps !== latest.state.realInteractions)
        throw new DataError(
          `the run's model was refit on ${latest.state.realInteractions} real steps of its audits, but the audit files hold ${refitSteps}: restore them, or start a new run`,
          { file: join(run.dir, "audit") },
        );
    }
    // The curriculum belongs to the synthetic phase, where there is a task generator.
    const curriculum = synthetic?.generator ? new Curriculum(config.curriculum, synthetic.generator, [...split.tasks, ...evaluation.tasks]) : undefined;
    if (latest?.curriculum && curriculum) curriculum.restore(latest.curriculum as ReturnType<Curriculum["toJSON"]>);
    // Contents evicted only at checkpoints (and again here, which repeats nothing if it already ran):
    // a resumed run then finds the buffer exactly as the checkpoint left it.
    if (synthetic && latest && latest.trimmed !== false) await synthetic.trim();
    const referenceLogProbs = referenceThread && ((records: readonly unknown[]) => referenceThread.logProbs(records as NeuralStepRecord[]));
    return { policy, reference, referenceLogProbs, real, evaluation, synthetic, curriculum, isSuccess: env.entry.success, actions, close: closeAll };
  } catch (e) {
    await closeAll();
    throw e;
  }
}

/** The buffer a real-mode run names (`realTasks: "seed"` reads its tasks from it). */
function bufferOf(config: TrainConfig): string {
  if (config.buffer === undefined) throw new InvalidConfigError(`realTasks "seed" needs a buffer (--buffer B.db) whose real episodes name the tasks`);
  return config.buffer;
}

/** The train-split tasks the buffer's real episodes played (`syntheticTasks` or `realTasks` "seed"), in split order; an error when there are none. */
function seedTasks(bufferFile: string, env: string, split: readonly Task[]): Task[] {
  const buffer = ReplayBuffer.open(bufferFile, { readonly: true });
  let ids: Set<string>;
  try {
    ids = buffer.taskIds({ env, source: "real" });
  } finally {
    buffer.close();
  }
  const tasks = split.filter((t) => ids.has(t.id));
  if (tasks.length === 0) throw new InvalidConfigError(`tasks "seed": the buffer holds no real ${env} episodes of the train split's tasks`);
  return tasks;
}
