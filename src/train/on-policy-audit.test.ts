import { test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Trajectory } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { registerEnv } from "../envs/index.ts";
import type { ExperienceModel } from "../experience/index.ts";
import { BanditEnv, banditPage, banditSyntheticSupport } from "../testing/index.ts";
import type { AuditPair } from "../experience/index.ts";
import { auditFiles, readMetrics, resumeTraining, RunFolder, train, type IterationMetrics, type TrainConfigInput } from "./index.ts";

// A bandit of 5 arms where arm 3 pays 1 for real, registered with synthetic support so that the real
// training loop can run it in dreamgym mode and audit it against the real bandit.
const ENV = "audit-bandit";
registerEnv(ENV, {
  create: () => new BanditEnv(5, 3),
  tasks: (env) => env.tasks(4),
  synthetic: () => banditSyntheticSupport(ENV),
});
const start = (instruction: string) => banditPage(instruction);

/** One bandit pull as an offline (real) trajectory of the seed buffer. */
const pull = (instruction: string, arm: number, reward: number): Trajectory => ({
  env: ENV,
  task: { id: `bandit:${instruction}`, instruction },
  source: "real",
  total_reward: reward,
  success: reward >= 1,
  created_at: new Date(0).toISOString(),
  steps: [{ observation: start(instruction), action: `click[arm ${arm}]`, reward, next_observation: start(instruction), terminated: true, truncated: false }],
});

async function seedBuffer(file: string, trajectories: Trajectory[]): Promise<string> {
  const b = ReplayBuffer.open(file);
  if (trajectories.length > 0) await b.appendTrajectories(trajectories, { seed: true });
  b.close();
  return file;
}

const COMMON: TrainConfigInput = {
  env: ENV,
  mode: "dreamgym",
  budget: 32 * 16,
  tasksPerIteration: 4,
  rolloutsPerTask: 8,
  concurrency: 2,
  evalEvery: 0,
  finalEvalTasks: 4,
  checkpointEvery: 4,
  seed: 1,
  policy: { dim: 1024 },
  grpo: { learningRate: 0.05 },
  curriculum: { enabled: false },
  onPolicyAudit: { every: 2, episodes: 16 },
};

const audits = (dir: string) =>
  readMetrics(dir).filter((m): m is IterationMetrics & Required<Pick<IterationMetrics, "onPolicyAudit">> => m.onPolicyAudit !== undefined);

test("the on-policy audit detects a planted exploit: a model that pays 1 for a wrong arm gives an exploitation rate of 1; a faithful one 0", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-exploit-"));
  const buffer = await seedBuffer(join(root, "empty.db"), []);
  const paying = (arm: number): ExperienceModel => ({
    id: `pays-arm-${arm}`,
    predict: async ({ state, action }) => ({ nextState: state, reward: action === `click[arm ${arm}]` ? 1 : 0, terminated: true, info: {} }),
  });
  const planted = join(root, "planted");
  const s = await train(planted, { ...COMMON, buffer }, {}, { experienceModel: paying(1) });
  const a = audits(planted);
  assert.ok(a.length >= 4, `${a.length} audited iterations`);
  const first = a[0].onPolicyAudit;
  const last = a.at(-1)!.onPolicyAudit;
  // The policy found the exploit: it succeeds in the model almost always, never for real.
  assert.ok(
    last.syntheticSuccess >= 0.8 && last.syntheticSuccess > first.syntheticSuccess,
    `synthetic success ${first.syntheticSuccess} → ${last.syntheticSuccess}`,
  );
  assert.equal(last.realSuccess, 0);
  assert.equal(last.exploitationRate, 1);
  assert.equal(last.successAgreement, 1 - last.syntheticSuccess);
  // The states agree (the page stays, the pull ends the episode): the exploit is in the reward alone.
  assert.deepEqual(last.divergence, { mean: null, atStep: { never: 16 } });
  assert.equal(s.final.success, 0, "the policy pulls the wrong arm for real too");
  // One real step per replayed pull, counted apart from training and evaluation.
  assert.equal(
    s.auditInteractions,
    a.reduce((n, m) => n + m.onPolicyAudit.steps, 0),
  );
  assert.equal(s.auditInteractions, 16 * a.length);
  assert.equal(readMetrics(planted).at(-1)!.realInteractions, 0);
  assert.match(readFileSync(join(planted, "report.html"), "utf8"), /On-policy audit[\s\S]*exploitation rate/);
  // The audited episodes are kept, one file per audited iteration: each synthetic episode beside its real replay.
  const files = auditFiles(planted);
  assert.deepEqual(
    files.map((f) => f.iteration),
    a.map((m) => m.iteration),
  );
  for (const [i, f] of files.entries()) {
    const pairs = readFileSync(f.file, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as AuditPair);
    assert.equal(pairs.length, a[i].onPolicyAudit.episodes);
    assert.equal(
      pairs.filter((p) => p.syntheticSuccess && !p.realSuccess).length,
      Math.round(a[i].onPolicyAudit.syntheticSuccess * pairs.length),
      `iteration ${f.iteration}`,
    );
    for (const p of pairs) {
      assert.equal(p.real.steps.length, p.steps);
      assert.equal(p.syntheticSuccess, p.synthetic.steps[0].action === "click[arm 1]"); // the planted model pays arm 1 only
      assert.equal(
        p.realReturn,
        p.real.steps.reduce((r, x) => r + x.reward, 0),
      );
    }
  }
  // A resume takes back audits past the checkpoint it starts from (it writes them again).
  const ahead = join(planted, "audit", "iteration-9999.jsonl");
  writeFileSync(ahead, "{}\n");
  RunFolder.open(planted);
  assert.equal(existsSync(ahead), false);
  assert.equal(auditFiles(planted).length, a.length);

  const faithful = join(root, "faithful");
  await train(faithful, { ...COMMON, buffer }, {}, { experienceModel: paying(3) });
  const f = audits(faithful).at(-1)!.onPolicyAudit;
  assert.ok(f.syntheticSuccess >= 0.8, `faithful synthetic success ${f.syntheticSuccess}`);
  assert.equal(f.exploitationRate, 0);
  assert.equal(f.successAgreement, 1);
});

