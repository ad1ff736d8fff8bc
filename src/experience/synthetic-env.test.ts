import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { abstractEnv, checkEnv, type ExperienceModel, type StateAbstraction, type Task } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { RandomPolicy, runEpisode } from "../envs/index.ts";
import { OraclePolicy, RulePolicy, WebShopEnv, webshopAbstraction, webshopPageKind, webshopStartPage, webshopVerifier } from "../envs/webshop/index.ts";
import { OpenAIChatModel } from "../llm/index.ts";
import { abstractTrajectory, EmbeddedExperienceModel, ReasoningExperienceModel, retrieveDemos, SyntheticEnv } from "./index.ts";

const real = new WebShopEnv({ split: "train" });
const abs = webshopAbstraction(real.catalogue);
const model = new EmbeddedExperienceModel({ abstraction: abs });
const temp = (name: string) => join(mkdtempSync(join(tmpdir(), "dreamgym-syn-")), name);

/** A buffer seeded with real oracle + random episodes on train goals, in abstract states. */
async function seededBuffer(episodes: number): Promise<ReplayBuffer> {
  const b = ReplayBuffer.open(temp("seed.db"));
  const oracle = new OraclePolicy(real);
  const random = new RandomPolicy(1);
  const tasks = real.tasks();
  const trajs = [];
  for (let i = 0; i < episodes; i++)
    trajs.push(abstractTrajectory(await runEpisode(real, i % 3 ? oracle : random, { envName: "webshop", task: tasks[i], seed: i }), abs));
  await b.appendTrajectories(trajs, { seed: true });
  return b;
}

/** Each of the first 40 real episodes' states with every action its page lists (or its own), held-out tasks' steps included. */
function stepQueries(b: ReplayBuffer): { state: string; action: string }[] {
  const queries: { state: string; action: string }[] = [];
  for (const t of [...b.trajectories({ source: "real" })].slice(0, 40))
    for (const s of t.steps) for (const action of new Set([s.action, ...(abs.actions(s.observation) ?? [])])) queries.push({ state: s.observation, action });
  return queries;
}

/** Counts the buffer's searches whose action filter `counts` picks (undefined: every step's search). */
function countSearches(b: ReplayBuffer, counts: (action: string | undefined) => boolean): { n: number } {
  const c = { n: 0 };
  const search = b.searchVectorAsync.bind(b);
  b.searchVectorAsync = (vector, opts) => {
    if (counts(opts?.filter?.action)) c.n++;
    return search(vector, opts);
  };
  return c;
}

const buffer = await seededBuffer(600);
const testEnv = new WebShopEnv({ split: "test" });
const testTasks: Task[] = testEnv.tasks().slice(0, 60);

test("SyntheticEnv conforms to the Env contract", async () => {
  await checkEnv(new SyntheticEnv({ model, abstraction: abs, tasks: testTasks, initialState: webshopStartPage, buffer, record: false }), {
    steps: 6,
    freeText: "pillow",
  });
});

test("synthetic transitions are recorded in the buffer as synthetic, one trajectory per episode", async () => {
  const b = await seededBuffer(60);
  const before = b.count({ source: "synthetic" });
  const env = new SyntheticEnv({ model, abstraction: abs, tasks: testTasks, initialState: webshopStartPage, buffer: b, policy: "rule" });
  const t = await runEpisode(env, new RulePolicy(), { envName: "webshop", task: testTasks[0] });
  const stored = b.count({ source: "synthetic" }) - before;
  const valid = t.steps.filter((s) => !s.info?.invalid && !s.info?.model_failed).length;
  assert.equal(stored, valid);
  const recorded = [...b.trajectories({ source: "synthetic" })];
  assert.equal(recorded.length, 1);
  assert.equal(recorded[0].policy, "rule");
  assert.equal(recorded[0].task.id, testTasks[0].id);
  b.close();
});

