import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { ReplayBuffer } from "./replay-buffer.ts";
import { HashingEmbedder } from "./hashing-embedder.ts";
import { OpenAIEmbedder } from "./openai-embedder.ts";
import { dot, l2Normalize, type Embedder } from "./embedder.ts";
import { decodeHalf, encodeHalf } from "./float16.ts";
import { transitionText } from "./transition-text.ts";
import { trajectoryContentId } from "./trajectory-schema.ts";
import { makeTrajectory, tempFile } from "../testing/index.ts";
import { DataError, InvalidConfigError, Rng, type Trajectory } from "../core/index.ts";

test("append, get, count, stats; trajectories come back as they went in", async () => {
  const b = ReplayBuffer.open(tempFile("a.db"));
  const trajs = Array.from({ length: 10 }, (_, i) => makeTrajectory(i, { env: i < 6 ? "toy" : "other", source: i % 3 === 0 ? "synthetic" : "real" }));
  const r = await b.appendTrajectories(trajs, { seed: true });
  assert.deepEqual(r, { added: 10, duplicates: 0, transitions: 30, evicted: 0 });
  assert.equal(b.count(), 30);
  assert.equal(b.count({ env: "other" }), 12);
  assert.equal(b.count({ source: "synthetic" }), 12);
  assert.deepEqual([...b.trajectories()], trajs);
  const t = b.get(1)!;
  assert.equal(t.state, trajs[0].steps[0].observation);
  assert.equal(t.nextState, trajs[0].steps[0].next_observation);
  assert.equal(t.task.instruction, trajs[0].task.instruction);
  assert.equal(t.trajectory, trajectoryContentId(trajs[0]));
  const s = b.stats();
  assert.equal(s.trajectories, 10);
  assert.equal(s.seedTrajectories, 10);
  const toyReal = s.groups.find((g) => g.env === "toy" && g.source === "real")!;
  assert.equal(toyReal.trajectories, 4);
  assert.equal(toyReal.successes + toyReal.rewardZero, 4);
  b.close();
});

test("a connection that opened the file before its first vectors takes the embedder another stored with them", async () => {
  const file = tempFile("two-writers.db");
  const first = ReplayBuffer.open(file);
  const late = ReplayBuffer.open(file); // opened empty: no embedder stored yet
  const reader = ReplayBuffer.open(file);
  // 40 trajectories of 3 steps: enough for the default embedder to fit its IDF on them.
  await first.appendTrajectories(Array.from({ length: 40 }, (_, i) => makeTrajectory(i)));
  const fitted = first.embedder.id;
  assert.match(fitted, /idf=(?!none)/);
  // The late writer's own 120 steps would have fitted another IDF; the reader's queries would have had none.
  await late.appendTrajectories(Array.from({ length: 40 }, (_, i) => makeTrajectory(100 + i)));
  assert.equal(late.embedder.id, fitted);
  const q = { state: "page 1 of episode 3: you see item 39 and a shelf 1", action: "click[item 4]" };
  assert.deepEqual(await reader.embedQuery(q), await first.embedQuery(q));
  assert.equal((await reader.search(q, { k: 1 }))[0].transition.state, q.state);
  first.close();
  late.close();
  reader.close();
  const again = ReplayBuffer.open(file);
  assert.equal(again.embedder.id, fitted, "the stored embedder is the first one's");
  assert.equal(again.count(), 240);
  // An explicit embedder other than the stored one is refused, as at open.
  const other = ReplayBuffer.open(tempFile("two-writers-2.db"), { embedder: new HashingEmbedder({ dims: 64 }) });
  const plain = ReplayBuffer.open(other.path);
  await plain.appendTrajectory(makeTrajectory(1));
  await assert.rejects(other.appendTrajectory(makeTrajectory(2)), InvalidConfigError);
  // ...and stays refused, while what it reads follows the file.
  assert.equal(other.count(), 3);
  await assert.rejects(other.search("page 1", { k: 1 }), InvalidConfigError);
  await assert.rejects(other.appendTrajectory(makeTrajectory(3)), InvalidConfigError);
  other.close();
  plain.close();
  again.close();
});

test("an append embedded before another connection stored the first vectors is not written", async () => {
  const file = tempFile("race.db");
  // An embedder that waits: the other connection's first append commits while it embeds.
  let release = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const inner = new HashingEmbedder({ dims: 64 });
  const slow = { id: inner.id, dims: 64, embed: async (texts: string[]) => (await gate, inner.embed(texts)) };
  const waiting = ReplayBuffer.open(file, { embedder: slow });
  const other = ReplayBuffer.open(file, { embedder: new HashingEmbedder({ dims: 32 }) });
  const late = waiting.appendTrajectory(makeTrajectory(1));
  await other.appendTrajectory(makeTrajectory(2));
  release();
  await assert.rejects(late, (e: unknown) => e instanceof DataError && /nothing was written.*another connection stored vectors/.test(e.message));
  assert.equal(other.count(), 3);
  waiting.close();
  other.close();
});

test("a text's id kept from before another connection's commit is not used for the text that took it since", async () => {
  const file = tempFile("texts-race.db");
  const inner = new HashingEmbedder({ dims: 32 });
  // An embedder that, once armed, says it has started and waits: the other connection commits meanwhile.
  let gate: Promise<void> | undefined;
  let started = () => {};
  const slow: Embedder = { id: inner.id, dims: 32, embed: async (texts) => (gate && (started(), await gate), inner.embed(texts)) };
  const waiting = ReplayBuffer.open(file, { embedder: slow });
  const other = ReplayBuffer.open(file, { embedder: inner });
  const trajectory = (name: string, policy: string) => ({
    env: "toy",
    task: { id: name, instruction: `instr ${name}` },
    source: "synthetic" as const,
    policy,
    total_reward: 0,
    success: false,
    created_at: "2024-01-01T00:00:00Z",
    steps: [{ observation: `obs ${name}`, action: "a", reward: 0, next_observation: `next ${name}`, terminated: true, truncated: false }],
  });
  await waiting.appendTrajectories([trajectory("one", "p1")]); // its texts' ids kept by `waiting`
  let release = () => {};
  gate = new Promise((resolve) => (release = resolve));
  const embedding = new Promise<void>((resolve) => (started = resolve));
  const step = {
    trajectoryId: "online-1",
    step: 0,
    env: "toy",
    task: { id: "x", instruction: "instr one" },
    action: "b",
    reward: 0,
    terminated: false,
    truncated: false,
  };
  const pending = waiting.appendTransitions([{ ...step, state: "next one", nextState: "obs one", source: "synthetic" }]);
  await embedding;
  await other.deleteTrajectories({ policies: ["p1"] }); // its texts go, their ids free
  await other.appendTrajectories([trajectory("two", "p2")]); // new texts, which take those ids
  release();
  const [id] = await pending;
  const t = waiting.get(id)!;
  assert.deepEqual([t.task.instruction, t.state, t.nextState], ["instr one", "next one", "obs one"]);
  waiting.close();
  other.close();
});

