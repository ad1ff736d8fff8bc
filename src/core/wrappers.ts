import type { Env, ResetOptions, ResetResult, StepResult } from "./env.ts";
import { ClosedEnvironmentError, InvalidConfigError, ResetNeededError } from "./errors.ts";
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

/**
 * Truncates every episode after `maxSteps` steps (Gymnasium's `TimeLimit`): the step that reaches the
 * limit comes back with `truncated: true` unless it terminated.
 */
export function withTimeLimit<E extends Env>(env: E, maxSteps: number): E {
  if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new InvalidConfigError(`maxSteps must be an integer ≥ 1, got ${maxSteps}`);
  let steps = 0;
  return wrap(env, {
    async reset(opts?: ResetOptions): Promise<ResetResult> {
      const r = await env.reset(opts);
      steps = 0;
      return r;
    },
    async step(action: Action): Promise<StepResult> {
      const r = await env.step(action);
      steps++;
      return steps >= maxSteps && !r.terminated ? { ...r, truncated: true } : r;
    },
  });
}

/**
 * Enforces the call order (Gymnasium's `OrderEnforcing`): `step` before `reset` or after the end of
 * an episode throws `ResetNeededError`, anything after `close` throws `ClosedEnvironmentError`,
 * closing twice is allowed. A user's env need not check these itself.
 */
export function orderEnforcing<E extends Env>(env: E): E {
  let running = false;
  let closed = false;
  return wrap(env, {
    async reset(opts?: ResetOptions): Promise<ResetResult> {
      if (closed) throw new ClosedEnvironmentError();
      const r = await env.reset(opts);
      running = true;
      return r;
    },
    async step(action: Action): Promise<StepResult> {
      if (closed) throw new ClosedEnvironmentError();
      if (!running) throw new ResetNeededError();
      const r = await env.step(action);
      running = !(r.terminated || r.truncated);
      return r;
    },
    availableActions: () => (closed || !running ? [] : env.availableActions()),
    async close() {
      if (closed) return;
      closed = true;
      await env.close();
    },
  });
}

/**
 * The env with some of its `Env` methods replaced; everything else (a `tasks()` method, an expert's
 * hooks) still reaches the env itself, so a wrapped env keeps its type.
 */
function wrap<E extends Env>(env: E, hooks: Partial<Env>): E {
  return new Proxy(env, {
    get(target, prop, receiver) {
      if (Object.hasOwn(hooks, prop)) return hooks[prop as keyof Env];
      const v = Reflect.get(target, prop, receiver);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

/** Runs `fn` with `resource` and closes it afterwards, whatever happens (envs, models, buffers). */
export async function closing<R extends { close(): unknown }, T>(resource: R, fn: (resource: R) => T | Promise<T>): Promise<T> {
  try {
    return await fn(resource);
  } finally {
    await resource.close();
  }
}