test("retrieval answers are reused while the buffer stands still, and follow every write, ours or another connection's", async () => {
  const b = await seededBuffer(60);
  const [step] = [...b.trajectories({ source: "real" })][5].steps;
  // An action no recorded step took in this state: once written, its step is the best match.
  const query = { state: step.observation, action: "click[written elsewhere]" };
  const opts = { k: 5, realAnchor: true };
  const first = await retrieveDemos(b, abs, query, opts);
  assert.equal(await retrieveDemos(b, abs, query, opts), first, "the same answer, not searched again");
  // A fresh connection (its own answers) finds the same demos.
  const other = ReplayBuffer.open(b.path);
  assert.deepEqual(await retrieveDemos(other, abs, query, opts), first);
  // That step, synthetic, written by the other connection: the first connection's next answer has
  // it; real-only answers do not.
  const marked = "page: results\ninstruction: written by another connection";
  await other.appendTransitions([
    {
      trajectoryId: "synthetic:test",
      step: 0,
      env: "webshop",
      task: { id: "t-other", instruction: "x" },
      state: step.observation,
      action: query.action,
      reward: 0,
      nextState: marked,
      terminated: false,
      truncated: false,
      source: "synthetic",
    },
  ]);
  const after = await retrieveDemos(b, abs, query, opts);
  assert.ok(
    after.some((d) => d.nextState === marked),
    "the other connection's write is seen",
  );
  assert.ok(!first.some((d) => d.nextState === marked));
  assert.ok(!(await retrieveDemos(b, abs, query, { ...opts, realOnly: true })).some((d) => d.source === "synthetic"));
  other.close();
  b.close();
});

test("a retrieval that fails is not kept: the same query searches again", async () => {
  const b = await seededBuffer(20);
  const [step] = [...b.trajectories({ source: "real" })][3].steps;
  const query = { state: step.observation, action: step.action };
  const search = b.searchVectorAsync.bind(b);
  let failures = 1;
  b.searchVectorAsync = (vector, opts) => (failures-- > 0 ? Promise.reject(new Error("embedder endpoint down")) : search(vector, opts));
  await assert.rejects(retrieveDemos(b, abs, query, { k: 3, realOnly: true }), /endpoint down/);
  const demos = await retrieveDemos(b, abs, query, { k: 3, realOnly: true });
  assert.ok(demos.length > 0, "answered once the search works again");
  assert.equal(
    await retrieveDemos(b, abs, query, { k: 3, realOnly: true }),
    await retrieveDemos(b, abs, query, { k: 3, realOnly: true }),
    "a good answer is kept",
  );
  b.close();
});

test("the real anchor is searched once while only synthetic steps come, and again after a real one", async () => {
  const b = await seededBuffer(60);
  const [first, second] = [...b.trajectories({ source: "real" })][5].steps;
  // An action no step took: no anchor until a real step takes it.
  const query = { state: first.observation, action: "click[anchor test]" };
  const opts = { k: 1, realAnchor: true };
  const anchorSearches = () => searches.filter((f) => f.source === "real" && f.action === query.action).length;
  const searches: { source?: string; action?: string }[] = [];
  const search = b.searchVector.bind(b);
  b.searchVector = (v, o) => (searches.push({ ...o?.filter }), search(v, o));
  const step = (state: string, source: "real" | "synthetic", nextState: string, trajectory = `${source}:anchor`) => ({
    policy: `${source}-anchor`,
    trajectoryId: trajectory,
    step: 0,
    env: "webshop",
    task: { id: "t-anchor", instruction: "x" },
    state,
    action: query.action,
    reward: 0,
    nextState,
    terminated: false,
    truncated: false,
    source,
  });
  const fresh = async (q = query, o: Parameters<typeof retrieveDemos>[3] = opts, abstraction = abs) => {
    const other = ReplayBuffer.open(b.path);
    const demos = await retrieveDemos(other, abstraction, q, o);
    other.close();
    return demos;
  };
  /** The answer here, checked against a fresh connection's (its own memo). */
  const checked = async (q = query, o: Parameters<typeof retrieveDemos>[3] = opts, abstraction = abs) => {
    const demos = await retrieveDemos(b, abstraction, q, o);
    assert.deepEqual(demos, await fresh(q, o, abstraction));
    return demos;
  };
  assert.ok(!(await retrieveDemos(b, abs, query, opts)).some((d) => d.anchor));
  assert.equal(anchorSearches(), 1);
  // A synthetic step of this very state and action: the best match now, and the anchor is not searched again.
  await b.appendTransitions([step(first.observation, "synthetic", "page: results\ninstruction: synthetic")]);
  const afterSynthetic = await retrieveDemos(b, abs, query, opts);
  assert.equal(afterSynthetic[0].source, "synthetic");
  assert.ok(!afterSynthetic.some((d) => d.anchor));
  assert.equal(anchorSearches(), 1, "kept across a synthetic step");
  assert.deepEqual(afterSynthetic, await fresh());
  // A real step of that action in another state: the anchor, searched again.
  const marked = "page: results\ninstruction: the real anchor";
  await b.appendTransitions([step(second.observation, "real", marked)]);
  const afterReal = await retrieveDemos(b, abs, query, opts);
  assert.equal(anchorSearches(), 2);
  assert.equal(afterReal.find((d) => d.anchor)?.nextState, marked);
  assert.deepEqual(afterReal, await fresh());
  // Another action in the same state, the same action in another state, the anchor's task left out,
  // another env: each its own anchor.
  assert.ok((await checked({ ...query, action: first.action })).every((d) => d.nextState !== marked));
  const third = [...b.trajectories({ source: "real" })][7].steps[0].observation;
  await b.appendTransitions([step(third, "real", "page: results\ninstruction: another real step", "real:anchor-2")]);
  await checked();
  assert.equal((await checked({ state: third, action: query.action }))[0].source, "real");
  assert.ok(!(await checked(query, { ...opts, excludeTask: "t-anchor" })).some((d) => d.nextState === marked));
  const elsewhere = Object.create(abs, { env: { value: "webshop-elsewhere" } }) as typeof abs;
  assert.deepEqual(await checked(query, opts, elsewhere), []);
  // The real step deleted: no anchor again.
  assert.equal(await b.deleteTrajectories({ policies: ["real-anchor"] }), 2);
  assert.ok(!(await checked()).some((d) => d.anchor));
  b.close();
});

