import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { abstractTrajectory, type Trajectory } from "../../core/index.ts";
import { ReplayBuffer } from "../../buffer/index.ts";
import { auditModel, createExperienceModel, SyntheticEnv } from "../../experience/index.ts";
import { RandomPolicy, runEpisode } from "../index.ts";
import { AlfWorldEnv, AlfWorldExpert, alfworldAbstraction, parseAlfState } from "./index.ts";
import { AlfWorldExperienceModel, delex, delexObservation, listText } from "./experience-model.ts";

async function episodes(split: "valid_train" | "valid_unseen", n: number, every = 1): Promise<Trajectory[]> {
  const env = new AlfWorldEnv({ split });
  const tasks = env.tasks();
  const expert = new AlfWorldExpert(env);
  const random = new RandomPolicy(3);
  const out: Trajectory[] = [];
  for (let i = 0; i < n; i++) {
    const policy = i % 2 === 0 ? expert : random;
    // Raw trajectories, as `collect` writes them: the model abstracts them itself.
    const t = await runEpisode(env, policy, { envName: "alfworld", task: tasks[(i * every) % tasks.length], seed: i });
    out.push(policy === random ? { ...t, steps: t.steps.slice(0, 25) } : t);
  }
  return out;
}

test("de-lexicalising: commands and feedback become templates with typed slots; lists read back", () => {
  assert.deepEqual(delex("take mug 1 from countertop 10"), { pattern: "take {1} from {2}", args: ["mug 1", "countertop 10"] });
  assert.deepEqual(delexObservation("You open the cabinet 1. The cabinet 1 is open. In it, you see a cup 1, and a plate 2.", ["cabinet 1"], "cabinet 1", ""), {
    text: "You open the {1}. The {1} is open. In it, you see {LIST}.",
    list: ["cup 1", "plate 2"],
  });
  assert.equal(
    delexObservation("You are facing the drawer 1. Next to it, you see nothing.", [], "drawer 1", "").text,
    "You are facing the {HERE}. Next to it, you see nothing.",
  );
  assert.equal(delexObservation("On the cabinet 10, you see nothing.", ["cabinet 10"], "", "").text, "On the {1}, you see {LIST}.");
  assert.deepEqual([listText([]), listText(["a 1"]), listText(["a 1", "b 2"])], ["nothing", "a a 1", "a a 1, and a b 2"]);
});

test("learned on valid_train, it predicts held-out valid_unseen games: rewards and ends, admissible commands, templates", async () => {
  const model = new AlfWorldExperienceModel();
  const learned = model.learn(await episodes("valid_train", 160));
  assert.equal(learned.episodes, 160);
  const heldOut = (await episodes("valid_unseen", 40, 3)).map((t) => abstractTrajectory(t, alfworldAbstraction));
  const r = await auditModel(heldOut, { model, abstraction: alfworldAbstraction });
  assert.equal(r.invalidRate, 0);
  assert.ok(r.rewardErrorRate <= 0.01, `ε_R ${r.rewardErrorRate}`);
  assert.ok(r.success.truePositive >= 18 && r.success.falsePositive <= 1, JSON.stringify(r.success));
  assert.ok(r.elementF1 >= 0.9, `element F1 ${r.elementF1}`);
  // What does not depend on a receptacle's unseen contents: the template of every step.
  let same = 0;
  let n = 0;
  for (const t of heldOut) {
    const history: { state: string; action: string; nextState: string; reward: number }[] = [];
    for (const s of t.steps) {
      const p = await model.predict({ task: t.task, history, state: s.observation, action: s.action, demos: [] });
      const a = parseAlfState(p.nextState)!;
      const b = parseAlfState(s.next_observation)!;
      const { args } = delex(s.action);
      if (delexObservation(a.observation, args, "", "").text === delexObservation(b.observation, args, "", "").text) same++;
      assert.equal(a.at, b.at);
      assert.equal(a.holding, b.holding);
      n++;
      history.push({ state: s.observation, action: s.action, nextState: s.next_observation, reward: s.reward });
    }
  }
  assert.ok(same / n >= 0.9, `templates ${same}/${n}`);
});

test("the synthetic ALFWorld env: createExperienceModel('default') picks it; it learns from the buffer and plays unseen games in their own rooms", async () => {
  const buffer = ReplayBuffer.open(join(mkdtempSync(join(tmpdir(), "dreamgym-alfmodel-")), "b.db"));
  try {
    await buffer.appendTrajectories(
      (await episodes("valid_train", 60)).map((t) => abstractTrajectory(t, alfworldAbstraction)),
      { seed: true },
    );
    const { model } = createExperienceModel("default", { abstraction: alfworldAbstraction });
    assert.ok(model instanceof AlfWorldExperienceModel);
    const real = new AlfWorldEnv({ split: "valid_unseen" });
    const tasks = real.tasks().slice(0, 12);
    const env = new SyntheticEnv({ model, abstraction: alfworldAbstraction, tasks, initialState: (t) => real.introOf(t), buffer, maxSteps: 30, record: false });
    const random = new RandomPolicy(5);
    let steps = 0;
    for (const task of tasks) {
      const t = await runEpisode(env, random, { envName: "alfworld", task });
      const first = parseAlfState(alfworldAbstraction.abstract(real.introOf(task)))!;
      const room = new Set(first.actions.filter((a) => a.startsWith("go to ")).map((a) => a.slice(6)));
      for (const s of t.steps) {
        const st = parseAlfState(s.next_observation)!;
        assert.ok(st, s.next_observation);
        assert.ok(st.actions.includes("look") && st.actions.includes("inventory"));
        // Receptacles named are this room's; go-to lists them all but the one here.
        for (const a of st.actions) if (a.startsWith("go to ")) assert.ok(room.has(a.slice(6)), `${a} not in the room of ${task.id}`);
        if (st.at) assert.ok(!st.actions.includes(`go to ${st.at}`));
        assert.equal(typeof s.info?.u, "number");
        steps++;
      }
    }
    assert.ok(steps >= 12 * 20);
    // The same task draws the same room: a replay of the same actions gives the same states.
    const t1 = await runEpisode(env, new RandomPolicy(9), { envName: "alfworld", task: tasks[0] });
    const replay = await env.reset({ task: tasks[0] });
    assert.equal(replay.observation, t1.steps[0].observation);
    for (const s of t1.steps) assert.equal((await env.step(s.action)).observation, s.next_observation);
  } finally {
    buffer.close();
  }
});
