import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InvalidConfigError, type HistoryStep, type Policy, type Prediction, type Trajectory } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { runEpisode } from "../envs/index.ts";
import { RandomPolicy } from "../envs/policies.ts";
import { OraclePolicy, RulePolicy, WebShopEnv, webshopAbstraction } from "../envs/webshop/index.ts";
import { AlfWorldEnv, AlfWorldExpert, alfworldAbstraction } from "../envs/alfworld/index.ts";
import {
  abstractTrajectory,
  auditModel,
  createExperienceModel,
  EmbeddedExperienceModel,
  LearnedExperienceModel,
  retrieveDemos,
  trainLearnedModel,
  transitionFeatures,
} from "./index.ts";
import { chosenOptions, purchaseKey, PurchaseSupport, requestOf } from "./transition-features.ts";
import { combine, UNSUPPORTED_TOP, type HeadOutputs } from "./learned-model.ts";
import type { ScoreNet } from "../rl/index.ts";

/** Real WebShop episodes: `n` tasks of the split from `start`, one policy. */
async function episodes(env: WebShopEnv, policy: (env: WebShopEnv) => Policy, start: number, n: number): Promise<Trajectory[]> {
  const tasks = env.tasks().slice(start, start + n);
  const out: Trajectory[] = [];
  for (const [i, task] of tasks.entries()) out.push(await runEpisode(env, policy(env), { envName: "webshop", task, seed: start + i }));
  return out;
}

// One small but real WebShop world for every test here: a seed buffer of train-split episodes
// (oracle, random and rule policies) and held-out test-split episodes of other goals.
const world = (async () => {
  const train = new WebShopEnv({ split: "train" });
  const test = new WebShopEnv({ split: "test" });
  const abstraction = webshopAbstraction(train.catalogue);
  const seed = [
    ...(await episodes(train, (e) => new OraclePolicy(e), 0, 250)),
    ...(await episodes(train, () => new RandomPolicy(), 250, 120)),
    ...(await episodes(train, () => new RulePolicy(), 370, 150)),
  ];
  const held = [...(await episodes(test, (e) => new OraclePolicy(e), 0, 40)), ...(await episodes(test, () => new RulePolicy(), 40, 40))];
  const buffer = ReplayBuffer.open(join(mkdtempSync(join(tmpdir(), "dreamgym-learned-")), "seed.db"));
  await buffer.appendTrajectories(
    seed.map((t) => abstractTrajectory(t, abstraction)),
    { seed: true },
  );
  await Promise.all([train.close(), test.close()]);
  return { abstraction, buffer, held };
})();

const small = { epochs: 6, members: 3 };
// The `small` model of the seed buffer, trained once (~0.5 s); each test loads a copy of its own from the
// bytes (a loaded model predicts as the trained one: the round-trip test), so one test's changes stay its own.
const trainedSmall = world.then(({ abstraction, buffer }) => {
  const { model, validation } = trainLearnedModel(buffer, { abstraction, ...small });
  return { bytes: model.save(), validation };
});
const smallModel = async (): Promise<LearnedExperienceModel> => {
  const [{ abstraction }, { bytes }] = await Promise.all([world, trainedSmall]);
  return LearnedExperienceModel.load(bytes, "model.bin", { abstraction });
};

test("the learned model beats the kNN model on held-out reward error (ε_R) on WebShop", async (t) => {
  const { abstraction, buffer, held } = await world;
  const { validation } = await trainedSmall;
  const model = await smallModel();
  assert.ok(validation && validation.tasks > 0 && validation.steps > 0, "tasks are held out for validation");
  const learned = await auditModel(held, { model, abstraction, buffer });
  const knn = await auditModel(held, { model: new EmbeddedExperienceModel({ abstraction }), abstraction, buffer });
  t.diagnostic(
    `ε_R learned ${learned.rewardErrorRate.toFixed(3)} vs kNN ${knn.rewardErrorRate.toFixed(3)}; MAE ${learned.rewardMAE.toFixed(3)} vs ${knn.rewardMAE.toFixed(3)}`,
  );
  assert.ok(learned.rewardErrorRate < knn.rewardErrorRate, `ε_R learned ${learned.rewardErrorRate} vs kNN ${knn.rewardErrorRate}`);
  assert.ok(learned.rewardMAE < knn.rewardMAE, `reward MAE learned ${learned.rewardMAE} vs kNN ${knn.rewardMAE}`);
  assert.ok(learned.terminationAccuracy >= 0.98, `termination accuracy ${learned.terminationAccuracy}`);
  assert.ok(learned.invalidRate === 0, "a step with no usable demo keeps its state instead of failing");
});

