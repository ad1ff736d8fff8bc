import { test } from "node:test";
import assert from "node:assert/strict";
import type { Task } from "../core/index.ts";
import { webshopBrowserAbstraction } from "../envs/webshop-site/index.ts";
import { webView } from "../rl/index.ts";
import { EmbeddedExperienceModel, transitionFeatures, type Demo } from "./index.ts";
import { viewTransition } from "./transition-features.ts";

// Web page states as the browser env writes them; ids shift between pages of the same kind.
const task: Task = { id: "t1", instruction: "i need a blue cotton shirt with size: medium, and price lower than 30.00 dollars" };
const other: Task = { id: "t2", instruction: "a red scarf" };
const I = (t: Task) => ["Instruction:", t.instruction];
const results = (t: Task) =>
  [
    ...I(t),
    '[1] button "Back to Search"',
    "Page 1 (Total results: 20)",
    '[2] button "Next >"',
    '[3] link "B00AAAAAA1"',
    "Blue Cotton Shirt for Men",
    "$19.99",
    '[4] link "B00AAAAAA2"',
    "Red Wool Scarf",
    "$45.00",
  ].join("\n");
const item = (t: Task, checked: string[], extra = 0, title = "Blue Cotton Shirt for Men") => {
  let id = 0;
  const el = (role: string, name: string) => `[${++id}] ${role} ${JSON.stringify(name)}${role === "radio" && checked.includes(name) ? " checked" : ""}`;
  return [
    ...I(t),
    el("button", "Back to Search"),
    el("button", "< Prev"),
    ...Array.from({ length: extra }, (_, k) => el("button", `Ad ${k}`)),
    "size",
    el("radio", "small"),
    el("radio", "medium"),
    el("radio", "large"),
    title,
    "Price: $19.99",
    "Rating: N.A.",
    el("button", "Description"),
    el("button", "Buy Now"),
  ].join("\n");
};
const idOf = (state: string, name: string) =>
  state
    .split("\n")
    .map((l) => /^\[(\d+)\] \w+ "([^"]*)"/.exec(l))
    .find((m) => m?.[2] === name)![1];
const demo = (t: Task, state: string, action: string, nextState: string, o: Partial<Demo> = {}): Demo => ({
  state,
  action,
  nextState,
  reward: 0,
  terminated: false,
  task: { id: t.id, instruction: t.instruction },
  source: "real",
  score: 0.9,
  ...o,
});
const model = new EmbeddedExperienceModel({ abstraction: webshopBrowserAbstraction });

test("the kNN model replays a radio click recorded under another id as checking that radio here", async () => {
  const seen = item(other, []);
  const here = item(task, [], 2);
  const medium = idOf(here, "medium");
  assert.notEqual(idOf(seen, "medium"), medium);
  const demos = [demo(other, seen, `click [${idOf(seen, "medium")}]`, item(other, ["medium"]))];
  const p = await model.predict({ task, history: [], state: here, action: `click [${medium}]`, demos });
  assert.equal(p.info.failed, undefined);
  assert.equal(p.nextState, item(task, ["medium"], 2));
  // Another value of the group (same kind of element): the click is replayed on its own radio.
  const small = await model.predict({ task, history: [], state: here, action: `click [${idOf(here, "small")}]`, demos });
  assert.equal(small.nextState, item(task, ["small"], 2));
});

test("the kNN model matches actions by the element, not by the id: a product's id on an item page is not that product", async () => {
  const r = results(other);
  const product = item(other, [], 0, "Red Wool Scarf");
  // On the results page, [3] opens a product; on an item page, [3] is the radio "small".
  const demos = [
    demo(other, r, "click [3]", product),
    demo(other, product, `click [${idOf(product, "Buy Now")}]`, "Thank you for shopping with us!\nYour score (min 0.0, max 1.0)\n1.0", {
      reward: 1,
      terminated: true,
    }),
  ];
  const here = item(task, []);
  assert.equal(idOf(here, "small"), "3");
  const p = await model.predict({ task, history: [], state: here, action: "click [3]", demos });
  // No recorded click on an option: the step fails in place (before, `click [3]` replayed the product's page).
  assert.ok(p.info.failed);
  assert.equal(p.nextState, here);
  assert.equal(p.terminated, false);
  // Buy Now, whatever its id, is the recorded Buy Now.
  const shifted = item(task, ["medium"], 3);
  const buy = await model.predict({ task, history: [], state: shifted, action: `click [${idOf(shifted, "Buy Now")}]`, demos });
  assert.equal(buy.terminated, true);
  assert.equal(buy.reward, 1);
});

test("transition features read a web transition as its bracketed view, the history's pages too", () => {
  const r = results(task);
  const chosen = item(task, ["medium"], 1);
  const history = [
    { state: r, action: "click [3]", nextState: item(task, [], 1), reward: 0 },
    { state: item(task, [], 1), action: `click [${idOf(chosen, "medium")}]`, nextState: chosen, reward: 0 },
  ];
  const input = { task, history, state: chosen, action: `click [${idOf(chosen, "Buy Now")}]` };
  const v = viewTransition(input);
  assert.equal(v.action, "click[buy now]");
  assert.equal(v.state, webView(chosen)!.text);
  assert.deepEqual(
    v.history.map((h) => h.action),
    ["click[b00aaaaaa1]", "click[medium]"],
  );
  const key = (x: ReturnType<typeof transitionFeatures>) => [...x.idx].join(",") + "|" + [...x.val].join(",");
  assert.equal(key(transitionFeatures(input, 4096)), key(transitionFeatures(v, 4096)));
  // The size asked for, clicked, reads differently from a wrong size clicked before buying.
  const wrong = item(task, ["large"], 1);
  const wrongInput = {
    task,
    history: [history[0], { ...history[1], action: `click [${idOf(wrong, "large")}]`, nextState: wrong }],
    state: wrong,
    action: input.action,
  };
  assert.notEqual(key(transitionFeatures(input, 4096)), key(transitionFeatures(wrongInput, 4096)));
});
