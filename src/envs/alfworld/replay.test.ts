import assert from "node:assert/strict";
import { test } from "node:test";
import { abstractEnv, type Task } from "../../core/index.ts";
import { SyntheticEnv, type ExperienceModel, type PredictInput } from "../../experience/index.ts";
import { alfworldAbstraction, parseAlfState, renderAlfState } from "./abstraction.ts";
import { AlfWorldEnv } from "./alfworld-env.ts";
import { AlfWorldExpert } from "./expert.ts";
import { AlfWorldReplay, alfworldVerifier } from "./replay.ts";

/** An expert episode in the real env: its commands, abstract states and rewards. */
async function expertEpisode(env: AlfWorldEnv, task: Task) {
  const wrapped = abstractEnv(env, alfworldAbstraction);
  const expert = new AlfWorldExpert(env);
  let state = (await wrapped.reset({ task })).observation;
  const steps: { action: string; state: string; reward: number; terminated: boolean }[] = [];
  for (let i = 0; i < 50; i++) {
    const { action } = await expert.act({ task, observation: state, actions: wrapped.availableActions()!, history: [], trace: [], info: {} });
    const s = await wrapped.step(action);
    steps.push({ action, state: s.observation, reward: s.reward, terminated: s.terminated });
    state = s.observation;
    if (s.terminated) break;
  }
  return steps;
}

test("replay: a command sequence gives the real env's states, rewards and end; a command the game does not admit ends playability", async () => {
  const env = new AlfWorldEnv({ split: "valid_seen" });
  const replay = new AlfWorldReplay({ split: "valid_seen", capacity: 4 });
  for (const task of env.tasks().filter((_, i) => i % 35 === 0)) {
    const steps = await expertEpisode(env, task);
    assert.equal(steps.at(-1)!.reward, 1, `the expert finishes ${task.id}`);
    for (let n = 1; n <= steps.length; n++) {
      const r = await replay.play(
        task,
        steps.slice(0, n).map((s) => s.action),
      );
      assert.deepEqual(
        r,
        { playable: true, state: steps[n - 1].state, reward: steps[n - 1].reward, terminated: steps[n - 1].terminated },
        `${task.id} step ${n}`,
      );
    }
    // Asked out of order (a fresh replay from the start) the answer is the same.
    const mid = Math.floor(steps.length / 2);
    assert.equal(
      (
        await new AlfWorldReplay({ split: "valid_seen" }).play(
          task,
          steps.slice(0, mid).map((s) => s.action),
        )
      ).state,
      steps[mid - 1].state,
    );
    const commands = steps.map((s) => s.action);
    assert.equal((await replay.play(task, [...commands.slice(0, 1), "take unicorn 1 from cabinet 1"])).playable, false);
    assert.equal((await replay.play(task, [...commands.slice(0, 1), "take unicorn 1 from cabinet 1", "look"])).playable, false, "not playable stays so");
    assert.equal((await replay.play(task, [...commands, "look"])).playable, false, "nothing after the task is done");
  }
});

/** A model that shows the real game's next state (from its own replay) with the reward and end it is told to claim. */
function claimingModel(claim: { reward: number; terminated: boolean }, extraCommand?: string): ExperienceModel {
  const replay = new AlfWorldReplay({ split: "valid_seen" });
  return {
    id: "claiming",
    usesDemos: false,
    async predict({ task, history, action }: PredictInput) {
      const r = await replay.play(task, [...history.map((h) => h.action), action]);
      const s = parseAlfState(r.state ?? "task: x\nat: x\nholding: nothing\nobservation: Nothing happens.\nactions:\nlook")!;
      return { nextState: renderAlfState({ ...s, actions: extraCommand ? [...s.actions, extraCommand] : s.actions }), ...claim, info: {} };
    },
  };
}

test("hybrid: the real game's reward and end replace the model's while the game admits the synthetic commands; after that the model's stand", async () => {
  const env = new AlfWorldEnv({ split: "valid_seen" });
  const task = env.tasks()[3];
  const commands = (await expertEpisode(env, task)).map((s) => s.action);
  const synthetic = (model: ExperienceModel) =>
    new SyntheticEnv({
      model,
      abstraction: alfworldAbstraction,
      tasks: [task],
      initialState: (t) => env.introOf(t),
      maxSteps: 50,
      verifier: alfworldVerifier(new AlfWorldReplay({ split: "valid_seen" })),
    });

  // A model blind to success: the game grants it on the expert's last command.
  const blind = synthetic(claimingModel({ reward: 0, terminated: false }));
  await blind.reset({ task });
  const rewards: number[] = [];
  for (const c of commands) {
    const s = await blind.step(c);
    assert.equal(s.info.verified, true);
    rewards.push(s.reward);
    if (s.terminated) break;
  }
  assert.deepEqual(rewards, [...commands.slice(1).map(() => 0), 1]);

  // A model that claims success at every step: the game refutes it.
  const liar = synthetic(claimingModel({ reward: 1, terminated: true }));
  await liar.reset({ task });
  const first = await liar.step(commands[0]);
  assert.deepEqual([first.reward, first.terminated, first.info.verified], [0, false, true]);

  // A synthetic world that offers a command the game lacks: once taken, the model's claim stands, unverified.
  const odd = "take unicorn 1 from cabinet 1";
  const dreamer = synthetic(claimingModel({ reward: 0, terminated: false }, odd));
  await dreamer.reset({ task });
  await dreamer.step(commands[0]);
  const s = await dreamer.step(odd);
  assert.deepEqual([s.reward, s.terminated, s.info.verified], [0, false, undefined]);
});
