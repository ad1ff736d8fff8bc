import { test } from "node:test";
import assert from "node:assert/strict";
import { advantageAgreement, compareReal, orderAgreementByMargin, pearson, summarizeReplays, type ReplayResult } from "./on-policy-audit.ts";

const r = (
  group: string | undefined,
  syn: number,
  real: number,
  trained = syn,
): Pick<ReplayResult, "syntheticReturn" | "trainedReturn" | "realReturn" | "group"> => ({
  group,
  syntheticReturn: syn,
  trainedReturn: trained,
  realReturn: real,
});

test("order agreement: pairs within a group only; a tie on one side counts half, ties on both are left out", () => {
  const a = advantageAgreement([
    // group a: (0.9, 0.5) agree, (0.9, 0.5) vs (0.1, 0.1) agree, (0.5, 0.5) vs (0.1, 0.1): agree → 3 of 3
    r("a", 0.9, 0.5),
    r("a", 0.5, 0.3),
    r("a", 0.1, 0.1),
    // group b: reversed, and a synthetic tie against a real difference (half)
    r("b", 1, 0),
    r("b", 0, 1),
    r("b", 0, 0),
    // group c: all tied on both sides; group d: one episode (no pair)
    r("c", 0.2, 0.4),
    r("c", 0.2, 0.4),
    r("d", 1, 0),
    // no group: each its own
    r(undefined, 1, 0),
    r(undefined, 0, 1),
  ]);
  // b: (1,0)v(0,1) reversed; (1,0)v(0,0): syn differs, real tied → half; (0,1)v(0,0): syn tied, real differs → half
  assert.equal(a.groups, 3);
  assert.equal(a.pairs, 6);
  assert.equal(a.tiedPairs, 1);
  assert.equal(a.reversedPairs, 1);
  assert.equal(a.orderAgreement, (3 + 0.5 + 0.5) / 6);
  // Correlation over groups a and b (c is tied on both sides and left out).
  assert.ok(a.correlation !== null && a.correlation > -1 && a.correlation < 1);
  assert.equal(advantageAgreement([r("a", 1, 1), r("a", 1, 1)]).orderAgreement, null);
  assert.equal(advantageAgreement([r("a", 1, 1), r("a", 1, 1)]).correlation, null);
});

test("advantages order the trained return (after the pessimism penalty), not the model's own", () => {
  const a = advantageAgreement([r("g", 1, 1, 0.2), r("g", 0.5, 0, 0.4)]);
  assert.equal(a.orderAgreement, 0);
  assert.equal(a.reversedPairs, 1);
  // A pair from an audit file written before the trained return was kept: the model's return stands in.
  const old = advantageAgreement([
    { group: "g", syntheticReturn: 1, realReturn: 1 },
    { group: "g", syntheticReturn: 0, realReturn: 0 },
  ]);
  assert.equal(old.orderAgreement, 1);
});

test("pearson: perfect, reversed, constant", () => {
  assert.equal(pearson([1, 2, 3], [2, 4, 6]), 1);
  assert.equal(pearson([1, 2, 3], [3, 2, 1]), -1);
  assert.equal(pearson([1, 1, 1], [1, 2, 3]), null);
  assert.equal(pearson([1], [1]), null);
});

test("the summary carries the return gap and the advantage figures", () => {
  const results: ReplayResult[] = [
    {
      syntheticReturn: 1,
      trainedReturn: 1,
      realReturn: 0.5,
      group: "0",
      syntheticSuccess: true,
      realSuccess: false,
      divergedAt: null,
      steps: 1,
      real: { observation: "", steps: [] },
    },
    {
      syntheticReturn: 0,
      trainedReturn: 0,
      realReturn: 0.25,
      group: "0",
      syntheticSuccess: false,
      realSuccess: false,
      divergedAt: null,
      steps: 1,
      real: { observation: "", steps: [] },
    },
  ];
  const s = summarizeReplays([...results, null]);
  assert.equal(s.returnGap, (0.5 - 0.25) / 2);
  assert.equal(s.advantage!.orderAgreement, 1);
  assert.equal(s.advantage!.groups, 1);
  assert.equal(s.skipped, 1);
});

test("closed loop: a synthetic episode against the policy's own real episode; states diverge where the observation, the end or the action first differs", () => {
  const record = {
    task: { id: "t", instruction: "find the ball" },
    observation: "three cups",
    group: "0",
    trainedReturn: 0.9,
    steps: [
      { action: "lift cup 2", nextObservation: "the ball is under cup 2", terminated: false, reward: 0 },
      { action: "take ball", nextObservation: "done", terminated: true, reward: 1 },
    ],
  };
  // The real ball lies under cup 1: the policy, reacting to what it sees, lifts two cups and still wins.
  const real = {
    observation: "three cups",
    steps: [
      { action: "lift cup 2", observation: "cup 2 is empty", reward: 0, terminated: false, truncated: false },
      { action: "lift cup 1", observation: "the ball is under cup 1", reward: 0, terminated: false, truncated: false },
      { action: "take ball", observation: "done", reward: 1, terminated: true, truncated: false },
    ],
  };
  const x = compareReal(record, real, (r) => r >= 1);
  assert.equal(x.divergedAt, 1);
  assert.equal(x.syntheticSuccess, true);
  assert.equal(x.realSuccess, true, "not an exploit: the policy found the ball for real");
  assert.equal(x.steps, 3);
  assert.equal(x.trainedReturn, 0.9);
  assert.equal(x.group, "0");
  assert.equal(
    compareReal(
      record,
      {
        observation: "three cups",
        steps: record.steps.map((s) => ({ action: s.action, observation: s.nextObservation, reward: s.reward, terminated: s.terminated, truncated: false })),
      },
      (r) => r >= 1,
    ).divergedAt,
    null,
  );
  assert.equal(compareReal(record, { ...real, observation: "four cups" }, (r) => r >= 1).divergedAt, 0);
});

test("order agreement by margin: pairs binned by how far apart their synthetic returns are", () => {
  const bands = orderAgreementByMargin(
    [
      // group a: 0.001 apart and reversed; 0.5 apart and agreeing
      r("a", 0.5, 0.2),
      r("a", 0.501, 0.1),
      r("a", 0, 0),
      // group b: tied on both sides (left out)
      r("b", 0.3, 0.3),
      r("b", 0.3, 0.3),
    ],
    [0, 0.01, 0.2],
  );
  assert.deepEqual(
    bands.map((b) => [b.from, b.to, b.pairs]),
    [
      [0, 0.01, 1],
      [0.01, 0.2, 0],
      [0.2, Infinity, 2],
    ],
  );
  assert.equal(bands[0].orderAgreement, 0);
  assert.equal(bands[1].orderAgreement, null);
  assert.equal(bands[2].orderAgreement, 1);
});
