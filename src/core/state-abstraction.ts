import type { Env, ResetOptions, ResetResult, StepResult } from "./env.ts";
import type { Action, StepInfo } from "./types.ts";

/**
 * An environment's meta-representation (DreamGym's abstract state space): the compact text state an
 * experience model reads and writes, derived from real observations, so that a policy sees the same
 * kind of state from the real env (through `abstractEnv`) and from a synthetic one.
 */
export interface StateAbstraction {
  readonly env: string;
  /** A real observation as an abstract state. An abstract state passes through unchanged. */
  abstract(observation: string, info?: StepInfo): string;
  /** The actions an abstract state offers, when its format lists them (a free-text slot as `<query>`). */
  actions(state: string): string[] | undefined;
  /** Whether a state ends the episode by its kind (e.g. WebShop's done page). */
  isTerminal(state: string): boolean;
  /** For prompts: the state format and the action grammar, in a few lines. */
  readonly profile: string;
}

/** A real env whose observations are abstract states (and whose listed actions come from them). */
export function abstractEnv(env: Env, abstraction: StateAbstraction): Env {
  return {
    async reset(opts?: ResetOptions): Promise<ResetResult> {
      const r = await env.reset(opts);
      return { observation: abstraction.abstract(r.observation, r.info), info: r.info };
    },
    async step(action: Action): Promise<StepResult> {
      const r = await env.step(action);
      return { ...r, observation: abstraction.abstract(r.observation, r.info) };
    },
    availableActions: () => env.availableActions(),
    close: () => env.close(),
  };
}
