import { test } from "node:test";
import assert from "node:assert/strict";
import { abstractEnv, type Trajectory } from "../core/index.ts";
import { RandomPolicy, runEpisode } from "../envs/index.ts";
import { RulePolicy, WebShopEnv, webshopAbstraction, webshopStartPage } from "../envs/webshop/index.ts";
import { OpenAIChatModel } from "../llm/index.ts";
import { auditModel, episodeBlock, parseEpisodeBlock, ReasoningExperienceModel, replayInRealEnv, summarizeReplays, SyntheticEnv } from "../experience/index.ts";
import { startOracleServer, type OracleNoise } from "./index.ts";

const real = new WebShopEnv({ split: "test" });
const abs = webshopAbstraction(real.catalogue);
const tasks = real.tasks();

/** The synthetic env over the reasoning model, over HTTP, over the oracle server. */
async function oracleEnv(noise: OracleNoise) {
  const server = await startOracleServer({ noise });
  const chat = new OpenAIChatModel({ baseURL: server.url, model: "oracle", backoffMs: 1, maxBackoffMs: 2 });
  const model = new ReasoningExperienceModel({ chat, abstraction: abs });
  const env = new SyntheticEnv({ model, abstraction: abs, tasks, initialState: webshopStartPage, maxSteps: 15 });
  return { server, model, env, close: () => server.close() };
}

/** Episodes of the rule policy (even i) and a seeded random policy (odd i) on test goals. */
const policyFor = (i: number) => (i % 2 === 0 ? new RulePolicy() : new RandomPolicy(i));

test("the episode line round-trips and stays out of the way of the prompt's end", () => {
  const line = episodeBlock("webshop:7", ["search[a red lamp]", "click[b07xtk3p89]"]);
  assert.deepEqual(parseEpisodeBlock(`Task: x\n\n${line}\n\nAction: y`), { task: "webshop:7", actions: ["search[a red lamp]", "click[b07xtk3p89]"] });
  assert.equal(parseEpisodeBlock("Task: x\n\nAction: y"), null);
  const chat = new OpenAIChatModel({ baseURL: "http://127.0.0.1:9/v1", model: "unused" });
  const [, user] = new ReasoningExperienceModel({ chat, abstraction: abs }).messages({
    task: tasks[3],
    history: [{ state: "page: search", action: "search[x]", nextState: "page: results", reward: 0 }],
    state: "page: results",
    action: "click[next >]",
    demos: [],
  });
  assert.deepEqual(parseEpisodeBlock(user.content), { task: tasks[3].id, actions: ["search[x]", "click[next >]"] });
  assert.ok(user.content.endsWith("Action: click[next >]"));
});

test("at ε = 0 the oracle's synthetic episodes equal the real env's, step for step, over 100 episodes", async () => {
  const o = await oracleEnv({ epsilonR: 0, epsilonP: 0 });
  const realEnv = abstractEnv(new WebShopEnv({ split: "test", maxSteps: 15 }), abs);
  try {
    let steps = 0;
    let purchases = 0;
    for (let i = 0; i < 100; i++) {
      const task = tasks[i];
      const syn = await runEpisode(o.env, policyFor(i), { envName: "webshop", task });
      const ref = await runEpisode(realEnv, policyFor(i), { envName: "webshop", task });
      assert.equal(syn.steps.length, ref.steps.length, `episode ${i}: length`);
      syn.steps.forEach((s, j) => {
        const r = ref.steps[j];
        assert.equal(s.action, r.action, `episode ${i} step ${j}: action`);
        assert.equal(s.next_observation, r.next_observation, `episode ${i} step ${j}: next state`);
        assert.equal(s.reward, r.reward, `episode ${i} step ${j}: reward`);
        assert.equal(s.terminated, r.terminated, `episode ${i} step ${j}: terminated`);
        assert.equal(s.truncated, r.truncated, `episode ${i} step ${j}: truncated`);
        assert.ok(!s.info?.model_failed, `episode ${i} step ${j}: ${s.info?.model_failed}`);
      });
      steps += syn.steps.length;
      if (ref.steps.at(-1)?.terminated) purchases++;
    }
    assert.ok(steps > 500 && purchases > 30, `a real test: ${steps} steps, ${purchases} purchases`);
    assert.equal(o.server.stats.rewardCorrupted + o.server.stats.stateCorrupted, 0);
    assert.ok(o.server.stats.cachedSteps > 0, "the prefix cache serves the episode's next steps");
  } finally {
    await o.close();
    await realEnv.close();
  }
});

/** Real trajectories of test goals (rule and random policies), for the audit. */
async function heldOut(n: number): Promise<Trajectory[]> {
  const env = abstractEnv(new WebShopEnv({ split: "test", maxSteps: 15 }), abs);
  const out: Trajectory[] = [];
  for (let i = 0; i < n; i++) out.push(await runEpisode(env, policyFor(i + 1), { envName: "webshop", task: tasks[200 + i] }));
  await env.close();
  return out;
}

