import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { ReplayBuffer } from "../buffer/index.ts";
import { registerEnv } from "../envs/index.ts";
import type { ExperienceModel } from "../experience/index.ts";
import { BanditEnv, banditSyntheticSupport, makeTrajectory } from "../testing/index.ts";
import { openSyntheticBuffer } from "./compose.ts";
import type { TrainConfig } from "./config.ts";
import { readMetrics, train, type TrainConfigInput } from "./index.ts";

const ENV = "pool-bandit";
registerEnv(ENV, {
  create: () => new BanditEnv(5, 3),
  tasks: (env) => env.tasks(4),
  synthetic: () => banditSyntheticSupport(ENV),
});

/** A model that pays arm 3, a turn of the event loop late, counting the steps in flight; `inProcess` as given. */
function countingModel(inProcess: boolean): { model: ExperienceModel; most: () => number } {
  let now = 0;
  let most = 0;
  const model: ExperienceModel = {
    id: "counting",
    inProcess,
    predict: async ({ state, action }) => {
      most = Math.max(most, ++now);
      await new Promise((r) => setImmediate(r));
      now--;
      return { nextState: state, reward: action === "click[arm 3]" ? 1 : 0, terminated: true, info: {} };
    },
  };
  return { model, most: () => most };
}

const CONFIG: TrainConfigInput = {
  env: ENV,
  mode: "dreamgym",
  budget: 2 * 160,
  tasksPerIteration: 4,
  rolloutsPerTask: 40,
  concurrency: 2,
  evalEvery: 0,
  finalEvalTasks: 2,
  seed: 5,
  policy: { dim: 1024 },
  curriculum: { enabled: false },
  onPolicyAudit: { every: 0 },
};

test("a synthetic pool over an in-process model plays 128 episodes at once whatever --concurrency says, another model as many as asked, with the same results", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-pool-"));
  const buffer = join(root, "empty.db");
  ReplayBuffer.open(buffer).close();
  const timings = new Set(["rolloutSeconds", "updateSeconds", "auditSeconds", "evalSeconds", "wallSeconds"]);
  const metrics = (dir: string) => readMetrics(dir).map((m) => Object.fromEntries(Object.entries(m).filter(([k]) => !timings.has(k))));
  const runs = [];
  for (const [concurrency, inProcess] of [
    [2, true],
    [160, true],
    [2, false],
  ] as const) {
    const counting = countingModel(inProcess);
    const dir = join(root, `c${concurrency}-${inProcess}`);
    await train(dir, { ...CONFIG, concurrency, buffer }, {}, { experienceModel: counting.model });
    runs.push({ dir, most: counting.most() });
  }
  assert.equal(runs[0].most, 128, "at --concurrency 2");
  assert.equal(runs[1].most, 160, "at --concurrency 160 (more than 128: as asked)");
  assert.equal(runs[2].most, 2, "a model that does not say it runs in this process: --concurrency 2 as asked");
  assert.deepEqual(metrics(runs[1].dir), metrics(runs[0].dir));
  assert.deepEqual(metrics(runs[2].dir), metrics(runs[0].dir));
});

test("helperThreads: a run's searches of the offline rows use a second core unless it is off (several runs at once), with the same answers", async (t) => {
  if (availableParallelism() < 2) return t.skip("one core");
  const file = join(mkdtempSync(join(tmpdir(), "dreamgym-helpers-")), "seed.db");
  const seed = ReplayBuffer.open(file);
  await seed.appendTrajectories(
    Array.from({ length: 40 }, (_, i) => makeTrajectory(i)),
    { seed: true },
  );
  seed.close();
  const answers = [];
  for (const helperThreads of [true, false]) {
    const b = openSyntheticBuffer({ helperThreads, served: false, demos: 5 } as TrainConfig, file);
    const vector = await b.embedQuery({ state: "page 1 of episode 3: you see item 39", action: "click[buy now]" });
    answers.push((await b.searchVectorAsync(vector, { k: 5, filter: { source: "real" } })).map((r) => r.transition.id));
    assert.equal(b.searchesOnThread > 0, helperThreads, `helperThreads ${helperThreads}`);
    b.close();
  }
  assert.deepEqual(answers[0], answers[1]);
  assert.equal(answers[0].length, 5);
});
