import assert from "node:assert/strict";
import { test } from "node:test";
import type { FeaturizedStep, Task } from "../core/index.ts";
import { featurize } from "./features.ts";

// WebShop's abstract pages: a search page with its free-text slot, a results page of two items.
const searchPage = "page: search\n[search]";
const resultsPage = (a: string, b: string) =>
  ["page: results", "[back to search]", "[next >]", `[b00aaaaaa1] ${a} $19.99`, `[b00aaaaaa2] ${b} $45.00`].join("\n");
const vectors = (f: FeaturizedStep) => f.candidates.map((v) => [...v.idx].map((i, j) => `${i}:${v.val[j]}`).join(" "));

test("a task's own search words do not enter the features: two tasks of the same shape read the same", () => {
  // Two instructions that match nothing on the page and have as many content words: every feature
  // but the task's own words is equal, so the vectors must be too (a scorer could otherwise learn
  // each training task by heart, through the query it searched).
  const red: Task = { id: "a", instruction: "find red leather boots with color: red, and price lower than 40.00 dollars" };
  const blue: Task = { id: "b", instruction: "find blue cotton socks with color: blue, and price lower than 40.00 dollars" };
  const onSearch = (task: Task) => featurize({ task, observation: searchPage, actions: ["search[<query>]"], history: [] }, 4096);
  const sa = onSearch(red),
    sb = onSearch(blue);
  assert.ok(sa.actions.length >= 2, "the slot expands into several queries");
  assert.deepEqual(vectors(sa), vectors(sb));

  // On the results page after the search: the previous action is that search.
  const page = resultsPage("garden hose reel", "kitchen timer");
  const onResults = (task: Task) =>
    featurize(
      {
        task,
        observation: page,
        actions: ["click[back to search]", "click[next >]", "click[b00aaaaaa1]", "click[b00aaaaaa2]"],
        history: [`search[${task.instruction}]`],
      },
      4096,
    );
  assert.deepEqual(vectors(onResults(red)), vectors(onResults(blue)));
  // Still task-aware where the page meets the instruction: an item whose line matches differs.
  const matching = featurize(
    {
      task: red,
      observation: resultsPage("red leather boots", "kitchen timer"),
      actions: ["click[b00aaaaaa1]", "click[b00aaaaaa2]"],
      history: [`search[${red.instruction}]`],
    },
    4096,
  );
  assert.notEqual(vectors(matching)[0], vectors(matching)[1]);
});