test("re-appending the same content does not duplicate; created_at does not count", async () => {
  const b = ReplayBuffer.open(tempFile("dup.db"));
  const t = makeTrajectory(1);
  await b.appendTrajectory(t);
  const again = await b.appendTrajectories([t, { ...t, created_at: "2030-01-01T00:00:00.000Z" }, makeTrajectory(2)]);
  assert.deepEqual([again.added, again.duplicates], [1, 2]);
  assert.equal(b.countTrajectories(), 2);
  b.close();
});

test("search: the identical (state, action) first; filters; distinct results; bad k", async () => {
  const b = ReplayBuffer.open(tempFile("s.db"));
  await b.appendTrajectories(
    Array.from({ length: 40 }, (_, i) => makeTrajectory(i, { env: i % 2 ? "odd" : "even", source: i % 4 === 0 ? "synthetic" : "real" })),
  );
  const target = makeTrajectory(17).steps[1];
  const [top] = await b.search({ state: target.observation, action: target.action }, { k: 1 });
  assert.equal(top.transition.state, target.observation);
  assert.equal(top.transition.action, target.action);
  assert.ok(top.score > 0.999);
  const odd = await b.search({ state: target.observation, action: target.action }, { k: 5, filter: { env: "even" } });
  assert.equal(odd.length, 5);
  assert.ok(odd.every((r) => r.transition.env === "even"));
  const synth = await b.search("click[buy now]", { k: 50, filter: { source: "synthetic", task: "task-1" } });
  assert.ok(synth.length > 0 && synth.every((r) => r.transition.source === "synthetic" && r.transition.task.id === "task-1"));
  assert.deepEqual(await b.search("x", { filter: { env: "no-such-env" } }), []);
  const sameAction = await b.search({ state: target.observation, action: "click[item 3]" }, { k: 4, filter: { action: "click[item 3]" } });
  assert.ok(sameAction.length > 0 && sameAction.every((r) => r.transition.action === "click[item 3]"));
  // Distinct: one result per (state, action) — append a copy of a trajectory under another task.
  await b.appendTrajectory({ ...makeTrajectory(17), task: { id: "copy", instruction: "buy item 2" } });
  const both = await b.search({ state: target.observation, action: target.action }, { k: 2, distinct: false });
  assert.equal(both[0].transition.state, both[1].transition.state);
  const distinct = await b.search({ state: target.observation, action: target.action }, { k: 2 });
  assert.notEqual(distinct[0].transition.state + distinct[0].transition.action, distinct[1].transition.state + distinct[1].transition.action);
  await assert.rejects(b.search("x", { k: 0 }), InvalidConfigError);
  b.close();
});

test("capacity evicts the oldest online trajectories and never the seed", async () => {
  const b = ReplayBuffer.open(tempFile("cap.db"), { capacity: 20 });
  await b.appendTrajectories([makeTrajectory(0), makeTrajectory(1)], { seed: true }); // 6 seed transitions
  await b.search("warm up the exact index", { k: 1 });
  for (let i = 2; i < 12; i++) await b.appendTrajectory(makeTrajectory(i)); // 30 online transitions
  assert.ok(b.count() <= 20);
  const kept = [...b.trajectories()].map((t) => t.created_at);
  const seedKept = [makeTrajectory(0), makeTrajectory(1)].every((t) => kept.includes(t.created_at));
  assert.ok(seedKept, "the seed is never evicted");
  assert.ok(!kept.includes(makeTrajectory(2).created_at), "the oldest online trajectory went first");
  assert.ok(kept.includes(makeTrajectory(11).created_at));
  // The search index is in step: nothing evicted comes back.
  const gone = makeTrajectory(2).steps[0];
  const [r] = await b.search({ state: gone.observation, action: gone.action }, { k: 1 });
  assert.notEqual(r.transition.state, gone.observation);
  // Only seed left above capacity: it stays.
  const small = ReplayBuffer.open(tempFile("cap2.db"), { capacity: 2 });
  await small.appendTrajectory(makeTrajectory(0), { seed: true });
  assert.equal(small.count(), 3);
  small.close();
  b.close();
});

test("online steps: appendTransitions groups them into trajectories", async () => {
  const b = ReplayBuffer.open(tempFile("online.db"));
  const task = { id: "t1", instruction: "do it" };
  const common = { env: "toy", task, source: "synthetic" as const, policy: "p", terminated: false, truncated: false };
  const ids = await b.appendTransitions([
    { ...common, trajectoryId: "run-1/ep-1", step: 0, state: "s0", action: "a0", reward: 0, nextState: "s1" },
    { ...common, trajectoryId: "run-1/ep-1", step: 1, state: "s1", action: "a1", reward: 1, nextState: "s2", terminated: true, reasoning: "because" },
  ]);
  assert.equal(ids.length, 2);
  await b.appendTransitions([{ ...common, trajectoryId: "run-1/ep-2", step: 0, state: "s0", action: "a9", reward: 0, nextState: "s9" }]);
  const trajs = [...b.trajectories()];
  assert.equal(trajs.length, 2);
  assert.equal(trajs[0].steps.length, 2);
  assert.equal(trajs[0].total_reward, 1);
  assert.equal(trajs[0].success, true);
  assert.equal(trajs[0].steps[1].reasoning, "because");
  assert.equal(b.get(ids[1])!.reasoning, "because");
  await assert.rejects(b.appendTransitions([{ ...common, trajectoryId: "run-1/ep-1", step: 0, state: "x", action: "y", reward: 0, nextState: "z" }]), /UNIQUE/);
  assert.equal(b.count(), 3, "a failed append changes nothing");
  b.close();
});

