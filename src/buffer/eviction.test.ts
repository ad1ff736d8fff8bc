import { test } from "node:test";
import assert from "node:assert/strict";
import { ReplayBuffer } from "./replay-buffer.ts";
import type { SearchFilter, SearchOptions, TransitionRecord } from "./buffer-types.ts";
import { makeTrajectory, tempFile } from "../testing/index.ts";
import type { ExperienceSource, Trajectory } from "../core/index.ts";

// Evictions let go of just what the rows that went were part of: these tests hold a bounded buffer's
// every answer after them to what a buffer opened afresh on the same file answers, and look inside
// at what it kept.

/** The buffer's caches, as the tests look at them. */
interface Inside {
  keyCache: Map<number, unknown>;
  rowCache: Map<number, unknown>;
  spellings: Map<string, unknown>;
  filterCounts: Map<string, { filter: SearchFilter; n: number }>;
  indexes: { exact: { viewsMade: number; size: number } | null; scans: Map<string, { filter: SearchFilter; ids: number[] }> };
}
const inside = (b: ReplayBuffer) => b as unknown as Inside;

const FILTERS: SearchFilter[] = [
  {},
  { env: "toy" },
  { env: "toy", source: "real" },
  { env: "toy", source: "synthetic" },
  { env: "toy", action: "click[buy now]" },
  { env: "toy", source: "real", action: "click[buy now]" },
  { source: "real", task: "task-3" },
  { env: "other", source: "real" },
];
const QUERIES = [3, 8, 104, 131].map((i) => makeTrajectory(i).steps[i % 3]).map((s) => ({ state: s.observation, action: s.action }));
const SPELLINGS = ["click[buy now]", "Click[Buy Now]", "click[item 3]", "click[item 9]"];

/** A synthetic episode; `respell`: its last action spelled otherwise (a spelling none but it has). */
const synthetic = (i: number, respell = false): Trajectory => {
  const t = makeTrajectory(i, { source: "synthetic", policy: `run:${i}` });
  if (respell) t.steps.at(-1)!.action = "Click[Buy Now]";
  return t;
};

/** Every search, count and spelling of `b`, and its real rows' key, as a buffer opened afresh on its file has them. */
async function sameAsFresh(b: ReplayBuffer, label: string, annThreshold?: number): Promise<void> {
  const fresh = ReplayBuffer.open(b.path, { readonly: true, annThreshold });
  try {
    assert.equal(b.transitions, fresh.transitions, `${label}: transitions`);
    // Past annThreshold it is the buffer's own count of changes (`version`), not a key of the file.
    if (annThreshold === undefined) assert.equal(b.realVersion, fresh.realVersion, `${label}: realVersion`);
    for (const q of QUERIES) {
      const vector = await b.embedQuery(q);
      for (const filter of [...FILTERS, { env: "toy", action: q.action }])
        for (const k of [1, 4, 12]) {
          // Past annThreshold, a filter keeping half the rows or more (or none) is searched by HNSW, whose
          // answer depends on how its graph was built: those are asked of the exact index instead. The
          // others are scanned exactly (and counted first).
          const hnsw = annThreshold !== undefined && fresh.count(filter) * 2 >= fresh.transitions;
          const opts: SearchOptions = { k, filter, distinct: k !== 4, exact: hnsw };
          const want = fresh.searchVector(vector, opts);
          assert.deepEqual(b.searchVector(vector, opts), want, `${label}: ${JSON.stringify(opts)}`);
          // Real rows only: on the search thread where the buffer has one.
          if (filter.source === "real") assert.deepEqual(await b.searchVectorAsync(vector, opts), want, `${label}: thread ${JSON.stringify(opts)}`);
        }
    }
    for (const a of SPELLINGS)
      for (const env of ["toy", "other"])
        for (const source of [undefined, "real", "synthetic"] as (ExperienceSource | undefined)[])
          assert.equal(b.actionSpellings(a, env, source), fresh.actionSpellings(a, env, source), `${label}: spellings of ${a} in ${env} ${source}`);
    for (const { filter, n } of inside(b).filterCounts.values()) assert.equal(n, fresh.count(filter), `${label}: count of ${JSON.stringify(filter)}`);
    // The indexes hold the file's rows: the exact index all of them, a scan its filter's.
    const { exact, scans } = inside(b).indexes;
    if (exact) assert.equal(exact.size, fresh.transitions, `${label}: rows in the exact index`);
    for (const scan of scans.values()) {
      assert.equal(scan.ids.length, fresh.count(scan.filter), `${label}: rows scanned for ${JSON.stringify(scan.filter)}`);
      for (const id of scan.ids) assert.ok(fresh.get(id), `${label}: row ${id} is scanned but gone`);
    }
    // Rows kept by id are rows of the file (their content is in the searches' results above).
    for (const id of [...inside(b).rowCache.keys(), ...inside(b).keyCache.keys()]) assert.ok(fresh.get(id), `${label}: row ${id} is kept but gone`);
  } finally {
    fresh.close();
  }
}