test("with an empty buffer the embedded model fails every step: no-ops, nothing recorded, no crash", async () => {
  const empty = ReplayBuffer.open(temp("empty.db"));
  const env = new SyntheticEnv({ model, abstraction: abs, tasks: testTasks, initialState: webshopStartPage, buffer: empty, maxSteps: 4 });
  const t = await runEpisode(env, new RulePolicy(), { envName: "webshop", task: testTasks[1] });
  assert.equal(t.steps.length, 4);
  assert.ok(t.steps.every((s) => typeof s.info?.model_failed === "string" && s.reward === 0 && s.next_observation === s.observation));
  assert.equal(t.steps.at(-1)!.truncated, true);
  assert.equal(empty.count(), 0);
  empty.close();
});

test("fidelity of the embedded model: held-out oracle episodes replayed step by step", async (t) => {
  // Each real step of an unseen test task is predicted from the real abstract state and action.
  let steps = 0;
  let kindAgree = 0;
  let exact = 0;
  let endAgree = 0;
  const oracle = new OraclePolicy(testEnv);
  for (const task of testTasks) {
    const episode = abstractTrajectory(await runEpisode(testEnv, oracle, { envName: "webshop", task }), abs);
    const history = [];
    for (const s of episode.steps) {
      const demos = await buffer.search({ state: s.observation, action: s.action }, { k: 5, filter: { action: s.action } });
      const similar = await buffer.search({ state: s.observation, action: s.action }, { k: 5 });
      const p = await model.predict({
        task,
        history,
        state: s.observation,
        action: s.action,
        demos: [...demos, ...similar].map((h) => ({ ...h.transition, nextState: h.transition.nextState, score: h.score })),
      });
      steps++;
      if (!p.info.failed && webshopPageKind(p.nextState) === webshopPageKind(s.next_observation)) kindAgree++;
      if (p.nextState === s.next_observation) exact++;
      if (p.terminated === s.terminated) endAgree++;
      history.push({ state: s.observation, action: s.action, nextState: s.next_observation, reward: s.reward });
    }
  }
  t.diagnostic(`steps ${steps}: page kind ${kindAgree}, identical next state ${exact}, termination ${endAgree}`);
  assert.ok(kindAgree / steps >= 0.9, `page kind agreement ${kindAgree}/${steps}`);
  assert.ok(endAgree / steps >= 0.95, `termination agreement ${endAgree}/${steps}`);
  assert.ok(exact / steps >= 0.3, `identical next states ${exact}/${steps}`);
});