test("the embedder is recorded: reopening embeds the same way, and a different one is refused", async () => {
  const file = tempFile("emb.db");
  const b = ReplayBuffer.open(file);
  await b.appendTrajectories(Array.from({ length: 40 }, (_, i) => makeTrajectory(i))); // 120 ≥ 100: the IDF is fitted
  const id = b.embedder.id;
  assert.match(id, /idf=[0-9a-f]{12}/);
  const before = await b.search("click[item 3]", { k: 3 });
  b.close();
  const again = ReplayBuffer.open(file);
  assert.equal(again.embedder.id, id);
  assert.deepEqual(await again.search("click[item 3]", { k: 3 }), before);
  again.close();
  assert.throws(
    () => ReplayBuffer.open(file, { embedder: new HashingEmbedder({ dims: 128 }) }),
    (e: unknown) => {
      assert.ok(e instanceof InvalidConfigError);
      assert.match(
        e.message,
        new RegExp(
          `holds vectors from embedder "${id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}" \\(256 dims\\); the given embedder is "hashing-v3:dims=128:idf=none" \\(128 dims\\)`,
        ),
      );
      return true;
    },
  );
  // An endpoint's embedder knows its length only after its first call: none is said, rather than "0 dims".
  assert.throws(
    () => ReplayBuffer.open(file, { embedder: new OpenAIEmbedder({ baseURL: "http://127.0.0.1:9/v1", model: "m" }) }),
    /the given embedder is "openai-compatible:http:\/\/127\.0\.0\.1:9\/v1#m"\. They cannot be mixed/,
  );
});

test("above the ANN threshold, search uses HNSW, agrees with exact search, and the index persists", async () => {
  const file = tempFile("ann.db");
  const b = ReplayBuffer.open(file, { annThreshold: 300 });
  await b.appendTrajectories(Array.from({ length: 200 }, (_, i) => makeTrajectory(i, { steps: 3 })));
  assert.equal(b.stats().index, "ann");
  let agree = 0;
  for (let i = 0; i < 20; i++) {
    const s = makeTrajectory(i * 7).steps[1];
    const q = { state: s.observation, action: s.action };
    const ann = (await b.search(q, { k: 5 })).map((r) => r.transition.id);
    const exact = new Set((await b.search(q, { k: 5, exact: true })).map((r) => r.transition.id));
    agree += ann.filter((id) => exact.has(id)).length;
  }
  assert.ok(agree / 100 >= 0.9, `ANN/exact agreement ${agree}/100`);
  await b.appendTrajectory(makeTrajectory(5000)); // kept in step with appends
  const fresh = makeTrajectory(5000).steps[2];
  assert.equal((await b.search({ state: fresh.observation, action: fresh.action }, { k: 1 }))[0].transition.state, fresh.observation);
  b.close();
  assert.ok(existsSync(`${file}.ann`));
  const again = ReplayBuffer.open(file, { annThreshold: 300 });
  assert.equal((await again.search({ state: fresh.observation, action: fresh.action }, { k: 1 }))[0].transition.state, fresh.observation);
  again.close();
  // A torn index file is rebuilt from the database, not trusted.
  writeFileSync(`${file}.ann`, "garbage");
  const rebuilt = ReplayBuffer.open(file, { annThreshold: 300 });
  assert.equal((await rebuilt.search({ state: fresh.observation, action: fresh.action }, { k: 1 }))[0].transition.state, fresh.observation);
  rebuilt.close();
});

test("a corrupt file is an error and is not modified; a missing read-only file is an error", () => {
  const file = tempFile("corrupt.db");
  const junk = Buffer.from("this is not a sqlite database, just some bytes ".repeat(200));
  writeFileSync(file, junk);
  assert.throws(
    () => ReplayBuffer.open(file),
    (e: unknown) => e instanceof DataError && e.file === file && /not a dreamgym buffer or is corrupt/.test(e.message),
  );
  assert.deepEqual(readFileSync(file), junk);
  assert.throws(() => ReplayBuffer.open(tempFile("none.db"), { readonly: true }), /buffer file does not exist/);
});

test("a file locked by another writer: a clear error after the busy timeout, nothing lost", async () => {
  const file = tempFile("locked.db");
  const b = ReplayBuffer.open(file, { busyTimeoutMs: 100 });
  await b.appendTrajectory(makeTrajectory(1));
  const other = new Database(file);
  other.exec("BEGIN EXCLUSIVE");
  await assert.rejects(b.appendTrajectory(makeTrajectory(2)), /locked|busy/i);
  other.exec("ROLLBACK");
  other.close();
  await b.appendTrajectory(makeTrajectory(2));
  assert.equal(b.countTrajectories(), 2);
  b.close();
});

