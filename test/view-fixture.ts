// A small real run for the `dreamgym view` tests: the real training loop (dreamgym mode, GRPO, the
// curriculum, the on-policy audit) on a corridor env, over an experience model with a planted flaw
// (from position 2, "right" jumps to the end and pays 1), so audited episodes diverge from the real env.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { Rng, type StateAbstraction, type Task, type Trajectory } from "../src/core/index.ts";
import { ReplayBuffer } from "../src/buffer/index.ts";
import { registerEnv } from "../src/envs/index.ts";
import type { ExperienceModel } from "../src/experience/index.ts";
import type { TaskGenerator } from "../src/curriculum/index.ts";
import { ChainEnv } from "../src/testing/index.ts";
import { train, type TrainConfigInput, type TrainSummary } from "../src/train/index.ts";

export const VIEW_ENV = "view-corridor";
const LENGTH = 4;
const state = (instruction: string, position: number) => `page: corridor\ninstruction: ${instruction}\nposition ${position} of ${LENGTH}\n[left] [right]`;
const abstraction: StateAbstraction = {
  env: VIEW_ENV,
  abstract: (o) => o,
  actions: () => ["click[left]", "click[right]"],
  isTerminal: () => false,
  profile: "a corridor: click[right] walks on, click[left] back; the end pays 1",
};
registerEnv(VIEW_ENV, {
  create: () => new ChainEnv(LENGTH, 6),
  tasks: (env) => env.tasks(6),
  synthetic: () => ({ abstraction, initialState: (task: Task) => state(task.instruction, 0) }),
});

/** The flawed model: the corridor as it is, except that from position 2 "right" jumps to the end. */
export const flawedModel: ExperienceModel = {
  id: "flawed-corridor",
  usesDemos: false,
  predict: async ({ state: s, action, task }) => {
    const at = Number(/position (\d+)/.exec(s)?.[1] ?? 0);
    const next = action === "click[right]" ? (at === 2 ? LENGTH : at + 1) : Math.max(0, at - 1);
    const reasoning =
      at === 2 && action === "click[right]" ? "from position 2 a right step reaches the end" : `a ${action.slice(6, -1)} step moves one position`;
    return { reasoning, nextState: state(task.instruction, next), reward: next === LENGTH ? 1 : 0, terminated: next === LENGTH, info: {} };
  },
};

/** Variations of a task: the same corridor, a longer instruction (feasible: the real env plays any task). */
const generator: TaskGenerator = {
  name: "corridor-variants",
  generate: async (parent, count, rng: Rng) => ({
    tasks: Array.from({ length: count }, () => {
      const wait = rng.randbelow(100);
      return { id: `${parent.id}-wait${wait}`, instruction: `${parent.instruction}, then wait ${wait} seconds` };
    }),
    infeasible: 0,
  }),
};

/** Offline walks: some reach the end, some give up. */
function offline(i: number): Trajectory {
  const instruction = "walk to the end of the corridor";
  const rights = i % 3 === 0 ? LENGTH : 2;
  const steps = Array.from({ length: rights }, (_, k) => ({
    observation: state(instruction, k),
    action: "click[right]",
    reward: k + 1 === LENGTH ? 1 : 0,
    next_observation: state(instruction, k + 1),
    terminated: k + 1 === LENGTH,
    truncated: false,
  }));
  return {
    env: VIEW_ENV,
    task: { id: `chain:${i}`, instruction },
    source: "real",
    total_reward: rights === LENGTH ? 1 : 0,
    success: rights === LENGTH,
    created_at: new Date(0).toISOString(),
    steps,
  };
}

export const VIEW_RUN_CONFIG: TrainConfigInput = {
  env: VIEW_ENV,
  mode: "dreamgym",
  budget: 400,
  tasksPerIteration: 4,
  rolloutsPerTask: 4,
  concurrency: 2,
  maxSteps: 6,
  evalEvery: 2,
  evalTasks: 4,
  finalEvalTasks: 4,
  checkpointEvery: 2,
  seed: 3,
  policy: { dim: 1024 },
  grpo: { learningRate: 0.05 },
  // The view's tests read this run's figures (iterations, curriculum, audits); GRPO's synthetic-phase
  // pessimism (a default since 2026-12-03) stays off so they stand as they were written.
  pessimism: { kl: 0, stdFloor: 0 },
  curriculum: { enabled: true, lambda: 0.5, varianceThreshold: 0.001 },
  onPolicyAudit: { every: 1, episodes: 4 },
};

/**
 * `root/buffer.db` (a seed buffer of offline walks) and `root/runs/exp/seed-3` and `root/runs/exp/seed-4`
 * (two runs of an "experiment"); returns their paths and summaries.
 */
export async function makeViewFixture(root: string): Promise<{ buffer: string; runs: string; dirs: string[]; summaries: TrainSummary[] }> {
  const buffer = join(root, "buffer.db");
  const b = ReplayBuffer.open(buffer);
  await b.appendTrajectories(
    Array.from({ length: 12 }, (_, i) => offline(i)),
    { seed: true },
  );
  b.close();
  const runs = join(root, "runs");
  mkdirSync(join(runs, "exp"), { recursive: true });
  const dirs: string[] = [];
  const summaries: TrainSummary[] = [];
  for (const seed of [3, 4]) {
    const dir = join(runs, "exp", `seed-${seed}`);
    summaries.push(await train(dir, { ...VIEW_RUN_CONFIG, seed, buffer }, {}, { experienceModel: flawedModel, taskGenerator: generator }));
    dirs.push(dir);
  }
  return { buffer, runs, dirs, summaries };
}
