import { test } from "node:test";
import assert from "node:assert/strict";
import { checkEnv, ClosedEnvironmentError, InvalidConfigError, ResetNeededError } from "../../core/index.ts";
import { getReward, WebShopEnv, webshopTask } from "./index.ts";

const env = new WebShopEnv({ split: "test" });
const c = env.catalogue;
const SEP = " [SEP] ";

test("checkEnv: WebShop conforms to the Env contract", async () => {
  await checkEnv(new WebShopEnv({ split: "test" }), { steps: 6 });
});

test("search page, as the reference's text mode shows it", async () => {
  const { observation, info } = await env.reset({ task: webshopTask(c, 0) });
  assert.equal(observation, `WebShop [SEP] Instruction: [SEP] ${c.goals[0].instruction_text} [SEP] Search`);
  assert.equal(info.page, "search");
  assert.deepEqual(env.availableActions(), ["search[<query>]"]);
});

test("results pages: paging buttons, 10 products a page, Next > even on the last page", async () => {
  await env.reset({ task: webshopTask(c, 0) });
  const r = await env.step("search[double sided machine washable decorative pillows 28x28 printing technology under 50 dollars]");
  const parts = r.observation.split(SEP);
  assert.deepEqual(parts.slice(2, 8), [
    "Back to Search",
    "Page 1 (Total results: 50)",
    "Next >",
    "B07XTK3P89",
    c.byAsin.get("B07XTK3P89")!.Title,
    c.byAsin.get("B07XTK3P89")!.Price,
  ]);
  assert.equal(parts.length, 5 + 3 * 10);
  const actions = env.availableActions()!;
  assert.deepEqual(actions.slice(0, 3), ["click[back to search]", "click[next >]", "click[b07xtk3p89]"]);
  assert.equal(actions.length, 12);
  let obs = r.observation;
  for (let page = 2; page <= 6; page++) {
    obs = (await env.step("click[Next >]")).observation;
    assert.ok(obs.includes(`Page ${page} (Total results: 50) [SEP] < Prev [SEP] Next >`), obs.slice(0, 300));
  }
  assert.ok(obs.endsWith("Page 6 (Total results: 50) [SEP] < Prev [SEP] Next >"), "page 6 is empty");
  obs = (await env.step("click[< prev]")).observation;
  assert.ok(obs.includes("Page 5 (Total results: 50)"));
});

test("item page, sub-pages and navigation read as the reference's", async () => {
  await env.reset({ task: webshopTask(c, 0) });
  await env.step("search[double sided machine washable decorative pillows 28x28 printing technology under 50 dollars]");
  const item = await env.step("click[B08K7LDM7Q]");
  // The tail of this page as the reference WebShop rendered it for the same product.
  const p = c.byAsin.get("B08K7LDM7Q")!;
  assert.equal(
    item.observation,
    [
      `Instruction:`,
      c.goals[0].instruction_text,
      "Back to Search",
      "< Prev",
      "size",
      "18 x 18-inch",
      '20"x20"',
      "2 Pcs Cowhide Throw Pillow Covers Decorative Pillow Cases Farm Animal Brown Cow Hide Skin Print Pillow Case 18 X 18 Inch Velvet Square Cushion Cover for Sofa Bedroom",
      "Price: $17.99",
      "Rating: N.A.",
      "Description",
      "Features",
      "Reviews",
      "Buy Now",
    ].join(SEP),
  );
  assert.deepEqual(env.availableActions(), [
    "click[back to search]",
    "click[< prev]",
    "click[description]",
    "click[features]",
    "click[reviews]",
    "click[buy now]",
    "click[18 x 18-inch]",
    'click[20"x20"]',
  ]);
  const features = await env.step("click[Features]");
  assert.equal(
    features.observation,
    ["Instruction:", c.goals[0].instruction_text, "Back to Search", "< Prev", ...p.BulletPoints.map((b) => b.trim()).filter(Boolean)].join(SEP),
  );
  assert.equal(features.info.page, "item_sub");
  const back = await env.step("click[< Prev]");
  assert.equal(back.observation, item.observation);
  const results = await env.step("click[< prev]");
  assert.ok(results.observation.includes("Page 1 (Total results: 50)"));
  const home = await env.step("click[back to search]");
  assert.ok(home.observation.startsWith("WebShop [SEP] Instruction:"));
});

