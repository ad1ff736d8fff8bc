import type { ActionSource, Env, ExperienceModel, Task, TaskGenerator, Trajectory } from "../core/index.ts";
import type { ReplayBuffer } from "../buffer/index.ts";
import type { Curriculum } from "../curriculum/index.ts";
import type { TrainablePolicy } from "../rl/index.ts";

/**
 * Parts a library user passes in instead of names in the config (each optional; the config builds
 * the rest). A resumed run needs the same parts again.
 */
export interface TrainParts {
  /** The policy to train. @default a NeuralPolicy from `config.policy` and `config.seed` */
  policy?: TrainablePolicy<unknown>;
  /** The synthetic env's experience model. @default from `config.experience` */
  experienceModel?: ExperienceModel;
  /** The curriculum's task generator. @default the env's own (`EnvSpec.taskGenerator`), or the LLM generator over a chat experience model */
  taskGenerator?: TaskGenerator;
  /** Candidate actions where the env lists none. @default the env spec's, else a vocabulary learned from the buffer */
  candidateActions?: ActionSource;
  /**
   * The real env's instances instead of `createEnv(config.env)`, per pool: a factory (called for each
   * of the pool's `concurrency` envs; the run closes them) or an instance (a pool of one; the caller
   * closes it). `config.env` still names the env (give it): a registered name lends its spec (tasks,
   * synthetic support, rewards, plug points); another name gets the defaults (`env.tasks()`, outcome
   * rewards, no synthetic env: mode real). The config's splits then only label the pools.
   * Not with `remote`. @default `createEnv(config.env, { split, dataDir, maxSteps })`
   */
  envs?: { train: Env | (() => Env); eval: Env | (() => Env) };
}

/** Envs of one split, ready for the policy (abstract states, candidate actions), and the split's tasks. */
export interface EnvPool {
  envs: Env[];
  tasks: Task[];
}

/** The synthetic env pool: one experience model and one buffer behind `concurrency` envs (at least 128 over an in-process model). */
export interface SyntheticPool extends EnvPool {
  /** A further synthetic env over the same model and buffer (a served session's own); its caller closes it. */
  make(): Env;
  buffer: ReplayBuffer;
  generator?: TaskGenerator;
  /** LLM tokens the experience model (and generator) used so far. */
  tokens(): number;
  /** How the on-policy audit replays this env's synthetic episodes (the config's choice, else the env's). */
  auditReplay: "actions" | "policy";
  /** The experience model learns from real trajectories (`ExperienceModel.refit`); absent where it cannot. */
  refit?: (trajectories: readonly Trajectory[], seed: number) => void;
  /**
   * The model's refit state (`ExperienceModel.refitState`) if a refit changed it since it was last
   * taken (else undefined, as where the model has none): what a checkpoint keeps of the model.
   */
  takeRefitState?: () => Uint8Array | undefined;
  /** Loads a checkpoint's refit state (`ExperienceModel.loadRefitState`); absent where the model has none. */
  loadRefitState?: (bytes: Uint8Array, source: string) => void;
  /** Evicts the oldest synthetic episodes past `bufferCapacity`. */
  trim(): Promise<void>;
  close(): Promise<void>;
}

/** Everything a run trains with. */
export interface Parts {
  policy: TrainablePolicy<unknown>;
  /** GRPO's frozen reference (the initial policy), when its KL term is on. */
  reference?: TrainablePolicy<unknown>;
  /**
   * The reference's log-probabilities of an update's records, worked out on a helper thread while the
   * run does other work (`ReferenceThread`); null where it cannot (the update then scores them itself).
   */
  referenceLogProbs?: (records: readonly unknown[]) => Promise<Float64Array | null>;
  real: EnvPool;
  evaluation: EnvPool;
  synthetic?: SyntheticPool;
  curriculum?: Curriculum;
  isSuccess: (totalReward: number) => boolean;
  /** Candidate actions where the env lists none (from the parts, the env spec or the buffer's vocabulary). */
  actions?: ActionSource;
  close(): Promise<void>;
}
