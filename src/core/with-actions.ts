import type { Env, ResetOptions, ResetResult, StepResult } from "./env.ts";
import type { Action, Task } from "./types.ts";

/** Candidate actions for a state of an env that lists none (a parser game): what a policy may pick from. */
export type ActionSource = (observation: string, task: Task) => string[];

/**
 * An env whose `availableActions()` falls back to `source` when the env lists no actions, so a
 * policy that picks among candidates (the neural policy, random) can play a free-text env. The
 * env still accepts any text.
 */
export function withActions(env: Env, source: ActionSource): Env {
  let observation: string | undefined;
  let task: Task = { id: "unknown", instruction: "" };
  let done = false;
  return {
    async reset(opts?: ResetOptions): Promise<ResetResult> {
      const r = await env.reset(opts);
      observation = r.observation;
      task = (r.info.task as Task | undefined) ?? opts?.task ?? task;
      done = false;
      return r;
    },
    async step(action: Action): Promise<StepResult> {
      const r = await env.step(action);
      observation = r.observation;
      done = r.terminated || r.truncated;
      return r;
    },
    availableActions() {
      const listed = env.availableActions();
      if (listed !== undefined || observation === undefined) return listed;
      return done ? [] : source(observation, task);
    },
    close: () => env.close(),
  };
}
