import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  deriveSeed,
  InvalidConfigError,
  ResetNeededError,
  Rng,
  type Env,
  type Episode,
  type EpisodeStep,
  type ResetOptions,
  type ResetResult,
  type StepResult,
  type Task,
} from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import type { AuditPair } from "../experience/index.ts";
import { resolveTrainConfig, type TrainConfig, type TrainConfigInput, type TrainSummary } from "./config.ts";
import { EpisodeBroker, type BrokeredEpisode, type Slot } from "./episode-broker.ts";
import { iterationMetrics } from "./iteration-metrics.ts";
import { onPolicyAudit, refitOnAudit } from "./on-policy-audit.ts";
import type { Parts } from "./parts.ts";
import { auditDue, iterationTasks, nextPhase } from "./phases.ts";
import { resolveRun, type ResolvedRun } from "./resolve.ts";
import { lockRun, RunFolder, type Checkpoint } from "./run-folder.ts";
import { NEW_RUN, type RunState } from "./run-sink.ts";
import { modelFailed, syntheticTrajectory, uncertaintyOf } from "./synthetic-episodes.ts";
import { compose, runSummary } from "./train.ts";

/** What a DreamGym session server shows of its run. */
export interface ServedRunInfo {
  dir: string;
  mode: "dreamgym" | "s2r";
  /** Episodes per group (a trainer's generations per prompt) and groups per iteration. */
  group: number;
  tasksPerIteration: number;
  budget: number;
  realBudget: number;
}

/**
 * A DreamGym run whose policy is a trainer's (TRL, verl, `dreamgym train --env ws://…`): everything
 * of the loop but the update, server side. The trainer's sessions play the episodes; the run plans
 * each iteration's tasks (the curriculum's), grows the buffer with its synthetic episodes, lets the
 * curriculum vary the tasks of highest reward variance, audits a sample in the real env, logs and
 * checkpoints, and after the synthetic budget (S2R) serves the real env.
 */
export class ServedRun {
  readonly info: ServedRunInfo;
  /** The eval split's tasks: a reset that names one plays it in the real env, outside the run (evaluation). */
  readonly tasks: readonly Task[];
  private readonly broker: EpisodeBroker;
  /** Steps of evaluation episodes since the last iteration's line. */
  evalSteps = 0;

  private constructor(
    readonly folder: RunFolder,
    private readonly parts: Parts,
    private readonly resolved: ResolvedRun,
    private readonly latest: Checkpoint | undefined,
  ) {
    const c = folder.config;
    this.info = {
      dir: folder.dir,
      mode: c.mode as "dreamgym" | "s2r",
      group: c.rolloutsPerTask,
      tasksPerIteration: c.tasksPerIteration,
      budget: c.budget,
      realBudget: c.mode === "s2r" ? c.realBudget : 0,
    };
    this.tasks = parts.evaluation.tasks;
    this.broker = new EpisodeBroker(join(folder.dir, "served-episodes.jsonl"), c.rolloutsPerTask);
  }

  /**
   * Starts a served run in `dir` (a new one from `input`; without `input`, the run `dir` holds, from
   * its last checkpoint), calls `ready` once sessions can play, and runs until the budgets are spent
   * or `stop()`.
   */
  static async run(dir: string, input: TrainConfigInput | undefined, ready: (run: ServedRun) => Promise<void> | void): Promise<TrainSummary | undefined> {
    if (input === undefined) {
      if (!existsSync(join(dir, "config.json"))) throw new InvalidConfigError(`${dir} holds no run (no config.json): start one with --mode dreamgym`);
      const release = lockRun(dir);
      try {
        const { folder, latest } = RunFolder.open(dir);
        if (!folder.config.served)
          throw new InvalidConfigError(`${dir} is a run of dreamgym train, not of a session server: resume it with dreamgym train --resume ${dir}`);
        const resolved = await resolveRun(folder.config, {}, { buffer: folder.bufferFile });
        try {
          // Synthetic episodes written after the checkpoint are written again when their iteration completes.
          const buffer = ReplayBuffer.open(folder.bufferFile);
          await buffer.deleteTrajectories({ policies: [folder.episodeLabel((latest?.iteration ?? 0) + 1)] });
          buffer.close();
          return await ServedRun.serve(folder, latest, resolved, ready);
        } finally {
          await resolved.close();
        }
      } finally {
        release();
      }
    }
    const config = servedConfig(input);
    const resolved = await resolveRun(config, {});
    try {
      return await RunFolder.create(
        dir,
        config,
        async (folder, started) => {
          const release = lockRun(folder.dir);
          try {
            return await ServedRun.serve(folder, undefined, resolved, ready, started);
          } finally {
            release();
          }
        },
        "--run",
      );
    } finally {
      await resolved.close();
    }
  }

  private static async serve(
    folder: RunFolder,
    latest: Checkpoint | undefined,
    resolved: ResolvedRun,
    ready: (run: ServedRun) => Promise<void> | void,
    started = () => {},
  ): Promise<TrainSummary | undefined> {
    const parts = await compose(folder, latest, {}, resolved);
    const run = new ServedRun(folder, parts, resolved, latest);
    try {
      started();
      await ready(run);
      return await run.loop();
    } finally {
      run.broker.end("the server is shutting down");
      await parts.close();
    }
  }

