import assert from "node:assert/strict";
import { test } from "node:test";
import { abstractEnv, Rng } from "../../core/index.ts";
import { AlfWorldEnv } from "./alfworld-env.ts";
import { AlfWorldExpert } from "./expert.ts";
import { alfworldAbstraction, parseAlfState } from "./abstraction.ts";

test("the abstract state of every real step lists exactly the real env's admissible commands (expert and random, 3 splits)", async () => {
  let steps = 0;
  for (const split of ["valid_train", "valid_seen", "valid_unseen"] as const) {
    const env = new AlfWorldEnv({ split });
    const wrapped = abstractEnv(env, alfworldAbstraction);
    const expert = new AlfWorldExpert(env);
    const rng = new Rng(7);
    const tasks = env.tasks();
    for (let g = 0; g < 8; g++) {
      const task = tasks[(g * 17) % tasks.length];
      const random = g % 2 === 1;
      const r = await wrapped.reset({ task });
      let state = r.observation;
      let held = "";
      for (let i = 0; i < 50; i++) {
        const parsed = parseAlfState(state);
        assert.ok(parsed, `not an abstract state: ${state}`);
        assert.deepEqual(parsed.actions, env.availableActions(), `${task.id} step ${i}`);
        assert.deepEqual(wrapped.availableActions(), env.availableActions());
        assert.equal(parsed.task, task.instruction);
        assert.equal(parsed.holding, held);
        const actions = parsed.actions;
        const action = random
          ? i % 7 === 6
            ? "jump around"
            : actions[rng.randbelow(actions.length)]
          : (await expert.act({ task, observation: state, actions, history: [], trace: [], info: {} })).action;
        const s = await wrapped.step(action);
        if (!s.info.invalid && action.startsWith("take ")) held = action.slice(5, action.indexOf(" from "));
        if (!s.info.invalid && action.startsWith("put ")) held = "";
        const next = parseAlfState(s.observation)!;
        if (s.info.invalid) assert.equal(next.observation, "Nothing happens.");
        if (!s.info.invalid && action.startsWith("go to ")) {
          assert.equal(next.at, action.slice(6));
          assert.ok(!next.observation.startsWith("You arrive at loc"), next.observation);
        }
        state = s.observation;
        steps++;
        if (s.terminated || s.truncated) {
          if (!random) assert.equal(s.reward, 1, `expert fails ${task.id}`);
          break;
        }
      }
    }
  }
  assert.ok(steps > 300, `${steps} steps`);
});

test("an opening text is a state without step info; an abstract state passes through; prose is not a state", () => {
  const intro =
    "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you see a bed 1, a desk 2, and a drawer 1.\n\nYour task is to: look at bowl under the desklamp.";
  const state = alfworldAbstraction.abstract(intro);
  assert.equal(
    state,
    "task: look at bowl under the desklamp\nat: middle of the room\nholding: nothing\nobservation: You are in the middle of a room. Looking quickly around you, you see a bed 1, a desk 2, and a drawer 1.\nactions:\ngo to bed 1\ngo to desk 2\ngo to drawer 1\ninventory\nlook",
  );
  assert.equal(alfworldAbstraction.abstract(state), state);
  assert.equal(alfworldAbstraction.isState!("You pick up the bowl 1."), false);
  assert.equal(alfworldAbstraction.actions("You pick up the bowl 1."), undefined);
});
