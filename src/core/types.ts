/**
 * Shared data types. Trajectory records mirror the JSONL wire format (docs/data-formats.md), so their
 * fields are snake_case; everything else in the library is camelCase.
 */

/** Text the agent sees. */
export type Observation = string;
/** Text the agent sends, e.g. `search[red shoes]` or `click[buy now]`. */
export type Action = string;

/** A task: what the agent is asked to do. Environments may attach their own fields. */
export interface Task {
  /** Stable id, unique within its environment (e.g. `myenv:goal:42`). */
  id: string;
  /** The instruction shown to the agent. */
  instruction: string;
  /**
   * The task whose world this one plays, where that is another task's: a curriculum variant that keeps
   * its parent's world (where the agent starts changes, not what lies where) names the seed task, so a
   * model that replays recorded steps reads that task's record as this one's own.
   */
  world?: string;
  [key: string]: unknown;
}

/** Free-form step information. `invalid` marks an action the env could not carry out. */
export interface StepInfo {
  invalid?: boolean;
  [key: string]: unknown;
}

/** One recorded step: (s, a, r, s', terminated, truncated). */
export interface Transition {
  observation: Observation;
  action: Action;
  reward: number;
  next_observation: Observation;
  /** The MDP ended (e.g. the agent bought something). */
  terminated: boolean;
  /** Stopped from outside (time limit); the state is not terminal. */
  truncated: boolean;
  info?: StepInfo;
  reasoning?: string;
}

export type ExperienceSource = "real" | "synthetic";

/** One episode, one JSONL line. */
export interface Trajectory {
  env: string;
  task: Task;
  steps: Transition[];
  total_reward: number;
  success: boolean;
  source: ExperienceSource;
  policy?: string;
  /** ISO-8601 time. */
  created_at: string;
}

/**
 * What an env's rewards look like: the range of one step's reward, and whether rewards come only
 * when an episode ends (outcome: a task done or not) or on any step (dense, e.g. a game score).
 */
export interface RewardSpec {
  /** @default 0 */
  min: number;
  /** @default 1 */
  max: number;
  /** Rewards on any step, not only the ending one. @default false */
  dense: boolean;
}

/** Outcome rewards in [0, 1]: 1 only when the task is completed. */
export const OUTCOME_REWARDS: RewardSpec = Object.freeze({ min: 0, max: 1, dense: false });

/**
 * What the trajectory schema checks an imported trajectory against (the env registry supplies it):
 * the known env names, each env's reward spec, and its success rule.
 */
export interface TrajectoryRules {
  envs: readonly string[];
  rewards(env: string): RewardSpec;
  success(env: string, totalReward: number): boolean;
}
