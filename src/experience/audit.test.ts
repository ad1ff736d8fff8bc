import { test } from "node:test";
import assert from "node:assert/strict";
import { auditModel, elementF1, stateKind } from "./audit.ts";

test("state agreement metrics", () => {
  assert.equal(stateKind("page: results\ninstruction: x\n[a]"), "page: results");
  const real = "page: results\ninstruction: x\n[a] one\n[b] two\n[c] three";
  assert.equal(elementF1(real, real), 1);
  // predicted shares 2 of its 3 element lines with the real 4: precision 2/3, recall 2/4.
  const predicted = "page: results\ninstruction: x\n[a] one\n[z] other";
  assert.ok(Math.abs(elementF1(predicted, real) - (2 * (2 / 3) * (2 / 4)) / (2 / 3 + 2 / 4)) < 1e-12);
  assert.equal(elementF1("page: done", "page: results\n[a]"), 0);
  assert.equal(elementF1("page: done", "page: done"), 1);
});

test("the audit warns where its figures mean little: no demo left (a one-task env), no episode that ends, no reward to get wrong", async () => {
  const { mkdtempSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const { ReplayBuffer } = await import("../buffer/index.ts");
  const { EmbeddedExperienceModel } = await import("./embedded-model.ts");
  const abstraction = {
    env: "one-room",
    abstract: (o: string) => o,
    actions: () => undefined,
    isState: () => true,
    isTerminal: () => false,
    profile: "one room",
  };
  const traj = (task: string, reward: number, terminated: boolean) => ({
    env: "one-room",
    task: { id: task, instruction: "wait" },
    source: "real" as const,
    total_reward: reward,
    success: false,
    created_at: new Date(0).toISOString(),
    steps: [{ observation: "room", action: "wait", reward, next_observation: "room", terminated, truncated: !terminated }],
  });
  const buffer = ReplayBuffer.open(join(mkdtempSync(join(tmpdir(), "dreamgym-auditwarn-")), "b.db"));
  try {
    await buffer.appendTrajectories([traj("only", 0, false)], { seed: true });
    const model = new EmbeddedExperienceModel({ abstraction });
    const oneTask = await auditModel([traj("only", 0, false)], { model, abstraction, buffer });
    assert.equal(oneTask.warnings.length, 3, oneTask.warnings.join("\n"));
    assert.match(oneTask.warnings[0], /100% of the steps found no demo/);
    assert.match(oneTask.warnings[1], /no trajectory in the sample ends/);
    assert.match(oneTask.warnings[2], /no step in the sample earns a reward/);
    // Another task's steps ground it, and one that ends and pays leaves nothing to warn about.
    await buffer.appendTrajectories([traj("other", 1, true)], { seed: true });
    const fine = await auditModel([traj("only", 1, true)], { model, abstraction, buffer });
    assert.deepEqual(fine.warnings, []);
  } finally {
    buffer.close();
  }
});