test("hybrid mode: terminal rewards come from WebShop's verifier, close to the real env's scores", async (t) => {
  const score = async (env: SyntheticEnv | ReturnType<typeof abstractEnv>) => {
    let total = 0;
    for (const task of testTasks) total += (await runEpisode(env, new RulePolicy(), { envName: "webshop", task })).total_reward;
    return total / testTasks.length;
  };
  const hybrid = new SyntheticEnv({
    model,
    abstraction: abs,
    tasks: testTasks,
    initialState: webshopStartPage,
    buffer,
    record: false,
    verifier: webshopVerifier(real.catalogue),
  });
  const realScore = await score(abstractEnv(testEnv, abs));
  const hybridScore = await score(hybrid);
  t.diagnostic(`rule policy score: real ${realScore.toFixed(3)}, hybrid synthetic ${hybridScore.toFixed(3)}`);
  // A verified purchase is stored ending on a done page that shows the verified score.
  const b = await seededBuffer(60);
  const rec = new SyntheticEnv({
    model,
    abstraction: abs,
    tasks: testTasks,
    initialState: webshopStartPage,
    buffer: b,
    verifier: webshopVerifier(real.catalogue),
  });
  const ep = await runEpisode(rec, new RulePolicy(), { envName: "webshop", task: testTasks[2] });
  const last = ep.steps.at(-1)!;
  if (last.terminated && last.info?.verified) {
    const stored = [...b.trajectories({ source: "synthetic" })][0].steps.at(-1)!;
    assert.ok(stored.next_observation.startsWith("page: done"));
    assert.ok(stored.next_observation.endsWith(`score: ${String(last.reward).includes(".") ? String(last.reward) : `${last.reward}.0`}`));
  }
  b.close();
  assert.ok(Math.abs(hybridScore - realScore) < 0.15, `rule policy: hybrid ${hybridScore.toFixed(3)} vs real ${realScore.toFixed(3)}`);
});

test("the same action's demos first: every step is searched only where they fall short, and the model predicts the same", async () => {
  const b = await seededBuffer(120);
  const allSteps = countSearches(b, (action) => action === undefined);
  const queries = stepQueries(b);
  const task = testTasks[0];
  let lazySearches = 0;
  let lazy = 0;
  for (const q of queries) {
    const first = model.sameActionFirst(q.state);
    assert.equal(first, 0.2, "a text page: the same action's demos first");
    const before = allSteps.n;
    // As the synthetic env asks for the embedded model's demos: the real anchor too.
    const fewer = await retrieveDemos(b, abs, q, { k: 5, preferTask: task.id, realAnchor: true, sameActionFirst: first });
    lazySearches += allSteps.n - before;
    const every = await retrieveDemos(b, abs, q, { k: 5, preferTask: task.id, realAnchor: true });
    if (fewer.length < every.length) lazy++;
    const input = { task, history: [], ...q };
    assert.deepEqual(await model.predict({ ...input, demos: fewer }), await model.predict({ ...input, demos: every }), JSON.stringify(q));
  }
  assert.ok(lazy > queries.length / 2, `${lazy} of ${queries.length} queries read the same action's demos alone`);
  assert.ok(lazySearches < queries.length / 2, `${lazySearches} searches of every step for ${queries.length} queries`);
  // An action recorded under another spelling too counts as the same to the model: every step is searched.
  const [t0] = [...b.trajectories({ source: "real" })];
  const respelled = { ...t0, task: { ...t0.task, id: "respelled" }, steps: t0.steps.map((s) => ({ ...s, action: s.action.toUpperCase() })) };
  await b.appendTrajectories([respelled], { seed: true });
  const q = { state: t0.steps[0].observation, action: t0.steps[0].action };
  const before = allSteps.n;
  const fewer = await retrieveDemos(b, abs, q, { k: 5, sameActionFirst: 0.2 });
  assert.equal(allSteps.n - before, 1, "the search of every step, as without");
  assert.deepEqual(fewer, await retrieveDemos(b, abs, q, { k: 5 }));
  b.close();
  // Searched by HNSW (not exact, no ties by id): every step is searched, as without.
  const ann = ReplayBuffer.open(b.path, { annThreshold: 100 });
  assert.equal(ann.searchesExactly, false);
  const annAll = countSearches(ann, (action) => action === undefined);
  const distinct = [...new Map(queries.slice(0, 40).map((q) => [JSON.stringify(q), q])).values()];
  for (const q of distinct) {
    const fewer = await retrieveDemos(ann, abs, q, { k: 5, realAnchor: true, sameActionFirst: 0.2 });
    assert.deepEqual(fewer, await retrieveDemos(ann, abs, q, { k: 5, realAnchor: true }));
  }
  assert.equal(annAll.n, 2 * distinct.length, "both ways, each query");
  ann.close();
});

