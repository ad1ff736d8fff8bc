import { test } from "node:test";
import assert from "node:assert/strict";
import type { StateAbstraction } from "../core/index.ts";
import { ScriptedChatModel } from "../testing/index.ts";
import { EmbeddedExperienceModel, ReasoningExperienceModel, type Demo } from "./index.ts";

// A parser game's abstraction: states list no actions; a state is "room: <name>".
const parser: StateAbstraction = {
  env: "parser",
  abstract: (o) => o,
  actions: () => undefined,
  isState: (s) => s.startsWith("room: "),
  isTerminal: () => false,
  profile: "a parser game",
};
const dense = { min: 0, max: 5, dense: true };
const task = { id: "t:1", instruction: "collect gems" };

const scripted = (outputs: object[]) => new ScriptedChatModel(outputs.map((o) => JSON.stringify(o)));

test("reasoning model, dense rewards: non-ending rewards are kept, the range is the env's, and the prompt says so", async () => {
  const chat = scripted([{ reasoning: "took a gem", next_state: "room: hall", reward: 1, terminated: false }]);
  const model = new ReasoningExperienceModel({ chat, abstraction: parser, rewards: dense });
  const p = await model.predict({ task, history: [], state: "room: hall", action: "take gem", demos: [] });
  assert.equal(p.info.failed, undefined);
  assert.equal(p.reward, 1);
  assert.match(chat.requests[0].messages[0].content, /Rewards are dense: any step can earn a reward in \[0, 5\]/);

  const outcome = new ReasoningExperienceModel({
    chat: scripted([{ reasoning: "", next_state: "room: hall", reward: 1, terminated: false }]),
    abstraction: parser,
  });
  assert.equal(
    (await outcome.predict({ task, history: [], state: "room: hall", action: "take gem", demos: [] })).reward,
    0,
    "outcome rewards: zero until the end",
  );

  const tooBig = new ReasoningExperienceModel({
    chat: scripted([{ reasoning: "", next_state: "room: hall", reward: 9, terminated: false }]),
    abstraction: parser,
    rewards: dense,
  });
  assert.match(String((await tooBig.predict({ task, history: [], state: "room: hall", action: "x", demos: [] })).info.failed), /reward 9 is not in \[0, 5\]/);

  const prose = new ReasoningExperienceModel({
    chat: scripted([{ reasoning: "", next_state: "You see a hall.", reward: 0, terminated: false }]),
    abstraction: parser,
    rewards: dense,
  });
  assert.match(
    String((await prose.predict({ task, history: [], state: "room: hall", action: "x", demos: [] })).info.failed),
    /not a state in this environment's format/,
  );
});

test("embedded model, dense rewards: any step gets its same-action demo's reward", async () => {
  const demo = (action: string, reward: number, score: number): Demo => ({
    state: "room: hall",
    action,
    nextState: "room: hall (gem taken)",
    reward,
    terminated: false,
    task,
    source: "real",
    score,
  });
  const demos = [demo("take gem", 1, 0.9), demo("look", 0, 0.95)];
  const input = { task, history: [], state: "room: hall", action: "take gem", demos };
  assert.equal((await new EmbeddedExperienceModel({ abstraction: parser, rewards: dense }).predict(input)).reward, 1);
  assert.equal((await new EmbeddedExperienceModel({ abstraction: parser }).predict(input)).reward, 0, "outcome rewards: zero until the end");
});

test("embedded model, free-text env: only a real recorded step vouches for a command; a synthetic one (a model's own guess written back) is an invalid no-op", async () => {
  const demo = (source: Demo["source"]): Demo => ({
    state: "room: hall",
    action: "take gem",
    nextState: "room: hall",
    reward: 1,
    terminated: false,
    task,
    source,
    score: 1,
  });
  const model = new EmbeddedExperienceModel({ abstraction: parser, rewards: dense });
  const input = (demos: Demo[]) => ({ task, history: [], state: "room: hall", action: "take gem", demos });
  const real = await model.predict(input([demo("real")]));
  assert.equal(real.reward, 1);
  assert.equal(real.info.invalid, undefined);
  const synthetic = await model.predict(input([demo("synthetic"), demo("synthetic")]));
  assert.equal(synthetic.reward, 0);
  assert.equal(synthetic.info.invalid, true);
});
