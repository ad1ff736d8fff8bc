import type { Env, ResetOptions, ResetResult, StepResult } from "./env.ts";
import type { Action, StepInfo, Task } from "./types.ts";

/**
 * An environment's meta-representation (DreamGym's abstract state space): the compact text state an
 * experience model reads and writes, derived from real observations, so that a policy sees the same
 * kind of state from the real env (through `abstractEnv`) and from a synthetic one.
 */
export interface StateAbstraction {
  readonly env: string;
  /** A real observation as an abstract state. An abstract state passes through unchanged. */
  abstract(observation: string, info?: StepInfo): string;
  /**
   * The actions an abstract state offers, when its format lists them (a free-text slot as `<query>`).
   * Free-text envs (parser games) return undefined: the policy gets its candidates elsewhere.
   */
  actions(state: string): string[] | undefined;
  /**
   * Whether a text is a state in this format (an experience model's output is checked with it).
   * @default any non-empty text
   */
  isState?(state: string): boolean;
  /** Whether a state ends the episode by its kind (e.g. WebShop's done page). */
  isTerminal(state: string): boolean;
  /** For prompts: the state format and the action grammar, in a few lines. */
  readonly profile: string;
}

/**
 * Where the real env can verify a synthetic step (e.g. WebShop's reward of a purchase): its reward,
 * end and (optionally) next state; null where it cannot (hybrid mode).
 */
export type Verifier = (task: Task, history: readonly { state: string; action: string }[], state: string, action: string) => { reward: number; terminated: boolean; nextState?: string } | null;

/** Whether `state` is a state of the abstraction's format (its `isState`, else any non-empty text). */
export function isAbstractState(abstraction: StateAbstraction, state: string): boolean {
  if (state.trim() === "") return false;
  return abstraction.isState ? abstraction.isState(state) : true;
}

/**
 * A real env whose observations are abstract states. Its listed actions are those the abstract
 * state lists (what a synthetic env of the same abstraction would offer), else the real env's.
 */
export function abstractEnv(env: Env, abstraction: StateAbstraction): Env {
  let state: string | undefined;
  return {
    async reset(opts?: ResetOptions): Promise<ResetResult> {
      const r = await env.reset(opts);
      state = abstraction.abstract(r.observation, r.info);
      return { observation: state, info: r.info };
    },
    async step(action: Action): Promise<StepResult> {
      const r = await env.step(action);
      state = abstraction.abstract(r.observation, r.info);
      return { ...r, observation: state };
    },
    availableActions: () => (state === undefined ? undefined : abstraction.actions(state)) ?? env.availableActions(),
    close: () => env.close(),
  };
}