test("pessimism (β > 0) keeps the policy from learning an exploit the embedded model is unsure of", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-pessimism-"));
  const task = "pull the arm that pays";
  // The offline data: in this game arm 3 is recorded paying 0.8 (the model undervalues the right arm)
  // and the others 0; arm 1 was only ever recorded in another game, paying 1. The kNN model copies
  // that reward — an exploit, but one it can only ground in a dissimilar state (high u).
  const seed = [pull(task, 0, 0), pull(task, 2, 0), pull(task, 3, 0.8), pull(task, 4, 0), pull("a different game with its own rules entirely", 1, 1)];
  const buffer = await seedBuffer(join(root, "seed.db"), seed);
  const run = async (name: string, pessimism: TrainConfigInput["pessimism"]) => {
    const dir = join(root, name);
    const s = await train(dir, { ...COMMON, buffer, pessimism });
    return { s, metrics: readMetrics(dir), last: audits(dir).at(-1)!.onPolicyAudit };
  };
  const off = await run("off", { beta: 0 });
  const on = await run("on", { beta: 2 });
  // Without pessimism the policy pulls the exploit arm: the model's successes all fail for real.
  assert.ok(off.last.syntheticSuccess >= 0.8, `β=0: synthetic success ${off.last.syntheticSuccess}`);
  assert.equal(off.last.exploitationRate, 1);
  assert.equal(off.s.final.success, 0);
  // With it, arm 1's unsure reward (u ≈ 0.19: its only real neighbour is in another game) is worth 1 − 2u ≈ 0.61,
  // less than the sure 0.8 of arm 3: the policy learns arm 3.
  assert.ok(on.last.realSuccess >= 0.8, `β=2: real success of the audited episodes ${on.last.realSuccess}`);
  assert.equal(on.s.final.success, 1);
  const u = on.metrics.map((m) => m.uncertainty!);
  assert.ok(u.every((x) => x !== undefined && x.steps > 0 && x.halts === 0));
  // As the policy leaves the unsure arm, the mean u of its steps falls.
  assert.ok(u.at(-1)!.mean < u[0].mean, `mean u ${u[0].mean} → ${u.at(-1)!.mean}`);
});

