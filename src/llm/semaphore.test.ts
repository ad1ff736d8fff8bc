import { test } from "node:test";
import assert from "node:assert/strict";
import { Semaphore } from "./semaphore.ts";

test("Semaphore: at most `limit` run at once, the rest wait in order", async () => {
  const s = new Semaphore(2);
  const started: number[] = [];
  const releases: (() => void)[] = [];
  const tasks = [0, 1, 2, 3].map((i) =>
    s.run(
      () =>
        new Promise<number>((resolve) => {
          started.push(i);
          releases[i] = () => resolve(i);
        }),
    ),
  );
  await Promise.resolve();
  assert.deepEqual(started, [0, 1]);
  assert.deepEqual([s.inFlight, s.waiting], [2, 2]);
  releases[1]();
  await tasks[1];
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(started, [0, 1, 2]);
  releases[0]();
  releases[2]();
  await Promise.all([tasks[0], tasks[2]]);
  await new Promise((r) => setImmediate(r));
  releases[3]();
  assert.deepEqual(await Promise.all(tasks), [0, 1, 2, 3]);
  assert.deepEqual([s.inFlight, s.waiting], [0, 0]);
  assert.throws(() => new Semaphore(0), RangeError);
});

test("Semaphore: a failing task frees its slot", async () => {
  const s = new Semaphore(1);
  await assert.rejects(
    s.run(async () => {
      throw new Error("boom");
    }),
    /boom/,
  );
  assert.equal(await s.run(async () => 7), 7);
});

test("Semaphore: a finishing call hands its slot to the first waiter; a newcomer cannot slip in", async () => {
  const s = new Semaphore(1);
  const order: string[] = [];
  let releaseA!: () => void;
  const a = s.run(() => new Promise<void>((r) => ((releaseA = r), order.push("A"))));
  const b = s.run(async () => void order.push("B"));
  await Promise.resolve();
  releaseA();
  const c = s.run(async () => void order.push("C")); // arrives while B is being woken
  await Promise.all([a, b, c]);
  assert.deepEqual(order, ["A", "B", "C"]);
  assert.deepEqual([s.inFlight, s.waiting], [0, 0]);
});
