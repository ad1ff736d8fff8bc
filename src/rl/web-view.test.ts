import { test } from "node:test";
import assert from "node:assert/strict";
import { FREE_TEXT_SLOT, Rng, type Task } from "../core/index.ts";
import { listActions, parseElements } from "../envs/browser/index.ts";
import { featurize } from "./features.ts";
import { NeuralPolicy } from "./neural-policy.ts";
import { clickChoice, webView } from "./web-view.ts";

// Page states as the browser env writes them (element lines, ids counted from 1 on each page).
const task: Task = { id: "t", instruction: "i need a blue cotton shirt with size: medium, and price lower than 30.00 dollars" };
const I = ["Instruction:", task.instruction];
const search = ["WebShop", ...I, '[1] textbox "Search..."', '[2] button "Search"'].join("\n");
const results = [
  ...I,
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
/** An item page; `extra` buttons before the options shift every id after them. */
const item = (checked: string | null, extra = 0) => {
  let id = 0;
  const el = (role: string, name: string) => `[${++id}] ${role} ${JSON.stringify(name)}${role === "radio" && name === checked ? " checked" : ""}`;
  return [
    ...I,
    el("button", "Back to Search"),
    el("button", "< Prev"),
    ...Array.from({ length: extra }, (_, k) => el("button", `Ad ${k}`)),
    "size",
    el("radio", "small"),
    el("radio", "medium"),
    el("radio", "large"),
    "color",
    el("radio", "blue"),
    el("radio", "red"),
    "Blue Cotton Shirt for Men",
    "Price: $19.99",
    "Rating: N.A.",
    el("button", "Description"),
    el("button", "Buy Now"),
  ].join("\n");
};
const idOf = (state: string, name: string) => parseElements(state).find((e) => e.name === name)!.id;
const actionsOf = (state: string) => listActions(parseElements(state), { stop: false });

test("the view names each element an id points at, and tells the page's kind", () => {
  const r = webView(results)!;
  assert.equal(r.kind, "results");
  assert.ok(r.text.startsWith(`page: results\ninstruction: ${task.instruction}\n`));
  assert.ok(r.text.includes("[b00aaaaaa1] Blue Cotton Shirt for Men | $19.99"));
  assert.equal(r.action("click [3]"), "click[b00aaaaaa1]");
  assert.equal(r.action("click [2]"), "click[next >]");
  assert.equal(r.action("click [99]"), "click[#99]");
  const it = webView(item("medium"))!;
  assert.equal(it.kind, "item");
  assert.ok(it.text.includes("size: [small] [medium] [large]\ncolor: [blue] [red]"));
  assert.deepEqual(it.checked, ["medium"]);
  assert.equal(it.action(`click [${idOf(item(null), "Buy Now")}]`), "click[buy now]");
  const s = webView(search)!;
  assert.equal(s.kind, "search");
  assert.equal(s.action("type [1] [blue shirt]"), "search[blue shirt]");
  assert.equal(s.action("type [1] [blue shirt] [0]"), "search[blue shirt]");
  assert.equal(webView("Thank you for shopping with us!\nYour score (min 0.0, max 1.0)\n1.0"), null);
  assert.equal(webView("page: item\ninstruction: x\n[buy now]"), null);
});

test("a policy's features of an element do not depend on its id, and tell elements apart", () => {
  const a = item(null),
    b = item(null, 2);
  assert.notEqual(idOf(a, "Buy Now"), idOf(b, "Buy Now"));
  const fa = featurize({ task, observation: a, actions: actionsOf(a), history: [] }, 4096);
  const fb = featurize({ task, observation: b, actions: actionsOf(b), history: [] }, 4096);
  const vec = (f: typeof fa, action: string) => {
    const v = f.candidates[f.actions.indexOf(action)];
    return [...v.idx].map((i, j) => `${i}:${v.val[j]}`).join(" ");
  };
  assert.equal(vec(fa, `click [${idOf(a, "Buy Now")}]`), vec(fb, `click [${idOf(b, "Buy Now")}]`));
  assert.equal(vec(fa, `click [${idOf(a, "medium")}]`), vec(fb, `click [${idOf(b, "medium")}]`));
  assert.notEqual(vec(fa, `click [${idOf(a, "Buy Now")}]`), vec(fa, `click [${idOf(a, "medium")}]`));
  assert.notEqual(vec(fa, `click [${idOf(a, "small")}]`), vec(fa, `click [${idOf(a, "medium")}]`));
  // A size already checked reads as chosen: the same click's features change with the mark.
  const fc = featurize({ task, observation: item("medium"), actions: actionsOf(item("medium")), history: [] }, 4096);
  assert.notEqual(vec(fa, `click [${idOf(a, "medium")}]`), vec(fc, `click [${idOf(a, "medium")}]`));
});

test("the candidates are the page's own actions, a free-text slot filled with queries", async () => {
  for (const state of [search, results, item("blue")]) {
    const listed = actionsOf(state);
    const f = featurize({ task, observation: state, actions: listed, history: [] }, 4096);
    assert.equal(f.actions.length, f.candidates.length);
    for (const a of f.actions) {
      const slot = listed.find((l) => l.includes(FREE_TEXT_SLOT));
      assert.ok(
        listed.includes(a) || (slot !== undefined && a.startsWith(slot.slice(0, slot.indexOf(FREE_TEXT_SLOT))) && a.endsWith("]")),
        `${a} is the page's`,
      );
    }
    // Every listed action but the slot is a candidate.
    for (const l of listed) if (!l.includes(FREE_TEXT_SLOT)) assert.ok(f.actions.includes(l), `${l} is a candidate`);
  }
  const f = featurize({ task, observation: search, actions: actionsOf(search), history: [] }, 4096);
  assert.ok(f.actions.includes(`type [1] [${task.instruction}]`));
  // The neural policy acts with them and can record a demonstrated action on a web page.
  const policy = new NeuralPolicy({ dim: 4096 });
  const d = await policy.act({ task, observation: results, actions: actionsOf(results), history: [] }, { rng: new Rng(0) });
  assert.ok(actionsOf(results).includes(d.action));
  assert.ok(policy.recordFor({ task, observation: item(null), actions: actionsOf(item(null)), history: [] }, `click [${idOf(item(null), "Buy Now")}]`));
});

test("clicking a choice marks it as a page does: a radio checked alone in its run, a checkbox toggled", () => {
  const s = item("small");
  const after = clickChoice(s, `click [${idOf(s, "medium")}]`)!;
  assert.deepEqual(webView(after)!.checked, ["medium"]);
  const both = clickChoice(after, `click [${idOf(s, "red")}]`)!;
  assert.deepEqual(webView(both)!.checked, ["medium", "red"]);
  assert.equal(clickChoice(s, `click [${idOf(s, "Buy Now")}]`), null);
  assert.equal(clickChoice(s, "go_back"), null);
  const boxes = [...I, "extras", '[1] checkbox "gift wrap"', '[2] button "Buy Now"'].join("\n");
  const on = clickChoice(boxes, "click [1]")!;
  assert.ok(on.includes('[1] checkbox "gift wrap" checked'));
  assert.equal(clickChoice(on, "click [1]"), boxes);
});
