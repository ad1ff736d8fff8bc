import { test } from "node:test";
import assert from "node:assert/strict";
import type { Trajectory } from "../../core/index.ts";
import { resolveDataDir } from "../data-dir.ts";
import { shippedDemos } from "../index.ts";
import { alfworldFewShot } from "./few-shot.ts";

test("the data folder's ALFWorld ReAct transcripts: 24 + 36 solved demonstrations", () => {
  const files = alfworldFewShot(resolveDataDir());
  assert.deepEqual(
    files.map((f) => f.trajectories.length),
    [24, 36],
  );
  const all: Trajectory[] = files.flatMap((f) => f.trajectories);
  const put = all.find((t) => t.task.id === "alfworld-fewshot:alfworld:react_put_0")!;
  assert.equal(put.task.instruction, "put some spraybottle on toilet.");
  assert.equal(put.steps[0].action.startsWith("think:"), true);
  assert.equal(put.steps.at(-1)!.action, "put spraybottle 2 in/on toilet 1");
  assert.equal(put.steps.at(-1)!.next_observation, "You put the spraybottle 2 in/on the toilet 1.");
  assert.ok(all.every((t) => t.steps.length > 3 && t.steps.at(-1)!.terminated && t.task.instruction.length > 0));
  assert.equal(all.filter((t) => t.policy === "act-fewshot").length, 30);
});

test("buffer import --few-shot reads what each registered env ships: WebShop's ReAct JSONL, ALFWorld's parsed prompts", () => {
  const { jsonl, parsed } = shippedDemos(resolveDataDir());
  assert.deepEqual(
    jsonl.map((f) => f.split("/").slice(-2).join("/")),
    ["webshop/react_trajectories.jsonl"],
  );
  assert.deepEqual(
    parsed.map((p) => p.trajectories.length),
    [24, 36],
  );
});