test("training is deterministic: same buffer and seed, same bytes; another seed, another model", async () => {
  const { abstraction, buffer } = await world;
  const opts = { abstraction, epochs: 2, members: 2 };
  const a = trainLearnedModel(buffer, { ...opts, seed: 3 }).model.save();
  const b = trainLearnedModel(buffer, { ...opts, seed: 3 }).model.save();
  const c = trainLearnedModel(buffer, { ...opts, seed: 4 }).model.save();
  assert.ok(Buffer.from(a).equals(Buffer.from(b)));
  assert.ok(!Buffer.from(a).equals(Buffer.from(c)));
});

test("a model file round-trips, loads through createExperienceModel (learned:FILE), and its u is the members' disagreement", async () => {
  const { abstraction, buffer, held } = await world;
  const { model } = trainLearnedModel(buffer, { abstraction, epochs: 2, members: 3 });
  const file = join(mkdtempSync(join(tmpdir(), "dreamgym-learned-file-")), "model.bin");
  writeFileSync(file, model.save());
  const handle = createExperienceModel(`learned:${file}`, { abstraction });
  assert.ok(handle.model instanceof LearnedExperienceModel);
  assert.equal(handle.model.id, model.id);
  assert.equal(handle.tokens(), 0);
  assert.ok(Buffer.from((handle.model as LearnedExperienceModel).save()).equals(Buffer.from(model.save())));
  // The same predictions, step for step.
  const steps = held[0].steps;
  const state = abstraction.abstract(steps.at(-1)!.observation);
  const input = { task: held[0].task, history: [], state, action: steps.at(-1)!.action, demos: [] };
  const [p, q] = [await model.predict(input), await handle.model.predict(input)];
  assert.deepEqual(p, q);
  assert.equal(typeof p.info.u, "number");
  assert.ok((p.info.u as number) >= 0 && (p.info.u as number) <= 1);
  assert.equal(p.info.u, Math.max(p.info.u_reward as number, p.info.u_outcome as number));
  await handle.close();
  // One member cannot disagree with itself.
  const single = trainLearnedModel(buffer, { abstraction, epochs: 1, members: 1 }).model;
  assert.equal((await single.predict(input)).info.u, 0);
});

test("a bad model file is one clear InvalidConfigError", async () => {
  const { abstraction, buffer } = await world;
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-learned-bad-"));
  const bytes = trainLearnedModel(buffer, { abstraction, epochs: 1, members: 1 }).model.save();
  const cases: [string, Uint8Array | null, RegExp][] = [
    ["missing.bin", null, /cannot read the learned model .*missing\.bin: no such file/],
    ["garbage.bin", Buffer.from("not a model at all\n\x00\x01"), /is not a dreamgym learned experience model/],
    ["truncated.bin", bytes.subarray(0, bytes.length - 8), /truncated or padded/],
    ["header.bin", Buffer.from("DGEXPMODEL1\n{not json\n"), /header is not valid JSON/],
  ];
  for (const [name, content, message] of cases) {
    const file = join(dir, name);
    if (content) writeFileSync(file, content);
    assert.throws(
      () => createExperienceModel(`learned:${file}`, { abstraction }),
      (e: unknown) => {
        assert.ok(e instanceof InvalidConfigError, String(e));
        assert.match(e.message, message);
        assert.ok(!e.message.includes("\n"), "one line");
        return true;
      },
    );
  }
  const other = { ...abstraction, env: "alfworld" };
  writeFileSync(join(dir, "ok.bin"), bytes);
  assert.throws(() => createExperienceModel(`learned:${join(dir, "ok.bin")}`, { abstraction: other }), /is a model of webshop, not of alfworld/);
  assert.throws(() => createExperienceModel("learned:", { abstraction }), /needs a model file/);
});