test("SIGKILL in the middle of writes: the buffer opens, is consistent, and holds every acknowledged trajectory", async () => {
  const file = tempFile("kill.db");
  const acked = new Map<string, number>();
  // The writer as this file runs: compiled (test/fixtures/kill-writer.js beside it in the test build), or from source under tsx.
  const ts = import.meta.url.endsWith(".ts");
  const writer = [...(ts ? ["--import", "tsx"] : []), fileURLToPath(new URL(`../../test/fixtures/kill-writer.${ts ? "ts" : "js"}`, import.meta.url))];
  // Three rounds on the same file: kill a writer, check, start the next writer on what it left.
  for (let round = 0; round < 3; round++) {
    const child = spawn(process.execPath, [...writer, file], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let pending = "";
    let seen = 0;
    await new Promise<void>((resolve) => {
      child.stdout.on("data", (chunk: Buffer) => {
        pending += chunk.toString();
        const lines = pending.split("\n");
        pending = lines.pop()!;
        for (const l of lines) {
          const [uid, n] = l.split(" ");
          acked.set(uid, Number(n));
          seen++;
        }
        // Kill while it is writing: after enough commits, at a moment set by the data flow, not a timer.
        if (seen >= 40 && !child.killed) {
          child.kill("SIGKILL");
          resolve();
        }
      });
    });
    await new Promise((r) => child.once("exit", r));
    const db = new Database(file, { readonly: true });
    assert.equal((db.prepare("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check, "ok");
    const orphans = db.prepare("SELECT count(*) AS n FROM transitions WHERE trajectory_id NOT IN (SELECT id FROM trajectories)").get() as { n: number };
    assert.equal(orphans.n, 0);
    const partial = db
      .prepare("SELECT count(*) AS n FROM trajectories j WHERE n_steps != (SELECT count(*) FROM transitions x WHERE x.trajectory_id = j.id)")
      .get() as { n: number };
    assert.equal(partial.n, 0, "no trajectory is half written");
    db.close();
    const b = ReplayBuffer.open(file);
    const stored = new Map([...b.trajectories()].map((t) => [trajectoryContentId(t), t.steps.length]));
    for (const [uid, n] of acked) assert.equal(stored.get(uid), n, `acknowledged trajectory ${uid.slice(0, 8)} is whole`);
    assert.ok(stored.size >= acked.size);
    assert.ok((await b.search("click[buy now]", { k: 3 })).length === 3);
    b.close();
  }
});

test("a batch larger than capacity: rows evicted in the same transaction are not indexed (exact and HNSW)", async () => {
  for (const annThreshold of [1_000_000, 1]) {
    const b = ReplayBuffer.open(tempFile("evict-batch.db"), { capacity: 6, annThreshold });
    await b.appendTrajectories([makeTrajectory(0), makeTrajectory(1)], { seed: true }); // the seed fills capacity
    await b.search("warm up", { k: 1 });
    for (let i = 2; i < 6; i++) await b.appendTrajectory(makeTrajectory(i));
    await b.appendTrajectories([makeTrajectory(10), makeTrajectory(11), makeTrajectory(12)]);
    assert.equal(b.count(), 6);
    const hits = await b.search("click[buy now]", { k: 10, distinct: false });
    const ids = hits.map((h) => h.transition.id);
    assert.equal(new Set(ids).size, ids.length, "no transition twice");
    assert.equal(hits.length, 6, "every stored transition, and only those");
    b.close();
  }
});

test("codes of names whose rows were evicted are let go: a long run of new actions in a bounded buffer holds them within a bound", async () => {
  const b = ReplayBuffer.open(tempFile("codes.db"), { capacity: 53 });
  await b.appendTrajectories([makeTrajectory(0)], { seed: true }); // 3 steps: room for one trajectory of 50 more
  const coded = () => (b as unknown as { indexes: { namesCoded: number } }).indexes.namesCoded;
  let most = 0;
  let previous: Trajectory | undefined;
  for (let i = 1; i <= 100; i++) {
    const t = makeTrajectory(i, { task: `task ${i}`, steps: 50 });
    t.steps.forEach((s, j) => (s.action = `search[query ${i} ${j}]`));
    await b.appendTrajectory(t); // evicts the one before
    // A filtered exact search (the index, and its codes, made again if dropped) finds the newest rows, not those gone.
    const hits = await b.search(t.steps[7].observation, { k: 3, filter: { task: t.task.id, action: t.steps[7].action } });
    assert.deepEqual(
      hits.map((h) => [h.transition.task.id, h.transition.action]),
      [[t.task.id, t.steps[7].action]],
    );
    if (previous) assert.deepEqual(await b.search("query", { k: 3, filter: { action: previous.steps[7].action } }), [], "an evicted action finds nothing");
    previous = t;
    most = Math.max(most, coded());
  }
  assert.equal(b.count(), 53);
  // 100 tasks and 5,000 actions were coded in all: at most 4,096 beyond what the rows can hold, and one append's.
  assert.ok(most <= 3 * 53 + 4096 + 51, `${most} names coded`);
  assert.ok(coded() < 4096, `${coded()} names coded now`);
  b.close();
});

test("findExact's index of states is not made while another writer holds the file (no wait for it), and is made later", async () => {
  const file = tempFile("exact-busy.db");
  const b = ReplayBuffer.open(file);
  await b.appendTrajectories([makeTrajectory(1), makeTrajectory(2)]);
  const t = makeTrajectory(1).steps[0];
  const indexed = () => {
    const db = new Database(file, { readonly: true });
    try {
      return db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'transitions_state'").pluck().get() === 1;
    } finally {
      db.close();
    }
  };
  const other = new Database(file);
  other.exec("BEGIN IMMEDIATE"); // another writer
  assert.equal(b.findExact({ state: t.observation, action: t.action }).length, 1, "the lookup goes on without the index");
  other.exec("COMMIT");
  other.close();
  assert.equal(indexed(), false);
  for (let i = 0; i < 999; i++) b.findExact({ state: t.observation, action: t.action });
  assert.equal(indexed(), false, "tried again only 1,000 lookups later");
  b.findExact({ state: t.observation, action: t.action });
  assert.equal(indexed(), true);
  b.close();
});

test("instructionOf: a task's instruction by its id, not by a task whose id holds it", async () => {
  const b = ReplayBuffer.open(tempFile("instr.db"));
  // Tasks 10–39 come first: an id search by substring would meet them before task 1.
  const t = (i: number) => ({ ...makeTrajectory(i, { task: `task ${i}` }), task: { id: `task ${i}`, instruction: `instruction ${i}` } });
  await b.appendTrajectories([...Array.from({ length: 30 }, (_, i) => t(10 + i)), t(1)]);
  assert.equal(b.instructionOf("task 1"), "instruction 1");
  assert.equal(b.instructionOf("task 25"), "instruction 25");
  assert.equal(b.instructionOf("task 2"), undefined);
  // taskIds: the ids the trajectories name, read without their steps, by env and source.
  await b.appendTrajectories([makeTrajectory(90, { task: "other env", env: "toy2" }), makeTrajectory(91, { task: "made up", source: "synthetic" })]);
  await b.appendTransitions([
    {
      trajectoryId: "online",
      step: 0,
      env: "toy",
      task: { id: "online task", instruction: "go" },
      state: "s",
      action: "a",
      reward: 0,
      nextState: "t",
      terminated: false,
      truncated: false,
      source: "real",
      policy: "p",
    },
  ]);
  const idsOf = (filter: { env?: string; source?: "real" | "synthetic" }) => new Set([...b.trajectories(filter)].map((x) => x.task.id));
  for (const filter of [
    {},
    { env: "toy" },
    { env: "toy2" },
    { source: "real" as const },
    { source: "synthetic" as const },
    { env: "toy", source: "real" as const },
  ])
    assert.deepEqual(b.taskIds(filter), idsOf(filter), JSON.stringify(filter));
  assert.ok(b.taskIds({ env: "toy", source: "real" }).has("online task"));
  b.close();
});

test("ids are never reused after eviction", async () => {
  const b = ReplayBuffer.open(tempFile("ids.db"), { capacity: 3 });
  await b.appendTrajectory(makeTrajectory(1));
  const first = (await b.search("x", { k: 3, distinct: false })).map((h) => h.transition.id);
  await b.appendTrajectory(makeTrajectory(2)); // evicts trajectory 1
  const second = (await b.search("x", { k: 3, distinct: false })).map((h) => h.transition.id);
  assert.ok(Math.min(...second) > Math.max(...first));
  b.close();
});

test("a caller's embedder is used as given (not fitted), so reopening with it works", async () => {
  const file = tempFile("given.db");
  const b = ReplayBuffer.open(file, { embedder: new HashingEmbedder({ dims: 128 }) });
  await b.appendTrajectories(Array.from({ length: 50 }, (_, i) => makeTrajectory(i)));
  assert.equal(b.embedder.id, "hashing-v3:dims=128:idf=none");
  b.close();
  const again = ReplayBuffer.open(file, { embedder: new HashingEmbedder({ dims: 128 }) });
  assert.equal((await again.search("click[buy now]", { k: 2 })).length, 2);
  again.close();
});

test("appends from one process run one at a time: concurrent duplicates and shared online trajectories", async () => {
  const b = ReplayBuffer.open(tempFile("concurrent.db"));
  const t = makeTrajectory(7);
  const [x, y] = await Promise.all([b.appendTrajectory(t), b.appendTrajectory(t)]);
  assert.deepEqual([x.added + y.added, x.duplicates + y.duplicates], [1, 1]);
  const common = { env: "toy", task: { id: "t", instruction: "i" }, source: "synthetic" as const, reward: 0, terminated: false, truncated: false };
  await Promise.all([
    b.appendTransitions([{ ...common, trajectoryId: "ep", step: 0, state: "a", action: "b", nextState: "c" }]),
    b.appendTransitions([{ ...common, trajectoryId: "ep", step: 1, state: "c", action: "d", nextState: "e" }]),
  ]);
  const ep = [...b.trajectories()].find((tr) => tr.steps.length === 2 && tr.steps[0].action === "b");
  assert.ok(ep, "both steps joined one trajectory");
  b.close();
});

test("another connection's writes are seen by searches", async () => {
  const file = tempFile("two.db");
  const reader = ReplayBuffer.open(file);
  await reader.appendTrajectory(makeTrajectory(1));
  await reader.search("warm up", { k: 1 });
  const writer = ReplayBuffer.open(file);
  await writer.appendTrajectory(makeTrajectory(2));
  writer.close();
  const s = makeTrajectory(2).steps[1];
  const [top] = await reader.search({ state: s.observation, action: s.action }, { k: 1 });
  assert.equal(top.transition.state, s.observation);
  reader.close();
});

test("HNSW-served buffers: filters on unknown values return nothing; selective filters are exact", async () => {
  const b = ReplayBuffer.open(tempFile("annfilter.db"), { annThreshold: 10 });
  await b.appendTrajectories(Array.from({ length: 60 }, (_, i) => makeTrajectory(i, { env: i === 5 ? "rare" : "common" })));
  assert.deepEqual(await b.search("click[buy now]", { filter: { env: "missing" } }), []);
  const q = makeTrajectory(5).steps[0];
  const rare = await b.search({ state: q.observation, action: q.action }, { k: 5, filter: { env: "rare" } });
  const exact = await b.search({ state: q.observation, action: q.action }, { k: 5, filter: { env: "rare" }, exact: true });
  assert.equal(rare.length, 3);
  assert.deepEqual(
    rare.map((r) => r.transition.id),
    exact.map((r) => r.transition.id),
  );
  b.close();
});

test("capacity bounds the file: texts only evicted transitions used are deleted", async () => {
  const file = tempFile("texts.db");
  const b = ReplayBuffer.open(file, { capacity: 30 });
  for (let i = 0; i < 400; i++) await b.appendTrajectory(makeTrajectory(i));
  b.close();
  const db = new Database(file, { readonly: true });
  const texts = (db.prepare("SELECT count(*) AS n FROM texts").get() as { n: number }).n;
  const used = (
    db
      .prepare(
        "SELECT count(*) AS n FROM (SELECT state_id FROM transitions UNION SELECT next_state_id FROM transitions UNION SELECT instruction_id FROM transitions)",
      )
      .get() as { n: number }
  ).n;
  // The cleanups ran with foreign keys off, and only there: every text a row names is kept, and the
  // evictions after each cleanup still took their transitions with their trajectories (ON DELETE CASCADE).
  const broken = db.pragma("foreign_key_check");
  const orphans = (db.prepare("SELECT count(*) AS n FROM transitions WHERE trajectory_id NOT IN (SELECT id FROM trajectories)").get() as { n: number }).n;
  db.close();
  assert.ok(texts <= used + 1000 * 3, `texts ${texts}, used ${used}`);
  assert.ok(texts < 400 * 4, `texts ${texts} were cleaned up`);
  assert.deepEqual(broken, []);
  assert.equal(orphans, 0);

  // `trim` cleans up too, once 1,000 rows went since the last time (the cleanup reads every row), and
  // leaves foreign keys on for the next one.
  const trimmed = ReplayBuffer.open(tempFile("trim-texts.db"));
  const textsIn = () => {
    const db2 = new Database(trimmed.path, { readonly: true });
    try {
      assert.deepEqual(db2.pragma("foreign_key_check"), []);
      return (db2.prepare("SELECT count(*) AS n FROM texts").get() as { n: number }).n;
    } finally {
      db2.close();
    }
  };
  let next = 0;
  const round = async (n: number) => {
    await trimmed.appendTrajectories(Array.from({ length: n }, () => makeTrajectory(10_000 + next++)));
    await trimmed.trim(6);
    assert.equal(trimmed.count(), 6);
  };
  await round(20); // 54 rows go: their texts stay for now
  assert.ok(textsIn() > 50, `${textsIn()} texts`);
  for (let r = 0; r < 3; r++) {
    await round(400); // 1,200 rows go: the texts only they used go with them
    assert.ok(textsIn() <= 4 * 2 + 2, `${textsIn()} texts`);
  }
  trimmed.close();
});

test("the rows gone since the last text cleanup are counted in the file: a buffer reopened often still deletes unused texts", async () => {
  const file = tempFile("reopened.db");
  let next = 0;
  for (let session = 0; session < 12; session++) {
    const b = ReplayBuffer.open(file, { capacity: 30 });
    // 100 rows a session, ~100 of them evicted: under the 1,000 that start a cleanup, in each session alone.
    await b.appendTrajectories(Array.from({ length: 34 }, () => makeTrajectory(next++)));
    b.close();
  }
  const db = new Database(file, { readonly: true });
  const texts = (db.prepare("SELECT count(*) AS n FROM texts").get() as { n: number }).n;
  db.close();
  assert.ok(texts < 12 * 34 * 4, `${texts} texts: cleaned up across the sessions`);
});

test("deleteTrajectories removes whole trajectories by policy label, never the seed, and search forgets them", async () => {
  const file = tempFile("del.db");
  const b = ReplayBuffer.open(file);
  await b.appendTrajectories([makeTrajectory(0, { policy: "run#1" })], { seed: true });
  const online = [makeTrajectory(1, { policy: "run#1" }), makeTrajectory(2, { policy: "run#2" }), makeTrajectory(3, { policy: "run#3" })];
  await b.appendTrajectories(online);
  assert.equal(b.count(), 12);
  assert.equal(await b.deleteTrajectories({ policies: ["run#2", "run#3", "nothing"] }), 2);
  assert.equal(b.count(), 6);
  assert.equal(b.countTrajectories(), 2);
  const gone = new Set(online.slice(1).flatMap((t) => t.steps.map((s) => s.action)));
  const hits = await b.search(online[1].steps[0].observation, { k: 10 });
  assert.ok(hits.every((h) => !gone.has(h.transition.action) || h.transition.task.id !== online[1].task.id));
  // The seed stays even when its label matches.
  assert.equal(await b.deleteTrajectories({ policies: ["run#1"] }), 1);
  assert.equal(b.countTrajectories(), 1);
  b.close();
  const again = ReplayBuffer.open(file);
  assert.equal(again.count(), 3);
  assert.equal(again.stats().seedTrajectories, 1);
  // Deleted content can be appended again.
  assert.equal((await again.appendTrajectories(online.slice(1))).added, 2);
  again.close();
});

test("findExact: the steps of exactly this action in exactly this state, the task's own first, without a search", async () => {
  const b = ReplayBuffer.open(tempFile("exact.db"));
  const step = (task: string, action: string, reward: number) => ({
    env: "toy",
    task: { id: task, instruction: "collect" },
    source: "real" as const,
    total_reward: reward,
    success: false,
    created_at: new Date(0).toISOString(),
    steps: [{ observation: "room: hall", action, reward, next_observation: `room: hall after ${action} in ${task}`, terminated: false, truncated: false }],
  });
  await b.appendTrajectories([step("a", "take gem", 1), step("b", "take gem", 2), step("c", "look", 0)]);
  const stateIndex = () => {
    const db = new Database(b.path, { readonly: true });
    try {
      return db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'transitions_state'").pluck().get();
    } finally {
      db.close();
    }
  };
  assert.equal(stateIndex(), 0, "appends alone make no index of states");
  assert.deepEqual(
    b.findExact({ state: "room: hall", action: "take gem" }).map((t) => t.task.id),
    ["a", "b"],
  );
  assert.equal(stateIndex(), 1, "the first exact lookup makes it");
  assert.deepEqual(
    b.findExact({ state: "room: hall", action: "take gem" }, { preferTask: "b" }).map((t) => t.task.id),
    ["b", "a"],
  );
  assert.deepEqual(
    b.findExact({ state: "room: hall", action: "take gem" }, { excludeTask: "a", env: "toy" }).map((t) => t.reward),
    [2],
  );
  assert.deepEqual(b.findExact({ state: "room: hall", action: "take gem" }, { env: "other" }), []);
  assert.deepEqual(b.findExact({ state: "room: attic", action: "take gem" }), []);
  assert.deepEqual(b.findExact({ state: "room: hall", action: "take key" }), []);
  // A synthetic episode's copies of the step, its task's own and so first, never crowd out the real ones.
  const synthetic = Array.from({ length: 6 }, (_, i) => ({
    ...step("b", "take gem", 3),
    source: "synthetic" as const,
    steps: [{ ...step("b", "take gem", 3).steps[0], next_observation: `room: hall (copy ${i})` }],
  }));
  await b.appendTrajectories(synthetic);
  assert.deepEqual(
    b.findExact({ state: "room: hall", action: "take gem" }, { preferTask: "b", limit: 5 }).map((t) => t.source),
    ["real", "synthetic", "synthetic", "synthetic", "synthetic"],
  );
  assert.deepEqual(
    b.findExact({ state: "room: hall", action: "take gem" }, { preferTask: "b", limit: 2, source: "real" }).map((t) => [t.task.id, t.reward]),
    [
      ["b", 2],
      ["a", 1],
    ],
  );
  b.close();
});

test("a closed buffer opens read-only without side files: reading a finished run writes nothing beside it", async () => {
  const path = tempFile("buffer-side.db");
  const b = ReplayBuffer.open(path);
  await b.appendTrajectories([makeTrajectory(0, { steps: 2 })]);
  b.close();
  const r = ReplayBuffer.open(path, { readonly: true });
  assert.equal(r.count(), 2);
  const side = readdirSync(join(path, "..")).filter((f) => f.startsWith("buffer-side.db-"));
  r.close();
  assert.deepEqual(side, []);
});

test("realVersion stays while only synthetic transitions come and go, and a real-only search gives the same answer throughout", async () => {
  const b = ReplayBuffer.open(tempFile("real-version.db"));
  await b.appendTrajectories(
    Array.from({ length: 6 }, (_, i) => makeTrajectory(i, { env: "toy", source: "real" })),
    { seed: true },
  );
  const v0 = b.realVersion;
  const query = { state: "state 3 of task 3", action: "act 1" };
  const before = JSON.stringify(await b.search(query, { k: 3, filter: { env: "toy", source: "real" } }));
  await b.appendTrajectories(Array.from({ length: 20 }, (_, i) => makeTrajectory(100 + i, { env: "toy", source: "synthetic" })));
  assert.equal(b.realVersion, v0, "synthetic appends leave it");
  assert.equal(JSON.stringify(await b.search(query, { k: 3, filter: { env: "toy", source: "real" } })), before);
  await b.trim(5);
  assert.equal(b.realVersion, v0, "trimming synthetic episodes leaves it");
  assert.notEqual(b.version, 0);
  await b.appendTrajectories([makeTrajectory(200, { env: "toy", source: "real" })]);
  assert.notEqual(b.realVersion, v0, "a real append changes it");
  // Followed through appends, it is what a reading of the file gives.
  await b.appendTrajectories([makeTrajectory(201, { env: "toy", source: "real" }), makeTrajectory(202, { env: "toy", source: "synthetic" })]);
  const reader = ReplayBuffer.open(b.path, { readonly: true });
  assert.equal(b.realVersion, reader.realVersion);
  reader.close();
  b.close();
});

test("realVersion follows evictions: real rows evicted counted out, synthetic ones leave it, and the file is not read again for it", async () => {
  const b = ReplayBuffer.open(tempFile("real-version-evict.db"), { capacity: 40 });
  await b.appendTrajectories(
    Array.from({ length: 6 }, (_, i) => makeTrajectory(i, { source: "real" })),
    { seed: true },
  );
  await b.appendTrajectories([makeTrajectory(10, { source: "real" }), makeTrajectory(11, { source: "real" })]); // evictable
  const reads = () => counted.filter((q) => q.includes("source = 'real'")).length;
  const counted: string[] = [];
  const db = (b as unknown as { db: { prepare: (q: string) => unknown } }).db;
  const prepare = db.prepare.bind(db);
  db.prepare = (q: string) => (counted.push(q), prepare(q));
  const fresh = () => {
    const reader = ReplayBuffer.open(b.path, { readonly: true });
    const v = reader.realVersion;
    reader.close();
    return v;
  };
  const versions = [b.realVersion];
  assert.equal(reads(), 1);
  // Synthetic episodes come; the oldest evictable ones go first: the two real episodes, then synthetic ones.
  for (let i = 0; i < 12; i++) {
    await b.appendTrajectories([makeTrajectory(100 + i, { source: "synthetic" })]);
    assert.equal(b.realVersion, fresh());
    versions.push(b.realVersion);
  }
  assert.equal(b.count({ source: "real" }), 18, "the seed's real rows stay");
  assert.equal(new Set(versions).size, 3, "changed as each real episode went, then stayed");
  // Read again once: when the real episode holding the largest real id went.
  assert.equal(reads(), 2);
  b.close();
});

test("rows a search has read are not served once they go: trimmed here, or deleted by another connection", async () => {
  const file = tempFile("row-cache.db");
  const b = ReplayBuffer.open(file);
  await b.appendTrajectories([makeTrajectory(0)], { seed: true });
  await b.appendTrajectories([1, 2, 3].map((i) => makeTrajectory(i, { policy: "run" })));
  const q = makeTrajectory(2).steps[0];
  const query = { state: q.observation, action: q.action };
  const episodes = async () => new Set((await b.search(query, { k: 12, distinct: false })).map((h) => h.transition.state.split(":")[0]));
  assert.deepEqual(await episodes(), new Set([0, 1, 2, 3].flatMap((i) => [0, 1, 2].map((s) => `page ${s} of episode ${i}`))));
  await b.trim(3);
  const kept = await episodes();
  assert.equal(kept.size, 6);
  assert.ok(![...kept].some((e) => e.endsWith("episode 1") || e.endsWith("episode 2")), [...kept].join(", "));
  const other = ReplayBuffer.open(file);
  await other.appendTrajectories([makeTrajectory(5, { policy: "other" })]);
  assert.ok((await episodes()).has("page 0 of episode 5"));
  assert.equal(await other.deleteTrajectories({ policies: ["other"] }), 1);
  other.close();
  assert.deepEqual(await episodes(), kept);
  b.close();
});

test("HNSW-served buffers: a selective filter's scan scores as exact search does, to the bit, with dense vectors", async () => {
  // Dense unit vectors whose components span many powers of two: even with the rows stored as f16,
  // their products with a query do not all fit a double's 53 bits, so sums in another order differ.
  const dense: Embedder = {
    id: "dense-test",
    dims: 37,
    embed: async (texts) =>
      texts.map((t) => {
        const rng = new Rng([...t].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0, 2166136261));
        return l2Normalize(Float32Array.from({ length: 37 }, () => (rng.random() - 0.5) * 2 ** -rng.randbelow(12)));
      }),
  };
  const b = ReplayBuffer.open(tempFile("scan-dense.db"), { annThreshold: 10, embedder: dense });
  await b.appendTrajectories(Array.from({ length: 60 }, (_, i) => makeTrajectory(i, { env: i % 10 === 0 ? "rare" : "common" })));
  let compared = 0;
  for (const i of [3, 20, 41]) {
    const q = makeTrajectory(i).steps[1];
    const query = { state: q.observation, action: q.action };
    const scanned = await b.search(query, { k: 8, filter: { env: "rare" } });
    const exact = await b.search(query, { k: 8, filter: { env: "rare" }, exact: true });
    assert.deepEqual(
      scanned.map((r) => [r.transition.id, r.score]),
      exact.map((r) => [r.transition.id, r.score]),
    );
    // A score recomputed with the exported dot is the search's.
    const [v] = await dense.embed([transitionText(query.state, query.action)]);
    const [first] = await dense.embed([transitionText(exact[0].transition.state, exact[0].transition.action)]);
    assert.equal(dot(Float32Array.from(decodeHalf(encodeHalf(first))), v), exact[0].score);
    compared += scanned.length;
  }
  assert.equal(compared, 24);
  b.close();
});

test("HNSW-served buffers: a selective filter's scan takes the rows that come and forgets those that go, as exact search has them", async () => {
  const b = ReplayBuffer.open(tempFile("scan-kept.db"), { annThreshold: 10 });
  await b.appendTrajectories(Array.from({ length: 60 }, (_, i) => makeTrajectory(i, { env: i % 10 === 0 ? "rare" : "common" })));
  const q = makeTrajectory(20).steps[1];
  const query = { state: q.observation, action: q.action };
  const same = async () => {
    const scanned = await b.search(query, { k: 8, filter: { env: "rare" } });
    const exact = await b.search(query, { k: 8, filter: { env: "rare" }, exact: true });
    assert.deepEqual(
      scanned.map((r) => [r.transition.id, r.score]),
      exact.map((r) => [r.transition.id, r.score]),
    );
    return scanned.length;
  };
  assert.equal(await same(), 8);
  // Steps recorded one by one (online), in the filter and not; then whole episodes; then a trim.
  for (let i = 0; i < 5; i++)
    await b.appendTransitions([
      {
        trajectoryId: `online-${i}`,
        step: 0,
        env: i % 2 ? "rare" : "common",
        task: { id: `t${i}`, instruction: "buy a lamp" },
        state: query.state,
        action: `click[item ${i}]`,
        reward: 0,
        nextState: "page x",
        terminated: false,
        truncated: false,
        source: "synthetic",
      },
    ]);
  await same();
  await b.appendTrajectories(Array.from({ length: 10 }, (_, i) => makeTrajectory(200 + i, { env: "rare", policy: "later" })));
  await same();
  assert.equal(await b.deleteTrajectories({ policies: ["later"] }), 10);
  await same();
  b.close();
});

test("an action's spellings follow appends, ours and another connection's, and deletions", async () => {
  const file = tempFile("spellings.db");
  const b = ReplayBuffer.open(file);
  await b.appendTrajectories([makeTrajectory(1), makeTrajectory(2, { source: "synthetic", policy: "run:1" })], { seed: true });
  assert.equal(b.actionSpellings("click[buy now]", "toy"), 1);
  assert.equal(b.actionSpellings(" CLICK[Buy Now] ", "toy"), 1, "spelled alike: trimmed and lowercased");
  assert.equal(b.actionSpellings("click[nowhere]", "toy"), 0);
  assert.equal(b.actionSpellings("click[buy now]", "other"), 0);
  // Another spelling, in a synthetic episode: all rows count it, real rows do not.
  const respelled = makeTrajectory(3, { source: "synthetic", policy: "run:2" });
  respelled.steps.at(-1)!.action = "click[Buy Now]";
  await b.appendTrajectories([respelled]);
  assert.equal(b.actionSpellings("click[buy now]", "toy"), 2);
  assert.equal(b.actionSpellings("click[buy now]", "toy", "real"), 1);
  // Written by another connection: seen at the next ask.
  const other = ReplayBuffer.open(file);
  const real = makeTrajectory(4);
  real.steps.at(-1)!.action = "click[BUY NOW]";
  await other.appendTrajectories([real]);
  assert.equal(b.actionSpellings("click[buy now]", "toy", "real"), 2);
  other.close();
  // Deleted: gone from the count.
  assert.equal(await b.deleteTrajectories({ policies: ["run:2"] }), 1);
  assert.equal(b.actionSpellings("click[buy now]", "toy"), 2, "the real one's other spelling stays");
  assert.equal(b.actionSpellings("click[buy now]", "toy", "real"), 2);
  b.close();
});

test("steps on their way (announceStep): a step waits for them, a tenth of its own time at most (≤ 25 ms), and one commit carries them; alone, or the last to come, at once", {
  timeout: 30_000,
}, async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout", "Date"] }); // the waits' timers fire, and a step's time passes, only as the test ticks
  const path = tempFile("group-commit.db");
  const b = ReplayBuffer.open(path);
  const peek = new Database(path, { readonly: true });
  const commits = () => Number((peek.prepare("SELECT value FROM meta WHERE key = 'generation'").get() as { value: number }).value);
  const common = { env: "toy", task: { id: "t", instruction: "i" }, source: "synthetic" as const, reward: 0, terminated: false, truncated: false };
  const step = (ep: string) => [{ ...common, trajectoryId: ep, step: 0, state: `s ${ep}`, action: "a", nextState: `n ${ep}` }];
  const turns = async () => {
    for (let i = 0; i < 30; i++) await new Promise((r) => setImmediate(r));
  };
  const watch = (p: Promise<unknown>) => {
    const w = { done: false };
    void p.then(() => (w.done = true));
    return w;
  };
  // A step that should be committed by now (asserted, not awaited: under mocked timers a wrong wait would hang).
  const committed = async (w: { done: boolean }, what: string) => {
    await turns();
    assert.equal(w.done, true, what);
  };
  const c0 = commits();
  // Alone: committed at once (no timer).
  const alone = b.announceStep();
  t.mock.timers.tick(300);
  await committed(watch(alone.append(step("alone"))), "alone: at once");
  assert.equal(commits(), c0 + 1);
  // Two on their way, 300 ms each: the first waits for the second, and one commit carries both.
  const [x, y] = [b.announceStep(), b.announceStep()];
  t.mock.timers.tick(300);
  const wx = watch(x.append(step("x")));
  await turns();
  assert.equal(wx.done, false, "x waits while y is on its way");
  const wy = watch(y.append(step("y")));
  await committed(wx, "x, once y came");
  await committed(wy, "y, the last to come");
  assert.equal(commits(), c0 + 2);
  assert.equal(b.count(), 3);
  // One that will not come: the other is committed at once, but only once none is on its way.
  const [u, v, w3] = [b.announceStep(), b.announceStep(), b.announceStep()];
  t.mock.timers.tick(300);
  const wu = watch(u.append(step("u")));
  await turns();
  assert.equal(wu.done, false);
  v.cancel();
  await turns();
  assert.equal(wu.done, false, "w3 is still on its way");
  w3.cancel();
  await committed(wu, "u, once none is on its way");
  v.cancel(); // twice: no effect
  assert.equal(commits(), c0 + 3);
  // A step of under 10 ms waits under 1 ms: not at all.
  const [f, g] = [b.announceStep(), b.announceStep()];
  t.mock.timers.tick(9);
  await committed(watch(f.append(step("f"))), "a 9 ms step: at once");
  assert.equal(commits(), c0 + 4);
  g.cancel();
  // The wait is bounded: 25 ms for a step of 300 ms, then the timer commits with one still on its way.
  const [p, q] = [b.announceStep(), b.announceStep()];
  t.mock.timers.tick(300);
  const wp = watch(p.append(step("p")));
  t.mock.timers.tick(24);
  await turns();
  assert.equal(wp.done, false, "24 ms in");
  t.mock.timers.tick(1);
  await committed(wp, "p, 25 ms in");
  assert.equal(commits(), c0 + 5);
  await committed(watch(q.append(step("q"))), "q: none on its way, at once");
  assert.equal(commits(), c0 + 6);
  // A tenth of its own time: a step of 50 ms waits 5 ms, and the earliest deadline takes the commit, whichever came first.
  for (const shortFirst of [false, true]) {
    const long = b.announceStep();
    t.mock.timers.tick(300);
    const [short, still] = [b.announceStep(), b.announceStep()];
    t.mock.timers.tick(50);
    const appendShort = () => watch(short.append(step(`short ${shortFirst}`)));
    const appendLong = () => watch(long.append(step(`long ${shortFirst}`)));
    let ws: { done: boolean };
    let wl: { done: boolean };
    if (shortFirst) {
      ws = appendShort();
      wl = appendLong();
    } else {
      wl = appendLong();
      ws = appendShort();
    }
    t.mock.timers.tick(4);
    await turns();
    assert.deepEqual([wl.done, ws.done], [false, false], "4 ms in");
    t.mock.timers.tick(1);
    await committed(ws, "the short step, 5 ms in");
    await committed(wl, "the long one, with it");
    still.cancel();
  }
  assert.equal(commits(), c0 + 8, "one commit for each pair");
  assert.equal(b.count(), 11);
  // Closed while a step waits: it is refused, and the timer writes nothing after.
  const [r, s] = [b.announceStep(), b.announceStep()];
  t.mock.timers.tick(300);
  const pr = r.append(step("r"));
  await turns();
  b.close();
  await assert.rejects(pr, /closed before these steps were written/);
  t.mock.timers.tick(25);
  s.cancel();
  assert.equal(commits(), c0 + 8);
  peek.close();
});
