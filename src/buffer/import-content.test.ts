import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import { abstractTrajectory, type StateAbstraction, type Trajectory } from "../core/index.ts";
import { tempFile } from "../testing/index.ts";
import { importJsonl } from "./importers.ts";
import { ReplayBuffer } from "./replay-buffer.ts";

// What an import writes must not change when the import gets faster: the same rows, the same text
// ids, the same vectors (bytes), the same IDF and the same search results. The digests below were
// taken on the code before the import was sped up (1c54596); a change of the stored content is a
// change of the file format and must be deliberate (update them then, and say why).

const WORDS = ["mug", "apple", "drawer", "cabinet", "shelf", "knife", "book", "lamp", "sofa", "desk", "red", "blue", "small", "large"];

/** Deterministic trajectories exercising what the write path special-cases. */
function corpus(): Trajectory[] {
  const out: Trajectory[] = [];
  const word = (i: number) => WORDS[(i * 7 + 3) % WORDS.length];
  for (let i = 0; i < 90; i++) {
    const n = 1 + (i % 12);
    // States repeat across trajectories (a small set per task), and a step's state is mostly the previous step's next state.
    const page = (s: number) => `Room ${i % 9} step ${s % 4}: you see a ${word(i + s)} and a ${word(i * 3 + s)} on the ${word(s)}.`;
    const steps = Array.from({ length: n }, (_, s) => ({
      observation: s > 0 && (i + s) % 5 === 0 ? `Back in room ${i % 4}, ${word(s)} here.` : page(s),
      action: i === 17 && s === 0 ? "say\n>>> not a mark" : s % 3 === 0 ? `go to ${word(i + s)} ${s % 3}` : `take ${word(i + 2 * s)} from ${word(s)}`,
      reward: s === n - 1 && i % 2 === 0 ? 1 : 0,
      next_observation: page(s + 1),
      terminated: s === n - 1 && i % 2 === 0,
      truncated: s === n - 1 && i % 2 === 1,
      ...(s % 4 === 1 ? { info: { admissible: [`look ${s}`, word(s)] } } : {}),
      ...(s % 5 === 2 ? { reasoning: `I think ${word(s)} helps` } : {}),
    }));
    if (i === 30) steps[0].observation = `${"long page ".repeat(260)}end ${i}`; // beyond the 2,000 characters embedded
    if (i === 31) steps[0].next_observation = "lone \ud800 surrogate"; // stored as U+FFFD
    out.push({
      env: "toy",
      task: { id: `task-${i % 11}`, instruction: `put a ${word(i)} in the ${word(i + 1)}` },
      steps,
      total_reward: steps.reduce((a, s) => a + s.reward, 0),
      success: i % 2 === 0,
      source: i % 6 === 5 ? "synthetic" : "real",
      ...(i % 4 === 0 ? { policy: `policy-${i % 3}` } : {}),
      created_at: new Date(Date.UTC(2026, 0, 1 + (i % 28))).toISOString(),
    });
  }
  out.push(out[3], out[40]); // duplicates: skipped
  return out;
}

/** Every table's rows (blobs as hex) and a few searches' results, hashed. */
async function digest(b: ReplayBuffer): Promise<{ rows: string; search: string }> {
  const queries = ["a red mug on the shelf", { state: "Room 3 step 1: you see a knife", action: "take knife from desk" }, "go to lamp 0"];
  const results = [];
  for (const q of queries) {
    for (const opts of [{ k: 5 }, { k: 8, distinct: false }, { k: 3, filter: { source: "real" as const } }]) {
      results.push((await b.search(q, opts)).map((r) => [r.transition.id, r.score]));
    }
  }
  const path = b.path;
  b.close();
  const db = new Database(path, { readonly: true });
  const h = createHash("sha256");
  for (const table of ["meta", "sqlite_sequence", "texts", "trajectories", "transitions"]) {
    for (const row of db.prepare(`SELECT * FROM ${table} ORDER BY rowid`).all() as Record<string, unknown>[]) {
      h.update(JSON.stringify(row, (_k, v) => (Buffer.isBuffer(v) ? v.toString("hex") : v)));
      h.update("\n");
    }
  }
  db.close();
  return { rows: h.digest("hex"), search: createHash("sha256").update(JSON.stringify(results)).digest("hex") };
}

const abstraction: StateAbstraction = {
  env: "toy",
  abstract: (o, info) => `state: ${o.toUpperCase()}${info ? ` | ${JSON.stringify(info)}` : ""}`,
  actions: () => undefined,
  isTerminal: () => false,
  profile: "toy",
};

test("an import writes the same rows, vectors and search results as before (byte for byte)", async () => {
  const file = tempFile("in.jsonl");
  writeFileSync(
    file,
    corpus()
      .map((t) => JSON.stringify(t))
      .join("\n") + "\n",
  );
  const plain = ReplayBuffer.open(tempFile("plain.db"));
  const r = await importJsonl(plain, file, { batch: 25 });
  assert.deepEqual([r.added, r.duplicates, r.transitions], [90, 2, 567]);
  assert.equal((await plain.search("a mug", { k: 1 })).length, 1); // the in-memory index now exists and takes the next rows as written
  // Online steps join the same file (the write path is shared).
  await plain.appendTransitions(
    Array.from({ length: 7 }, (_, s) => ({
      trajectoryId: `online-${s % 2}`,
      task: { id: "task-1", instruction: "put a mug in the desk" },
      step: s,
      env: "toy",
      state: `Room 1 step ${s % 4}: you see a mug and a lamp on the desk.`,
      action: `take mug ${s}`,
      reward: s === 6 ? 1 : 0,
      nextState: `Room 1 step ${(s + 1) % 4}: you see a mug and a lamp on the desk.`,
      terminated: s === 6,
      truncated: false,
      source: "synthetic" as const,
      createdAt: "2026-02-01T00:00:00.000Z",
    })),
  );
  assert.deepEqual(await digest(plain), {
    rows: "508f7c1829dd63712492338b13bb45b04266ce5836ad81d1d942816c4c46a195",
    search: "9a3d01db8439fddf827cdb267689e239786edc49a0c92957011ec7aa7963cb13",
  });
  const abstracted = ReplayBuffer.open(tempFile("abstract.db"));
  await importJsonl(abstracted, file, { batch: 40, transform: (t) => abstractTrajectory(t, abstraction) });
  assert.deepEqual(await digest(abstracted), {
    rows: "be4aa750375106130397267e00da739174a76cfad7e42106875894f87bd704ec",
    search: "6ace094e62ccf739921bbb36a35471db59e944180a49d98d2b9a47207e3afa5f",
  });
});
