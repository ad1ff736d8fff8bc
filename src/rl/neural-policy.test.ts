import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidConfigError, Rng } from "../core/index.ts";
import { NeuralPolicy, type NeuralStepRecord } from "./neural-policy.ts";
import { packRecords, ReferenceThread, unpackRecords } from "./reference.ts";
import { packParams } from "./param-file.ts";
import { FEATURE_VERSION, featurize } from "./features.ts";
import { grpoConfigSchema, grpoUpdate, updateRecords } from "./grpo.ts";
import { ShopToyEnv } from "../testing/index.ts";
import { playEpisodes } from "../core/index.ts";

async function someRecords(policy: NeuralPolicy): Promise<NeuralStepRecord[]> {
  const env = new ShopToyEnv();
  const episodes = await playEpisodes(
    [env],
    policy,
    env.tasks(3, 1).map((task, i) => ({ task, rngSeed: i })),
  );
  return episodes.flatMap((e) => e.steps.map((s) => s.record));
}

/** A results page of two shirts, first in its episode. */
const shirts = () => ({
  task: { id: "t", instruction: "i want a red shirt under 30 dollars" },
  observation: "page: results\n[b00001] red shirt $20\n[b00002] blue shirt $25",
  actions: ["click[b00001]", "click[b00002]"],
  history: [] as string[],
});

test("backward matches finite differences of log-prob, entropy and value", async () => {
  const policy = new NeuralPolicy({ dim: 256, hidden: 4, seed: 3 });
  // Larger output weights than the default init, so every term has a gradient worth checking.
  const rng = new Rng(9);
  for (const net of [policy.networks.actor, policy.networks.critic]) {
    for (let j = 0; j < net.w.length; j++) net.w[j] = rng.uniform(-1, 1);
    for (let j = 0; j < net.u.length; j++) net.u[j] = rng.uniform(-0.5, 0.5);
  }
  const records = await someRecords(policy);
  assert.ok(records.length >= 6);
  const a = records.map(() => rng.uniform(-1, 1));
  const b = records.map(() => rng.uniform(-1, 1));
  const c = records.map(() => rng.uniform(-1, 1));
  const loss = () => {
    const out = policy.evaluate(records);
    let L = 0;
    records.forEach((_, i) => (L += a[i] * out.logProbs[i] + b[i] * out.entropies[i] + c[i] * out.values[i]));
    return L;
  };
  loss();
  policy.backward({ logProbs: Float64Array.from(a), entropies: Float64Array.from(b), values: Float64Array.from(c) });

  let checked = 0;
  for (const net of [policy.networks.actor, policy.networks.critic]) {
    const params = net.params();
    const grads = net.grads();
    for (let p = 0; p < params.length; p++) {
      // The entries with the largest gradients of each array.
      const order = Array.from(grads[p].keys())
        .sort((x, y) => Math.abs(grads[p][y]) - Math.abs(grads[p][x]))
        .slice(0, 3);
      for (const i of order) {
        if (Math.abs(grads[p][i]) < 1e-3) continue;
        const h = 1e-2;
        const saved = params[p][i];
        params[p][i] = saved + h;
        const up = loss();
        params[p][i] = saved - h;
        const down = loss();
        params[p][i] = saved;
        const numeric = (up - down) / (Math.fround(saved + h) - Math.fround(saved - h)); // the float32 step actually taken
        assert.ok(
          Math.abs(numeric - grads[p][i]) <= 2e-2 * Math.max(1, Math.abs(numeric)),
          `param array ${p}[${i}]: analytic ${grads[p][i]} vs numeric ${numeric}`,
        );
        checked++;
      }
    }
  }
  assert.ok(checked >= 15, `only ${checked} gradient entries were large enough to check`);
});

