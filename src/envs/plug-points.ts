import type { RewardSpec, StateAbstraction, StepInfo, Task } from "../core/index.ts";

/** What an env's own experience model (`EnvSpec.experienceModel`) is built with. */
export interface ExperienceModelContext {
  abstraction: StateAbstraction;
  rewards: RewardSpec;
}

/** The run's settings an env's task generator (`EnvSpec.taskGenerator`) is made with. */
export interface TaskGeneratorContext {
  /** The split the run trains on (where variants are played). */
  trainSplit: string;
  /** The split the run evaluates on. */
  evalSplit: string;
  /** The tasks of `evalSplit`: no generated task may be one of them. */
  evalTasks: readonly Task[];
  dataDir?: string;
  /** The run's step limit, where it sets one. */
  maxSteps?: number;
}

/** What AgentGym's routes know of the env they serve (`dreamgym serve`'s host). */
export interface AgentGymHost {
  readonly name: string;
  readonly split: string;
  readonly dataDir?: string;
  /** The tasks of the served split. */
  readonly tasks: readonly Task[];
  /** The index of a task of the served split by its id. */
  indexOf(id: string): number | undefined;
}

/** A session's current step as AgentGym's routes read it. */
export interface AgentGymView {
  observation: string;
  info: StepInfo;
  task: Task;
  /** null right after a reset. */
  reward: number | null;
}

/**
 * How AgentGym's HTTP protocol (`dreamgym serve`, the routes under `/agentgym`) serves an env, where
 * AgentGym's own server for it differs from the generic one. Every field is optional.
 */
export interface AgentGymSupport {
  /**
   * The form of the upstream server: "id" (ids as `{"id": n}`, a reset names a game and a world
   * type, replies are objects) or "env_idx" (ids as bare numbers, a reset `[observation, null]`; the
   * form every env without this field speaks). @default "env_idx"
   */
  dialect?: "id" | "env_idx";
  /** What `GET /` answers. @default "ok" */
  greeting?: string;
  /**
   * The task a reset's number names (`session_id`, or `game` in the id dialect). Throws a RangeError
   * for a number that names none (the client's mistake: HTTP 422). @default the number-th task of the served split
   */
  task?(n: number, host: AgentGymHost): Task;
  /** The task type a reset's reply names (the id dialect's `task_type`). @default "" */
  taskType?(task: Task): string;
  /** An observation as the upstream server writes it (`first`: an episode's first). @default as it is */
  observation?(observation: string, first: boolean): string;
  /** What `GET /instruction_text` answers. @default "Instruction:" and the instruction */
  instructionText?(view: AgentGymView): string;
}