test("a model that reads the first n demos (the reasoning model's prompt): the same action's steps are not searched apart, and the prompt is the same", async () => {
  const b = await seededBuffer(120);
  const sameActionSearches = countSearches(b, (action) => action !== undefined);
  const chat = new OpenAIChatModel({ baseURL: "http://127.0.0.1:9/v1", model: "never-called" });
  const reasoning = new ReasoningExperienceModel({ chat, abstraction: abs });
  assert.equal(reasoning.readsTopDemos, 5);
  assert.equal(reasoning.readsAnchor, false);
  const queries = stepQueries(b);
  const task = testTasks[0];
  let more = 0;
  let searchedApart = 0;
  for (const q of queries) {
    const before = sameActionSearches.n;
    const fewer = await retrieveDemos(b, abs, q, { k: 5, preferTask: task.id, readsFirst: 5 });
    searchedApart += sameActionSearches.n - before;
    const every = await retrieveDemos(b, abs, q, { k: 5, preferTask: task.id, realAnchor: true });
    const input = { task, history: [], ...q };
    assert.deepEqual(reasoning.messages({ ...input, demos: fewer }), reasoning.messages({ ...input, demos: every }), JSON.stringify(q));
    if (every.length > fewer.length) more++;
  }
  assert.equal(searchedApart, 0);
  assert.ok(more > queries.length / 2, `${more} of ${queries.length}: the same action's search adds demos the prompt leaves out`);
  // A synthetic env asks so for such a model.
  const asked: number[] = [];
  const top: ExperienceModel = {
    id: "reads-top-5",
    readsTopDemos: 5,
    readsAnchor: false,
    predict: async (input) => {
      asked.push(input.demos.length);
      return { nextState: input.state, reward: 0, terminated: false, info: {} };
    },
  };
  const before = sameActionSearches.n;
  const env = new SyntheticEnv({ model: top, abstraction: abs, tasks: testTasks, initialState: webshopStartPage, buffer: b, record: false });
  await runEpisode(env, new RulePolicy(), { envName: "webshop", task: testTasks[1] });
  assert.ok(asked.length > 0 && asked.every((n) => n > 0 && n <= 5), JSON.stringify(asked));
  assert.equal(sameActionSearches.n, before, "no search of the action's own steps");
  b.close();
  // Searched by HNSW (not exact): the same action's steps are searched too, as without.
  const ann = ReplayBuffer.open(b.path, { annThreshold: 100 });
  const annSameAction = countSearches(ann, (action) => action !== undefined);
  await retrieveDemos(ann, abs, queries[0], { k: 5, readsFirst: 5 });
  assert.equal(annSameAction.n, 1);
  ann.close();
  chat.close();
});

