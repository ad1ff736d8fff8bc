import type { Action, Observation, StepInfo, Task } from "./types.ts";

export interface ResetOptions {
  /** Seeds the env's randomness (task sampling, stochastic pages) for this episode. */
  seed?: number;
  /** Run this task instead of sampling one. */
  task?: Task;
  /**
   * The group this episode belongs to (GRPO's G rollouts of one prompt). Most envs ignore it; an env
   * that picks tasks itself (a DreamGym session server's curriculum) gives a group's episodes one task.
   */
  group?: EpisodeGroup;
}

/** An episode's group: its id, and (when the trainer knows it) its position among the batch's groups. */
export interface EpisodeGroup {
  id: string;
  /**
   * The group's position in its batch (0 … groups − 1): a server that picks the tasks gives group i
   * the batch's i-th task, whichever group's reset arrives first. Without it, a new group takes the
   * next task not yet taken, so the pairing depends on arrival order.
   */
  index?: number;
}

export interface ResetResult {
  observation: Observation;
  info: StepInfo;
}

export interface StepResult {
  observation: Observation;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  info: StepInfo;
}

/**
 * A text environment with Gymnasium semantics. A real environment and a synthetic one are
 * interchangeable behind this interface. An invalid action is a no-op step with reward 0 and
 * `info.invalid = true`, never an exception.
 */
export interface Env {
  reset(opts?: ResetOptions): Promise<ResetResult>;
  step(action: Action): Promise<StepResult>;
  /**
   * The actions the env accepts now, when it can list them. An entry may hold the slot
   * {@link FREE_TEXT_SLOT} (e.g. `search[<query>]`): the agent fills it with its own text.
   */
  availableActions(): string[] | undefined;
  close(): Promise<void>;
}

/** Placeholder for free text inside an action listed by `availableActions()`. */
export const FREE_TEXT_SLOT = "<query>";