test("advantage agreement: the audit replays whole groups and reads how the model orders them; a model that pays the wrong arms reverses every pair GRPO can learn from", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-order-"));
  const buffer = await seedBuffer(join(root, "empty.db"), []);
  const model = (pays: (arm: number) => number): ExperienceModel => ({
    id: "order",
    predict: async ({ state, action }) => ({ nextState: state, reward: pays(Number(/arm (\d)/.exec(action)?.[1])), terminated: true, info: {} }),
  });
  // Learning rate 0: the policy stays uniform, so its groups mix arm 3 (pays 1 for real) with the others.
  const run = async (name: string, pays: (arm: number) => number) => {
    const dir = join(root, name);
    await train(dir, { ...COMMON, buffer, budget: 8 * 32, grpo: { learningRate: 1e-12 } }, {}, { experienceModel: model(pays) });
    return { dir, a: audits(dir).map((m) => m.onPolicyAudit) };
  };
  const reversed = await run("reversed", (arm) => (arm === 3 ? 0 : 1));
  const faithful = await run("faithful", (arm) => (arm === 3 ? 1 : 0));
  for (const [i, x] of reversed.a.entries()) {
    const pairs = readFileSync(auditFiles(reversed.dir)[i].file, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as AuditPair);
    // Whole groups: 16 episodes = 2 groups of G = 8, each one task.
    const groups = new Map<string, AuditPair[]>();
    for (const p of pairs) groups.set(p.group!, [...(groups.get(p.group!) ?? []), p]);
    assert.equal(groups.size, 2);
    for (const g of groups.values()) assert.deepEqual(new Set(g.map((p) => p.task.id)).size, 1);
    // A pair is informative where arm 3 meets another arm: real orders it one way, the model the other.
    const expected = [...groups.values()].reduce((n, g) => {
      const k = g.filter((p) => p.synthetic.steps[0].action === "click[arm 3]").length;
      return n + k * (g.length - k);
    }, 0);
    assert.ok(expected > 0, "the uniform policy pulls arm 3 in some groups");
    assert.equal(x.advantage!.pairs, expected);
    assert.equal(x.advantage!.reversedPairs, expected);
    assert.equal(x.advantage!.orderAgreement, 0);
    assert.equal(x.advantage!.tiedPairs, 2 * 28 - expected);
    assert.ok(Math.abs(x.advantage!.correlation! + 1) < 1e-9, `correlation ${x.advantage!.correlation}`);
    assert.ok(Math.abs(x.returnGap! - (x.syntheticReturn - x.realReturn)) < 1e-12);
  }
  for (const x of faithful.a) {
    assert.equal(x.advantage!.orderAgreement, 1);
    assert.equal(x.advantage!.reversedPairs, 0);
    assert.ok(Math.abs(x.advantage!.correlation! - 1) < 1e-9);
    assert.equal(x.returnGap, 0);
  }
  // The report and the audit table carry the figures.
  assert.match(readFileSync(join(reversed.dir, "report.html"), "utf8"), /order agree \(pairs\)[\s\S]*<td>0\.0% \(\d+\)<\/td><td>-1\.00<\/td>/);
});

test("realTasks \"seed\": real RL plays only the tasks of the buffer's real episodes (real-env GRPO on DreamGym's own task set); without a buffer it is refused", async () => {
  const played: string[] = [];
  // The train split's episodes are logged; the eval split has tasks of its own.
  class Logged extends BanditEnv {
    constructor(readonly split: string) {
      super(5, 3);
    }
    override tasks(count: number) {
      return super.tasks(count).map((t) => ({ ...t, id: `${this.split}:${t.id}` }));
    }
    override async reset(opts: Parameters<BanditEnv["reset"]>[0] = {}) {
      const r = await super.reset(opts);
      if (this.split === "train") played.push(String(opts.task?.id));
      return r;
    }
  }
  registerEnv("logged-bandit", { create: (o) => new Logged(o.split ?? "train"), tasks: (env) => env.tasks(6), splits: { train: "train", eval: "test" } });
  const root = mkdtempSync(join(tmpdir(), "dreamgym-realtasks-"));
  const seeded = await seedBuffer(
    join(root, "seed.db"),
    [1, 4].map((i) => ({
      ...pull("pull the arm that pays", 3, 1),
      env: "logged-bandit",
      task: { id: `train:bandit:${i}`, instruction: "pull the arm that pays" },
    })),
  );
  const base: TrainConfigInput = {
    env: "logged-bandit",
    mode: "real",
    budget: 64,
    tasksPerIteration: 2,
    rolloutsPerTask: 4,
    concurrency: 1,
    evalEvery: 0,
    finalEvalTasks: 1,
    policy: { dim: 1024 },
  };
  await train(join(root, "seed"), { ...base, realTasks: "seed", buffer: seeded });
  // The first reset is the start's check that the env plays (its first task), not training.
  const trained = played.slice(1);
  assert.ok(trained.length >= 32, `${trained.length} real episodes`);
  assert.deepEqual([...new Set(trained)].sort(), ["train:bandit:1", "train:bandit:4"]);
  played.length = 0;
  await train(join(root, "split"), base);
  assert.ok(new Set(played).size > 2, "the split's tasks: more than the buffer's two");
  await assert.rejects(train(join(root, "none"), { ...base, realTasks: "seed" }), /realTasks "seed" needs a buffer/);
});