  /** A session's env: resets take the plan's next slot (or, naming a task, an evaluation episode in the real env). */
  createEnv(): Env {
    return new BrokeredEnv(this, this.broker);
  }

  /** The env a slot plays in: a synthetic one over the run's model and buffer, or a real one. */
  envFor(phase: "real" | "synthetic" | "eval"): Env {
    if (phase === "synthetic") return this.parts.synthetic!.make();
    return phase === "real" ? this.resolved.train.make() : this.resolved.eval.make();
  }

  /** The env's state abstraction (what sessions see), where it has synthetic support. */
  get abstraction() {
    return this.resolved.support?.abstraction;
  }

  /** Whether a return counts as success (the env's rule). */
  isSuccess(totalReward: number): boolean {
    return this.parts.isSuccess(totalReward);
  }

  /** Stops the run: sessions waiting for a plan hear why; the loop ends without writing the unfinished iteration (its played episodes stay in the journal). */
  stop(reason = "the server is shutting down"): void {
    this.broker.end(reason);
  }

  /** The served loop: the training loop's steps but the update (and the evaluation: the trainer's). */
  private async loop(): Promise<TrainSummary | undefined> {
    const config = this.folder.config;
    const { synthetic, curriculum, real, isSuccess } = this.parts;
    const state: RunState = this.latest ? { ...this.latest.state } : { ...NEW_RUN };
    const G = config.rolloutsPerTask;
    for (let phase = nextPhase(config, state); phase !== null; phase = nextPhase(config, state)) {
      const iteration = state.iteration + 1;
      const next: RunState = { ...state };

      // 1. Tasks, as the training loop draws them (the curriculum's in the synthetic phase).
      const { tasks, useCurriculum } = await iterationTasks(config, phase, this.parts, iteration);

      // 2. The trainer's sessions play G episodes of each (a killed server's finished ones restored).
      const seedOf = (t: number, g: number) => deriveSeed(config.seed, "env", iteration, t, g);
      const tPlan = performance.now();
      let brokered: BrokeredEpisode[][];
      try {
        brokered = await this.broker.play(iteration, phase, tasks, seedOf, this.broker.restored(iteration));
      } catch {
        return undefined; // stopped: the iteration is not written; its played episodes stay in the journal
      }
      const t0 = performance.now();
      const groups = brokered.map((g) => g.map(({ e }) => e));
      const played = groups.flat();
      const steps = played.reduce((s, e) => s + e.steps.length, 0);
      if (phase === "synthetic") next.syntheticInteractions += steps;
      else next.realInteractions += steps;
      next.episodes += played.length;
      const kept = groups.map((g) => g.filter((e) => !modelFailed(e)));
      next.droppedEpisodes += played.length - kept.flat().length;

      // 3. The buffer grows with the synthetic episodes.
      if (phase === "synthetic" && config.replay && kept.flat().length > 0) {
        const trajectories = kept
          .flat()
          .map((e) => syntheticTrajectory(e, config.env, this.folder.episodeLabel(iteration), isSuccess))
          .filter((t) => t.steps.length > 0);
        await synthetic!.buffer.appendTrajectories(trajectories);
      }

      // 4. The curriculum scores the groups by reward variance and varies the most informative tasks.
      const cur = useCurriculum
        ? await curriculum!.update(
            kept.filter((g) => g.length > 0).map((g) => ({ task: g[0].task, rewards: g.map((e) => e.totalReward) })),
            new Rng(deriveSeed(config.seed, "curriculum", iteration)),
          )
        : undefined;
      const t1 = performance.now();

      // 5. On-policy audit: whole groups replayed in the real env, their actions (the policy is the trainer's).
      const audited = auditDue(config, phase, iteration, next);
      let auditedPairs: AuditPair[] = [];
      const keep = (pairs: AuditPair[]) => {
        auditedPairs = pairs;
        this.folder.writeAuditPairs(iteration, pairs);
      };
      const withJobs = brokered.map((g) => g.filter(({ e }) => !modelFailed(e)).map(({ e, seed }) => ({ e, job: { seed, rngSeed: 0 } })));
      const audit = audited
        ? await onPolicyAudit(withJobs, real.envs, config.onPolicyAudit.episodes, new Rng(deriveSeed(config.seed, "audit", iteration)), isSuccess, keep)
        : undefined;
      next.auditInteractions = (next.auditInteractions ?? 0) + (audit?.steps ?? 0);
      next.realInteractions += refitOnAudit(config, synthetic, auditedPairs, iteration);
      const t2 = performance.now();

      // 6. Log and checkpoint (every iteration: a restart loses nothing the trainer played).
      next.iteration = iteration;
      next.evalInteractions += this.evalSteps;
      this.evalSteps = 0;
      next.wallSeconds += (t2 - tPlan) / 1000; // the trainer's play (and its update, before its next resets) included
      next.tokens = (this.latest?.state.tokens ?? 0) + (synthetic?.tokens() ?? 0);
      Object.assign(state, next);
      const updated = kept.filter((g) => g.length >= 2);
      const record = { iteration, phase, played, steps, updated, curriculum: cur, generatedInBatch: tasks.filter((t) => "lineage" in t).length };
      const m = iterationMetrics(
        config,
        { ...record, times: [tPlan, t0, t1, t2, t2], audit, uncertainty: phase === "synthetic" ? uncertaintyOf(played) : undefined },
        state,
      );
      this.folder.appendMetrics(m);
      // The policy is the trainer's: the server's own never changes, so its file is written once.
      this.folder.saveCheckpoint(this.folder.hasPolicyFile ? null : this.parts.policy.save(), state, curriculum?.toJSON(), true, synthetic?.takeRefitState);
      this.broker.checkpointed();
      await synthetic?.trim();
    }
    this.broker.end(`the run in ${this.folder.dir} has spent its budget: reset with a task (task_id) to evaluate, or start another run`);
    // No final evaluation: the trainer evaluates.
    const summary = runSummary(this.folder, state, { tasks: 0, steps: 0, score: 0, success: 0 }, this.latest);
    this.folder.writeSummary(summary);
    this.folder.writeReport();
    return summary;
  }
}

