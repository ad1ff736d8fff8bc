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
  /** Whether a state ends the episode by its kind (e.g. a shop's done page). */
  isTerminal(state: string): boolean;
  /** For prompts: the state format and the action grammar, in a few lines. */
  readonly profile: string;
  /**
   * For prompts: how rewards and ends go in this env, where the reward spec's generic sentence would
   * be wrong (e.g. an episode ends only when its task is done, with reward 1).
   */
  readonly rewardRule?: string;
  /** One line of a state, for a prompt's summary of older steps. @default its first line */
  summarize?(state: string): string;
  /**
   * Checks an experience model's predicted step against the env's rules, repairing it where the
   * intent is clear (a field the step cannot change, an end its reward implies): the step, or why it
   * is not one (the model is asked again with that).
   */
  checkStep?(step: PredictedStep, state: string): PredictedStep | { error: string };
  /**
   * The page `action` on an element of `state` leads to, where the data never recorded that element
   * used (a product a results page lists that no episode opened): told from what `state` shows of it,
   * in the form of `like`, the page another element of its kind led to. Without it, a model that
   * copies `like` shows another product's page under this product's name. Undefined: not known.
   */
  unseenPage?(state: string, action: string, like: string): string | undefined;
  /**
   * A free-text state as the parts a command changes one by one (a parser game's room, its exits, what
   * lies there, what the agent carries), which joined by single spaces give the state back; undefined
   * for a state not made of parts (the end). With it, a model replays a command recorded in another
   * state that agrees on every part the command changes (taking a gem changes what is seen and what
   * is carried, whatever the room), where the data has no step of it in this very state.
   */
  parts?(state: string): string[] | undefined;
  /**
   * Where the agent is, in a state made of parts (a parser game's room): a step that changes it is a
   * move, which in one task leads from the same place by the same command to the same place (so the
   * task's own recorded moves say where, whatever the agent carries), and a place the episode has
   * been at reads as the episode last saw it (what it took there stays taken). Undefined: nowhere.
   */
  place?(state: string): string | undefined;
}

/** A predicted step as `StateAbstraction.checkStep` sees it: the next state (in this format), reward and end. */
export interface PredictedStep {
  nextState: string;
  reward: number;
  terminated: boolean;
}

/** The real env's verdict on a synthetic step: its reward, end and (optionally) next state. */
export interface Verdict {
  reward: number;
  terminated: boolean;
  nextState?: string;
}

/**
 * Where the real env can verify a synthetic step (e.g. the env's own reward of a purchase, or
 * its game replaying the episode): its verdict; null where it cannot (hybrid mode). It may answer
 * asynchronously (a real env that steps).
 */
export type Verifier = (
  task: Task,
  history: readonly { state: string; action: string }[],
  state: string,
  action: string,
) => Verdict | null | Promise<Verdict | null>;

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