test("a return action leads back to this episode's own earlier page, not a neighbour's copy", async () => {
  const { abstraction, buffer, held } = await world;
  const model = await smallModel();
  const rules = (model.info.returns ?? []).map((r) => `${r.action} ${r.from} → ${r.to}`);
  assert.ok(rules.includes("click[< prev] page: item → page: results"), `learned returns: ${rules.join("; ")}`);
  assert.ok(!rules.some((r) => r.startsWith("click[buy now]")), "buying does not return anywhere");
  // A held-out episode (a goal the buffer never saw) that opened an item from its results page.
  const t = held.map((h) => abstractTrajectory(h, abstraction)).find((h) => h.steps.length >= 3 && h.steps[1].next_observation.startsWith("page: item"))!;
  assert.ok(t, "a held-out episode opens an item");
  const [search, open] = t.steps;
  const history = [search, open].map((s) => ({ state: s.observation, action: s.action, nextState: s.next_observation, reward: s.reward }));
  const state = open.next_observation;
  const demos = await retrieveDemos(buffer, abstraction, { state, action: "click[< prev]" }, { k: 5 });
  const knn = await new EmbeddedExperienceModel({ abstraction }).predict({ task: t.task, history, state, action: "click[< prev]", demos });
  assert.notEqual(knn.nextState, search.next_observation, "the kNN model copies another episode's results page");
  const p = await model.predict({ task: t.task, history, state, action: "click[< prev]", demos });
  assert.equal(p.nextState, search.next_observation, "back to the results page this episode came from");
  assert.equal(p.terminated, false);
});

test("the kNN next state is kept with the demo list retrieval hands out for its query, never with a list of one's own", async () => {
  const { abstraction, buffer, held } = await world;
  const model = await smallModel();
  const knn = (model as unknown as { knn: EmbeddedExperienceModel }).knn;
  const predict = knn.predict.bind(knn);
  let worked = 0;
  knn.predict = (input) => (worked++, predict(input));
  // Held-out episodes' steps, twice over: with retrieval's own lists, and with copies of them.
  const steps = [];
  for (const t of held.slice(0, 12)) {
    const history: HistoryStep[] = [];
    for (const s of t.steps) {
      const state = abstraction.abstract(s.observation);
      const demos = await retrieveDemos(buffer, abstraction, { state, action: s.action }, { k: 5, realOnly: true });
      steps.push({ task: t.task, history: [...history], state, action: s.action, demos });
      history.push({ state, action: s.action, nextState: abstraction.abstract(s.next_observation), reward: s.reward });
    }
  }
  const kept = [];
  for (const step of [...steps, ...steps]) kept.push(await model.predict(step));
  assert.equal(worked, steps.length, "the second time round, every kNN answer was kept");
  const copied = [];
  for (const step of [...steps, ...steps]) copied.push(await model.predict({ ...step, demos: [...step.demos] }));
  assert.equal(worked, 3 * steps.length, "a list of one's own is worked out each time");
  assert.deepEqual(kept, copied);
  // Another task on the same list: its own answer (the instruction is written into the next page).
  const other = { ...steps[0].task, id: "other", instruction: "i need a blue lamp" };
  const elsewhere = await model.predict({ ...steps[0], task: other });
  assert.equal(worked, 3 * steps.length + 1);
  assert.deepEqual(elsewhere, await model.predict({ ...steps[0], task: other, demos: [...steps[0].demos] }));
  // A list of one's own, changed between two asks, is read anew.
  const mine = [...steps[0].demos];
  const full = await model.predict({ ...steps[0], demos: mine });
  mine.length = 0;
  const none = await model.predict({ ...steps[0], demos: mine });
  assert.notDeepEqual(none, full);
  assert.equal(none.info.next_state, "unchanged (no usable demo)");
});

