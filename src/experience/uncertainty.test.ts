import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StateAbstraction, Task } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { OpenAIChatModel } from "../llm/index.ts";
import { chatServer } from "../testing/index.ts";
import { WebShopEnv, webshopAbstraction, webshopStartPage } from "../envs/webshop/index.ts";
import { EmbeddedExperienceModel, ReasoningExperienceModel, SyntheticEnv, pessimisticStep, type Demo, type ExperienceModel } from "./index.ts";

const abstraction: StateAbstraction = {
  env: "toy",
  abstract: (o) => o,
  isTerminal: () => false,
  profile: "",
  actions: (s) => [...s.matchAll(/\[([^\]]+)\]/g)].map((m) => `click[${m[1]}]`),
};
const task: Task = { id: "t", instruction: "buy it" };
const state = "page: item\ninstruction: buy it\n[buy now]";
const demo = (reward: number, score: number, over: Partial<Demo> = {}): Demo => ({
  state,
  action: "click[buy now]",
  nextState: "page: done\ninstruction: buy it",
  reward,
  terminated: true,
  task,
  source: "real",
  score,
  ...over,
});
const predict = (demos: Demo[]) => new EmbeddedExperienceModel({ abstraction }).predict({ task, history: [], state, action: "click[buy now]", demos });

test("the embedded model's u: the spread of its neighbours' rewards and outcomes, and how well real data grounds the step", async () => {
  // Neighbours that agree, seen exactly: sure.
  const sure = await predict([demo(1, 1), demo(1, 1)]);
  assert.deepEqual([sure.reward, sure.info.u, sure.info.u_reward, sure.info.u_outcome, sure.info.u_grounding], [1, 0, 0, 0, 0]);
  // Equally similar neighbours paying 0 and 1: the reward is their mean, and as unsure as it gets.
  const split = await predict([demo(1, 1), demo(0, 1)]);
  assert.equal(split.reward, 0.5);
  assert.equal(split.info.u_reward, 1);
  assert.equal(split.info.u, 1);
  // Weighted by similarity²: a far neighbour that disagrees moves u less than a near one.
  const far = await predict([demo(1, 1), demo(0, 0.5)]);
  assert.ok((far.info.u_reward as number) > 0 && (far.info.u_reward as number) < 1, `u_reward ${far.info.u_reward}`);
  // Neighbours split on ending the episode: u_outcome.
  const ends = await predict([
    demo(1, 1),
    demo(0, 1, { terminated: false, nextState: state }),
    demo(1, 1),
    demo(0, 1, { terminated: false, nextState: state }),
  ]);
  assert.equal(ends.info.u_outcome, 1);
  // Grounded only in a dissimilar state: u is 1 − its similarity.
  const loose = await predict([demo(1, 0.6)]);
  assert.equal(loose.info.u_grounding, 0.4);
  assert.equal(loose.info.u, 0.4);
  // Backed only by synthetic transitions (the model's own outputs): ungrounded...
  const selfMade = await predict([demo(1, 1, { source: "synthetic" })]);
  assert.equal(selfMade.info.u_grounding, 1);
  // ...unless retrieval's real anchor shows that real data backs it (the anchor predicts nothing).
  const anchored = await predict([demo(1, 1, { source: "synthetic" }), demo(0, 0.9, { anchor: true })]);
  assert.equal(anchored.reward, 1, "the anchor's reward is not used");
  assert.ok(Math.abs((anchored.info.u_grounding as number) - 0.1) < 1e-9);
});

test("pessimism in the synthetic env: reward r − β·u, a halt where u > halt (not recorded), the model's reward kept in info", async () => {
  const model = (u: number): ExperienceModel => ({
    id: "m",
    predict: async ({ state: s }) => ({ nextState: s.replace("page: item", "page: done"), reward: 1, terminated: true, info: { u } }),
  });
  const buffer = ReplayBuffer.open(join(mkdtempSync(join(tmpdir(), "dreamgym-pess-")), "b.db"));
  const env = (u: number, pessimism?: { beta: number; halt?: number }) =>
    new SyntheticEnv({ model: model(u), abstraction, tasks: [task], initialState: () => state, buffer, pessimism });
  const stepOnce = async (e: SyntheticEnv) => (await e.reset({ seed: 0 }), e.step("click[buy now]"));
  const plain = await stepOnce(env(0.3));
  assert.deepEqual([plain.reward, plain.terminated, plain.info.model_reward], [1, true, undefined]);
  const mopo = await stepOnce(env(0.3, { beta: 2 }));
  assert.ok(Math.abs(mopo.reward - 0.4) < 1e-12);
  assert.equal(mopo.info.model_reward, 1);
  const before = buffer.transitions;
  const halted = await stepOnce(env(0.6, { beta: 0, halt: 0.5 }));
  assert.deepEqual([halted.reward, halted.terminated, halted.info.halted, halted.observation], [0, true, true, state]);
  assert.equal(buffer.transitions, before, "a halted step is not recorded");
  const under = await stepOnce(env(0.5, { beta: 0, halt: 0.5 }));
  assert.equal(under.info.halted, undefined, "u equal to halt does not halt");
  assert.deepEqual(pessimisticStep(1, false, undefined, { beta: 5, halt: 0 }), { reward: 1, terminated: false, halted: false }, "no u: the step stays");
  buffer.close();
});

test("the reasoning model with samples: u is the disagreement of n predictions from one call with n choices", async () => {
  const real = new WebShopEnv({ split: "test" });
  const abs = webshopAbstraction(real.catalogue);
  const t = real.tasks()[0];
  const start = abs.abstract(webshopStartPage(t));
  const done = (reward: number) =>
    JSON.stringify({ reasoning: "bought", next_state: `page: done\ninstruction: ${t.instruction}\nscore: ${reward}`, reward, terminated: true });
  let answers: string[] = [];
  const s = await chatServer({ reply: () => answers });
  try {
    const chat = new OpenAIChatModel({ baseURL: s.url, model: "m", maxRetries: 0 });
    const input = { task: t, history: [], state: start, action: "search[pillow]", demos: [] };
    answers = [done(1), done(1), done(1)];
    const agree = await new ReasoningExperienceModel({ chat, abstraction: abs, samples: 3 }).predict(input);
    assert.deepEqual([agree.reward, agree.info.u, agree.info.samples], [1, 0, 3]);
    assert.equal(s.requests.at(-1)!.n, 3, "one call with n = 3");
    answers = [done(1), done(0), "not json"];
    const split = await new ReasoningExperienceModel({ chat, abstraction: abs, samples: 3 }).predict(input);
    assert.equal(split.reward, 1, "the first valid sample is the step");
    assert.deepEqual([split.info.u, split.info.samples], [1, 2], "rewards 1 and 0 over half the range [0, 1]: u = 1; the invalid sample is left out");
    const one = await new ReasoningExperienceModel({ chat, abstraction: abs }).predict(input);
    assert.equal(one.info.u, undefined, "one sample: no u");
    assert.equal(s.requests.at(-1)!.n, undefined);
  } finally {
    await s.close();
    await real.close();
  }
});
