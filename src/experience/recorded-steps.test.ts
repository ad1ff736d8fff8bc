import assert from "node:assert/strict";
import { test } from "node:test";
import type { StateAbstraction, Trajectory } from "../core/index.ts";
import { RecordedSteps } from "./recorded-steps.ts";

// States made of parts, joined by spaces: the place, then what the agent carries.
const abstraction: StateAbstraction = {
  env: "rooms",
  profile: "",
  abstract: (observation) => observation,
  actions: () => undefined,
  isTerminal: () => false,
  parts: (state) => state.split(" "),
  place: (state) => state.split(" ")[0],
};

const record: Trajectory = {
  env: "rooms",
  task: { id: "t1", instruction: "go east" },
  steps: [{ observation: "hall nothing", action: "go east", reward: 0, next_observation: "garden nothing", terminated: false, truncated: false }],
  total_reward: 0,
  success: false,
  source: "real",
  policy: "test",
  created_at: "2026-01-01T00:00:00.000Z",
};

test("the answers kept for steps asked again stay within a bound over a long run's states, and stay right", () => {
  const steps = new RecordedSteps(abstraction);
  steps.fit({ trajectories: () => [record] });
  const kept = () => (steps as unknown as { answers: Map<string, unknown> }).answers.size;
  let most = 0;
  for (let i = 0; i < 20_000; i++) {
    // A move recorded from this place: the place changes, what the agent carries stays.
    const r = steps.replay({ task: record.task, history: [], state: `hall item-${i}`, action: "Go  East" });
    assert.equal(r?.nextState, `garden item-${i}`);
    most = Math.max(most, kept());
  }
  assert.equal(steps.replay({ task: record.task, history: [], state: "hall item-7", action: "go east" })?.nextState, "garden item-7");
  assert.ok(most <= 16_384, `${most} answers kept`);
});