test('onPolicyAudit.replay "policy": the policy as it played the synthetic episodes plays the real env (closed loop); where the states agree it reads as the open-loop replay does', async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-closedloop-"));
  const buffer = await seedBuffer(join(root, "empty.db"), []);
  const paying = (arm: number): ExperienceModel => ({
    id: `pays-arm-${arm}`,
    predict: async ({ state, action }) => ({ nextState: state, reward: action === `click[arm ${arm}]` ? 1 : 0, terminated: true, info: {} }),
  });
  const run = async (replay: "actions" | "policy") => {
    const dir = join(root, replay);
    // A large step: each update moves the policy far, so a copy taken after it would play otherwise.
    const s = await train(
      dir,
      { ...COMMON, buffer, budget: 8 * 32, grpo: { learningRate: 0.5 }, onPolicyAudit: { every: 1, episodes: 16, replay } },
      {},
      { experienceModel: paying(1) },
    );
    return { dir, s, a: audits(dir).map((m) => m.onPolicyAudit) };
  };
  const open = await run("actions");
  const closed = await run("policy");
  // The audit changes nothing of training.
  assert.equal(closed.s.final.score, open.s.final.score);
  assert.deepEqual(closed.a, open.a);
  for (const f of auditFiles(closed.dir)) {
    const pairs = readFileSync(f.file, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as AuditPair);
    for (const p of pairs)
      assert.equal(
        p.real.steps[0].action,
        p.synthetic.steps[0].action,
        `iteration ${f.iteration}: the policy as it played the synthetic episode, before the update`,
      );
  }
  const openPairs = readFileSync(auditFiles(open.dir)[0].file, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as AuditPair);
  assert.equal(openPairs[0].real.steps[0].action, undefined);
});

test("a damaged metrics line (null, a number, an object without its iteration) is skipped: the run's other lines read, and it resumes", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-nullmetrics-"));
  const dir = join(root, "run");
  const config: TrainConfigInput = {
    env: ENV,
    mode: "real",
    budget: 64,
    tasksPerIteration: 2,
    rolloutsPerTask: 4,
    concurrency: 1,
    evalEvery: 0,
    finalEvalTasks: 1,
    checkpointEvery: 2,
    policy: { dim: 1024 },
  };
  const done = await train(dir, config);
  const lines = readFileSync(join(dir, "metrics.jsonl"), "utf8").trim().split("\n");
  writeFileSync(join(dir, "metrics.jsonl"), [lines[0], "null", "42", '{"phase":"real"}', ...lines.slice(1)].join("\n") + "\n");
  assert.deepEqual(
    readMetrics(dir).map((m) => m.iteration),
    lines.map((l) => JSON.parse(l).iteration),
  );
  // A checkpoint write a kill cut short leaves its temporary file: the resume removes it (issue 34, item 17).
  const stale = join(dir, "checkpoints", "iter-000009.policy.12345.tmp");
  writeFileSync(stale, "half a policy");
  const warnings: string[] = [];
  const again = await resumeTraining(dir, { onWarning: (w) => warnings.push(w) });
  assert.ok(!existsSync(stale));
  assert.equal(again.final.score, done.final.score);
  // Said, and set aside, not dropped without a word (issue 34, item 7).
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /3 damaged lines set aside in metrics\.damaged\.jsonl/);
  assert.deepEqual(readFileSync(join(dir, "metrics.damaged.jsonl"), "utf8").trim().split("\n"), ["null", "42", '{"phase":"real"}']);
  // A metrics file gone: the resume says which iterations' figures are lost.
  rmSync(join(dir, "metrics.jsonl"));
  const lost: string[] = [];
  await resumeTraining(dir, { onWarning: (w) => lost.push(w) });
  const checkpoint = JSON.parse(readFileSync(join(dir, "checkpoints", "latest.json"), "utf8")).iteration as number;
  assert.deepEqual(lost, [
    `${join(dir, "metrics.jsonl")} is missing, with the figures of iterations 1–${checkpoint}; the run goes on from its checkpoint (iteration ${checkpoint}), and its report and view will not show them`,
  ]);
});