test("predict reads back the memo key prepare made only for that very step: another step on the same history list gets its own estimate", async () => {
  const { abstraction, buffer, held } = await world;
  const { bytes } = await trainedSmall;
  const model = LearnedExperienceModel.load(bytes, "model.bin", { abstraction });
  assert.ok(await model.startEstimateThread(), "prepare makes keys where the thread runs");
  const t = held.map((h) => abstractTrajectory(h, abstraction)).find((h) => h.steps.length >= 3)!;
  const [a, b, c] = t.steps;
  const history: HistoryStep[] = [];
  const asked: { task: typeof t.task; history: HistoryStep[]; state: string; action: string; demos: Awaited<ReturnType<typeof retrieveDemos>> }[] = [];
  const got: Prediction[] = [];
  // `prepare` told of one step, `predict` asked about another (or the same) on the same list.
  const ask = async (told: { observation: string; action: string }, state: string, action: string, change?: () => void) => {
    model.prepare({ task: t.task, history, state: told.observation, action: told.action });
    change?.();
    const demos = await retrieveDemos(buffer, abstraction, { state, action }, { k: 5, realOnly: true });
    asked.push({ task: t.task, history: [...history], state, action, demos });
    got.push(await model.predict({ task: t.task, history, state, action, demos }));
  };
  await ask(a, a.observation, a.action);
  await ask(a, a.observation, b.action);
  await ask(a, b.observation, a.action);
  history.push({ state: a.observation, action: a.action, nextState: a.next_observation, reward: a.reward });
  await ask(b, b.observation, b.action);
  // The same length, its last step another object, between prepare and predict.
  await ask(b, b.observation, b.action, () => (history[0] = { state: b.observation, action: b.action, nextState: b.next_observation, reward: b.reward }));
  await ask(c, c.observation, c.action);
  model.closeEstimateThread();
  // Each as a model that never saw the others works it out.
  const want = [];
  for (const step of asked) want.push(await LearnedExperienceModel.load(bytes, "model.bin", { abstraction }).predict(step));
  assert.deepEqual(got, want);
  assert.notDeepEqual(got[3], got[4], "the history changed: another estimate");
});

test("the option a group counts is its last click on this page, as the site keeps it", () => {
  const page = [
    "page: item",
    "instruction: Find me a shirt with fit type: women, and size: large",
    "[back to search] [< prev]",
    "fit type: [men] [women] [youth]",
    "size: [small] [large]",
    "A Shirt",
    "Price: $10.00",
    "Rating: N.A.",
    "[description] [features] [reviews] [buy now]",
  ].join("\n");
  const results = "page: results\ninstruction: Find me a shirt\n[back to search] [next >]\nPage 1 (Total results: 50)\n[b000000001] A Shirt | $10.00";
  const at = (action: string, state = page) => ({ state, action, nextState: page, reward: 0 });
  const history = [at("click[b000000001]", results), at("click[women]"), at("click[large]"), at("click[men]")];
  assert.deepEqual(Object.fromEntries(chosenOptions(history, page)), { "fit type": "men", size: "large" });
  // The values chosen before the item was opened (another page) do not count.
  assert.deepEqual(Object.fromEntries(chosenOptions([at("click[small]"), at("click[b000000001]", results)], page)), {});
  // Women then men is not the purchase women alone is: the features differ where the choice does.
  const x = (h: typeof history) =>
    transitionFeatures(
      { task: { id: "t", instruction: "Find me a shirt with fit type: women, and size: large" }, history: h, state: page, action: "click[buy now]" },
      8192,
    );
  const right = x([at("click[b000000001]", results), at("click[large]"), at("click[women]")]);
  const wrong = x([at("click[b000000001]", results), at("click[women]"), at("click[large]"), at("click[men]")]);
  const set = (v: { idx: Int32Array }) => new Set(v.idx);
  assert.ok(
    [...set(right)].some((i) => !set(wrong).has(i)),
    "a wrong last click changes the features",
  );
});

