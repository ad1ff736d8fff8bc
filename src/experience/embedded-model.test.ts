import { test } from "node:test";
import assert from "node:assert/strict";
import type { Demo, StateAbstraction } from "../core/index.ts";
import { EmbeddedExperienceModel, elementKind } from "./embedded-model.ts";

/** elementKind as it read a page before it lowercased the page once: line by line. */
function elementKindByLines(state: string, action: string): string | undefined {
  const m = /^(\w+)\[(.*)\]$/s.exec(action.trim());
  if (!m) return undefined;
  const [, verb, label] = m;
  if (verb.toLowerCase() !== "click") return verb.toLowerCase();
  const tag = `[${label.toLowerCase()}]`;
  const line = state.split("\n").find((l) => l.toLowerCase().includes(tag));
  if (line === undefined) return `button:${label.toLowerCase()}`;
  if (/^[^[\]:]{1,40}:\s*\[/.test(line)) return "option";
  if (line.toLowerCase().startsWith(tag) && line.trim().length > tag.length + 1 && !/^(\[[^\]]+\]\s*)+$/.test(line.trim())) return "item";
  return `button:${label.toLowerCase()}`;
}

test("elementKind finds the line an action names as a line-by-line search does, whatever lowercasing does to lengths", () => {
  // "İ" lowercases to two code units: a line found by its offset in the lowercased page would be
  // the wrong one; "ΑΣ" ends in a final sigma on its line either way.
  const state = [
    "page: item",
    "instruction: İİİ a TALL lamp ΑΣ",
    "[back to search] [< prev]",
    "İstanbul Lamp İİ",
    "Color: [Black] [White] [İvory]",
    "size: [small] [large]",
    "[B01] İ a lamp with a [Black] shade | $9.99",
    "[buy now]",
    "ΑΣ",
  ].join("\n");
  const actions = [
    "click[black]",
    "click[İvory]",
    "click[ivory]",
    "click[b01]",
    "click[buy now]",
    "click[< prev]",
    "click[large]",
    "click[nowhere]",
    "click[a\nb]",
    "search[lamp]",
    "click[ασ]",
    "noise",
  ];
  for (const a of actions) assert.equal(elementKind(state, a), elementKindByLines(state, a), a);
  assert.equal(elementKind(state, "click[b01]"), "item");
  assert.equal(elementKind(state, "click[white]"), "option");
});

test("the embedded model reads each recorded step's action once, and still prefers a same-action demo to a same-kind one", async () => {
  let abstracted = 0;
  const abstraction = {
    env: "toy",
    profile: "",
    abstract: (s: string) => {
      abstracted++;
      return s;
    },
    actions: () => ["click[<item>]"],
    isTerminal: () => false,
  } as unknown as StateAbstraction;
  const model = new EmbeddedExperienceModel({ abstraction });
  const page = "page: results\n[a1] first item\n[b2] second item";
  const demo = (action: string, next: string, score: number): Demo => ({
    state: page,
    action,
    nextState: next,
    reward: 0,
    terminated: false,
    task: { id: "t", instruction: "x" },
    source: "real",
    score,
  });
  const demos = [demo("click[b2]", "page: item\nsecond", 0.9), demo("click[a1]", "page: item\nfirst", 0.8)];
  const task = { id: "t", instruction: "x" };
  const same = await model.predict({ task, history: [], state: page, action: "click[a1]", demos });
  assert.equal(same.nextState, "page: item\nfirst", "the same action's demo, though less similar");
  const first = abstracted;
  // Asked again, with the same recorded steps in new demo objects (another search's answer): their
  // actions are not read again (only the chosen demo's pages are).
  const again = await model.predict({ task, history: [], state: page, action: "click[a1]", demos: demos.map((d) => ({ ...d })) });
  assert.deepEqual(again, same);
  assert.ok(abstracted - first < first, `a repeated step read ${abstracted - first} pages, the first ${first}`);
  const other = await model.predict({ task, history: [], state: "page: results\n[c3] third item", action: "click[c3]", demos });
  assert.equal(other.nextState, "page: item\nsecond", "another item of the list: the best same-kind demo");
});
