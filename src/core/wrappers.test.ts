import { test } from "node:test";
import assert from "node:assert/strict";
import type { Env, StepResult } from "./env.ts";
import { ClosedEnvironmentError, ResetNeededError } from "./errors.ts";
import { orderEnforcing, withActions, withTimeLimit } from "./wrappers.ts";

/** Counts its steps; never ends by itself; lists no actions; has a member of its own. */
class Endless implements Env {
  n = 0;
  closes = 0;
  label() {
    return `endless at ${this.n}`;
  }
  async reset() {
    this.n = 0;
    return { observation: "0", info: { task: { id: "e", instruction: "go on" } } };
  }
  async step(action: string): Promise<StepResult> {
    this.n++;
    return { observation: `${this.n} after ${action}`, reward: 1, terminated: action === "stop", truncated: false, info: {} };
  }
  availableActions() {
    return undefined;
  }
  async close() {
    this.closes++;
  }
}

test("withTimeLimit truncates at the limit (not a terminating step) and keeps the env's own members", async () => {
  const env = withTimeLimit(new Endless(), 3);
  await env.reset();
  const r = [await env.step("a"), await env.step("b"), await env.step("c")];
  assert.deepEqual(
    r.map((x) => x.truncated),
    [false, false, true],
  );
  assert.equal(env.label(), "endless at 3");
  await env.reset();
  await env.step("a");
  await env.step("b");
  const end = await env.step("stop");
  assert.deepEqual([end.terminated, end.truncated], [true, false]);
  assert.throws(() => withTimeLimit(new Endless(), 0), /maxSteps must be an integer ≥ 1/);
});

test("orderEnforcing: step needs a running episode, nothing works after close, close twice is fine", async () => {
  const inner = new Endless();
  const env = orderEnforcing(withTimeLimit(inner, 2));
  await assert.rejects(env.step("a"), ResetNeededError);
  await env.reset();
  await env.step("a");
  await env.step("b"); // truncated
  await assert.rejects(env.step("c"), ResetNeededError);
  await env.close();
  await env.close();
  assert.equal(inner.closes, 1);
  await assert.rejects(env.reset(), ClosedEnvironmentError);
});

test("withActions offers candidates where the env lists none, from the observation and task", async () => {
  const env = withActions(new Endless(), (obs, task) => [`say ${obs}`, task.instruction]);
  assert.equal(env.availableActions(), undefined, "before reset");
  await env.reset();
  assert.deepEqual(env.availableActions(), ["say 0", "go on"]);
  await env.step("x");
  assert.deepEqual(env.availableActions(), ["say 1 after x", "go on"]);
  await env.step("stop");
  assert.deepEqual(env.availableActions(), [], "nothing after the end");
});
