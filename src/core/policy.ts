import type { Rng } from "./rng.ts";
import type { StepInfo, Task } from "./types.ts";

/** What a policy sees before it acts. */
export interface PolicyInput {
  task: Task;
  observation: string;
  /** The env's listed actions (a free-text slot as `<query>`), when it lists them. */
  actions: string[] | undefined;
  /** The actions taken so far in this episode, oldest first. */
  history: readonly string[];
  /** The steps so far, oldest first, when the caller keeps them (prompts of LLM policies show them). */
  trace?: readonly PastStep[];
  /** The info of the last reset/step. */
  info?: StepInfo;
}

export interface PastStep {
  observation: string;
  action: string;
  /** The env flagged the action invalid (nothing changed). */
  invalid: boolean;
}

/** A chosen action with what the update needs to score it again. */
export interface Decision<R = unknown> {
  action: string;
  /** log π(action | input) at the time of acting (NaN when the policy cannot say). */
  logProb: number;
  /** V(input), for policies with a value head. */
  value?: number;
  /** The policy's own record of the step (features, candidates), replayed by `evaluate`. */
  record: R;
  /** The policy could not produce a valid action (e.g. an unparseable LLM reply); the env gets it anyway. */
  failed?: string;
}

export interface ActOptions {
  /** The episode's sampling stream (scripted policies may keep their own). */
  rng: Rng;
  /** Take the most likely action instead of sampling (evaluation). */
  greedy?: boolean;
}

/** Anything that acts: a scripted policy, the neural policy, an LLM policy. */
export interface Policy<R = unknown> {
  readonly name: string;
  /** Called at the start of every episode. */
  reset?(task: Task): void;
  act(input: PolicyInput, opts: ActOptions): Promise<Decision<R>>;
}

/** A policy that makes offline data or serves as a baseline: it only picks the next action. */
export abstract class ScriptedPolicy implements Policy<undefined> {
  abstract readonly name: string;
  reset?(task: Task): void;
  /** The next action. */
  abstract choose(input: PolicyInput): string | Promise<string>;
  async act(input: PolicyInput): Promise<Decision<undefined>> {
    return { action: await this.choose(input), logProb: Number.NaN, record: undefined };
  }
}

/** A scripted policy from a function (`scripted("expert", () => env.expertAction())`). */
export function scripted(name: string, choose: (input: PolicyInput) => string | Promise<string>, reset?: (task: Task) => void): Policy<undefined> {
  return {
    name,
    reset,
    async act(input) {
      return { action: await choose(input), logProb: Number.NaN, record: undefined };
    },
  };
}