test("invalid actions are no-ops with info.invalid; search works from any page, as in the reference", async () => {
  const { observation } = await env.reset({ task: webshopTask(c, 3) });
  for (const bad of ["click[next >]", "click[search]", "search[]", "buy", "click[B0NOTHERE]", "jump[x]"]) {
    const r = await env.step(bad);
    assert.equal(r.info.invalid, true, bad);
    assert.equal(r.reward, 0);
    assert.equal(r.observation, observation);
  }
  await env.step("search[pillow]");
  const first = env.availableActions()!.find((a) => /^click\[b0/.test(a))!;
  await env.step(first);
  const again = await env.step("search[shoes]");
  assert.equal(again.info.invalid, undefined);
  assert.equal(again.info.page, "results");
});

test("Buy Now ends the episode with the reference reward of the purchase", async () => {
  const goal = c.goals[0];
  await env.reset({ task: webshopTask(c, 0) });
  await env.step(`search[${goal.name}]`);
  await env.step(`click[${goal.asin}]`);
  for (const v of Object.values(goal.goal_options)) await env.step(`click[${v}]`);
  const r = await env.step("click[Buy Now]");
  assert.equal(r.terminated, true);
  assert.equal(r.truncated, false);
  const product = c.byAsin.get(goal.asin)!;
  assert.equal(r.reward, getReward(product, goal, c.prices.get(goal.asin)!, goal.goal_options as Record<string, string>));
  assert.equal(r.reward, 1);
  assert.ok(r.observation.startsWith("Thank you for shopping with us! [SEP] Your code:"));
  assert.ok(r.observation.includes("Your score (min 0.0, max 1.0) [SEP] 1.0"));
  assert.deepEqual(env.availableActions(), []);
  await assert.rejects(env.step("click[buy now]"), ResetNeededError);
});

test("a purchase made again, in any env of the catalogue, scores as the reference reward, with info of its own", async () => {
  // Goals with two option groups or more; a second product bought under each goal's task too.
  const withOptions = c.goals.flatMap((x, i) => (!Array.isArray(x.goal_options) && Object.keys(x.goal_options).length >= 2 ? [i] : []));
  // An env that compares option values, not (name, value) pairs: where the two rules differ, a kept reward of one is wrong for the other.
  const valuesEnv = new WebShopEnv({ split: "test", goalOptionValues: true });
  const ruleDiffers = withOptions.find((i) => {
    const x = c.goals[i];
    const options = x.goal_options as Record<string, string>;
    const p = c.byAsin.get(x.asin)!;
    return getReward(p, x, c.prices.get(x.asin)!, options) !== getReward(p, x, c.prices.get(x.asin)!, options, { goalOptionValues: true });
  });
  assert.ok(withOptions.length >= 2 && ruleDiffers !== undefined, "goals to buy for");
  const other = new WebShopEnv({ split: "test" });
  const buy = async (e: WebShopEnv, g: number, asin: string, options: string[]) => {
    await e.reset({ task: webshopTask(c, g) });
    await e.step(`search[${c.byAsin.get(asin)!.Title}]`);
    await e.step(`click[${asin.toLowerCase()}]`);
    for (const v of options) await e.step(`click[${v}]`);
    return e.step("click[Buy Now]");
  };
  let checked = 0;
  for (const g of [withOptions[0], ruleDiffers, withOptions[0]]) {
    const goal = c.goals[g];
    const all = Object.values(goal.goal_options as Record<string, string>);
    // Its own product with each choice of options, then the other goal's product (no option groups of this goal).
    const otherAsin = c.goals[g === withOptions[0] ? ruleDiffers : withOptions[0]].asin;
    const purchases: [string, string[]][] = [
      [goal.asin, all],
      [goal.asin, all.slice(0, 1)],
      [goal.asin, []],
      [goal.asin, all],
      [otherAsin, []],
    ];
    for (const [asin, options] of purchases)
      for (const [e, values] of [
        [env, false],
        [other, false],
        [valuesEnv, true],
      ] as const) {
        const r = await buy(e, g, asin, options);
        const product = c.byAsin.get(asin)!;
        const chosen = Object.fromEntries(
          Object.entries(goal.goal_options as Record<string, string>).filter(([, v]) => options.includes(v) && asin === goal.asin),
        );
        const [reward, info] = getReward(product, goal, c.prices.get(asin)!, chosen, { verbose: true, goalOptionValues: values });
        assert.equal(r.reward, reward, `goal ${g}, ${asin}, options ${options.join(", ")}, values ${values}`);
        assert.deepEqual(r.info.reward_info, info);
        (r.info.reward_info as unknown as Record<string, unknown>).r_type = -1; // a caller's change stays its own
        checked++;
      }
  }
  assert.equal(checked, 45);
  other.close();
  valuesEnv.close();
});

test("a goal of one's own changed in place between episodes is scored as it is now", async () => {
  const g = c.goals.findIndex((x) => x.attributes.length >= 1);
  const goal = structuredClone(c.goals[g]);
  const task = { id: "own", instruction: goal.instruction_text, goal };
  const buy = async () => {
    await env.reset({ task });
    await env.step(`search[${goal.name}]`);
    await env.step(`click[${goal.asin.toLowerCase()}]`);
    return env.step("click[Buy Now]");
  };
  const product = c.byAsin.get(goal.asin)!;
  const before = await buy();
  assert.equal(before.reward, getReward(product, goal, c.prices.get(goal.asin)!, {}));
  goal.attributes = ["no product has this attribute, surely"];
  const after = await buy();
  assert.equal(after.reward, getReward(product, goal, c.prices.get(goal.asin)!, {}));
  assert.notEqual(after.reward, before.reward);
});

test("episodes are truncated at maxSteps, and truncation is not termination", async () => {
  const short = new WebShopEnv({ split: "test", maxSteps: 3 });
  await short.reset({ seed: 1 });
  const results = [await short.step("search[a]"), await short.step("search[b]"), await short.step("search[c]")];
  assert.deepEqual(
    results.map((r) => r.truncated),
    [false, false, true],
  );
  assert.ok(results.every((r) => !r.terminated));
});

test("seeded resets sample goals from the split; tasks resolve by id or index; bad input is an error", async () => {
  const a = await env.reset({ seed: 5 });
  const b = await env.reset({ seed: 5 });
  assert.equal(a.observation, b.observation);
  const idx = (a.info.task as { goal_index: number }).goal_index;
  assert.ok(idx >= 0 && idx < 500);
  const byId = await env.reset({ task: { id: "webshop:42", instruction: "" } });
  assert.ok(byId.observation.includes(c.goals[42].instruction_text));
  await assert.rejects(env.reset({ task: { id: "webshop:7000", instruction: "" } }), InvalidConfigError);
  await assert.rejects(env.reset({ task: { id: "nope", instruction: "" } }), /ids look like "webshop:<index>"/);
  assert.throws(() => new WebShopEnv({ split: "validation" as never }), /unknown WebShop split "validation" \(known: test, dev, train, all\)/);
  assert.throws(() => new WebShopEnv({ maxSteps: 0 }), InvalidConfigError);
  assert.equal(env.tasks().length, 500);
});

test("a goal object of one's own can be played (for generated tasks)", async () => {
  const goal = { ...c.goals[10], instruction_text: "Find me something custom" };
  const r = await env.reset({ task: { id: "custom-1", instruction: goal.instruction_text, goal } });
  assert.ok(r.observation.includes("Find me something custom"));
});

test("64 envs share one catalogue and search index", () => {
  const envs = Array.from({ length: 64 }, () => new WebShopEnv({ split: "train" }));
  assert.ok(envs.every((e) => e.catalogue === c && e.catalogue.search === c.search));
});

test("a closed env refuses to run", async () => {
  const e = new WebShopEnv();
  await e.close();
  await assert.rejects(e.reset(), ClosedEnvironmentError);
});
