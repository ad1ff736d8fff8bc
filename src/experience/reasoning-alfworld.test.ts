// The reasoning experience model on ALFWorld, over the local OpenAI-protocol server: its profile and
// rules in the prompt, and model output held to ALFWorld's states and rewards.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Rng, type Task } from "../core/index.ts";
import { OpenAIChatModel } from "../llm/index.ts";
import { chatServer } from "../testing/index.ts";
import { AlfWorldEnv, alfworldAbstraction, parseAlfState, renderAlfState } from "../envs/alfworld/index.ts";
import { ReasoningExperienceModel } from "./index.ts";

const env = new AlfWorldEnv({ split: "valid_seen" });
const task: Task = env.tasks()[0];
const start = alfworldAbstraction.abstract(env.introOf(task));
const first = parseAlfState(start)!;
const receptacle = first.actions.find((a) => a.startsWith("go to "))!.slice(6);
/** The state after going to the first receptacle, as a model would write it. */
const arrived = renderAlfState({
  ...first,
  at: receptacle,
  observation: `On the ${receptacle}, you see nothing.`,
  actions: [...first.actions, `examine ${receptacle}`],
});
const fast = { backoffMs: 1, maxBackoffMs: 2 };

test("the prompt carries ALFWorld's profile and reward rules (not the generic sentence) and summarises older steps by place, hands and feedback", () => {
  const chat = new OpenAIChatModel({ baseURL: "http://127.0.0.1:9/v1", model: "unused" });
  const model = new ReasoningExperienceModel({ chat, abstraction: alfworldAbstraction, recentSteps: 1 });
  const history = [
    { state: start, action: `go to ${receptacle}`, nextState: arrived, reward: 0 },
    { state: arrived, action: "look", nextState: arrived, reward: 0 },
  ];
  const [system, user] = model.messages({ task, history, state: arrived, action: "inventory", demos: [] });
  assert.ok(system.content.includes(alfworldAbstraction.profile));
  assert.ok(system.content.includes(alfworldAbstraction.rewardRule!));
  assert.ok(!system.content.includes("an ending step gets the task's score"), "no generic reward sentence beside ALFWorld's");
  assert.ok(user.content.includes(`Task: ${task.instruction}`));
  assert.ok(user.content.includes(`1. go to ${receptacle} → [at ${receptacle}, holding nothing] On the ${receptacle}, you see nothing.`), user.content);
  assert.ok(user.content.includes("Current state:\ntask: "));
});

/** ALFWorld outputs of every kind, good, repairable and bad, from a seeded stream. */
function fuzzed(rng: Rng): string {
  const good = { reasoning: "the agent walks over", next_state: arrived, reward: 0, terminated: false };
  const s = parseAlfState(arrived)!;
  const kinds: (() => string)[] = [
    () => JSON.stringify(good),
    () => JSON.stringify({ ...good, next_state: renderAlfState({ ...s, task: "something else" }) }), // repaired: the task is the episode's
    () =>
      JSON.stringify({
        ...good,
        next_state: arrived.replace(
          /\nactions:\n([\s\S]*)$/,
          (_, l: string) =>
            `\nactions:\n${l
              .split("\n")
              .map((x) => `- ${x}`)
              .join("\n")}`,
        ),
      }), // repaired: list markers
    () => "```json\n" + JSON.stringify({ ...good, reward: "1", terminated: "true" }) + "\n```", // repaired: strings, a fence
    () => JSON.stringify({ ...good, reward: 1 }), // a reward without an end: outcome rewards drop it (never a false success)
    () => JSON.stringify({ ...good, terminated: true }), // an end without the task done
    () => JSON.stringify({ ...good, reward: 0.5, terminated: true }), // not ALFWorld's reward
    () => JSON.stringify({ ...good, next_state: renderAlfState({ ...s, actions: [] }) }), // no commands
    () => JSON.stringify({ ...good, next_state: renderAlfState({ ...s, actions: [...s.actions, "fly to the moon"] }) }), // not a command
    () => JSON.stringify({ ...good, next_state: `You arrive at ${receptacle}. On it you see nothing.` }), // prose
    () => JSON.stringify({ ...good, next_state: "page: results\ninstruction: x" }), // another env's state
    () => "The agent goes there.",
  ];
  return kinds[rng.randbelow(kinds.length)]();
}

test("fuzzed ALFWorld output: every step a state listing commands of ALFWorld's grammar, the episode's task, reward 1 exactly when it ends", async () => {
  const rng = new Rng(16);
  const s = await chatServer({ reply: () => fuzzed(rng) });
  try {
    const chat = new OpenAIChatModel({ baseURL: s.url, model: "fuzz", ...fast });
    const model = new ReasoningExperienceModel({ chat, abstraction: alfworldAbstraction, maxAttempts: 3 });
    let ok = 0;
    let failed = 0;
    let ended = 0;
    for (let i = 0; i < 200; i++) {
      const p = await model.predict({ task, history: [], state: start, action: `go to ${receptacle}`, demos: [] });
      if (p.info.failed) {
        failed++;
        assert.equal(p.nextState, start);
        continue;
      }
      ok++;
      const next = parseAlfState(p.nextState);
      assert.ok(next, p.nextState);
      assert.equal(next.task, task.instruction);
      assert.deepEqual(next.actions, parseAlfState(arrived)!.actions, "repaired to the commands as listed");
      assert.equal(p.terminated, p.reward === 1);
      if (p.terminated) ended++;
    }
    assert.ok(ok > 100 && failed > 0 && ended > 0, `ok ${ok}, failed ${failed}, ended ${ended}`);
    const errors = s.requests
      .flatMap((r) => (r.messages as { content: string }[]).map((m) => m.content))
      .filter((c) => c.startsWith("That answer was invalid"));
    for (const want of [
      /an episode ends only when its task is done/,
      /reward 0\.5/,
      /lists no admissible commands/,
      /a command ALFWorld does not have: "fly to the moon"/,
    ]) {
      assert.ok(
        errors.some((e) => want.test(e)),
        `the model is told: ${want}`,
      );
    }
  } finally {
    await s.close();
  }
});