const record = (i: number, step: number): TransitionRecord => {
  const s = makeTrajectory(i).steps[step];
  return {
    trajectoryId: `online-${i}`,
    step,
    env: "toy",
    task: { id: `task-${i % 7}`, instruction: `buy item ${i % 5}` },
    state: s.observation,
    action: s.action,
    reward: s.reward,
    nextState: s.next_observation,
    terminated: s.terminated,
    truncated: false,
    source: "synthetic",
    policy: "run:online",
  };
};

for (const mode of ["exact", "HNSW"] as const)
  test(`evicting synthetic rows (${mode} searches) keeps the real rows' caches, lets go of the evicted rows only, and answers as a fresh open does`, async () => {
    const threshold = mode === "HNSW" ? 60 : undefined;
    const b = ReplayBuffer.open(tempFile(`evict-synthetic-${mode}.db`), { capacity: 120, searchThread: mode === "exact", annThreshold: threshold });
    // Real seed rows (never evicted), in two envs, one of them with another spelling of an action.
    const seed = [...Array.from({ length: 8 }, (_, i) => makeTrajectory(i)), makeTrajectory(20, { env: "other" }), makeTrajectory(21, { env: "other" })];
    seed[2].steps.at(-1)!.action = "CLICK[buy now]";
    await b.appendTrajectories(seed, { seed: true });
    // Synthetic rows up to capacity; the first ones go first, one with a spelling of its own.
    await b.appendTrajectories([synthetic(100, true), ...Array.from({ length: 29 }, (_, i) => synthetic(101 + i))]);
    assert.equal(b.transitions, 120);
    await sameAsFresh(b, "full", threshold);
    assert.equal(b.count({ source: "real" }), 30);
    const realSpellings = inside(b).spellings.get("real\ttoy");
    assert.ok(realSpellings);
    const realRowKept = [...inside(b).rowCache.keys()].find((id) => b.get(id)!.source === "real");
    assert.ok(realRowKept !== undefined, "a real row was read by a search");
    const keyOfRealRow = inside(b).keyCache.get(realRowKept);
    const views = inside(b).indexes.exact?.viewsMade;
    const counted = inside(b).filterCounts.size;
    if (mode === "HNSW") assert.ok(counted > 0 && inside(b).indexes.scans.size > 0, "filters counted and scanned");
    assert.equal(b.actionSpellings("click[buy now]", "toy"), 3, "the synthetic spelling counts while its row is here");

    // Past capacity: whole episodes, then steps one by one (each evicts the oldest synthetic episode's rows now and then).
    let evicted = 0;
    for (let round = 0; round < 8; round++) {
      const before = b.transitions;
      const version = b.realVersion;
      if (round % 2 === 0) evicted += (await b.appendTrajectories([synthetic(200 + round)])).evicted;
      else for (let s = 0; s < 3; s++) await b.appendTransitions([record(300 + round, s)]);
      assert.ok(b.transitions <= 120 && b.transitions + 3 >= before, `round ${round}: bounded`);
      // Right after the eviction, before any search: what only real rows make stays as it was.
      if (mode === "exact") assert.equal(b.realVersion, version, `round ${round}: realVersion`);
      assert.equal(inside(b).spellings.get("real\ttoy"), realSpellings, `round ${round}: the real rows' spellings are not read again`);
      assert.equal(inside(b).keyCache.get(realRowKept), keyOfRealRow, `round ${round}: a real row's key is kept`);
      assert.ok(inside(b).rowCache.has(realRowKept), `round ${round}: a real row read is kept`);
      assert.equal(inside(b).filterCounts.size, counted, `round ${round}: counts kept`);
      if (mode === "HNSW") assert.ok(inside(b).indexes.scans.size > 0, `round ${round}: scans kept`);
      await sameAsFresh(b, `round ${round}`, threshold);
      if (mode === "exact") assert.equal(inside(b).indexes.exact?.viewsMade, views, `round ${round}: no view made again`);
    }
    assert.ok(evicted >= 12, `${evicted} evicted by whole episodes`);
    assert.equal(b.count({ source: "real" }), 30, "the seed stays");
    assert.equal(b.actionSpellings("click[buy now]", "toy"), 2, "the synthetic spelling went with its row");
    if (mode === "exact") assert.ok(b.searchesOnThread > 0);
    b.close();
  });