test("an item the data never opened gets its page from its listing, not another item's copied page", async () => {
  const { abstraction, buffer, held } = await world;
  const opened = new Set<string>();
  for (const t of buffer.trajectories({ env: "webshop" })) for (const s of t.steps) if (/^click\[b[0-9a-z]{9}\]$/.test(s.action)) opened.add(s.action);
  // A held-out results page (goals the buffer never saw) listing a product no episode opened.
  const env = new WebShopEnv({ split: "test" });
  try {
    const t = held.map((h) => abstractTrajectory(h, abstraction)).find((h) => h.steps[0]?.next_observation.startsWith("page: results"))!;
    const state = t.steps[0].next_observation;
    const action = abstraction.actions(state)!.find((a) => /^click\[b[0-9a-z]{9}\]$/.test(a) && !opened.has(a))!;
    assert.ok(action, "the page lists a product the buffer never opened");
    const history = [{ state: t.steps[0].observation, action: t.steps[0].action, nextState: state, reward: 0 }];
    const demos = await retrieveDemos(buffer, abstraction, { state, action }, { k: 5 });
    const p = await new EmbeddedExperienceModel({ abstraction }).predict({ task: t.task, history, state, action, demos });
    // The real page of that product: its title and price are what the listing said.
    await env.reset({ task: t.task });
    await env.step(t.steps[0].action);
    const real = abstraction.abstract((await env.step(action)).observation).split("\n");
    const lines = p.nextState.split("\n");
    assert.equal(lines[0], "page: item");
    const title = real[real.findIndex((l) => l.startsWith("Price: ")) - 1];
    assert.equal(lines[lines.findIndex((l) => l.startsWith("Price: ")) - 1], title, "the product's own title");
    assert.equal(
      lines.find((l) => l.startsWith("Price: ")),
      real.find((l) => l.startsWith("Price: ")),
      "the product's own price",
    );
    assert.ok(!lines.some((l) => /^[^[\]:]{1,40}:\s*\[/.test(l)), "no option groups it cannot know");
    assert.ok(lines.at(-1)!.includes("[buy now]"));
    assert.equal(p.terminated, false);
    assert.match(String(p.info.next_state), /never opened/);
  } finally {
    await env.close();
  }
});

test("the ensemble pays the top reward only where it is sure (≥ 0.9), else the expected reward", () => {
  const rewards = { min: 0, max: 1, dense: false };
  const members = (top: number): HeadOutputs[] => [top - 0.05, top, top + 0.05].map((t) => ({ end: 1, top: t, bottom: 0, mid: 0.5 }));
  // Even odds of a success: paying 1 there is what the policy learned to seek out.
  const unsure = combine(members(0.6), rewards);
  assert.ok(unsure.reward < 0.9 && unsure.reward > 0.5, `reward ${unsure.reward}`);
  assert.ok(Math.abs(unsure.reward - (0.6 + 0.4 * 0.5)) < 1e-9, `reward ${unsure.reward}`);
  assert.equal(combine(members(0.93), rewards).reward, 1);
  // Sure of the bottom: the bottom, as the env pays it.
  assert.equal(
    combine(
      [0.95, 0.96, 0.97].map((b) => ({ end: 1, top: 0, bottom: b, mid: 0.5 })),
      rewards,
    ).reward,
    0,
  );
});

test("a purchase no real episode made in full (this product for this request) is never paid the top, however sure the members are", () => {
  const rewards = { min: 0, max: 1, dense: false };
  const sure = [0.95, 0.96, 0.97].map((t) => ({ end: 1, top: t, bottom: 0, mid: 0.6 }));
  assert.equal(combine(sure, rewards, true).reward, 1);
  const unsupported = combine(sure, rewards, false);
  assert.ok(Math.abs(unsupported.reward - (UNSUPPORTED_TOP + (1 - UNSUPPORTED_TOP) * 0.6)) < 1e-9, `reward ${unsupported.reward}`);
  assert.ok(unsupported.reward < 1);
  // Unsure members pay less still: the cap only lowers.
  const unsure = [0.2, 0.25, 0.3].map((t) => ({ end: 1, top: t, bottom: 0, mid: 0.6 }));
  assert.ok(Math.abs(combine(unsure, rewards, false).reward - combine(unsure, rewards, true).reward) < 1e-9);
  assert.equal(
    requestOf("Find me loose fit women's tops with short sleeve with color: c3-black, and size: small, and price lower than 50.00 dollars"),
    "find me loose fit women s tops",
    "from the first ' with ' that leads to an option name",
  );
  const support = new PurchaseSupport([["b0\tfind me x", ["t1", "t2"]]]);
  assert.equal(support.others("b0\tfind me x", "t1"), 1, "a task's own purchase is no evidence for itself");
  assert.equal(support.others("b0\tfind me x", ""), 2);
  assert.equal(support.others("b1\tfind me x", ""), 0);
});

test("the learned model pays the top only for purchases its data made in full: with the support taken away, none", async () => {
  const { abstraction, buffer } = await world;
  const model = await smallModel();
  assert.ok((model.info.support ?? []).length > 0, "the oracle's purchases are in the model file");
  const support = new PurchaseSupport(model.info.support);
  const members = (model as unknown as { members: ScoreNet[][] }).members;
  const none = new LearnedExperienceModel({ ...model.info, support: [] }, members, { abstraction });
  let purchases = 0,
    top = 0,
    topNone = 0;
  for (const t of buffer.trajectories({ source: "real" })) {
    if (!t.success) continue;
    const history: HistoryStep[] = [];
    for (const s of t.steps) {
      const input = { task: t.task, history, state: abstraction.abstract(s.observation), action: s.action };
      const key = purchaseKey(input);
      if (s.terminated && key !== undefined && support.others(key, "") > 0) {
        purchases++;
        if (model.estimate(input).reward === 1) top++;
        if (none.estimate(input).reward === 1) topNone++;
      }
      history.push({ state: input.state, action: s.action, nextState: abstraction.abstract(s.next_observation, s.info), reward: s.reward });
    }
  }
  assert.ok(purchases > 50, `${purchases} supported purchases`);
  assert.ok(top > purchases / 2, `${top} of ${purchases} paid the top`);
  assert.equal(topNone, 0);
});

test("dense rewards: a step pays the likeliest of top, bottom and in-between, as the data pays it, never a fraction of each", () => {
  const dense = { min: 0, max: 5, dense: true };
  const values = [0, 1, 5];
  const out = (top: number, bottom: number, mid: number): HeadOutputs[] => [{ end: 0, top, bottom, mid }];
  // Mostly nothing: 0, not the 0.05·5 + … an expected value would pay on every step.
  assert.equal(combine(out(0.01, 0.9, 0.2), dense, true, values).reward, 0);
  // Likely a gem (in-between, share ≈ 0.2 of the range): the data's 1, not 0.98.
  assert.equal(combine(out(0.05, 0.1, 0.196), dense, true, values).reward, 1);
  // Likely the chest: the top.
  assert.equal(combine(out(0.7, 0.5, 0.2), dense, true, values).reward, 5);
  // Without the data's values (a model from before): the in-between reward itself.
  assert.ok(Math.abs(combine(out(0.05, 0.1, 0.196), dense).reward - 0.98) < 1e-9);
  // Outcome rewards keep the expected value where the members are unsure (the WebShop rule).
  assert.ok(Math.abs(combine(out(0.6, 0, 0.5), { min: 0, max: 1, dense: false }).reward - 0.8) < 1e-9);
});

test("refit (Dyna): the members learn from real steps the run paid for, so the purchases they overrated are paid as the real env paid them; deterministic by seed", async () => {
  const { abstraction, buffer, held } = await world;
  const { bytes } = await trainedSmall;
  const load = () => LearnedExperienceModel.load(bytes, "model.bin", { abstraction });
  // The ending steps of held-out goals' real episodes: what the model pays for them against what they earned.
  const endingError = (m: LearnedExperienceModel) => {
    let sum = 0;
    let n = 0;
    for (const t of held) {
      const history: HistoryStep[] = [];
      for (const s of t.steps) {
        const state = abstraction.abstract(s.observation);
        if (s.terminated) {
          sum += Math.abs(m.estimate({ task: t.task, history, state, action: s.action }).reward - s.reward);
          n++;
        }
        history.push({ state, action: s.action, nextState: abstraction.abstract(s.next_observation), reward: s.reward });
      }
    }
    return sum / n;
  };
  // The same model is asked before and after: what it remembered of its answers goes with the refit.
  const refit = load();
  const before = endingError(refit);
  const { steps } = refit.refit(held, 7);
  // Three audits' worth: the same real steps learned from again, as a run refits after each audit.
  refit.refit(held, 8);
  refit.refit(held, 9);
  assert.equal(
    steps,
    held.reduce((n, t) => n + t.steps.length, 0),
  );
  const after = endingError(refit);
  assert.ok(after < 0.8 * before, `ending-step reward error on the refit episodes ${before.toFixed(3)} → ${after.toFixed(3)}`);
  // Same model, steps and seed: same bytes; another seed, another model; nothing to learn from, no change.
  const again = load();
  for (const seed of [7, 8, 9]) again.refit(held, seed);
  assert.ok(Buffer.from(again.save()).equals(Buffer.from(refit.save())));
  const other = load();
  for (const seed of [7, 8, 10]) other.refit(held, seed);
  assert.ok(!Buffer.from(other.save()).equals(Buffer.from(refit.save())));
  const idle = load();
  assert.equal(idle.refit([], 7).steps, 0);
  assert.ok(Buffer.from(idle.save()).equals(Buffer.from(bytes)));
  // A checkpoint's refit state: the model file loaded with it is the refit model, and refits on as it
  // would (Adam's moments too: from the parameters alone the next refit gives another model).
  const state = refit.refitState();
  const resumed = load();
  resumed.loadRefitState(state, "experience.bin");
  assert.ok(Buffer.from(resumed.save()).equals(Buffer.from(refit.save())));
  assert.equal(endingError(resumed), after);
  const paramsOnly = LearnedExperienceModel.load(refit.save(), "model.bin", { abstraction });
  for (const m of [refit, resumed, paramsOnly]) m.refit(held, 10);
  assert.ok(Buffer.from(resumed.save()).equals(Buffer.from(refit.save())), "refit on from the state: the same model");
  assert.ok(!Buffer.from(paramsOnly.save()).equals(Buffer.from(refit.save())), "from the parameters alone: another");
  // Another model's state, a damaged one, another kind of file: one clear error naming the file.
  const reseeded = trainLearnedModel(buffer, { abstraction, ...small, seed: 99 }).model;
  assert.throws(() => reseeded.loadRefitState(state, "experience.bin"), /experience\.bin is a refit state of another model file than this one/);
  const smaller = trainLearnedModel(buffer, { abstraction, epochs: 1, members: 2 }).model;
  assert.throws(() => load().loadRefitState(smaller.refitState(), "other.bin"), /other\.bin is not a refit state of this learned experience model/);
  assert.throws(() => load().loadRefitState(state.subarray(0, state.length - 8), "cut.bin"), /cut\.bin/);
  assert.throws(() => load().loadRefitState(bytes, "model.bin"), /model\.bin is not a refit state/);
});

test("on an env with policy features of its own (ALFWorld), the estimate thread reads them too: the same predictions", async () => {
  // The thread loads the envs only for such an env; without its features there, its estimates would differ.
  const env = new AlfWorldEnv({ split: "valid_train" });
  const episodes: Trajectory[] = [];
  for (const [i, task] of env.tasks().slice(0, 14).entries()) {
    const policy = i % 4 === 3 ? new RandomPolicy() : new AlfWorldExpert(env);
    episodes.push(abstractTrajectory(await runEpisode(env, policy, { envName: "alfworld", task, seed: i }), alfworldAbstraction));
  }
  await env.close();
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-learned-alf-"));
  const buffer = ReplayBuffer.open(join(dir, "seed.db"));
  await buffer.appendTrajectories(episodes, { seed: true });
  const bytes = trainLearnedModel(buffer, { abstraction: alfworldAbstraction, epochs: 2, members: 2 }).model.save();
  const here = LearnedExperienceModel.load(bytes, "model.bin", { abstraction: alfworldAbstraction });
  const threaded = LearnedExperienceModel.load(bytes, "model.bin", { abstraction: alfworldAbstraction });
  const predictAll = async (m: LearnedExperienceModel) => {
    const out = [];
    for (const t of episodes) {
      const history: HistoryStep[] = [];
      for (const s of t.steps) {
        const step = { task: t.task, history: [...history], state: s.observation, action: s.action };
        m.prepare(step);
        const demos = await retrieveDemos(buffer, alfworldAbstraction, step, { k: 5, realOnly: true, sameActionFirst: m.sameActionFirst(s.observation) });
        out.push(await m.predict({ ...step, demos }));
        history.push({ state: s.observation, action: s.action, nextState: s.next_observation, reward: s.reward });
      }
    }
    return out;
  };
  try {
    assert.ok(await threaded.startEstimateThread(), "the thread is up");
    assert.deepEqual(await predictAll(threaded), await predictAll(here));
    assert.ok(threaded.estimatesOnThread > 0, "worked out on the thread");
  } finally {
    threaded.closeEstimateThread();
    buffer.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the estimate thread works out the estimates made here, with the members of each refit, and the model predicts the same", async () => {
  const { abstraction, buffer, held } = await world;
  const { bytes } = await trainedSmall;
  const here = LearnedExperienceModel.load(bytes, "model.bin", { abstraction });
  const threaded = LearnedExperienceModel.load(bytes, "model.bin", { abstraction });
  assert.ok(await threaded.startEstimateThread(), "the thread is up");
  // Each step of held-out episodes, as a synthetic env asks: told first, then predicted from its demos.
  const predictAll = async (m: LearnedExperienceModel) => {
    const out = [];
    for (const t of held.slice(0, 30)) {
      const history: HistoryStep[] = [];
      for (const s of t.steps) {
        const state = abstraction.abstract(s.observation);
        const step = { task: t.task, history: [...history], state, action: s.action };
        m.prepare(step);
        const demos = await retrieveDemos(buffer, abstraction, step, {
          k: 5,
          realOnly: true,
          preferTask: t.task.id,
          sameActionFirst: m.sameActionFirst(state),
        });
        out.push(await m.predict({ ...step, demos }));
        history.push({ state, action: s.action, nextState: abstraction.abstract(s.next_observation), reward: s.reward });
      }
    }
    return out;
  };
  const before = await predictAll(here);
  assert.deepEqual(await predictAll(threaded), before);
  const first = threaded.estimatesOnThread;
  assert.ok(first > 0, "worked out on the thread");
  // Its texts go by number, each once. Numbered anew (as past the memo's bound), the thread's table
  // starts again and it still answers. A table out of step with the texts sent (a request lost on its
  // way) answers nothing: that request is worked out here, the table is sent again, and the thread
  // answers the next ones; the estimates are the same throughout.
  const internals = threaded as unknown as { renumber(): void; forgetEstimates(): void; textsSent: number };
  internals.renumber();
  assert.deepEqual(await predictAll(threaded), before);
  const renumbered = threaded.estimatesOnThread;
  assert.ok(renumbered > first, "answered on the thread after the texts were numbered anew");
  internals.renumber();
  internals.textsSent += 1;
  assert.deepEqual(await predictAll(threaded), before);
  assert.ok(threaded.estimatesOnThread > renumbered, "answered again once the table was sent again");
  // Started again, the thread gets the texts again; a task that does not copy (a function in it) is worked out here.
  threaded.closeEstimateThread();
  assert.ok(await threaded.startEstimateThread());
  internals.forgetEstimates(); // the same numbering, asked again
  const restarted = threaded.estimatesOnThread;
  assert.deepEqual(await predictAll(threaded), before);
  assert.ok(threaded.estimatesOnThread > restarted, "answered by a thread started again");
  const odd = { ...held[0].task, id: "odd", note: () => "no copy" };
  const oddSteps = held.slice(0, 6).map((t) => ({ task: odd, history: [], state: abstraction.abstract(t.steps[0].observation), action: t.steps[0].action }));
  const oddBefore = threaded.estimatesOnThread;
  for (const step of oddSteps) {
    threaded.prepare(step);
    await new Promise((resolve) => setImmediate(resolve));
  }
  for (const step of oddSteps) assert.deepEqual(threaded.estimate(step), here.estimate(step));
  assert.equal(threaded.estimatesOnThread, oddBefore, "a task that does not copy is not answered there");
  internals.forgetEstimates();
  assert.deepEqual(await predictAll(threaded), before);
  assert.ok(threaded.estimatesOnThread > oddBefore, "the others are, the same");
  internals.renumber();
  here.refit(held, 7);
  threaded.refit(held, 7);
  const after = await predictAll(here);
  assert.notDeepEqual(after, before, "the refit changed the estimates");
  assert.deepEqual(await predictAll(threaded), after);
  assert.ok(threaded.estimatesOnThread > first, "the thread answers with the refit members");
  threaded.closeEstimateThread();
  assert.deepEqual(await predictAll(threaded), after, "and here again once it is closed");
  // A thread started after a refit has the refit members (it answers).
  const late = LearnedExperienceModel.load(bytes, "model.bin", { abstraction });
  late.refit(held, 7);
  assert.ok(await late.startEstimateThread());
  assert.deepEqual(await predictAll(late), after);
  assert.ok(late.estimatesOnThread > 0, "answered on the thread");
  // A step's history changed by its caller while the thread works on it: what is kept is the estimate of the step as it was.
  const [t] = held;
  const state = abstraction.abstract(t.steps[1].observation);
  const history: HistoryStep[] = [
    { state: abstraction.abstract(t.steps[0].observation), action: t.steps[0].action, nextState: state, reward: t.steps[0].reward },
  ];
  const step = { task: { ...t.task, id: "changed-history" }, history, state, action: t.steps[1].action };
  const asItWas = { ...step, history: [...history] };
  late.prepare(step);
  history.push({ state, action: "click[back to search]", nextState: state, reward: 0 });
  late.closeEstimateThread(); // its answer is then worked out here, from the step as it was asked
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(late.estimate(asItWas), here.estimate(asItWas));
});
