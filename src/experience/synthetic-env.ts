import {
  ClosedEnvironmentError,
  FREE_TEXT_SLOT,
  InvalidConfigError,
  ResetNeededError,
  Rng,
  type Env,
  type ExperienceModel,
  type HistoryStep,
  type ResetOptions,
  type ResetResult,
  type StateAbstraction,
  type StepResult,
  type Task,
  type Verifier,
} from "../core/index.ts";
import type { AnnouncedStep, ReplayBuffer } from "../buffer/index.ts";
import { retrieveDemos } from "./demos.ts";

export interface SyntheticEnvOptions {
  model: ExperienceModel;
  abstraction: StateAbstraction;
  /** Tasks that `reset()` samples from. */
  tasks: Task[];
  /** The abstract start state of a task (e.g. the real env's first page, abstracted). */
  initialState: (task: Task) => string;
  /** Grounds predictions (top-k similar transitions) and records synthetic transitions. */
  buffer?: ReplayBuffer;
  /** Demos per step. @default 5 */
  k?: number;
  /** Also retrieve the k most similar states where the same action was taken (the embedded model needs them). @default true */
  sameActionDemos?: boolean;
  /** Steps before truncation. @default 15 */
  maxSteps?: number;
  /** Record each synthetic transition in the buffer (source "synthetic"). @default true when a buffer is given */
  record?: boolean;
  /** Written as the transitions' policy. */
  policy?: string;
  /** Hybrid mode: terminal rewards from the real env's verifier instead of the model. */
  verifier?: Verifier;
  /** Seed of task sampling. @default 0 */
  seed?: number;
  /** Pessimism where the model reports its uncertainty `u` (MOPO's penalty, MOReL's halt). @default none */
  pessimism?: Pessimism;
}

/**
 * Pessimism about the model's own uncertainty `u` (its prediction's `info.u`, in [0, 1]): the reward
 * becomes r − beta·u (MOPO), and where u passes `halt` the episode ends there with reward 0 (MOReL's
 * HALT state), so a policy gains nothing from steps the model cannot vouch for.
 */
export interface Pessimism {
  /** The penalty per unit of u. 0: none. */
  beta: number;
  /** Above this u the episode halts. @default never */
  halt?: number;
}

/** A step's reward and end under pessimism (u undefined: the model cannot tell, the step stays as it is). */
export function pessimisticStep(
  reward: number,
  terminated: boolean,
  u: number | undefined,
  p: Pessimism | undefined,
): { reward: number; terminated: boolean; halted: boolean } {
  if (u === undefined || p === undefined) return { reward, terminated, halted: false };
  if (p.halt !== undefined && u > p.halt) return { reward: 0, terminated: true, halted: true };
  return { reward: reward - p.beta * u, terminated, halted: false };
}

let episodeCounter = 0;

/**
 * An `Env` played by an experience model: `reset` starts a task in its abstract start state; `step`
 * retrieves similar transitions, asks the model for the next state, reward and end, records the
 * transition, and truncates at the step cap. Interchangeable with a real env wrapped in
 * `abstractEnv`. A model failure is a no-op step with `info.model_failed`, never recorded. With
 * `pessimism`, the reward the policy gets is lowered by the model's uncertainty and an unsure step
 * halts the episode (`info.halted`); the model's own reward stays in `info.model_reward`, and it is
 * what gets recorded (a halted step is not recorded: it is not what the model predicted).
 */
export class SyntheticEnv implements Env {
  private readonly o: SyntheticEnvOptions & { k: number; maxSteps: number };
  private rng: Rng;
  private task: Task | null = null;
  private state = "";
  private history: HistoryStep[] = [];
  private steps = 0;
  private done = true;
  private closed = false;
  private episodeId = "";

  constructor(opts: SyntheticEnvOptions) {
    if (opts.tasks.length === 0) throw new InvalidConfigError("a synthetic env needs at least one task");
    this.o = { ...opts, k: opts.k ?? 5, maxSteps: opts.maxSteps ?? 15 };
    this.rng = new Rng(opts.seed ?? 0);
  }

  async reset(opts: ResetOptions = {}): Promise<ResetResult> {
    if (this.closed) throw new ClosedEnvironmentError();
    if (opts.seed !== undefined) this.rng = new Rng(opts.seed);
    const task = opts.task ?? this.o.tasks[this.rng.randbelow(this.o.tasks.length)];
    this.task = task;
    this.state = this.o.abstraction.abstract(this.o.initialState(task));
    this.history = [];
    this.steps = 0;
    this.done = false;
    this.episodeId = `synthetic:${process.pid}:${Date.now().toString(36)}:${++episodeCounter}`;
    return { observation: this.state, info: { task, episode: this.episodeId } };
  }