test("a resume checks what a start checks: a config.json edited to another env or mode is refused (issue 34, item 3)", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-edited-"));
  const dir = join(root, "run");
  const config: TrainConfigInput = {
    env: ENV,
    mode: "real",
    budget: 32,
    tasksPerIteration: 2,
    rolloutsPerTask: 4,
    concurrency: 1,
    evalEvery: 0,
    finalEvalTasks: 1,
    checkpointEvery: 2,
    policy: { dim: 1024 },
  };
  await train(dir, config);
  const file = join(dir, "config.json");
  const saved = readFileSync(file, "utf8");
  const edit = (change: Record<string, unknown>) => writeFileSync(file, JSON.stringify({ ...JSON.parse(saved), ...change }, null, 2));
  edit({ env: "alfworld", trainSplit: "valid_train", evalSplit: "valid_unseen" });
  await assert.rejects(resumeTraining(dir), new RegExp(`names env alfworld, but the run.s checkpoint was trained on ${ENV}`));
  edit({ mode: "dreamgym" });
  await assert.rejects(resumeTraining(dir), /names mode dreamgym, but the run's checkpoint was trained in mode real/);
  // A checkpoint from before it recorded its mode: the start's own check refuses a buffer-less DreamGym run.
  const latestFile = join(dir, "checkpoints", "latest.json");
  const { env: _e, mode: _m, ...older } = JSON.parse(readFileSync(latestFile, "utf8"));
  writeFileSync(latestFile, JSON.stringify(older));
  await assert.rejects(resumeTraining(dir), /mode dreamgym needs a buffer/);
  writeFileSync(file, saved);
  assert.ok((await resumeTraining(dir)).final.tasks >= 1, "the run as it was resumes");
});

