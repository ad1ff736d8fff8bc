import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReplayBuffer } from "../buffer/index.ts";
import { registerEnv } from "../envs/index.ts";
import type { ExperienceModel } from "../experience/index.ts";
import type { Task } from "../core/index.ts";
import { BanditEnv, banditSyntheticSupport } from "../testing/index.ts";
import { readMetrics, train, type TrainConfigInput } from "./index.ts";

// A bandit of 5 arms over 8 tasks, with synthetic support, so that S2R can run on it.
const ENV = "screen-bandit";
registerEnv(ENV, {
  create: () => new BanditEnv(5, 3),
  tasks: (env) => env.tasks(8),
  synthetic: () => banditSyntheticSupport(ENV),
});

// The model pays by arm on two tasks and the same for every arm on the other six: only on those two
// do a group's synthetic returns vary.
const VARYING = new Set(["bandit:2", "bandit:5"]);
const model: ExperienceModel = {
  id: "two-tasks-vary",
  predict: async ({ task, state, action }) => ({
    nextState: state,
    reward: VARYING.has(task.id) ? Number(action.match(/\d/)![0]) / 4 : 0.5,
    terminated: true,
    info: {},
  }),
};

/** Small S2R runs of `env` (16 synthetic steps, 24 real), each in a folder of one temporary root, with `model` as the experience model. */
function s2rRuns(env: string, tasksPerIteration: number) {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-s2r-"));
  const buffer = join(root, "empty.db");
  ReplayBuffer.open(buffer).close();
  const common: TrainConfigInput = {
    env,
    mode: "s2r",
    buffer,
    budget: 16,
    realBudget: 24,
    tasksPerIteration,
    rolloutsPerTask: 4,
    concurrency: 2,
    evalEvery: 0,
    finalEvalTasks: 2,
    seed: 3,
    policy: { dim: 1024 },
    curriculum: { enabled: false },
    onPolicyAudit: { every: 0 },
  };
  return async (name: string, extra: TrainConfigInput) => {
    await train(join(root, name), { ...common, ...extra }, {}, { experienceModel: model });
    return readMetrics(join(root, name));
  };
}

test("S2R's real phase screens its tasks in the synthetic env: it plays the tasks whose synthetic returns vary, and counts the screening as synthetic steps", async () => {
  const s2r = s2rRuns(ENV, 2);
  const runOf = (name: string, realScreen: number) => s2r(name, { realScreen });

  const screened = await runOf("screened", 4);
  const real = screened.filter((m) => m.phase === "real");
  assert.equal(real.length, 3);
  for (const m of real) {
    // All 8 tasks are candidates (4 × 2); the 2 chosen are the varying ones: the mean variance over the 8 is a quarter of theirs.
    const s = m.screen!;
    assert.equal(s.candidates, 8);
    assert.equal(s.steps, 32);
    assert.ok(s.chosenVariance > 0.01, `chosen variance ${s.chosenVariance}`);
    assert.ok(Math.abs(s.meanVariance - s.chosenVariance / 4) < 1e-12, `${s.meanVariance} vs ${s.chosenVariance}`);
    // Every GRPO iteration says how many of its groups could teach anything (returns not all equal).
    assert.equal(m.groups!.total, 2);
    assert.ok(m.groups!.informative >= 0 && m.groups!.informative <= 2);
  }
  // The screening's pulls are synthetic steps (the synthetic phase took 16), the real phase's 8 an iteration real ones.
  assert.deepEqual(
    real.map((m) => [m.syntheticInteractions, m.realInteractions]),
    [
      [16 + 32, 8],
      [16 + 64, 16],
      [16 + 96, 24],
    ],
  );

  const plain = await runOf("plain", 1);
  assert.ok(plain.every((m) => m.screen === undefined));
  assert.deepEqual(
    plain.filter((m) => m.phase === "real").map((m) => m.syntheticInteractions),
    [16, 16, 16],
  );
});

// A bandit whose odd tasks pay 0.5 whatever the arm: their real groups' returns are all equal.
const SPLIT_ENV = "split-bandit";
class SplitBandit extends BanditEnv {
  private flat = false;
  protected override start(task: Task): void {
    this.flat = Number(task.id.split(":")[1]) % 2 === 1;
    super.start(task);
  }
  protected override apply(action: string) {
    return this.flat ? { reward: 0.5, terminated: true } : super.apply(action);
  }
}
registerEnv(SPLIT_ENV, {
  create: () => new SplitBandit(5, 3),
  tasks: (env) => (env as SplitBandit).tasks(8),
  synthetic: () => banditSyntheticSupport(SPLIT_ENV),
});

test("S2R's real phase takes its own GRPO batch term (realBatchAdvantage): the synthetic phase is as without it, the real phase's updates are not", async () => {
  const runOf = s2rRuns(SPLIT_ENV, 4);
  const losses = (ms: Awaited<ReturnType<typeof runOf>>, phase: string) => ms.filter((m) => m.phase === phase).map((m) => m.policyLoss);
  const plain = await runOf("plain", {});
  const batch = await runOf("batch", { realBatchAdvantage: 1 });
  assert.deepEqual(losses(batch, "synthetic"), losses(plain, "synthetic"));
  // The first real iteration plays the same episodes from the same policy; the flat tasks' groups
  // (0.5 each, above the others' mean) now carry an advantage, so the update differs.
  assert.notEqual(losses(batch, "real")[0], losses(plain, "real")[0]);
  // The same λ in grpo.batchAdvantage applies to both phases instead.
  const both = await runOf("both", { grpo: { batchAdvantage: 1 } });
  assert.notDeepEqual(losses(both, "synthetic"), losses(plain, "synthetic"));
});
