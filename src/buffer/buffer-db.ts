import Database from "better-sqlite3";
import { existsSync } from "node:fs";
import { DataError, InvalidConfigError, type ExperienceSource, type StepInfo, type Task, type Trajectory } from "../core/index.ts";
import type { BufferGroupStats, SearchFilter, StoredTransition } from "./buffer-types.ts";

/** The buffer's SQLite layer: schema, opening, statements, and row ↔ record conversion. */

export type Row = Record<string, unknown>;

export const SCHEMA_VERSION = "2";

// Ids are AUTOINCREMENT so an evicted row's id is never reused (in-memory indexes key on them).
const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB);
CREATE TABLE IF NOT EXISTS texts (id INTEGER PRIMARY KEY, hash INTEGER NOT NULL UNIQUE, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trajectories (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uid TEXT NOT NULL UNIQUE,
  env TEXT NOT NULL,
  task_id TEXT NOT NULL,
  task_json TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('real', 'synthetic')),
  policy TEXT,
  total_reward REAL NOT NULL,
  success INTEGER NOT NULL,
  n_steps INTEGER NOT NULL,
  seed INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS transitions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  trajectory_id INTEGER NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  env TEXT NOT NULL,
  task_id TEXT NOT NULL,
  instruction_id INTEGER NOT NULL REFERENCES texts(id),
  state_id INTEGER NOT NULL REFERENCES texts(id),
  action TEXT NOT NULL,
  reward REAL NOT NULL,
  next_state_id INTEGER NOT NULL REFERENCES texts(id),
  terminated INTEGER NOT NULL,
  truncated INTEGER NOT NULL,
  reasoning TEXT,
  info_json TEXT,
  source TEXT NOT NULL,
  policy TEXT,
  created_at TEXT NOT NULL,
  embedding BLOB NOT NULL,
  UNIQUE (trajectory_id, step)
);
CREATE INDEX IF NOT EXISTS transitions_env ON transitions(env);
CREATE INDEX IF NOT EXISTS transitions_task ON transitions(task_id);
CREATE INDEX IF NOT EXISTS transitions_action ON transitions(action);
CREATE INDEX IF NOT EXISTS trajectories_seed ON trajectories(seed, id);
INSERT OR IGNORE INTO meta(key, value) VALUES ('generation', 0);
`;

export interface OpenDbOptions {
  readonly?: boolean;
  durable?: boolean;
  busyTimeoutMs?: number;
}

/** Opens or creates a buffer database. A corrupt, foreign or locked file is a DataError; nothing is overwritten. */
export function openDatabase(path: string, opts: OpenDbOptions): Database.Database {
  if (opts.readonly && !existsSync(path)) throw new DataError("buffer file does not exist", { file: path });
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: opts.readonly ?? false, fileMustExist: opts.readonly ?? false, timeout: opts.busyTimeoutMs ?? 5000 });
  } catch (e) {
    throw new DataError(`cannot open buffer: ${(e as Error).message}${openHint((e as Error).message)}`, { file: path }, e);
  }
  try {
    // A read proves the file is a database before anything is written to it.
    db.prepare("SELECT count(*) FROM sqlite_master").get();
    if (!opts.readonly) {
      db.pragma("page_size = 8192"); // only takes effect on a new file
      db.pragma("journal_mode = WAL");
      db.pragma(`synchronous = ${opts.durable ? "FULL" : "NORMAL"}`);
      db.pragma("cache_size = -32768");
      db.pragma("foreign_keys = ON");
      db.exec(SCHEMA);
      const version = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as Row | undefined;
      if (!version) db.prepare("INSERT INTO meta(key, value) VALUES ('schema_version', ?)").run(SCHEMA_VERSION);
      else if (String(version.value) !== SCHEMA_VERSION)
        throw new InvalidConfigError(`${path}: buffer schema version ${String(version.value)}; this dreamgym reads version ${SCHEMA_VERSION}`);
    } else {
      db.prepare("SELECT count(*) FROM transitions").get();
    }
    return db;
  } catch (e) {
    db.close();
    if (e instanceof InvalidConfigError) throw e;
    const msg = (e as Error).message;
    throw new DataError(`cannot open buffer: ${msg}${openHint(msg)}`, { file: path }, e);
  }
}

/** What to do about a buffer that does not open. */
function openHint(msg: string): string {
  if (/locked|busy/i.test(msg)) return " (another process holds the file; close it or wait)";
  if (/not a database|malformed|corrupt|no such table/i.test(msg)) return " (the file is not a dreamgym buffer or is corrupt; it was not modified)";
  if (/unable to open/i.test(msg)) return " (check the path, and that its folder exists and is writable)";
  return "";
}

/** The buffer's prepared statements, typed by name (the build's `.d.ts` cannot name the inferred type). */
export type Statements = Record<
  | "insertText"
  | "selectText"
  | "findTrajectory"
  | "insertTrajectory"
  | "bumpTrajectory"
  | "insertTransition"
  | "countTransitions"
  | "bumpGeneration"
  | "putMeta"
  | "getMeta",
  Database.Statement
>;

export function prepareStatements(db: Database.Database): Statements {
  return {
    // run(), not RETURNING: a RETURNING statement is run to its end into a temporary table before
    // its first row is read (about twice the cost of a plain insert); `changes` tells a new row.
    insertText: db.prepare("INSERT INTO texts(hash, text) VALUES (?, ?) ON CONFLICT(hash) DO NOTHING"),
    selectText: db.prepare("SELECT id, text FROM texts WHERE hash = ?"),
    findTrajectory: db.prepare("SELECT id FROM trajectories WHERE uid = ?"),
    insertTrajectory: db.prepare(
      `INSERT INTO trajectories(uid, env, task_id, task_json, source, policy, total_reward, success, n_steps, seed, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(uid) DO NOTHING RETURNING id`,
    ),
    bumpTrajectory: db.prepare(
      "UPDATE trajectories SET n_steps = n_steps + 1, total_reward = total_reward + ?, success = CASE WHEN total_reward + ? >= 1 THEN 1 ELSE 0 END WHERE id = ?",
    ),
    insertTransition: db.prepare(
      `INSERT INTO transitions(trajectory_id, step, env, task_id, instruction_id, state_id, action, reward, next_state_id, terminated, truncated,
         reasoning, info_json, source, policy, created_at, embedding)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    countTransitions: db.prepare("SELECT count(*) AS n FROM transitions"),
    bumpGeneration: db.prepare("UPDATE meta SET value = value + 1 WHERE key = 'generation'"),
    putMeta: db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)"),
    getMeta: db.prepare("SELECT value FROM meta WHERE key = ?"),
  };
}

