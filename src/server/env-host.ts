import { existsSync } from "node:fs";
import { abstractEnv, closing, InvalidConfigError, type Env, type RewardSpec, type StateAbstraction, type Task } from "../core/index.ts";
import { checkBufferEnv, checkBufferGrounds, ReplayBuffer } from "../buffer/index.ts";
import { createEnv, envEntry, envTasks, hasSyntheticSupport, syntheticSupport, type EnvSpec, type SyntheticSupport } from "../envs/index.ts";
import { createExperienceModel, isLocalExperience, SyntheticEnv, type ExperienceModelHandle } from "../experience/index.ts";
import type { ServedRun, ServedRunInfo } from "../train/index.ts";

/** A buffer's capacity that keeps `n` transitions besides its seed (undefined: no bound). */
function capacityBesidesSeed(file: string, n: number | undefined): number | undefined {
  if (n === undefined) return undefined;
  const b = ReplayBuffer.open(file, { readonly: true });
  try {
    return b.seedTransitions() + n;
  } finally {
    b.close();
  }
}

export interface EnvHostOptions {
  /** A registered env name. */
  env: string;
  /** `real` serves the env itself; `synthetic` its synthetic version over an experience model. @default "real" */
  mode?: "real" | "synthetic";
  /** Synthetic mode: `default` (the embedded model), `learned:<file>`, or a chat model spec. @default "default" */
  experience?: string;
  /** Synthetic mode: the replay buffer that grounds the model (and records, with `record`). */
  buffer?: string;
  /** Synthetic mode: terminal rewards from the real env's verifier where it has one. */
  hybrid?: boolean;
  /** Synthetic mode: record each session's transitions into the buffer. @default false */
  record?: boolean;
  /**
   * With `record`: transitions the buffer keeps besides its seed (the imported data, never evicted),
   * the oldest recorded episodes evicted first. A server that records for long needs one: each step
   * searches the buffer. @default no bound
   */
  bufferCapacity?: number;
  /** The task split sessions sample from. @default the env's evaluation split in real mode, its training split in synthetic mode */
  split?: string;
  dataDir?: string;
  maxSteps?: number;
  /** Demos retrieved per synthetic step. @default 5 */
  demos?: number;
  /** Synthetic mode, chat model: concurrent LLM requests shared by all sessions. @default 16 */
  concurrency?: number;
  /** Synthetic mode, chat model: its response cache file, seconds per request, failures in a row that open the breaker. */
  cache?: string;
  requestTimeout?: number;
  maxFailures?: number;
}

/** What a session's env looks like from outside: its observations as abstract states, or as the env's own text. */
export type ObservationFormat = "abstract" | "raw";

/**
 * One served env: what every session of a server shares (the task list, and in synthetic mode one
 * experience model and one buffer) and the factory of each session's own env instance.
 */
export class EnvHost {
  readonly name: string;
  /** real: the env itself; synthetic: its synthetic version; dreamgym: a served DreamGym run (`ServedRun`). */
  readonly mode: "real" | "synthetic" | "dreamgym";
  readonly split: string;
  readonly tasks: readonly Task[];
  readonly rewards: RewardSpec;
  readonly description: string;
  /** The env's state abstraction, when it has synthetic support. */
  readonly abstraction?: StateAbstraction;
  private readonly taskIndex: Map<string, number>;
  private readonly spec: EnvSpec;
  /** Synthetic mode: the experience model served (as given, and its id) and whether rewards are verified. */
  get experience(): { spec: string; model: string; hybrid: boolean } | undefined {
    if (!this.synthetic) return undefined;
    return { spec: this.o.experience ?? "default", model: this.synthetic.model.model.id, hybrid: this.o.hybrid ?? false };
  }

  /** A served run's plan (group size, tasks per iteration, budgets) and folder. */
  get run(): ServedRunInfo | undefined {
    return this.served?.info;
  }

  private constructor(
    private readonly o: EnvHostOptions,
    init: { split: string; tasks: Task[]; support?: SyntheticSupport },
    private readonly synthetic?: { model: ExperienceModelHandle; buffer: ReplayBuffer; support: SyntheticSupport },
    private readonly served?: ServedRun,
  ) {
    const entry = envEntry(o.env);
    this.name = o.env;
    this.mode = served ? "dreamgym" : (o.mode ?? "real");
    this.split = init.split;
    this.tasks = init.tasks;
    this.rewards = entry.rewards;
    this.description = entry.description;
    this.abstraction = init.support?.abstraction;
    this.taskIndex = new Map(init.tasks.map((t, i) => [t.id, i]));
    this.spec = entry.spec;
  }

