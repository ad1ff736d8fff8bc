import Database from "better-sqlite3";
import { hash } from "node:crypto";
import { existsSync } from "node:fs";
import { DataError, InvalidConfigError, type ExperienceSource, type StepInfo } from "../core/index.ts";
import type { SearchFilter, StoredTransition } from "./buffer-types.ts";

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
    throw new DataError(`cannot open buffer: ${(e as Error).message}`, { file: path }, e);
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
      else if (String(version.value) !== SCHEMA_VERSION) throw new InvalidConfigError(`${path}: buffer schema version ${String(version.value)}; this dreamgym reads version ${SCHEMA_VERSION}`);
    } else {
      db.prepare("SELECT count(*) FROM transitions").get();
    }
    return db;
  } catch (e) {
    db.close();
    if (e instanceof InvalidConfigError) throw e;
    const msg = (e as Error).message;
    const hint = /locked|busy/i.test(msg)
      ? " (another process holds the file; close it or wait)"
      : /not a database|malformed|corrupt|no such table/i.test(msg)
        ? " (the file is not a dreamgym buffer or is corrupt; it was not modified)"
        : "";
    throw new DataError(`cannot open buffer: ${msg}${hint}`, { file: path }, e);
  }
}

/** A 63-bit key for a text, from SHA-1 (a collision is detected and probed past by the caller). */
export function textKey(text: string): bigint {
  return hash("sha1", text, "buffer").readBigInt64LE(0) & 0x7fffffffffffffffn;
}

export function prepareStatements(db: Database.Database) {
  return {
    insertText: db.prepare("INSERT INTO texts(hash, text) VALUES (?, ?) ON CONFLICT(hash) DO NOTHING RETURNING id"),
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
export type Statements = ReturnType<typeof prepareStatements>;

/** Selects full transitions; `x` is the transitions table. */
export const SELECT_TRANSITIONS = `SELECT x.id, x.step, x.env, x.task_id, ti.text AS instruction, ts.text AS state, x.action, x.reward,
  tn.text AS next_state, x.terminated, x.truncated, x.reasoning, x.info_json, x.source, x.policy, x.created_at, x.state_id, j.uid
  FROM transitions x JOIN trajectories j ON j.id = x.trajectory_id JOIN texts ti ON ti.id = x.instruction_id
  JOIN texts ts ON ts.id = x.state_id JOIN texts tn ON tn.id = x.next_state_id`;

export function toTransition(r: Row): StoredTransition {
  const t: StoredTransition = {
    id: Number(r.id), trajectory: String(r.uid), step: Number(r.step), env: String(r.env),
    task: { id: String(r.task_id), instruction: String(r.instruction) }, state: String(r.state), action: String(r.action),
    reward: Number(r.reward), nextState: String(r.next_state), terminated: r.terminated === 1, truncated: r.truncated === 1,
    source: r.source as ExperienceSource, createdAt: String(r.created_at),
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
