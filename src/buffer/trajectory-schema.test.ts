import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { trajectoryContentId } from "./trajectory-schema.ts";
import { makeTrajectory } from "../testing/index.ts";
import { Rng, type Trajectory } from "../core/index.ts";

/** The content id as it is defined: SHA-256 of the JSON of the content array, written in one stringify. */
const asDefined = (t: Trajectory) =>
  createHash("sha256")
    .update(
      JSON.stringify([
        t.env,
        t.task,
        t.source,
        t.policy ?? null,
        t.total_reward,
        t.success,
        t.steps.map((s) => [s.observation, s.action, s.reward, s.next_observation, s.terminated, s.truncated, s.reasoning ?? null, s.info ?? null]),
      ]),
    )
    .digest("hex");

test("a content id is the SHA-256 of its content's JSON, byte for byte, however pages repeat", () => {
  const rng = new Rng(7);
  const pages = ['a "quoted"\npage', "plain page", "non-ASCII: ½ → ü", "lone \ud800 surrogate", "", "[1] click \\ back"];
  const page = () => pages[rng.randbelow(pages.length)];
  const cases: Trajectory[] = [makeTrajectory(0), makeTrajectory(1)];
  for (let i = 0; i < 300; i++) {
    const t = makeTrajectory(i, { steps: 1 + rng.randbelow(6) });
    let carried = page();
    for (const s of t.steps) {
      // Mostly the step before's next page (the same string or an equal one), sometimes not.
      s.observation = rng.random() < 0.7 ? carried : page();
      s.next_observation = rng.random() < 0.2 ? s.observation : page();
      carried = rng.random() < 0.5 ? s.next_observation : `${s.next_observation}`.slice(0);
      if (rng.random() < 0.3) s.reasoning = page();
      if (rng.random() < 0.3) s.info = { note: page(), n: rng.random(), when: new Date(0), nested: [1, null, { x: "y" }], gone: undefined };
    }
    if (i % 5 === 0) delete (t as Partial<Trajectory>).policy;
    if (i % 7 === 0) t.task = { id: "t", instruction: page(), extra: { a: [page()] } } as Trajectory["task"];
    cases.push(t);
  }
  for (const t of cases) assert.equal(trajectoryContentId(t), asDefined(t));
  // Values a stringify of the array writes as null, and a page that is not text (a library caller's).
  const odd = makeTrajectory(3);
  (odd.steps[0] as unknown as { reward: unknown }).reward = undefined;
  (odd.steps[1] as unknown as { observation: unknown }).observation = { html: "<p>" };
  (odd.steps[1] as unknown as { next_observation: unknown }).next_observation = odd.steps[1].observation;
  (odd as unknown as { total_reward: unknown }).total_reward = () => 1;
  assert.equal(trajectoryContentId(odd), asDefined(odd));
  // A hole in the steps (a library caller's sparse array) is null, as one stringify writes it.
  const holed = makeTrajectory(4, { steps: 3 });
  delete (holed.steps as unknown[])[1];
  assert.equal(trajectoryContentId(holed), asDefined(holed));
  assert.notEqual(trajectoryContentId(holed), trajectoryContentId({ ...holed, steps: holed.steps.filter(() => true) }));
  // The definition never moves: a known trajectory's id, as the one-stringify code made it (4e5c8ce).
  assert.equal(trajectoryContentId(makeTrajectory(0)), "251f40724376268a1b5fa3be31046d721eb8840b9b7e9465b40acc38522f197d");
});
