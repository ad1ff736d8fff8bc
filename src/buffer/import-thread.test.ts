import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import Database from "better-sqlite3";
import { abstractTrajectory, type StateAbstraction, type Trajectory, type TrajectoryRules } from "../core/index.ts";
import { makeTrajectory, tempFile } from "../testing/index.ts";
import { HashingEmbedder } from "./hashing-embedder.ts";
import { importJsonl, type ImportOptions } from "./importers.ts";
import { ReplayBuffer } from "./replay-buffer.ts";

// The import thread (ImportOptions.thread) must change when the work is done, never what is stored
// or reported: an import through it and one on the main thread alone give the same tables, byte
// for byte, the same report and the same progress calls.

/** A file of 300 trajectories (long ones among them, repeats, a lone surrogate) and bad or corrected lines. */
function writeCorpus(): string {
  const lines: string[] = [];
  for (let i = 0; i < 300; i++) {
    const k = i % 260; // from 260 on, repeats
    const t = makeTrajectory(k, { steps: 1 + (k % 9), task: `task-${k % 13}` });
    if (k % 37 === 5) t.steps[0].observation = `${"a long page ".repeat(300)}${k}`;
    if (k === 77) t.steps[0].next_observation = "lone \ud800 surrogate";
    if (k % 50 === 3) t.total_reward = 0.5; // disagrees with its steps: corrected under the rules
    lines.push(JSON.stringify(t));
    if (i % 41 === 7) lines.push("{not json");
    if (i % 53 === 11) lines.push(JSON.stringify({ ...t, env: "nowhere" }));
    if (i % 29 === 0) lines.push("");
  }
  const file = tempFile("corpus.jsonl");
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

const rules: TrajectoryRules = {
  envs: ["toy"],
  rewards: () => ({ min: 0, max: 1, dense: true }),
  success: (_env, total) => total >= 1,
};

const abstraction: StateAbstraction = {
  env: "toy",
  abstract: (o) => `state: ${o.slice(0, 40).toUpperCase()}`,
  actions: () => undefined,
  isTerminal: () => false,
  profile: "toy",
};

/** Every table's rows, hashed (the buffer is closed). */
function tables(b: ReplayBuffer): string {
  const path = b.path;
  b.close();
  const db = new Database(path, { readonly: true });
  const h = createHash("sha256");
  for (const table of ["meta", "sqlite_sequence", "texts", "trajectories", "transitions"])
    for (const row of db.prepare(`SELECT * FROM ${table} ORDER BY rowid`).all())
      h.update(`${JSON.stringify(row, (_k, v) => (Buffer.isBuffer(v) ? v.toString("hex") : v))}\n`);
  db.close();
  return h.digest("hex");
}

async function importBoth(file: string, opts: ImportOptions, before?: (b: ReplayBuffer) => Promise<unknown>, threaded: ImportOptions["thread"] = "wait") {
  const out = [];
  for (const thread of [false, threaded]) {
    const b = ReplayBuffer.open(tempFile("b.db"));
    await before?.(b);
    const progress: number[] = [];
    // Pairs embedded on this thread (the thread's own module is another instance): what the thread's vectors saved.
    const embedPair = HashingEmbedder.prototype.embedPair;
    let embeddedHere = 0;
    HashingEmbedder.prototype.embedPair = function (this: HashingEmbedder, state: string, action: string) {
      embeddedHere++;
      return embedPair.call(this, state, action);
    };
    try {
      const report = await importJsonl(b, file, { ...opts, thread, onProgress: (n) => progress.push(n) });
      out.push({ report, progress, tables: tables(b), embeddedHere });
    } finally {
      HashingEmbedder.prototype.embedPair = embedPair;
    }
  }
  return out;
}

test("an import through the thread stores and reports what one without it does (rules, repeats, bad lines, an abstraction)", async () => {
  const file = writeCorpus();
  for (const opts of [
    { batch: 16, rules },
    { batch: 40, rules, transform: (t: Trajectory) => abstractTrajectory(t, abstraction) },
  ]) {
    const [here, there] = await importBoth(file, opts);
    assert.equal(here.report.onThread, 0);
    // Every batch, the first too: the thread fits a new buffer's IDF on it (batch 40) or finds too
    // few steps to fit one (batch 16), as the buffer would; none is embedded here.
    assert.equal(there.report.onThread, there.progress.length);
    assert.equal(there.embeddedHere, 0);
    assert.ok(here.embeddedHere > 1000);
    assert.deepEqual({ ...there.report, onThread: 0 }, here.report);
    assert.deepEqual(there.progress, here.progress);
    assert.equal(there.tables, here.tables);
    assert.ok(here.report.malformed.length > 10 && here.report.corrected.length > 3 && here.report.duplicates > 0);
  }
  // Into a buffer that already holds some of them (its vectors fixed before the import).
  const [here, there] = await importBoth(file, { batch: 25 }, (b) =>
    b.appendTrajectories([0, 1, 2, 200].map((i) => makeTrajectory(i, { steps: 1 + (i % 9), task: `task-${i % 13}` }))),
  );
  assert.equal(there.report.onThread, there.progress.length);
  assert.equal(there.embeddedHere, 0);
  assert.equal(there.tables, here.tables);
});

test("by default (thread: true, not waited for) the batches after the first go to the thread, and the tables are the same", {
  skip: availableParallelism() < 2 && "one core: no import thread",
}, async () => {
  const file = writeCorpus();
  const [here, there] = await importBoth(file, { batch: 40 }, undefined, true);
  assert.equal(there.tables, here.tables);
  // The first batch is the thread's if it was up when that batch was read; every one after it is.
  assert.ok(there.report.onThread >= there.progress.length - 1, `on the thread: ${there.report.onThread} of ${there.progress.length}`);
});

test("a first batch the thread cannot answer: the batches asked after it are done here, and the thread is given the buffer's embedder again", async () => {
  const file = writeCorpus();
  // A BigInt behind a class's toJSON: the content id here reads the class's JSON; the thread's copy has the BigInt
  // itself, which JSON cannot write, so the thread's first batch (and its IDF fit) fails.
  class Big {
    constructor(readonly v: bigint) {}
    toJSON() {
      return String(this.v);
    }
  }
  let n = 0;
  const transform = (t: Trajectory) => (n++ < 3 ? ({ ...t, task: { ...t.task, big: new Big(1n) } } as Trajectory) : t);
  const [here, there] = await importBoth(file, { batch: 40, transform }, async () => {
    n = 0;
  });
  assert.equal(there.tables, here.tables);
  assert.deepEqual({ ...there.report, onThread: 0 }, here.report);
  // The first batch and the two asked with it (before its answer came) are done here; every one after goes to the thread.
  assert.equal(there.report.onThread, there.progress.length - 3);
  assert.ok(there.embeddedHere < here.embeddedHere / 2, `embedded here: ${there.embeddedHere} of ${here.embeddedHere}`);
});

test("a transform that fails stops the import with its error after the same whole batches, thread or not", async () => {
  const file = writeCorpus();
  let seen = 0;
  const transform = (t: Trajectory) => {
    if (++seen === 130) throw new Error("transform failed on the 130th trajectory");
    return t;
  };
  const out = [];
  for (const thread of [false, "wait"] as const) {
    seen = 0;
    const b = ReplayBuffer.open(tempFile("b.db"));
    const progress: number[] = [];
    await assert.rejects(importJsonl(b, file, { batch: 20, transform, thread, onProgress: (n) => progress.push(n) }), /130th trajectory/);
    assert.equal(b.countTrajectories(), 120, "the six whole batches before it");
    out.push({ progress, tables: tables(b) });
  }
  assert.deepEqual(out[1], out[0]);
});

test("an embedder the caller chose stays on the main thread", async () => {
  const file = writeCorpus();
  const b = ReplayBuffer.open(tempFile("b.db"), { embedder: new HashingEmbedder({ dims: 64 }) });
  const r = await importJsonl(b, file, { batch: 30, thread: "wait" });
  assert.equal(r.onThread, 0);
  assert.ok(r.added > 200);
  b.close();
});

test("a transform's output the thread cannot read as it is (a class's own toJSON) is stored as without the thread; without one nothing is read ahead", async () => {
  const file = writeCorpus();
  // The content id reads the trajectory as JSON: a copy on the thread loses the class and its toJSON.
  class Price {
    constructor(readonly cents: number) {}
    toJSON() {
      return `$${this.cents / 100}`;
    }
  }
  const priced = (t: Trajectory) => ({ ...t, task: { ...t.task, price: new Price(300) } }) as Trajectory;
  const [here, there] = await importBoth(file, { batch: 30, transform: priced });
  assert.equal(there.tables, here.tables);
  assert.deepEqual({ ...there.report, onThread: 0 }, here.report);
  // A cycle where the content id does not read (a back-reference a transform left): stored as it is, on the thread.
  const linked = (t: Trajectory) => {
    const out = { ...t } as Trajectory & { self?: unknown };
    out.self = out;
    return out;
  };
  const [plainHere, plainThere] = await importBoth(file, { batch: 30, transform: linked });
  assert.equal(plainThere.tables, plainHere.tables);
  assert.ok(plainThere.report.onThread > 0);
  // With no thread, a batch is transformed only once the one before is written.
  const b = ReplayBuffer.open(tempFile("b.db"));
  const seenAtTransform: number[] = [];
  let n = 0;
  await importJsonl(b, file, {
    batch: 10,
    thread: false,
    transform: (t) => {
      if (n++ % 10 === 0) seenAtTransform.push(b.countTrajectories());
      return t;
    },
  });
  b.close();
  assert.deepEqual(seenAtTransform.slice(0, 3), [0, 10, 20]);
});

test("an import into a connection that opened the file empty takes the embedder another connection stored meanwhile, on the thread too", {
  skip: availableParallelism() < 2,
}, async () => {
  const file = tempFile("late-import.db");
  const late = ReplayBuffer.open(file); // opened empty
  const first = ReplayBuffer.open(file);
  await first.appendTrajectories(Array.from({ length: 40 }, (_, i) => makeTrajectory(i))); // fits the IDF
  const lines = tempFile("late-import.jsonl");
  writeFileSync(lines, `${Array.from({ length: 60 }, (_, i) => JSON.stringify(makeTrajectory(500 + i))).join("\n")}\n`);
  const r = await importJsonl(late, lines, { thread: "wait", batch: 20 });
  assert.equal(r.added, 60);
  assert.ok(r.onThread > 0, "the thread's vectors were used");
  assert.equal(late.embedder.id, first.embedder.id);
  const step = makeTrajectory(510).steps[1];
  const q = { state: step.observation, action: step.action };
  assert.equal((await first.search(q, { k: 1 }))[0].transition.state, q.state);
  late.close();
  first.close();
});
