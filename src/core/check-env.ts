import type { Env, StepResult } from "./env.ts";
import { DreamGymError } from "./errors.ts";
import { FREE_TEXT_SLOT } from "./env.ts";

export interface CheckEnvOptions {
  /** Seed used for the determinism checks. @default 0 */
  seed?: number;
  /** Steps to take per determinism check. @default 5 */
  steps?: number;
  /** An action the env must treat as invalid. @default "not-an-action[]" */
  invalidAction?: string;
  /** Text that fills a free-text slot of a listed action. @default "test" */
  freeText?: string;
  /**
   * What the env answers an invalid action with: the exact text (e.g. "Nothing happens."), a
   * pattern, or a predicate over the answer and the observation before it (a parser game's "I don't
   * understand that."). By default the observation must stay as it was. Either way the listed
   * actions must not change.
   */
  invalidFeedback?: string | RegExp | ((observation: string, before: string) => boolean);
  /**
   * Actions to try, in turn, when the env lists none (a free-text env). Choose commands that cannot
   * open a pager or wait for input in your game (`help` does in many parser games). @default ["look", "inventory"]
   */
  probeActions?: readonly string[];
}

function fail(what: string): never {
  throw new DreamGymError(`checkEnv: ${what}`, "CHECK_ENV_FAILED");
}

function checkStep(r: StepResult, where: string): void {
  if (typeof r.observation !== "string") fail(`${where}: observation is not a string`);
  if (typeof r.reward !== "number" || !Number.isFinite(r.reward)) fail(`${where}: reward is not a finite number`);
  if (typeof r.terminated !== "boolean" || typeof r.truncated !== "boolean") fail(`${where}: terminated/truncated are not booleans`);
  if (typeof r.info !== "object" || r.info === null) fail(`${where}: info is not an object`);
}

/** Plays a fixed, seeded action sequence: listed actions in turn, else the probe actions. */
async function rollout(env: Env, seed: number, steps: number, freeText: string, probes: readonly string[]): Promise<string[]> {
  const trace: string[] = [];
  const { observation, info } = await env.reset({ seed });
  if (typeof observation !== "string") fail("reset: observation is not a string");
  if (typeof info !== "object" || info === null) fail("reset: info is not an object");
  trace.push(observation);
  for (let i = 0; i < steps; i++) {
    const actions = env.availableActions();
    if (actions !== undefined && (!Array.isArray(actions) || actions.some((a) => typeof a !== "string"))) {
      fail("availableActions() must return string[] or undefined");
    }
    const pool = actions === undefined ? probes : actions;
    if (pool.length === 0) break;
    const action = pool[i % pool.length].replace(FREE_TEXT_SLOT, freeText);
    const r = await env.step(action);
    checkStep(r, `step(${JSON.stringify(action)})`);
    trace.push(`${action}|${r.reward}|${r.terminated}|${r.truncated}|${r.observation}`);
    if (r.terminated || r.truncated) break;
  }
  return trace;
}

/**
 * Gymnasium-style conformance checks that every environment's tests run: types of reset/step
 * results, determinism under a seed, invalid actions as no-ops, and close semantics.
 */
export async function checkEnv(env: Env, opts: CheckEnvOptions = {}): Promise<void> {
  const seed = opts.seed ?? 0;
  const steps = opts.steps ?? 5;
  const freeText = opts.freeText ?? "test";
  const probes = opts.probeActions ?? ["look", "inventory"];
  let closed = false;
  try {
    const a = await rollout(env, seed, steps, freeText, probes);
    const b = await rollout(env, seed, steps, freeText, probes);
    if (a.length < 2) fail("no step was taken: the env lists no actions and every probe action ended the check; give probeActions");
    if (JSON.stringify(a) !== JSON.stringify(b)) fail("two rollouts with the same seed and actions differ");

    const { observation } = await env.reset({ seed });
    const actionsBefore = env.availableActions();
    const bad = await env.step(opts.invalidAction ?? "not-an-action[]");
    checkStep(bad, "invalid action");
    if (bad.info.invalid !== true) fail("an invalid action must set info.invalid = true");
    if (bad.reward !== 0) fail("an invalid action must give reward 0");
    const feedback = opts.invalidFeedback;
    if (typeof feedback === "string") {
      if (bad.observation !== feedback) fail(`an invalid action must answer ${JSON.stringify(feedback)}`);
    } else if (feedback instanceof RegExp) {
      if (!feedback.test(bad.observation)) fail(`an invalid action's answer ${JSON.stringify(bad.observation.slice(0, 80))} does not match ${feedback}`);
    } else if (typeof feedback === "function") {
      if (!feedback(bad.observation, observation))
        fail(`an invalid action's answer ${JSON.stringify(bad.observation.slice(0, 80))} is not the env's invalid feedback`);
    } else if (bad.observation !== observation) fail("an invalid action must not change the observation");
    if (JSON.stringify(env.availableActions()) !== JSON.stringify(actionsBefore)) fail("an invalid action must not change the listed actions");

    closed = true;
    await env.close();
    await env.close(); // closing twice is allowed
    let threw = false;
    try {
      await env.reset({ seed });
    } catch (e) {
      // By code, not class: a user's env may throw the error of another copy of the package.
      threw = DreamGymError.isInstance(e) && e.code === "ENV_CLOSED";
    }
    if (!threw)
      fail("reset() after close() must throw ClosedEnvironmentError (wrap the env in orderEnforcing(env), which a default-export env module is handed)");
  } finally {
    if (!closed) await env.close();
  }
}