test("evicting and deleting real rows (trim, deleteTrajectories) lets go of them in every cache, and answers as a fresh open does", async () => {
  for (const mode of ["exact", "HNSW"] as const) {
    const threshold = mode === "HNSW" ? 60 : undefined;
    const b = ReplayBuffer.open(tempFile(`evict-real-${mode}.db`), { annThreshold: threshold, searchThread: mode === "exact" });
    await b.appendTrajectories(
      Array.from({ length: 6 }, (_, i) => makeTrajectory(i)),
      { seed: true },
    );
    // Real episodes that may go (not seed): the oldest two, one with a spelling no other row has;
    // then synthetic ones, then real ones of a policy label deleted later.
    const first = [makeTrajectory(40, { policy: "expert:a" }), makeTrajectory(41, { policy: "expert:a" })];
    first[0].steps.at(-1)!.action = "Click[Buy Now]";
    await b.appendTrajectories(first);
    await b.appendTrajectories(Array.from({ length: 10 }, (_, i) => synthetic(100 + i)));
    await b.appendTrajectories(Array.from({ length: 4 }, (_, i) => makeTrajectory(60 + i, { policy: "expert:b" })));
    await sameAsFresh(b, `${mode}: all`, threshold);
    const realIds = (policy: string) =>
      (b as unknown as { db: { prepare(q: string): { pluck(): { all(...a: unknown[]): number[] } } } }).db
        .prepare("SELECT x.id FROM transitions x JOIN trajectories t ON t.id = x.trajectory_id WHERE t.policy = ?")
        .pluck()
        .all(policy);
    const goneA = realIds("expert:a");
    const goneB = realIds("expert:b");
    assert.equal(b.actionSpellings("click[buy now]", "toy", "real"), 2);
    assert.ok(
      goneA.some((id) => inside(b).keyCache.has(id)),
      "the real rows' keys were read",
    );
    const version = b.realVersion;

    // Trim: the oldest non-seed episodes go, the two real ones among them.
    assert.equal(await b.trim(30), 6 + 12);
    for (const id of goneA) assert.ok(!inside(b).keyCache.has(id) && !inside(b).rowCache.has(id), `${mode}: row ${id} let go`);
    assert.notEqual(b.realVersion, version);

    assert.equal(b.actionSpellings("click[buy now]", "toy", "real"), 1, "the spelling went with its row");
    await sameAsFresh(b, `${mode}: trimmed`, threshold);

    // Deleted by policy label: the later real ones.
    assert.ok(
      goneB.some((id) => inside(b).rowCache.has(id) || inside(b).keyCache.has(id)),
      "rows of the episodes to delete were read",
    );
    assert.equal(await b.deleteTrajectories({ policies: ["expert:b"] }), 4);
    for (const id of goneB) assert.ok(!inside(b).keyCache.has(id) && !inside(b).rowCache.has(id), `${mode}: row ${id} let go`);
    await sameAsFresh(b, `${mode}: deleted`, threshold);
    assert.equal(b.count({ source: "real" }), 18);
    b.close();
  }
});
