import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import type { Episode, Task } from "../core/index.ts";
import { tempFile } from "../testing/index.ts";
import { BrokerRefusal, EpisodeBroker, type Slot } from "./episode-broker.ts";

const tasks: Task[] = [0, 1, 2].map((i) => ({ id: `t${i}`, instruction: `task ${i}` }));
const episode = (task: Task, total: number): Episode => ({ task, steps: [], totalReward: total, success: false });
const seedOf = (t: number, g: number) => 100 * t + g;

test("a named group's resets play one task; a new name claims the next task; G + 1 resets of a group are refused", async () => {
  const broker = new EpisodeBroker(tempFile(".jsonl"), 2);
  const done = broker.play(1, "synthetic", tasks, seedOf);
  const a1 = await broker.assign("a", 7);
  const b1 = await broker.assign("b", undefined);
  const a2 = await broker.assign("a", 3);
  assert.deepEqual([a1.task.id, a2.task.id, b1.task.id], ["t0", "t0", "t1"]);
  assert.equal(b1.seed, 100, "without a seed from the reset, the slot's own");
  await assert.rejects(broker.assign("a", 1), (e: Error) => e instanceof BrokerRefusal && /group a already has its 2 episodes/.test(e.message));
  // Resets without a group fill one group (G in a row share a task) before the next.
  const n1 = await broker.assign(undefined, 1);
  const n2 = await broker.assign(undefined, 2);
  assert.deepEqual([n1.task.id, n2.task.id], ["t2", "t2"]);
  const b2 = await broker.assign("b", 9);
  for (const [s, r] of [
    [a1, 0.1],
    [a2, 0.2],
    [b1, 0.3],
    [b2, 0.4],
    [n1, 0.5],
    [n2, 0.6],
  ] as [Slot, number][])
    broker.finish(s, episode(s.task, r), undefined);
  const groups = await done;
  // Each group in the order of its resets' env seeds (a2's 3 before a1's 7; b2's 9 before b1's slot seed 100), whatever order they ended in.
  assert.deepEqual(
    groups.map((g) => g.map(({ e }) => e.totalReward)),
    [
      [0.2, 0.1],
      [0.4, 0.3],
      [0.5, 0.6],
    ],
  );
});

test("a reset past the plan waits for the next one; an abandoned slot is free again; an ended broker refuses", async () => {
  const broker = new EpisodeBroker(tempFile(".jsonl"), 2);
  const first = broker.play(1, "synthetic", tasks.slice(0, 1), seedOf);
  const s1 = await broker.assign(undefined, 1);
  const s2 = await broker.assign(undefined, 2);
  let late: Slot | undefined;
  const waiting = broker.assign(undefined, 3).then((s) => (late = s));
  broker.abandon(s2); // e.g. the trainer reset that session mid-episode
  const again = await broker.assign(undefined, 4);
  assert.deepEqual([again.iteration, again.t, again.g], [1, 0, 1], "the abandoned slot, not a new plan");
  broker.finish(s1, episode(s1.task, 1), undefined);
  broker.finish(again, episode(again.task, 0), undefined);
  await first;
  assert.equal(late, undefined, "no plan yet: the reset still waits");
  void broker.play(2, "real", tasks.slice(1, 2), seedOf);
  await waiting;
  assert.deepEqual([late!.iteration, late!.phase, late!.task.id], [2, "real", "t1"]);
  const open = broker.play(3, "synthetic", tasks.slice(0, 1), seedOf);
  broker.end("the run has spent its budget");
  await assert.rejects(open, /spent its budget/, "the open plan fails: the loop stops without writing it");
  await assert.rejects(broker.assign(undefined, 5), /spent its budget/);
});

test("finished episodes go to the journal; a restarted plan takes them back and hands out only the rest", async () => {
  const journal = tempFile(".jsonl");
  const broker = new EpisodeBroker(journal, 2);
  void broker.play(3, "synthetic", tasks.slice(0, 2), seedOf);
  const a = await broker.assign("a", 11);
  const b = await broker.assign("a", 12);
  broker.finish(a, episode(a.task, 0.5), "a");
  broker.finish(b, episode(b.task, 0.25), "a");
  assert.equal(readFileSync(journal, "utf8").trim().split("\n").length, 2);

  // The server is killed here; a new one re-derives iteration 3's plan and restores what was played.
  const restarted = new EpisodeBroker(journal, 2);
  const restored = restarted.restored(3);
  assert.equal(restored.length, 2);
  assert.deepEqual(restarted.restored(4), []);
  const done = restarted.play(3, "synthetic", tasks.slice(0, 2), seedOf, restored);
  await assert.rejects(restarted.assign("a", 1), /already has its 2 episodes/, "group a is complete");
  const c = await restarted.assign("c", 1);
  const d = await restarted.assign("c", 2);
  assert.equal(c.task.id, "t1");
  restarted.finish(c, episode(c.task, 1), "c");
  restarted.finish(d, episode(d.task, 0), "c");
  const groups = await done;
  assert.deepEqual(
    groups.map((g) => g.map(({ e }) => e.totalReward)),
    [
      [0.5, 0.25],
      [1, 0],
    ],
  );
  restarted.checkpointed();
  assert.deepEqual(restarted.restored(3), [], "a checkpointed iteration's journal is emptied");
});

test("a group that says its place in the batch (group_index) gets that task, whichever reset arrives first", async () => {
  const broker = new EpisodeBroker(tempFile(".jsonl"), 2);
  void broker.play(1, "synthetic", tasks, seedOf);
  const late = await broker.assign("b", 1, 2);
  const early = await broker.assign("a", 1, 0);
  assert.deepEqual([early.task.id, late.task.id], ["t0", "t2"]);
  assert.equal((await broker.assign("b", 2)).task.id, "t2", "the group keeps its task");
  await assert.rejects(broker.assign("c", 1, 0), /group_index 0 of iteration 1 belongs to another group than c/);
  await assert.rejects(broker.assign("d", 1, 3), /group_index 3 is past the plan's 3 groups/);
});