/** A served run's config: a DreamGym (or S2R) run checkpointed every iteration, evaluated by its trainer. */
export function servedConfig(input: TrainConfigInput): TrainConfig {
  const config = resolveTrainConfig({ mode: "dreamgym", ...input, served: true, checkpointEvery: 1, evalEvery: 0 });
  if (config.mode !== "dreamgym" && config.mode !== "s2r") throw new InvalidConfigError(`a session server's run is dreamgym or s2r, not ${config.mode}`);
  if (config.realScreen > 1) throw new InvalidConfigError("a session server's S2R takes no --real-screen: screening plays the policy, which is the trainer's");
  if (config.remote) throw new InvalidConfigError("a session server serves a local env, not another server's");
  return config;
}

/**
 * A session's env on a served run. A reset without a task takes a slot of the run's plan (its group's
 * task, or the next one) and plays it in the synthetic env (the real one in S2R's real phase); the
 * episode goes to the run when it ends. A reset naming a task plays it in the real env, for
 * evaluation, outside the run (its steps counted as evaluation).
 */
class BrokeredEnv implements Env {
  private env: Env | undefined;
  private kind: "real" | "synthetic" | "eval" | undefined;
  private slot: Slot | undefined;
  private group: string | undefined;
  private episode: { task: Task; steps: EpisodeStep[]; total: number; observation: string } | undefined;
  private closed = false;

  constructor(
    private readonly run: ServedRun,
    private readonly broker: EpisodeBroker,
  ) {}

  async reset(opts: ResetOptions = {}): Promise<ResetResult> {
    this.leave();
    let task: Task;
    let seed = opts.seed;
    let kind: "real" | "synthetic" | "eval";
    if (opts.task) {
      kind = "eval";
      task = opts.task;
    } else {
      this.slot = await this.broker.assign(opts.group?.id, opts.seed, opts.group?.index);
      this.group = opts.group?.id;
      kind = this.slot.phase;
      task = this.slot.task;
      seed ??= this.slot.seed;
    }
    if (this.kind !== kind) {
      await this.env?.close();
      this.env = this.run.envFor(kind);
      this.kind = kind;
    }
    let r: ResetResult;
    try {
      r = await this.env!.reset({ seed, task });
    } catch (e) {
      this.leave();
      throw e;
    }
    const shown = (r.info.task as Task | undefined) ?? task;
    if (kind !== "eval") this.episode = { task: shown, steps: [], total: 0, observation: r.observation };
    return { observation: r.observation, info: { ...r.info, task: shown } };
  }

  async step(action: string): Promise<StepResult> {
    if (!this.env) throw new ResetNeededError();
    const r = await this.env.step(action);
    // The trainer is told where its step was played, so it counts synthetic steps as synthetic.
    r.info = { ...r.info, played_in: this.kind! };
    if (this.kind === "eval") {
      this.run.evalSteps++;
      return r;
    }
    const ep = this.episode;
    if (ep && this.slot) {
      ep.steps.push({
        observation: ep.observation,
        action,
        reward: r.reward,
        next_observation: r.observation,
        terminated: r.terminated,
        truncated: r.truncated,
        ...(Object.keys(r.info).length > 0 ? { info: r.info } : {}),
        logProb: 0,
        record: null,
      });
      ep.total += r.reward;
      ep.observation = r.observation;
      if (r.terminated || r.truncated) {
        const episode: Episode = { task: ep.task, steps: ep.steps, totalReward: ep.total, success: this.run.isSuccess(ep.total) };
        this.broker.finish(this.slot, episode, this.group);
        this.slot = undefined;
        this.episode = undefined;
      }
    }
    return r;
  }

  availableActions(): string[] | undefined {
    return this.env?.availableActions();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.leave();
    await this.env?.close();
  }

  /** An episode left unfinished gives its slot back. */
  private leave(): void {
    if (this.slot) this.broker.abandon(this.slot);
    this.slot = undefined;
    this.episode = undefined;
  }
}