/** Selects full transitions; `x` is the transitions table. */
export const SELECT_TRANSITIONS = `SELECT x.id, x.step, x.env, x.task_id, ti.text AS instruction, ts.text AS state, x.action, x.reward,
  tn.text AS next_state, x.terminated, x.truncated, x.reasoning, x.info_json, x.source, x.policy, x.created_at, x.state_id, j.uid
  FROM transitions x JOIN trajectories j ON j.id = x.trajectory_id JOIN texts ti ON ti.id = x.instruction_id
  JOIN texts ts ON ts.id = x.state_id JOIN texts tn ON tn.id = x.next_state_id`;

export { realRows, realRowsKey, type RealRows } from "./real-rows.ts";

export function toTransition(r: Row): StoredTransition {
  const t: StoredTransition = {
    id: Number(r.id),
    trajectory: String(r.uid),
    step: Number(r.step),
    env: String(r.env),
    task: { id: String(r.task_id), instruction: String(r.instruction) },
    state: String(r.state),
    action: String(r.action),
    reward: Number(r.reward),
    nextState: String(r.next_state),
    terminated: r.terminated === 1,
    truncated: r.truncated === 1,
    source: r.source as ExperienceSource,
    createdAt: String(r.created_at),
  };
  if (r.reasoning != null) t.reasoning = String(r.reasoning);
  if (r.info_json != null) t.info = JSON.parse(String(r.info_json)) as StepInfo;
  if (r.policy != null) t.policy = String(r.policy);
  return t;
}

/** A WHERE clause for a filter over a table with env, source and task_id columns. */
export function whereOf(filter: SearchFilter): { where: string; args: string[] } {
  const conds: string[] = [];
  const args: string[] = [];
  if (filter.env !== undefined) conds.push("env = ?"), args.push(filter.env);
  if (filter.source !== undefined) conds.push("source = ?"), args.push(filter.source);
  if (filter.task !== undefined) conds.push("task_id = ?"), args.push(filter.task);
  if (filter.action !== undefined) conds.push("action = ?"), args.push(filter.action);
  return { where: conds.length ? `WHERE ${conds.join(" AND ")}` : "", args };
}

