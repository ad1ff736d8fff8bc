import { test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, rmSync, writeFileSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { closing, type Trajectory } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { createEnv, createPolicy, envTasks, runEpisode, syntheticSupport } from "../envs/index.ts";
import { abstractTrajectory } from "../experience/index.ts";
import { makeTrajectory, tempFile } from "../testing/index.ts";
import { latestPolicyFile, readMetrics, resumeTraining, train, type TrainConfig, type TrainConfigInput } from "./index.ts";
import { countDemonstrations } from "./bc.ts";

/** `n` episodes of a scripted WebShop policy on the first tasks of a split (real data, abstract states). */
async function play(policyName: string, split: string, n: number): Promise<Trajectory[]> {
  return closing(createEnv("webshop", { split }), async (env) => {
    const tasks = envTasks("webshop", env);
    const policy = createPolicy("webshop", policyName, env, { seed: 0 });
    const abstraction = syntheticSupport("webshop", env).abstraction;
    const out: Trajectory[] = [];
    for (let i = 0; i < n; i++) out.push(abstractTrajectory(await runEpisode(env, policy, { envName: "webshop", task: tasks[i], seed: i }), abstraction));
    return out;
  });
}

const root = mkdtempSync(join(tmpdir(), "dreamgym-bc-"));
let bufferFile: string | undefined;
/** A small seed buffer: 150 oracle and 50 random episodes on train goals. */
async function seed(): Promise<string> {
  if (bufferFile) return bufferFile;
  const file = join(root, "seed.db");
  const b = ReplayBuffer.open(file);
  await b.appendTrajectories([...(await play("oracle", "train", 150)), ...(await play("random", "train", 50))], { seed: true });
  b.close();
  return (bufferFile = file);
}

const CONFIG: TrainConfigInput = { env: "webshop", mode: "bc", evalEvery: 0, finalEvalTasks: 100, seed: 0, bc: { epochs: 4 }, checkpointEvery: 2 };

test("behaviour cloning on a small real WebShop buffer beats the random policy in the real env, with 0 real training steps", async () => {
  const buffer = await seed();
  const dir = join(root, "bc");
  const s = await train(dir, { ...CONFIG, buffer });
  const random = await play("random", "test", 100);
  const randomScore = (100 * random.reduce((a, t) => a + t.total_reward, 0)) / random.length;
  assert.equal(s.realInteractions, 0);
  assert.equal(s.syntheticInteractions, 0);
  assert.equal(s.iterations, 4);
  console.log(`BC ${s.final.score.toFixed(1)} / ${(100 * s.final.success).toFixed(1)}% vs random ${randomScore.toFixed(1)}`);
  assert.ok(s.final.score > randomScore + 10, `BC ${s.final.score.toFixed(1)} vs random ${randomScore.toFixed(1)}`);
  const m = readMetrics(dir);
  assert.deepEqual(
    m.map((x) => x.phase),
    ["offline", "offline", "offline", "offline"],
  );
  // The oracle's successes are cloned; the random policy's failures are not.
  assert.ok(m[0].bc!.demonstrations > 100 && m[0].bc!.demonstrations <= 150 + 50, `${m[0].bc!.demonstrations} demonstrations`);
  // The oracle sometimes searches by the product's name, which the policy's query candidates cannot say.
  assert.ok(m[0].bc!.skipped <= 0.02 * m[0].bc!.steps, `${m[0].bc!.skipped} of ${m[0].bc!.steps} steps skipped`);
  assert.ok(m[3].bc!.loss < m[0].bc!.loss, "the loss falls");
  assert.ok(existsSync(join(dir, "report.html")) && existsSync(join(dir, "summary.json")));
  assert.ok(!existsSync(join(dir, "buffer.db")), "the buffer is read, not copied");
  // Where other runs start from it (the demo's and the experiment's RL rows): the last checkpoint's policy.
  assert.equal(latestPolicyFile(dir), join(dir, "checkpoints", "iter-000004.policy"));
  assert.throws(() => latestPolicyFile(join(root, "no-run")), /no-run\/checkpoints\/latest\.json: the run has no checkpoint/);
});

test("a killed behaviour-cloning run resumes to the metrics of one never stopped", async () => {
  const buffer = await seed();
  const whole = join(root, "bc"); // made by the test above, or here
  if (!existsSync(join(whole, "summary.json"))) await train(whole, { ...CONFIG, buffer });
  const killed = join(root, "bc-killed");
  cpSync(whole, killed, { recursive: true });
  // As if killed after epoch 2's checkpoint: the later lines, the last checkpoint and the summary are gone.
  const latest = JSON.parse(readFileSync(join(killed, "checkpoints", "latest.json"), "utf8"));
  const two = JSON.parse(JSON.stringify(latest));
  two.iteration = 2;
  two.policyFile = "iter-000002.policy";
  two.state = {
    iteration: 2,
    realInteractions: 0,
    evalInteractions: 0,
    syntheticInteractions: 0,
    auditInteractions: 0,
    droppedEpisodes: 0,
    episodes: 0,
    wallSeconds: readMetrics(killed)[1].wallSeconds,
  };
  writeFileSync(join(killed, "checkpoints", "latest.json"), JSON.stringify(two));
  rmSync(join(killed, "checkpoints", "iter-000004.policy"));
  rmSync(join(killed, "summary.json"));
  const s = await resumeTraining(killed);
  assert.equal(s.resumedFrom, 2);
  const strip = (dir: string) =>
    readMetrics(dir).map(({ wallSeconds: _w, rolloutSeconds: _r, updateSeconds: _u, evalSeconds: _e, auditSeconds: _a, ...rest }) => rest);
  assert.deepEqual(strip(killed), strip(whole));
  const summary = JSON.parse(readFileSync(join(whole, "summary.json"), "utf8"));
  assert.deepEqual(s.final, summary.final);
});

test("mode bc refuses a buffer with no successful real episodes, and --hybrid, before writing anything", async () => {
  const empty = join(root, "failures.db");
  const b = ReplayBuffer.open(empty);
  await b.appendTrajectories(await play("random", "train", 5).then((ts) => ts.filter((t) => !t.success)), { seed: true });
  b.close();
  await assert.rejects(train(join(root, "none"), { ...CONFIG, buffer: empty }), /no successful real webshop episodes/);
  await assert.rejects(train(join(root, "none"), { ...CONFIG }), /give --buffer/);
  await assert.rejects(train(join(root, "none"), { ...CONFIG, buffer: empty, hybrid: true }), /drop --hybrid/);
  assert.ok(!existsSync(join(root, "none")));
});

test("countDemonstrations counts by the total rewards alone what reading every real episode with its steps counted", async () => {
  const file = tempFile("demonstrations.db");
  const b = ReplayBuffer.open(file);
  const withReward = (t: Trajectory, r: number) => ({ ...t, total_reward: r, success: r >= 1 });
  await b.appendTrajectories(
    [
      ...Array.from({ length: 10 }, (_, i) => makeTrajectory(i)), // real: 5 successes, 5 failures
      withReward(makeTrajectory(10), 0.7), // a success by some envs' rule only
      withReward(makeTrajectory(11, { steps: 0 }), 1), // real and successful, with no step: no demonstration
      withReward(makeTrajectory(12, { steps: 0 }), 0),
      ...Array.from({ length: 4 }, (_, i) => withReward(makeTrajectory(20 + i, { source: "synthetic" }), 1)),
      ...Array.from({ length: 3 }, (_, i) => withReward(makeTrajectory(30 + i, { env: "other" }), 1)),
    ],
    { seed: true },
  );
  // Online episodes, their total reward summed step by step: real ones (a success, a failure) and a synthetic success.
  const online = (id: string, source: "real" | "synthetic", reward: number) =>
    b.appendTransitions(
      [0, 1].map((step) => ({
        trajectoryId: id,
        step,
        env: "toy",
        task: { id: "task-online", instruction: "buy it" },
        state: `${id} page ${step}`,
        action: step === 1 ? "click[buy now]" : "search[it]",
        reward: step === 1 ? reward : 0,
        nextState: `${id} page ${step + 1}`,
        terminated: step === 1,
        truncated: false,
        source,
      })),
    );
  await online("online-win", "real", 1);
  await online("online-loss", "real", 0);
  await online("online-synthetic", "synthetic", 1);
  b.close();
  const byReading = (env: string, isSuccess: (r: number) => boolean) => {
    const reader = ReplayBuffer.open(file, { readonly: true });
    try {
      let n = 0;
      for (const t of reader.trajectories({ env, source: "real" })) if (t.steps.length > 0 && isSuccess(t.total_reward)) n++;
      return n;
    } finally {
      reader.close();
    }
  };
  // The rewards it counts by: those of the episodes with steps, in the buffer's order.
  const reader = ReplayBuffer.open(file, { readonly: true });
  for (const filter of [{ env: "toy", source: "real" as const }, { env: "toy" }, { source: "synthetic" as const }, {}])
    assert.deepEqual(
      reader.totalRewards(filter),
      [...reader.trajectories(filter)].filter((t) => t.steps.length > 0).map((t) => t.total_reward),
      JSON.stringify(filter),
    );
  reader.close();
  const rules: ((r: number) => boolean)[] = [(r) => r >= 1, (r) => r > 0.5, (r) => r <= 0, () => true];
  for (const env of ["toy", "other", "nowhere"])
    for (const rule of rules) assert.equal(countDemonstrations({ env } as TrainConfig, file, rule), byReading(env, rule), `${env}: ${rule.toString()}`);
  assert.equal(
    countDemonstrations({ env: "toy" } as TrainConfig, file, (r) => r >= 1),
    6,
    "5 whole episodes and 1 online",
  );
  assert.equal(
    countDemonstrations({ env: "toy" } as TrainConfig, file, () => true),
    13,
    "every real toy episode with steps",
  );
});