test("a clone behaves as its original, trains on as it would (Adam's state copied), and is its own", async () => {
  const policy = new NeuralPolicy({ dim: 512, hidden: 8, seed: 1 });
  const records = await someRecords(policy);
  const train = (p: NeuralPolicy, dLogProb: number) => {
    p.evaluate(records);
    p.backward({ logProbs: new Float64Array(records.length).fill(dLogProb), values: new Float64Array(records.length).fill(0.5) });
    p.step({ learningRate: 0.01, maxGradNorm: 1 });
  };
  for (let k = 0; k < 3; k++) train(policy, -1);
  const clone = policy.clone();
  const saved = new NeuralPolicy(policy.config);
  saved.load(policy.save());
  assert.deepEqual(clone.save(), policy.save(), "the same bytes as a checkpoint of it");
  assert.deepEqual(clone.evaluate(records), policy.evaluate(records));
  train(clone, 1);
  assert.deepEqual(policy.save(), saved.save(), "training the clone leaves the original as it was");
  train(policy, 1);
  assert.deepEqual(clone.save(), policy.save(), "the same update on both keeps them identical");
  assert.throws(() => new NeuralPolicy({ dim: 512, hidden: 4 }, policy), /copies one of its own shape: dim 512 hidden 8 into dim 512 hidden 4/);
});