  availableActions(): string[] | undefined {
    if (this.done) return [];
    // Read off the state once: the policy asks for them, then the step checks the action against them.
    if (this.listed?.state !== this.state) this.listed = { state: this.state, actions: this.o.abstraction.actions(this.state) };
    return this.listed.actions && [...this.listed.actions];
  }
  private listed: { state: string; actions: string[] | undefined } | undefined;

  private isListed(action: string): boolean {
    const listed = this.availableActions();
    if (!listed) return true; // the format does not list actions: the model judges
    const a = action.trim().toLowerCase();
    return listed.some((l) => {
      const slot = l.indexOf(FREE_TEXT_SLOT);
      if (slot < 0) return l.toLowerCase() === a;
      const head = l.slice(0, slot).toLowerCase();
      const tail = l.slice(slot + FREE_TEXT_SLOT.length).toLowerCase();
      return a.startsWith(head) && a.endsWith(tail) && a.length > head.length + tail.length;
    });
  }

  async step(action: string): Promise<StepResult> {
    if (this.closed) throw new ClosedEnvironmentError();
    if (this.done || !this.task) throw new ResetNeededError();
    this.steps++;
    if (!this.isListed(action)) {
      this.done = this.atMaxSteps();
      return { observation: this.state, reward: 0, terminated: false, truncated: this.done, info: { invalid: true } };
    }
    // Announced before the model is asked: steps recorded meanwhile may wait to share a commit with it.
    const recording = this.o.buffer && (this.o.record ?? true) ? this.o.buffer.announceStep() : undefined;
    try {
      return await this.modelStep(this.task, action, recording);
    } finally {
      recording?.cancel(); // a step not recorded (a failed or halted one, an error): none waits for it
    }
  }

  private atMaxSteps(): boolean {
    return this.steps >= this.o.maxSteps;
  }

  private async modelStep(task: Task, action: string, recording: AnnouncedStep | undefined): Promise<StepResult> {
    this.o.model.prepare?.({ task, history: this.history, state: this.state, action });
    if (this.o.buffer && this.o.model.fit) await this.o.model.fit(this.o.buffer);
    const demos =
      this.o.buffer && this.o.model.usesDemos !== false && this.o.k > 0
        ? await retrieveDemos(
            this.o.buffer,
            this.o.abstraction,
            { state: this.state, action },
            {
              k: this.o.k,
              sameAction: this.o.sameActionDemos,
              exact: this.o.model.exactDemos?.(this.state),
              sameActionFirst: this.o.model.sameActionFirst?.(this.state),
              readsFirst: this.o.model.readsTopDemos,
              preferTask: task.id,
              realAnchor: this.o.model.readsAnchor !== false,
              realOnly: this.o.model.realDemosOnly,
            },
          )
        : [];
    const prediction = await this.o.model.predict({ task, history: this.history, state: this.state, action, demos });
    if (prediction.info.failed) {
      this.done = this.atMaxSteps();
      return { observation: this.state, reward: 0, terminated: false, truncated: this.done, info: { model_failed: prediction.info.failed } };
    }
    let { reward, terminated, nextState } = prediction;
    const verified = (await this.o.verifier?.(task, this.history, this.state, action)) ?? null;
    if (verified) ({ reward, terminated, nextState = nextState } = verified);
    // A verified step is the real env's verdict: nothing to be unsure of.
    const u = verified ? undefined : prediction.info.u;
    const p = pessimisticStep(reward, terminated, u, this.o.pessimism);
    if (p.halted) {
      // MOReL's HALT: the episode ends here, in the state it was in, with nothing earned.
      this.done = true;
      return { observation: this.state, reward: 0, terminated: true, truncated: false, info: { ...prediction.info, halted: true, model_reward: reward } };
    }
    const truncated = !terminated && this.atMaxSteps();
    const step: HistoryStep = { state: this.state, action, nextState, reward };
    if (recording) {
      await recording.append([
        {
          trajectoryId: this.episodeId,
          step: this.steps - 1,
          env: this.o.abstraction.env,
          task,
          state: this.state,
          action,
          reward,
          nextState,
          terminated,
          truncated,
          reasoning: prediction.reasoning,
          source: "synthetic",
          policy: this.o.policy,
          info: { model: this.o.model.id, ...(verified ? { verified: true } : {}) },
        },
      ]);
    }
    this.history.push(step);
    this.state = nextState;
    this.done = terminated || truncated;
    const info = {
      ...prediction.info,
      ...(verified ? { verified: true } : {}),
      ...(prediction.reasoning ? { reasoning: prediction.reasoning } : {}),
      ...(p.reward !== reward ? { model_reward: reward } : {}),
    };
    return { observation: this.state, reward: p.reward, terminated, truncated, info };
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
