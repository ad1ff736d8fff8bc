import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { ReplayBuffer } from "./replay-buffer.ts";
import { makeTrajectory, tempFile } from "../testing/index.ts";

const ids = (hits: { transition: { id: number }; score: number }[]) => hits.map((h) => [h.transition.id, h.score]);

test("searches of real transitions on the search thread give what the buffer's own search gives, as real and synthetic rows come and go", async () => {
  const file = tempFile("search-thread.db");
  const b = ReplayBuffer.open(file, { searchThread: true });
  // Enough rows for the SIMD path (and the filtered views), duplicates among them (distinct results).
  await b.appendTrajectories(
    Array.from({ length: 300 }, (_, i) => makeTrajectory(i % 250, { source: "real", steps: 4 })),
    { seed: true },
  );
  const queries = Array.from({ length: 12 }, (_, i) => makeTrajectory(i * 7 + 3, { steps: 4 }).steps[i % 4]);
  const compare = async (label: string) => {
    for (const q of queries) {
      const vector = await b.embedQuery({ state: q.observation, action: q.action });
      for (const opts of [
        { k: 5, filter: { env: "toy", source: "real" as const } },
        { k: 5, filter: { env: "toy", source: "real" as const, action: q.action } },
        { k: 3, filter: { source: "real" as const, task: "task-2" } },
        { k: 8, filter: { source: "real" as const }, distinct: false },
        { k: 4, filter: { env: "elsewhere", source: "real" as const } },
      ]) {
        assert.deepEqual(ids(await b.searchVectorAsync(vector, opts)), ids(b.searchVector(vector, opts)), `${label}: ${JSON.stringify(opts)}`);
      }
    }
  };
  await compare("seed only");
  await b.appendTrajectories(Array.from({ length: 40 }, (_, i) => makeTrajectory(1000 + i, { source: "synthetic", steps: 4 })));
  await compare("with synthetic rows");
  await b.appendTrajectories(Array.from({ length: 10 }, (_, i) => makeTrajectory(2000 + i, { source: "real", steps: 4 })));
  await compare("after a real append");
  // Searches asked together (a synthetic env's steps) are answered each as its own.
  const v = await b.embedQuery({ state: queries[0].observation, action: queries[0].action });
  const w = await b.embedQuery({ state: queries[5].observation, action: queries[5].action });
  const filter = { env: "toy", source: "real" as const };
  const [x, y] = await Promise.all([b.searchVectorAsync(v, { k: 5, filter }), b.searchVectorAsync(w, { k: 5, filter })]);
  assert.deepEqual(ids(x), ids(b.searchVector(v, { k: 5, filter })));
  assert.deepEqual(ids(y), ids(b.searchVector(w, { k: 5, filter })));
  // 12 queries × 4 real-only searches × 3 rounds, and the 2 together: all on the thread (some in
  // more than one round of candidates, where duplicates fill the first).
  assert.ok(b.searchesOnThread >= 12 * 4 * 3 + 2, `${b.searchesOnThread} on the thread`);
  b.close();
  await assert.rejects(b.searchVectorAsync(v, { k: 5, filter }), /closed/);
  // Closed, the buffer left WAL mode: the thread held no connection to the file.
  assert.equal(existsSync(`${file}-wal`), false);
  const again = ReplayBuffer.open(file, { readonly: true });
  assert.equal(again.count(), (250 + 40 + 10) * 4);
  again.close();
});

test("a search thread started before the first search answers alike, and a buffer closed soon after starting it leaves WAL mode", async () => {
  const file = tempFile("warm-thread.db");
  const seed = ReplayBuffer.open(file);
  await seed.appendTrajectories(
    Array.from({ length: 500 }, (_, i) => makeTrajectory(i, { source: "real", steps: 4 })),
    { seed: true },
  );
  seed.close();
  // Closed after 0 to 7 turns of the event loop: before the thread is up, and after.
  for (let turns = 0; turns < 8; turns++) {
    const b = ReplayBuffer.open(file, { searchThread: true });
    b.startSearchThread();
    for (let t = 0; t < turns; t++) await new Promise((r) => setImmediate(r));
    b.close();
    assert.equal(existsSync(`${file}-wal`), false, `closed after ${turns} turns`);
  }
  const b = ReplayBuffer.open(file, { searchThread: true });
  b.startSearchThread();
  const q = makeTrajectory(7, { steps: 4 }).steps[2];
  const vector = await b.embedQuery({ state: q.observation, action: q.action });
  for (const filter of [
    { env: "toy", source: "real" as const },
    { env: "toy", source: "real" as const, action: q.action },
  ]) {
    assert.deepEqual(ids(await b.searchVectorAsync(vector, { k: 5, filter })), ids(b.searchVector(vector, { k: 5, filter })));
  }
  assert.equal(b.searchesOnThread, 2, "both answered by the thread started before them");
  b.close();
  assert.equal(existsSync(`${file}-wal`), false);
  // A buffer opened without the option, or in memory, starts none.
  const plain = ReplayBuffer.open(file);
  plain.startSearchThread();
  await plain.searchVectorAsync(vector, { k: 5, filter: { source: "real" } });
  assert.equal(plain.searchesOnThread, 0);
  plain.close();
});
