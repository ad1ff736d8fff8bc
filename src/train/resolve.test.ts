// A start resolves its config once: it opens each pool's envs and nothing else, closes them whether
// it fails or not, and takes the real env as factories or an instance (no registration needed).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReplayBuffer } from "../buffer/index.ts";
import type { Env, ExperienceModel, Task } from "../core/index.ts";
import { findEnv, registerEnv } from "../envs/index.ts";
import { BanditEnv, banditSyntheticSupport, ChainEnv } from "../testing/index.ts";
import { readMetrics, resumeTraining, train, type TrainConfigInput } from "./index.ts";

/** Every env an env spec's `create` made, with its split, and those closed since. */
function counted<E extends Env>(make: () => E) {
  const made: { env: E; split?: string }[] = [];
  let closed = 0;
  const create = (split?: string) => {
    const env = make();
    const close = env.close.bind(env);
    env.close = async () => {
      closed++;
      await close();
    };
    made.push({ env, split });
    return env;
  };
  return { made, create, closed: () => closed };
}

const ENV = "resolve-bandit";
const bandits = counted(() => new BanditEnv(5, 3));
let generatorEnv: Env | undefined;
registerEnv(ENV, {
  create: (o) => bandits.create(o.split),
  tasks: (env) => env.tasks(8),
  synthetic: () => banditSyntheticSupport(ENV),
  // The env's own task variation: made over an env of the eval split (none here: no curriculum).
  taskGenerator: (env) => {
    generatorEnv = env;
    return undefined;
  },
});

const model: ExperienceModel = {
  id: "arm-number",
  predict: async ({ state, action }) => ({ nextState: state, reward: Number(action.match(/\d/)![0]) / 4, terminated: true, info: {} }),
};

test("a DreamGym start opens its two pools and no other env, and closes them; a refused start closes what it opened and writes nothing", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-resolve-"));
  const buffer = join(root, "empty.db");
  ReplayBuffer.open(buffer).close();
  const config: TrainConfigInput = {
    env: ENV,
    mode: "dreamgym",
    buffer,
    budget: 16,
    tasksPerIteration: 2,
    rolloutsPerTask: 2,
    concurrency: 3,
    evalEvery: 0,
    finalEvalTasks: 4,
    onPolicyAudit: { every: 1, episodes: 2 },
    policy: { dim: 1024 },
  };
  const summary = await train(join(root, "run"), config, {}, { experienceModel: model });
  assert.ok(summary.iterations >= 2 && summary.auditInteractions > 0);
  // concurrency × (train, eval): the checks, the synthetic support and the task generator use the pools' envs.
  assert.deepEqual(
    bandits.made.map((m) => m.split),
    ["train", "train", "train", "test", "test", "test"],
  );
  assert.equal(generatorEnv, bandits.made[3].env, "the env's task generator is made over the eval pool's first env");
  assert.equal(bandits.closed(), 6);

  // Refused once the train pool is open (the bandit has no verifier): its envs are closed, no folder is made.
  bandits.made.length = 0;
  await assert.rejects(train(join(root, "hybrid"), { ...config, hybrid: true }, {}, { experienceModel: model }), /--hybrid needs a verifier/);
  assert.deepEqual(
    bandits.made.map((m) => m.split),
    ["train", "train", "train"],
  );
  assert.equal(bandits.closed(), 9);
  assert.equal(existsSync(join(root, "hybrid")), false);
});

/** A corridor whose tasks() lists its tasks (ChainEnv's takes a count). */
class Corridor extends ChainEnv {
  override tasks(count = 6): Task[] {
    return super.tasks(count);
  }
}

test("train() takes the real env as factories under a name no registry knows: it trains in real mode, closes what it made, and resumes with an instance", async () => {
  assert.equal(findEnv("corridor"), undefined);
  const corridors = counted(() => new Corridor());
  const factory = () => corridors.create();
  const dir = join(mkdtempSync(join(tmpdir(), "dreamgym-factory-")), "run");
  const config: TrainConfigInput = {
    env: "corridor",
    mode: "real",
    budget: 60,
    tasksPerIteration: 2,
    rolloutsPerTask: 2,
    concurrency: 2,
    evalEvery: 0,
    finalEvalTasks: 4,
    checkpointEvery: 1,
    seed: 5,
    policy: { dim: 1024 },
  };
  await assert.rejects(train(dir, { ...config, env: undefined }, {}, { envs: { train: factory, eval: factory } }), /name their env in the config \(env\)/);
  const first = await train(dir, config, {}, { envs: { train: factory, eval: factory } });
  assert.ok(first.iterations >= 2, `iterations ${first.iterations}`);
  assert.equal(first.final.tasks, 4);
  assert.equal(corridors.made.length, 4, "concurrency × (train, eval)");
  assert.equal(corridors.closed(), 4);
  const saved = JSON.parse(readFileSync(join(dir, "config.json"), "utf8"));
  assert.deepEqual([saved.env, saved.trainSplit, saved.evalSplit], ["corridor", "train", "test"]);
  assert.ok(readMetrics(dir).every((m) => m.phase === "real" && m.realInteractions > 0));

  // Resumed to a larger budget with the eval pool an instance: a pool of one, which the run leaves open.
  const instance = new Corridor();
  let instanceClosed = false;
  instance.close = async () => {
    instanceClosed = true;
  };
  const more = await resumeTraining(dir, {}, { budget: 140 }, { envs: { train: factory, eval: instance } });
  assert.equal(more.resumedFrom, first.iterations);
  assert.ok(more.realInteractions >= 140 && more.iterations > first.iterations);
  assert.equal(more.final.tasks, 4);
  assert.equal(corridors.closed(), corridors.made.length);
  assert.equal(instanceClosed, false);
});
