import { test } from "node:test";
import assert from "node:assert/strict";
import { checkEnv } from "./check-env.ts";
import { ClosedEnvironmentError } from "./errors.ts";
import type { Env, StepResult } from "./env.ts";

/** A two-state toy env; `flaw` breaks one rule so checkEnv must notice. */
function toyEnv(flaw?: "invalid-not-flagged" | "nondeterministic" | "reset-after-close"): Env {
  let state = 0;
  let closed = false;
  let calls = 0;
  return {
    async reset() {
      if (closed && flaw !== "reset-after-close") throw new ClosedEnvironmentError();
      state = 0;
      calls++;
      return { observation: flaw === "nondeterministic" ? `s0-${calls}` : "s0", info: {} };
    },
    async step(action: string): Promise<StepResult> {
      if (action === "go") {
        state = 1;
        return { observation: "s1", reward: 1, terminated: true, truncated: false, info: {} };
      }
      return { observation: `s${state}`, reward: 0, terminated: false, truncated: false, info: flaw === "invalid-not-flagged" ? {} : { invalid: true } };
    },
    availableActions: () => ["go"],
    async close() {
      closed = true;
    },
  };
}

test("checkEnv passes a conforming env", async () => {
  await checkEnv(toyEnv());
});

for (const flaw of ["invalid-not-flagged", "nondeterministic", "reset-after-close"] as const) {
  test(`checkEnv catches: ${flaw}`, async () => {
    await assert.rejects(checkEnv(toyEnv(flaw)), /checkEnv:/);
  });
}

/** A parser game: lists no actions, answers nonsense with its own text. */
function parserEnv(flaw?: "leaks-on-failure"): Env & { closed: boolean } {
  let n = 0;
  const env = {
    closed: false,
    async reset() {
      if (env.closed) throw new ClosedEnvironmentError();
      n = 0;
      return { observation: "room 0", info: {} };
    },
    async step(action: string): Promise<StepResult> {
      if (action === "look") return { observation: `room ${++n}`, reward: 0.5, terminated: false, truncated: false, info: {} };
      return { observation: flaw ? "room 0" : "I don't understand that.", reward: 0, terminated: false, truncated: false, info: { invalid: true } };
    },
    availableActions: () => undefined,
    async close() {
      env.closed = true;
    },
  };
  return env;
}

test("checkEnv: free-text envs are probed with commands, and the invalid answer can be a predicate or pattern", async () => {
  await checkEnv(parserEnv(), { probeActions: ["look"], invalidFeedback: (o) => o.startsWith("I don't understand") });
  await checkEnv(parserEnv(), { probeActions: ["look"], invalidFeedback: /^I don't understand/ });
  await assert.rejects(checkEnv(parserEnv(), { probeActions: ["look"] }), /must not change the observation/);
});

test("checkEnv closes the env when a check fails", async () => {
  const env = parserEnv("leaks-on-failure");
  await assert.rejects(checkEnv(env, { probeActions: ["look"], invalidFeedback: "Nothing happens." }), /must answer "Nothing happens\."/);
  assert.equal(env.closed, true);
});