test("onPolicyAudit.refit (Dyna): a model that learns from the audit's real replays stops paying the planted arm, its steps count as real training, and a resume refits alike", async () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-refit-"));
  const buffer = await seedBuffer(join(root, "empty.db"), []);
  // Pays arm 1 until real steps say otherwise; then pays what the real pulls paid.
  // With `stateful`, what it learned is its refit state (a checkpoint keeps it).
  const learning = (stateful = false): ExperienceModel & { refits: number[] } => {
    const paid = new Map<string, number>();
    const refits: number[] = [];
    return {
      id: "learns-from-real",
      refits,
      predict: async ({ state, action }) => ({ nextState: state, reward: paid.get(action) ?? (action === "click[arm 1]" ? 1 : 0), terminated: true, info: {} }),
      refit: (trajectories, seed) => {
        refits.push(seed);
        for (const t of trajectories) for (const s of t.steps) paid.set(s.action, s.reward);
      },
      ...(stateful && {
        refitState: () => new TextEncoder().encode(JSON.stringify([...paid])),
        loadRefitState: (bytes: Uint8Array) => {
          for (const [a, r] of JSON.parse(new TextDecoder().decode(bytes)) as [string, number][]) paid.set(a, r);
        },
      }),
    };
  };
  // Audits every 3 iterations: the half run below ends at iteration 8, off that schedule, where its last audit must not refit.
  const config = { ...COMMON, buffer, onPolicyAudit: { every: 3, episodes: 16, refit: true } };
  const dir = join(root, "refit");
  const model = learning();
  const s = await train(dir, config, {}, { experienceModel: model });
  const a = audits(dir);
  assert.equal(model.refits.length, a.filter((m) => m.iteration % 3 === 0).length, "one refit per scheduled audit (not the last iteration's own)");
  assert.equal(a[0].onPolicyAudit.exploitationRate, 1, "before any refit the planted arm is paid");
  assert.equal(a.at(-1)!.onPolicyAudit.exploitationRate ?? 0, 0, "after them it is not");
  // The scheduled audits' real steps now train something: they are real training interactions too.
  assert.equal(
    s.realInteractions,
    a.filter((m) => m.iteration % 3 === 0).reduce((n, m) => n + m.onPolicyAudit.steps, 0),
  );
  assert.ok(s.realInteractions > 0);
  // Without refit the same run keeps being exploited and trains on no real step.
  const plain = join(root, "plain");
  const p = await train(plain, { ...COMMON, buffer }, {}, { experienceModel: learning() });
  assert.equal(audits(plain).at(-1)!.onPolicyAudit.exploitationRate, 1);
  assert.equal(p.realInteractions, 0);

  // Stopped at a checkpoint and resumed: the model is refit from the kept audits, and the run goes on as one that never stopped.
  const half = join(root, "half");
  const first = learning();
  await train(half, { ...config, budget: COMMON.budget! / 2 }, {}, { experienceModel: first });
  // An audit file gone: the model cannot be rebuilt, and the resume says so.
  const damaged = join(root, "damaged");
  cpSync(half, damaged, { recursive: true });
  rmSync(auditFiles(damaged)[0].file);
  await assert.rejects(resumeTraining(damaged, {}, {}, { experienceModel: learning() }), /refit on \d+ real steps of its audits, but the audit files hold \d+/);
  const second = learning();
  await resumeTraining(half, {}, { budget: COMMON.budget }, { experienceModel: second });
  assert.deepEqual(second.refits.slice(0, first.refits.length), first.refits, "the resume refits from each kept audit, with its seed");
  const strip = (m: IterationMetrics) => {
    const {
      wallSeconds: _w,
      rolloutSeconds: _r,
      updateSeconds: _u,
      auditSeconds: _a,
      evalSeconds: _e,
      evalInteractions: _i,
      auditInteractions: _n,
      eval: _v,
      onPolicyAudit,
      ...rest
    } = m;
    // The half run's last iteration (8) audited as a last one does (its steps counted); nothing else differs.
    return m.iteration === 8 ? rest : { ...rest, onPolicyAudit };
  };
  assert.deepEqual(readMetrics(half).map(strip), readMetrics(dir).map(strip));

  // A model with a refit state: a checkpoint keeps it (the first after a refit, then every 50 iterations),
  // and a resume loads it and refits again only from the audits after it (those before are removed
  // here), to the same run.
  const stated = join(root, "stated");
  const third = learning(true);
  await train(stated, { ...config, budget: COMMON.budget! / 2 }, {}, { experienceModel: third });
  const { experience } = JSON.parse(readFileSync(join(stated, "checkpoints", "latest.json"), "utf8"));
  assert.match(experience.file, /^experience-\d+\.bin$/);
  const after = auditFiles(stated).filter((f) => f.iteration > experience.iteration && f.iteration % 3 === 0);
  assert.ok(experience.iteration > 0 && after.length > 0, "audits before the state and after it");
  for (const f of auditFiles(stated)) if (f.iteration <= experience.iteration) rmSync(f.file);
  const fourth = learning(true);
  await resumeTraining(stated, {}, { budget: COMMON.budget }, { experienceModel: fourth });
  assert.deepEqual(fourth.refits.slice(0, after.length), third.refits.slice(-after.length), "the audits after the state, refit again");
  assert.deepEqual(readMetrics(stated).map(strip), readMetrics(dir).map(strip));
  // The state a checkpoint names, gone: one clear error.
  const lostState = join(root, "lost-state");
  await train(lostState, { ...config, budget: COMMON.budget! / 2 }, {}, { experienceModel: learning(true) });
  rmSync(join(lostState, "checkpoints", JSON.parse(readFileSync(join(lostState, "checkpoints", "latest.json"), "utf8")).experience.file));
  await assert.rejects(
    resumeTraining(lostState, {}, {}, { experienceModel: learning(true) }),
    /experience-\d+\.bin: the experience model's refit state named by latest\.json is missing/,
  );

  // A model that cannot learn from real steps is refused, in one line; so is refit where there is no audit to learn from.
  const fixed: ExperienceModel = { id: "fixed", predict: async ({ state }) => ({ nextState: state, reward: 0, terminated: true, info: {} }) };
  await assert.rejects(
    train(join(root, "refused"), config, {}, { experienceModel: fixed }),
    /--refit needs an experience model that learns from real steps .*; fixed cannot/,
  );
  await assert.rejects(
    train(join(root, "real"), { ...config, mode: "real" }),
    /--refit learns from the on-policy audit's real replays: it needs the synthetic modes/,
  );
  await assert.rejects(
    train(join(root, "off"), { ...config, onPolicyAudit: { every: 0, refit: true } }, {}, { experienceModel: learning() }),
    /the audit is off/,
  );
});