test("a model that reads the first n demos: where ties or copies of one step could change them, the same action's steps are searched too", async () => {
  const toy = { env: "toy", abstract: (s: string) => s, actions: () => undefined, isTerminal: () => false, profile: "toy" } as unknown as StateAbstraction;
  const page = (i: number) => `page ${i}: ${Array.from({ length: 30 }, (_, j) => `word${(i * 7 + j * 13) % 97}`).join(" ")}`;
  const task: Task = { id: "t1", instruction: "do it" };
  let traj = 0;
  const step = (state: string, action: string, nextState: string, source: "real" | "synthetic" = "real") => ({
    trajectoryId: `tr${traj++}`,
    step: 0,
    env: "toy",
    task,
    state,
    action,
    reward: 0,
    nextState,
    terminated: false,
    truncated: false,
    source,
  });
  const chat = new OpenAIChatModel({ baseURL: "http://127.0.0.1:9/v1", model: "never-called" });
  const reasoning = new ReasoningExperienceModel({ chat, abstraction: toy });
  const check = async (b: ReplayBuffer, q: { state: string; action: string }) => {
    const sameAction = countSearches(b, (action) => action !== undefined);
    const fewer = await retrieveDemos(b, toy, q, { k: 5, readsFirst: 5 });
    assert.equal(sameAction.n, 1, "searched too");
    const every = await retrieveDemos(b, toy, q, { k: 5 });
    const input = { task, history: [], ...q };
    assert.deepEqual(reasoning.messages({ ...input, demos: fewer }), reasoning.messages({ ...input, demos: every }));
  };
  // An action spelled another way embeds alike: the two tie, and the merge puts this action's first.
  const spelled = ReplayBuffer.open(temp("spelled.db"));
  await spelled.appendTransitions([step(page(1), "click[buy now]", "the other spelling")]);
  await spelled.appendTransitions([step(page(1), "Click[Buy Now]", "the query's spelling")]);
  for (let i = 2; i < 8; i++) await spelled.appendTransitions([step(page(i), `click[item ${i}]`, `next ${i}`)]);
  await check(spelled, { state: page(1), action: "Click[Buy Now]" });
  spelled.close();
  // Thousands of copies of one step crowd the candidates (the search stops widening at 4,096): fewer than n + 1 steps come.
  const crowded = ReplayBuffer.open(temp("crowded.db"));
  await crowded.appendTransitions(Array.from({ length: 7000 }, () => step(page(1), "click[search]", "results", "synthetic")));
  for (let i = 2; i < 12; i++) await crowded.appendTransitions([step(page(i), "click[back]", `back from ${i}`)]);
  await check(crowded, { state: page(1), action: "click[back]" });
  crowded.close();
  chat.close();
});

test("a recorded step waits for the steps on their way beside it, one that fails does not hold it up, and an env stepping alone never waits", {
  timeout: 30_000,
}, async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout", "Date"] }); // a wait's timer fires only if the test ticks it: never here
  const b = await seededBuffer(30);
  const gates: (() => void)[] = [];
  const asked: string[] = [];
  const slow: ExperienceModel = {
    id: "slow",
    usesDemos: false,
    predict: async (input) => {
      asked.push("slow");
      await new Promise<void>((r) => gates.push(r));
      return { nextState: input.state, reward: 0, terminated: false, info: { failed: "no answer" } };
    },
  };
  const fast: ExperienceModel = {
    id: "fast",
    usesDemos: false,
    predict: async (input) => {
      asked.push("fast");
      return { nextState: `${input.state} then ${input.action}`, reward: 0, terminated: false, info: {} };
    },
  };
  const turns = async () => {
    for (let i = 0; i < 30; i++) await new Promise((r) => setImmediate(r));
  };
  const make = (m: ExperienceModel, buffer = b) => new SyntheticEnv({ model: m, abstraction: abs, tasks: testTasks, initialState: webshopStartPage, buffer });
  const [a, c] = [make(slow), make(fast)];
  await a.reset({ task: testTasks[0] });
  await c.reset({ task: testTasks[1] });
  const before = b.count({ source: "synthetic" });
  const sa = a.step(a.availableActions()![0]); // on its way: its model is thinking
  let cDone = false;
  const sc = c.step(c.availableActions()![0]).then((r) => ((cDone = true), r));
  t.mock.timers.tick(300); // c's step took 300 ms: it may wait 25 for a's
  await turns();
  assert.equal(cDone, false, "c's step waits for a's, to share its commit");
  gates[0](); // a's model fails: a's step is not recorded, and c's commit goes at once
  await turns();
  assert.equal(cDone, true, "c's step, once a's failed (asserted, not awaited: under mocked timers a wrong wait would hang)");
  assert.equal((await sa).info.model_failed, "no answer");
  assert.equal((await sc).info.model_failed, undefined);
  assert.equal(b.count({ source: "synthetic" }), before + 1);
  // Alone, a whole episode: every step committed at once (no timer fires here).
  const alone = await runEpisode(make(fast), new RulePolicy(), { envName: "webshop", task: testTasks[2] });
  assert.equal(b.count({ source: "synthetic" }), before + 1 + alone.steps.filter((s) => !s.info?.invalid).length);
  // A buffer that cannot take the step: refused before the model is asked.
  const readOnly = ReplayBuffer.open(b.path, { readonly: true });
  const r = make(fast, readOnly);
  await r.reset({ task: testTasks[3] });
  const n = asked.length;
  await assert.rejects(r.step(r.availableActions()![0]), /read-only/);
  assert.equal(asked.length, n);
  readOnly.close();
  b.close();
});