  /**
   * The host of a served DreamGym run: a reset without a task plays the run's plan, one naming a
   * task (of the run's evaluation split) plays it in the real env. The run owns what it opened.
   */
  static served(run: ServedRun): EnvHost {
    const c = run.folder.config;
    const support = hasSyntheticSupport(c.env) ? { abstraction: run.abstraction } : undefined;
    return new EnvHost(
      { env: c.env, mode: "real", split: c.evalSplit, dataDir: c.dataDir, maxSteps: c.maxSteps, experience: c.experience },
      { split: c.evalSplit, tasks: [...run.tasks], support: support as SyntheticSupport | undefined },
      undefined,
      run,
    );
  }

  /** Checks the options and opens what the sessions share. */
  static async open(o: EnvHostOptions): Promise<EnvHost> {
    const entry = envEntry(o.env);
    const mode = o.mode ?? "real";
    const split = o.split ?? (mode === "synthetic" ? entry.splits.train : entry.splits.eval);
    const { tasks, support } = await closing(createEnv(o.env, { split, dataDir: o.dataDir, maxSteps: o.maxSteps }), (env) => ({
      tasks: envTasks(o.env, env),
      support: hasSyntheticSupport(o.env) ? syntheticSupport(o.env, env) : undefined,
    }));
    if (tasks.length === 0) throw new InvalidConfigError(`${o.env} split ${split} has no tasks`);
    if (mode === "real") return new EnvHost(o, { split, tasks, support });

    if (!support) throw new InvalidConfigError(`environment "${o.env}" has no synthetic support: serve it with --mode real`);
    if (o.hybrid && !support.verifier) throw new InvalidConfigError(`--hybrid needs a verifier of ${o.env}'s rewards; ${o.env} has none: drop --hybrid`);
    const experience = o.experience ?? "default";
    if (!o.buffer)
      throw new InvalidConfigError(`synthetic mode needs a replay buffer (--buffer B.db) with offline ${o.env} trajectories to ground the experience model`);
    if (!existsSync(o.buffer))
      throw new InvalidConfigError(
        `buffer ${o.buffer} does not exist; import offline ${o.env} trajectories first (dreamgym buffer import F.jsonl --buffer ${o.buffer} --abstract)`,
      );
    const model = createExperienceModel(experience, {
      abstraction: support.abstraction,
      rewards: entry.rewards,
      chat: { concurrency: o.concurrency ?? 16, cache: o.cache, timeoutMs: 1000 * (o.requestTimeout ?? 60), maxFailures: o.maxFailures ?? 10 },
    });
    let buffer: ReplayBuffer;
    try {
      buffer = ReplayBuffer.open(o.buffer, { readonly: !o.record, capacity: o.record ? capacityBesidesSeed(o.buffer, o.bufferCapacity) : undefined });
      try {
        checkBufferEnv(buffer, o.buffer, o.env);
        if (isLocalExperience(experience)) checkBufferGrounds(buffer, o.buffer, o.env);
      } catch (e) {
        buffer.close();
        throw e;
      }
    } catch (e) {
      await model.close();
      throw e;
    }
    return new EnvHost(o, { split, tasks, support }, { model, buffer, support });
  }

  /** The data folder the envs read (undefined: the default lookup). */
  get dataDir(): string | undefined {
    return this.o.dataDir;
  }

  /** The index of a task id in `tasks`, or undefined. */
  indexOf(taskId: string): number | undefined {
    return this.taskIndex.get(taskId);
  }

  /**
   * A new env for one session. Synthetic sessions share the host's model and buffer (and its
   * LLM concurrency limit); real ones are independent instances.
   */
  createEnv(format: ObservationFormat = "abstract"): Env {
    if (this.served) return this.served.createEnv();
    if (this.synthetic) {
      const { model, buffer, support } = this.synthetic;
      return new SyntheticEnv({
        model: model.model,
        abstraction: support.abstraction,
        tasks: [...this.tasks],
        initialState: support.initialState,
        buffer,
        k: this.o.demos ?? 5,
        maxSteps: this.o.maxSteps,
        record: this.o.record ?? false,
        policy: "served",
        verifier: this.o.hybrid ? support.verifier : undefined,
      });
    }
    // The spec the host opened, not a lookup by name: a remote env of the same name registered later in
    // this process (dreamgym/remote) must not turn the served env into a client of itself.
    const env = this.spec.create({ split: this.split, dataDir: this.o.dataDir, maxSteps: this.o.maxSteps });
    return format === "abstract" && this.abstraction ? abstractEnv(env, this.abstraction) : env;
  }

  /** LLM tokens the synthetic sessions used so far. */
  tokens(): number {
    return this.synthetic?.model.tokens() ?? 0;
  }

  async close(): Promise<void> {
    if (!this.synthetic) return;
    this.synthetic.buffer.close();
    await this.synthetic.model.close();
  }
}