test("save/load restores identical behaviour; another shape is refused by name", async () => {
  const policy = new NeuralPolicy({ dim: 512, hidden: 8, seed: 1 });
  const records = await someRecords(policy);
  // Take a few optimiser steps so Adam state is non-trivial.
  for (let k = 0; k < 3; k++) {
    policy.evaluate(records);
    policy.backward({ logProbs: new Float64Array(records.length).fill(-1), values: new Float64Array(records.length).fill(0.5) });
    policy.step({ learningRate: 0.01, maxGradNorm: 1 });
  }
  const copy = new NeuralPolicy({ dim: 512, hidden: 8, seed: 99 });
  copy.load(policy.save());
  assert.deepEqual(copy.evaluate(records), policy.evaluate(records));
  // The same update on both keeps them identical (Adam moments and step were restored).
  for (const p of [policy, copy]) {
    p.evaluate(records);
    p.backward({ logProbs: new Float64Array(records.length).fill(1) });
    p.step({ learningRate: 0.01, maxGradNorm: 1 });
  }
  assert.deepEqual(copy.evaluate(records), policy.evaluate(records));

  const other = new NeuralPolicy({ dim: 512, hidden: 4 });
  assert.throws(
    () => other.load(policy.save(), "ckpt.policy"),
    (e: Error) =>
      e instanceof InvalidConfigError &&
      /ckpt\.policy holds a policy of another shape \(policy=neural dim=512 hidden=8 .*this policy is policy=neural dim=512 hidden=4/.test(e.message),
  );
  assert.throws(() => other.load(policy.save().subarray(0, 1000), "cut.policy"), /cut\.policy (holds a policy of another shape|is truncated)/);
  const same = new NeuralPolicy({ dim: 512, hidden: 8 });
  assert.throws(() => same.load(policy.save().subarray(0, 5000), "cut.policy"), /cut\.policy is truncated or padded/);
  assert.throws(() => same.load(new TextEncoder().encode("hello"), "x.bin"), /x\.bin is not a dreamgym policy checkpoint/);
  // Read without drawing weights first: the same policy as drawn and then loaded, and the same checks.
  const read = NeuralPolicy.fromBytes(policy.save(), "ckpt.policy", { dim: 512, hidden: 8 });
  assert.deepEqual(read.save(), policy.save());
  assert.deepEqual(read.evaluate(records), policy.evaluate(records));
  assert.throws(() => NeuralPolicy.fromBytes(policy.save(), "ckpt.policy", { dim: 512, hidden: 4 }), /ckpt\.policy holds a policy of another shape/);
  assert.throws(() => NeuralPolicy.fromBytes(policy.save().subarray(0, 5000), "cut.policy", { dim: 512, hidden: 8 }), /cut\.policy is truncated or padded/);
  assert.throws(() => NeuralPolicy.fromBytes(policy.save(), "ckpt.policy", { dim: 512, hidden: 8, seed: 1.5 }), /seed must be a safe integer/);
  // A header of the right shape over arrays of other lengths (no save() writes one): refused, not set in part.
  const arrays = [...policy.networks.actor.state().arrays, ...policy.networks.critic.state().arrays];
  const short = packParams(
    "DGPOLICY1\n",
    { policy: "neural", featureVersion: FEATURE_VERSION, dim: 512, hidden: 8, adamSteps: [0, 0] },
    arrays.map((a, i) => (i === 0 ? a.subarray(0, 10) : a)),
  );
  assert.throws(() => same.load(short, "short.policy"), /short\.policy holds arrays of other lengths/);
  assert.throws(() => NeuralPolicy.fromBytes(short, "short.policy", { dim: 512, hidden: 8 }), /short\.policy holds arrays of other lengths/);
});

test("greedy acting is deterministic and sampling follows the seed", async () => {
  const policy = new NeuralPolicy({ dim: 1024, hidden: 8, seed: 2 });
  const env = new ShopToyEnv();
  const tasks = env.tasks(4, 5);
  const run = (seed: number) =>
    playEpisodes(
      [env],
      policy,
      tasks.map((task, i) => ({ task, rngSeed: seed + i })),
    );
  const [x, y, z] = [await run(1), await run(1), await run(100)];
  assert.deepEqual(
    x.map((e) => e.steps.map((s) => s.action)),
    y.map((e) => e.steps.map((s) => s.action)),
  );
  assert.notDeepEqual(
    x.map((e) => e.steps.map((s) => s.action)),
    z.map((e) => e.steps.map((s) => s.action)),
  );
  for (const e of x) for (const s of e.steps) assert.ok(s.logProb <= 0 && Number.isFinite(s.logProb));
});

test("GRPO's reference: chosenLogProbs are evaluate's log-probabilities, and the reference thread gives the same from packed records", async () => {
  const policy = new NeuralPolicy({ dim: 512, hidden: 8, seed: 3 });
  const records = await someRecords(policy);
  assert.ok(records.length > 5);
  const expected = policy.evaluate(records).logProbs;
  assert.deepEqual(policy.chosenLogProbs(records), expected);
  assert.deepEqual(policy.chosenLogProbs(unpackRecords(packRecords(records)!)), expected, "packed and unpacked");
  // Repeated steps (scored once) among others that differ from them only in the choice.
  const others = records.filter((r) => r.features.candidates.length > 1).map((r) => ({ ...r, choice: r.choice === 0 ? 1 : 0 }));
  const repeated = [...records, ...unpackRecords(packRecords(records)!), ...others, ...records];
  assert.ok(others.length > 0);
  assert.deepEqual(policy.chosenLogProbs(repeated), policy.evaluate(repeated).logProbs);
  // A record with a hole among its candidates scores NaN, as evaluate's, rather than throwing.
  const holey = [
    {
      ...records[0],
      features: {
        ...records[0].features,
        candidates: [records[0].features.candidates[0], , records[0].features.candidates[0]] as (typeof records)[0]["features"]["candidates"],
      },
    },
    records[0],
  ];
  assert.deepEqual(policy.chosenLogProbs([...holey, ...holey]), policy.evaluate([...holey, ...holey]).logProbs);
  const loose = records.map((r) => ({
    ...r,
    features: { ...r.features, candidates: r.features.candidates.map((c) => ({ idx: c.idx, val: Float64Array.from(c.val) as unknown as Float32Array })) },
  }));
  assert.equal(packRecords(loose), null, "features in other arrays are not packed (the thread would round them)");
  const thread = new ReferenceThread(policy);
  try {
    assert.equal(await thread.logProbs(records), null, "not up yet: the caller scores them itself");
    assert.ok(await thread.ready);
    assert.deepEqual(await thread.logProbs(records), expected);
  } finally {
    thread.close();
  }
});

test("a GRPO update given the reference's scores (from its thread) trains as one that scores them itself", async () => {
  const policy = new NeuralPolicy({ dim: 512, hidden: 8, seed: 4 });
  const reference = policy.clone();
  const env = new ShopToyEnv();
  const episodes = await playEpisodes(
    [env],
    policy,
    env.tasks(2, 1).flatMap((task, t) => [0, 1, 2].map((i) => ({ task, rngSeed: 10 * t + i }))),
  );
  const groups = [episodes.slice(0, 3), episodes.slice(3, 6)];
  const config = grpoConfigSchema.parse({ klCoef: 0.1 });
  const given = reference.chosenLogProbs(updateRecords(groups) as NeuralStepRecord[]);
  const a = policy.clone();
  const b = policy.clone();
  const statsA = grpoUpdate(a, reference, groups, config, new Rng(5));
  const statsB = grpoUpdate(b, reference, groups, config, new Rng(5), given);
  assert.ok(statsA.kl !== undefined);
  assert.deepEqual(statsB, statsA);
  assert.deepEqual(b.save(), a.save());
  // A subclass that scores otherwise: its own chosen log-probabilities are its evaluate's.
  class Tempered extends NeuralPolicy {
    override evaluate(records: readonly NeuralStepRecord[]) {
      const e = super.evaluate(records);
      return { ...e, logProbs: e.logProbs.map((x) => x / 2) };
    }
  }
  const tempered = new Tempered({ dim: 512, hidden: 8, seed: 4 });
  const recs = updateRecords(groups) as NeuralStepRecord[];
  assert.deepEqual(tempered.chosenLogProbs(recs), tempered.evaluate(recs).logProbs);
  // The scores given are the ones read (other scores, another KL).
  const other = grpoUpdate(policy.clone(), reference, groups, config, new Rng(5), new Float64Array(given.length));
  assert.notEqual(other.kl, statsA.kl);
});

test("a step met again gets the features it got (kept, not made again); steps that differ anywhere do not share them", async () => {
  const policy = new NeuralPolicy({ dim: 512, hidden: 8, seed: 5 });
  const task = { id: "t", instruction: "i want a red shirt under 30 dollars" };
  const page = "page: results\n[b00001] red shirt $20\n[b00002] blue shirt $25";
  const input = { task, observation: page, actions: ["click[b00001]", "click[b00002]"], history: ["search[red shirt]"] };
  const rng = new Rng(1);
  const a = await policy.act(input, { rng });
  const b = await policy.act({ ...input, actions: [...input.actions], history: [...input.history] }, { rng });
  assert.equal(b.record.features, a.record.features, "the same step: its kept features");
  assert.deepEqual(a.record.features, featurize(input, 512), "as featurize makes them");
  assert.equal(policy.recordFor(input, "click[b00002]")!.features, a.record.features);
  // Inputs a key made by joining the parts would confuse: each gets its own features.
  const others = [
    { ...input, actions: ["click[b00001]click[b00002]"] },
    { ...input, actions: ["click[b00001]", "click[b00002]"], history: ["search[red", "shirt]"] },
    { ...input, observation: `${page}\n`, history: [] },
    { ...input, task: { id: "t2", instruction: task.instruction.slice(0, -1) } },
    // A key joined with a separator (the first line of the page moved into the instruction).
    { ...input, task: { id: "t3", instruction: `${task.instruction}\npage: results` }, observation: page.slice("page: results\n".length) },
    // As many actions, or as long a history, with other contents (a key of their counts, or of the last action taken).
    { ...input, actions: ["click[b00002]", "click[b00001]"] },
    { ...input, history: ["click[b00001]"] },
    { ...input, history: ["search[red shirt]", "click[b00001]"] },
    { ...input, history: ["search[blue shirt]", "click[b00001]"] },
  ];
  const met = [a.record.features];
  for (const other of others) {
    const d = await policy.act(other, { rng });
    for (const f of met) assert.notEqual(d.record.features, f);
    assert.deepEqual(d.record.features, featurize(other, 512));
    met.push(d.record.features);
  }
  // An env's own features may read more of the input: made each time.
  let calls = 0;
  const own = new NeuralPolicy({ dim: 512, hidden: 8, features: { name: "counted", featurize: (x, dim) => (calls++, featurize(x, dim)) } });
  await own.act(input, { rng });
  await own.act(input, { rng });
  assert.equal(calls, 2);
});

test("act keeps a step's scores while the weights stand: a step met again scores as a fresh copy of the policy, after an update, a load, or a change through `networks`", async () => {
  const policy = new NeuralPolicy({ dim: 512, hidden: 16, seed: 5 });
  const input = shirts();
  const greedy = { rng: new Rng(1), greedy: true };
  // What a policy with these weights and nothing kept gives (its copy keeps nothing of this one's).
  const fresh = async () => {
    const d = await policy.clone().act(input, greedy);
    return [d.logProb, d.value];
  };
  const mine = async () => {
    const d = await policy.act(input, greedy);
    return [d.logProb, d.value];
  };
  const first = await mine();
  assert.deepEqual(await mine(), first);
  assert.deepEqual(await fresh(), first);
  // An update (a push towards the second action) changes the weights.
  const records = [(await policy.act(input, greedy)).record, policy.recordFor(input, "click[b00002]")!];
  policy.evaluate(records);
  policy.backward({ logProbs: Float64Array.from([-1, 1]), values: Float64Array.from([0.5, 0.5]) });
  policy.step({ learningRate: 0.05, maxGradNorm: 0 });
  const updated = await mine();
  assert.notDeepEqual(updated, first);
  assert.deepEqual(updated, await fresh());
  // Another policy's weights loaded.
  const other = new NeuralPolicy({ dim: 512, hidden: 16, seed: 6 });
  policy.load(other.save());
  const loaded = await mine();
  assert.notDeepEqual(loaded, updated);
  assert.deepEqual(loaded, [(await other.act(input, greedy)).logProb, (await other.act(input, greedy)).value]);
  // Weights changed through `networks`: every feature's linear weight, so the scores move. Once read,
  // a policy keeps no scores: a change made through the same reference after a later act is seen too.
  const { actor, critic } = policy.networks;
  for (let f = 0; f < actor.u.length; f++) actor.u[f] += f % 2 ? 0.3 : -0.3;
  critic.b0[0] += 1;
  const changed = await mine();
  assert.notDeepEqual(changed, loaded);
  assert.deepEqual(changed, await fresh());
  for (let f = 0; f < actor.u.length; f++) actor.u[f] -= f % 3 ? 0.2 : -0.4;
  const again = await mine();
  assert.notDeepEqual(again, changed);
  assert.deepEqual(again, await fresh());
});

test("evaluate works out a step met again in its batch once: the same outputs and gradients as copies of it worked out apart", async () => {
  const make = () => new NeuralPolicy({ dim: 512, hidden: 16, seed: 7 });
  const shared = make();
  const apart = make();
  // The critic's output weights start at zero (every value 0): set, so that values and their gradients show.
  for (const p of [shared, apart]) p.networks.critic.w.fill(0.3);
  const input = shirts();
  const other = { ...input, history: ["click[b00002]"] };
  const a = shared.recordFor(input, "click[b00001]")!;
  const b = shared.recordFor(other, "click[b00002]")!;
  const a2 = shared.recordFor(input, "click[b00002]")!;
  assert.equal(a2.features, a.features, "one features object for the step");
  const records = [a, b, a2, a, b];
  // The same records with each features object copied: nothing shared.
  const copies = records.map((r) => ({ features: structuredClone(r.features), choice: r.choice }));
  const outShared = shared.evaluate(records);
  const outApart = apart.evaluate(copies);
  assert.deepEqual(outShared, outApart);
  const grads = {
    logProbs: Float64Array.from([0.5, -1, 0.25, 1, 0.75]),
    entropies: Float64Array.from([0.1, 0.2, 0.3, 0.4, 0.5]),
    values: Float64Array.from([1, -1, 0.5, 0, 2]),
  };
  shared.backward(grads);
  apart.backward(grads);
  for (const net of ["actor", "critic"] as const)
    shared.networks[net].grads().forEach((g, k) => assert.deepEqual([...g], [...apart.networks[net].grads()[k]], `${net} gradient ${k}`));
});