/** Deletes texts no transition refers to any more (after evictions). */
export function deleteUnreferencedTexts(db: Database.Database): number {
  return db
    .prepare(
      `DELETE FROM texts WHERE id NOT IN (SELECT state_id FROM transitions UNION SELECT next_state_id FROM transitions
       UNION SELECT instruction_id FROM transitions)`,
    )
    .run().changes;
}

/** Streams trajectories (with all their steps) in insertion order. */
export function* readTrajectories(db: Database.Database, filter: { env?: string; source?: ExperienceSource }): Generator<Trajectory> {
  const { where, args } = whereOf(filter);
  const trajs = db.prepare(`SELECT id, env, task_json, source, policy, total_reward, success, created_at FROM trajectories ${where} ORDER BY id`);
  const steps = db.prepare(`${SELECT_TRANSITIONS} WHERE x.trajectory_id = ? ORDER BY x.step`);
  for (const t of trajs.iterate(...args) as IterableIterator<Row>) {
    const rows = (steps.all(t.id) as Row[]).map(toTransition);
    yield {
      env: String(t.env),
      task: JSON.parse(String(t.task_json)) as Task,
      steps: rows.map((s) => ({
        observation: s.state,
        action: s.action,
        reward: s.reward,
        next_observation: s.nextState,
        terminated: s.terminated,
        truncated: s.truncated,
        ...(s.info ? { info: s.info } : {}),
        ...(s.reasoning !== undefined ? { reasoning: s.reasoning } : {}),
      })),
      total_reward: Number(t.total_reward),
      success: t.success === 1,
      source: t.source as ExperienceSource,
      ...(t.policy != null ? { policy: String(t.policy) } : {}),
      created_at: String(t.created_at),
    };
  }
}

/** Deletes the oldest non-seed trajectories (whole) while more than `capacity` transitions remain; returns the deleted transitions. */
export function evictOldest(db: Database.Database, capacity: number): GoneRow[] {
  let count = Number((db.prepare("SELECT count(*) AS n FROM transitions").get() as Row).n);
  const evicted: GoneRow[] = [];
  if (count <= capacity) return evicted;
  const oldest = db.prepare("SELECT id FROM trajectories WHERE seed = 0 ORDER BY id LIMIT 256");
  const ofTrajectory = db.prepare("SELECT id, env, source, task_id, action FROM transitions WHERE trajectory_id = ?");
  const del = db.prepare("DELETE FROM trajectories WHERE id = ?");
  while (count > capacity) {
    const rows = oldest.all() as Row[];
    if (rows.length === 0) break; // only the seed is left: it stays, even above capacity
    for (const r of rows) {
      if (count <= capacity) break;
      const steps = ofTrajectory.all(r.id) as Row[];
      del.run(r.id);
      for (const x of steps) evicted.push(goneRow(x));
      count -= steps.length;
    }
  }
  return evicted;
}
/** A transition evicted or deleted: its id, and what search filters look at (the buffer's counts and indexes follow it out). */
export interface GoneRow {
  id: number;
  env: string;
  source: ExperienceSource;
  task: string;
  action: string;
}
/** A row of `id, env, source, task_id, action` as a `GoneRow`. */
export const goneRow = (x: Row): GoneRow => ({
  id: Number(x.id),
  env: String(x.env),
  source: x.source as ExperienceSource,
  task: String(x.task_id),
  action: String(x.action),
});

/** Trajectory counts by env and source: successes, mean reward, and reward 0 / partial / full. */
export function groupStats(db: Database.Database): BufferGroupStats[] {
  const rows = db
    .prepare(
      `SELECT env, source, count(*) AS trajectories, sum(n_steps) AS transitions, sum(success) AS successes, avg(total_reward) AS mean_reward,
      sum(total_reward <= 0) AS r0, sum(total_reward > 0 AND total_reward < 1) AS rp, sum(total_reward >= 1) AS r1
     FROM trajectories GROUP BY env, source ORDER BY env, source`,
    )
    .all() as Row[];
  return rows.map((r) => ({
    env: String(r.env),
    source: r.source as ExperienceSource,
    trajectories: Number(r.trajectories),
    transitions: Number(r.transitions),
    successes: Number(r.successes),
    meanReward: Number(r.mean_reward),
    rewardZero: Number(r.r0),
    rewardPartial: Number(r.rp),
    rewardFull: Number(r.r1),
  }));
}
