// Helpers shared by the buffer's tests: temporary files and small trajectories.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Trajectory } from "../core/index.ts";

export function tempFile(name: string): string {
  return join(mkdtempSync(join(tmpdir(), "dreamgym-buffer-")), name);
}

/** A small trajectory whose texts depend on `i`, so different i give different content. */
export function makeTrajectory(i: number, opts: Partial<Pick<Trajectory, "env" | "source" | "policy">> & { steps?: number; task?: string } = {}): Trajectory {
  const n = opts.steps ?? 3;
  const task = opts.task ?? `task-${i % 7}`;
  const steps = Array.from({ length: n }, (_, s) => ({
    observation: `page ${s} of episode ${i}: you see item ${(i * 13) % 97} and a shelf ${s}`,
    action: s === n - 1 ? "click[buy now]" : `click[item ${(i + s) % 11}]`,
    reward: s === n - 1 ? i % 2 : 0,
    next_observation: `page ${s + 1} of episode ${i}: you see item ${(i * 13) % 97} and a shelf ${s + 1}`,
    terminated: s === n - 1,
    truncated: false,
  }));
  return {
    env: opts.env ?? "toy",
    task: { id: task, instruction: `buy item ${i % 5}` },
    steps,
    total_reward: i % 2,
    success: i % 2 === 1,
    source: opts.source ?? "real",
    policy: opts.policy ?? "test",
    created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
  };
}
