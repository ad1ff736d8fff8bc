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
