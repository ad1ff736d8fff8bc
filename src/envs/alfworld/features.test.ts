import assert from "node:assert/strict";
import { test } from "node:test";
import { featurize, NeuralPolicy } from "../../rl/index.ts";
import { resolveDataDir } from "../data-dir.ts";
import { envEntry } from "../index.ts";
import { alfGoal, alfStep, alfView, alfworldFeatures } from "./features.ts";
import { alfworldGames, renderAlfState, taskSpec } from "./index.ts";

test("alfGoal reads every ALFWorld task sentence of the pack (all phrasings): kind, object, receptacle or lamp", () => {
  const kinds: Record<string, string> = {
    pick_and_place_simple: "simple",
    look_at_obj_in_light: "look",
    pick_clean_then_place_in_recep: "clean",
    pick_heat_then_place_in_recep: "heat",
    pick_cool_then_place_in_recep: "cool",
    pick_two_obj_and_place: "two",
  };
  const games = alfworldGames(resolveDataDir({ subdir: "alfworld" }));
  assert.equal(games.length, 474);
  for (const g of games) {
    const s = taskSpec(g.taskType, g.params);
    assert.deepEqual(
      alfGoal(g.goal.replace(/^Your task is to: /, "")),
      { kind: kinds[g.taskType], object: s.object.toLowerCase(), target: (s.parent || s.toggle).toLowerCase() },
      g.goal,
    );
  }
});

const state = (holding: string, observation: string, actions: string[]) =>
  renderAlfState({ task: "put a clean mug in coffeemachine", at: "countertop 1", holding, observation, actions });

test("the task's step: find, take, transform, place, clear", () => {
  const goal = alfGoal("put a clean mug in coffeemachine")!;
  const v = (h: string, o: string, a: string[]) => alfView(state(h, o, a))!;
  assert.equal(alfStep(goal, v("", "On the countertop 1, you see a apple 1.", ["take apple 1 from countertop 1"]), []).step, "find");
  assert.equal(alfStep(goal, v("", "On the countertop 1, you see a mug 2.", ["take mug 2 from countertop 1"]), []).step, "take");
  assert.equal(
    alfStep(goal, v("mug 2", "You pick up the mug 2 from the countertop 1.", ["go to sinkbasin 1"]), ["take mug 2 from countertop 1"]).step,
    "transform",
  );
  assert.equal(
    alfStep(goal, v("mug 2", "You clean the mug 2 using the sinkbasin 1.", ["go to coffeemachine 1"]), ["clean mug 2 with sinkbasin 1"]).step,
    "place",
  );
  assert.equal(alfStep(goal, v("apple 1", "You pick up the apple 1.", ["go to coffeemachine 1"]), []).step, "clear");
});

test("ALFWorld states get their own features (the goal object's command differs from another's); WebShop pages never take that path", () => {
  const s = state("", "On the countertop 1, you see a apple 1, and a mug 2.", ["take apple 1 from countertop 1", "take mug 2 from countertop 1"]);
  const f = featurize(
    {
      task: { id: "t", instruction: "put a clean mug in coffeemachine" },
      observation: s,
      actions: ["take apple 1 from countertop 1", "take mug 2 from countertop 1"],
      history: [],
    },
    1 << 15,
    alfworldFeatures,
  );
  assert.equal(f.candidates.length, 2);
  assert.notDeepEqual([...f.candidates[0].idx], [...f.candidates[1].idx]);
  // Entity numbers and scene names do not enter: mug 2 and mug 7 look the same.
  const g = featurize(
    {
      task: { id: "t", instruction: "put a clean mug in coffeemachine" },
      observation: s.replace(/mug 2/g, "mug 7"),
      actions: ["take apple 1 from countertop 1", "take mug 7 from countertop 1"],
      history: [],
    },
    1 << 15,
    alfworldFeatures,
  );
  assert.deepEqual([...g.candidates[1].idx], [...f.candidates[1].idx]);
  assert.equal(alfView("page: search\n[Search]"), undefined);
  assert.equal(alfView("Instruction: i need a red dress\n[Search]"), undefined);
});

test("the features come through ALFWorld's entry: a neural policy given them scores ALFWorld states with them, one without falls back to the generic ones", () => {
  assert.equal(envEntry("alfworld").spec.features, alfworldFeatures);
  const s = state("", "On the countertop 1, you see a apple 1, and a mug 2.", ["take apple 1 from countertop 1", "take mug 2 from countertop 1"]);
  const input = {
    task: { id: "t", instruction: "put a clean mug in coffeemachine" },
    observation: s,
    actions: ["take apple 1 from countertop 1", "take mug 2 from countertop 1"],
    history: [],
  };
  const own = new NeuralPolicy({ dim: 1 << 15, features: alfworldFeatures }).recordFor(input, "take mug 2 from countertop 1")!;
  const generic = new NeuralPolicy({ dim: 1 << 15 }).recordFor(input, "take mug 2 from countertop 1")!;
  assert.deepEqual(own.features, featurize(input, 1 << 15, alfworldFeatures));
  assert.notDeepEqual(own.features, generic.features);
  // A clone keeps them (GRPO's reference, the on-policy audit's frozen policy).
  const copy = new NeuralPolicy({ dim: 1 << 15, features: alfworldFeatures }).clone();
  assert.deepEqual(copy.recordFor(input, "take mug 2 from countertop 1")!.features, own.features);
});