test("the audit measures ε_R and ε_P within the binomial interval of the settings", async () => {
  const trajectories = await heldOut(80);
  const steps = trajectories.reduce((a, t) => a + t.steps.length, 0);
  const within = (measured: number, p: number) => Math.abs(measured - p) <= 3.3 * Math.sqrt((p * (1 - p)) / steps); // 99.9%
  for (const [epsilonR, epsilonP] of [
    [0.2, 0],
    [0.05, 0],
    [0, 0.2],
  ]) {
    const server = await startOracleServer({ noise: { epsilonR, epsilonP, seed: 3 } });
    try {
      const chat = new OpenAIChatModel({ baseURL: server.url, model: "oracle" });
      const audit = await auditModel(trajectories, { model: new ReasoningExperienceModel({ chat, abstraction: abs }), abstraction: abs });
      assert.equal(audit.steps, steps);
      assert.equal(audit.invalidRate, 0);
      const measuredP = 1 - audit.identicalStates;
      if (epsilonR > 0) {
        // Every step has a reward error that applies to it (a false success where it is not a success).
        assert.ok(within(audit.rewardErrorRate, epsilonR), `ε_R ${epsilonR}: measured ${audit.rewardErrorRate} over ${steps} steps`);
      } else {
        assert.equal(audit.rewardErrorRate, 0);
        // A few states have no corruption that applies (a search page with nothing earlier of another kind): at most the setting.
        assert.ok(
          within(measuredP, epsilonP) || (measuredP < epsilonP && measuredP > epsilonP - 0.06),
          `ε_P ${epsilonP}: measured ${measuredP} over ${steps} steps`,
        );
        assert.ok(audit.stateKindAccuracy < 1 && audit.elementF1 < 1);
      }
    } finally {
      await server.close();
    }
  }
});

test("optimistic false successes at 40% are exploited (the on-policy audit sees it); at 0%, none are", async () => {
  const rates: Record<string, number | null> = {};
  for (const epsilonR of [0.4, 0]) {
    const o = await oracleEnv({ epsilonR, epsilonP: 0, rewardKinds: { "false-success": 1 }, seed: 1 });
    try {
      const records = [];
      for (let i = 0; i < 40; i++) {
        const t = await runEpisode(o.env, new RulePolicy(), { envName: "webshop", task: tasks[300 + i] });
        records.push({
          task: t.task,
          observation: t.steps[0].observation,
          steps: t.steps.map((s) => ({ action: s.action, nextObservation: s.next_observation, terminated: s.terminated, reward: s.reward })),
        });
      }
      const envs = [abstractEnv(new WebShopEnv({ split: "test", maxSteps: 15 }), abs)];
      const summary = summarizeReplays(await replayInRealEnv(envs, records, (r) => r >= 1));
      await envs[0].close();
      rates[epsilonR] = summary.exploitationRate;
      if (epsilonR === 0) assert.equal(summary.successAgreement, 1, "the oracle at ε = 0 agrees with the real env");
    } finally {
      await o.close();
    }
  }
  assert.ok(rates[0.4] !== null && rates[0.4] > 0.7, `exploitation at 40% false successes: ${rates[0.4]}`);
  assert.ok(rates[0] === null || rates[0] === 0, `exploitation at 0%: ${rates[0]}`);
});

test("the server: a body that is not a chat request is 400 invalid_request_error, never 500; an unknown path's 404 names it", async () => {
  const server = await startOracleServer({ noise: { epsilonR: 0, epsilonP: 0 } });
  try {
    const post = async (body: string) => {
      const r = await fetch(`${server.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body });
      return { status: r.status, error: ((await r.json()) as { error: { message: string; type: string } }).error };
    };
    for (const body of ['{"model":"oracle","messages":"x"}', '{"messages":[null]}', "null", "[]", '"text"', "{}", '{"messages":[1]}']) {
      const r = await post(body);
      assert.equal(r.status, 400, body);
      assert.equal(r.error.type, "invalid_request_error", body);
      assert.match(r.error.message, /^the body must be a JSON object whose messages is an array/, body);
    }
    assert.equal((await post("{")).status, 400);
    assert.equal((await post('{"messages":[{"role":"user","content":"hi"}]}')).error.message.startsWith("no episode line"), true);
    assert.equal(server.stats.refused, 9);
    const r = await fetch(`${server.url}/completions`, { method: "POST", body: "{}" });
    assert.equal(r.status, 404);
    assert.match(
      ((await r.json()) as { error: { message: string } }).error.message,
      /^not found: POST \/v1\/completions \(routes: POST \/v1\/chat\/completions/,
    );
  } finally {
    await server.close();
  }
});
