import Database from "better-sqlite3";
import { hash } from "node:crypto";
import { existsSync, renameSync, rmSync, statSync } from "node:fs";
import { DataError, InvalidConfigError, type ExperienceSource, type StepInfo, type Task, type Trajectory } from "../core/index.ts";
import type { Embedder } from "./embedder.ts";
import { HashingEmbedder } from "./hashing-embedder.ts";
import { transitionText } from "./transition-text.ts";
import { trajectoryContentId } from "./trajectory-schema.ts";
import { decodeHalf, encodeHalf } from "./float16.ts";
import { AnnIndex, ExactIndex, type Candidate, type RowTags } from "./vector-index.ts";

/** A stored transition, as `get` and `search` return it. */
export interface StoredTransition {
  id: number;
  /** The trajectory's uid (its content id, or the id given by `appendTransitions`). */
  trajectory: string;
  step: number;
  env: string;
  task: { id: string; instruction: string };
  state: string;
  action: string;
  reward: number;
  nextState: string;
  terminated: boolean;
  truncated: boolean;
  reasoning?: string;
  info?: StepInfo;
  source: ExperienceSource;
  policy?: string;
  createdAt: string;
}

/** One step appended online (e.g. a synthetic step as it happens). */
export interface TransitionRecord {
  /** Groups steps into a trajectory; steps of one id must have distinct `step` numbers. */
  trajectoryId: string;
  step: number;
  env: string;
  task: Task;
  state: string;
  action: string;
  reward: number;
  nextState: string;
  terminated: boolean;
  truncated: boolean;
  reasoning?: string;
  info?: StepInfo;
  source: ExperienceSource;
  policy?: string;
  createdAt?: string;
}

export interface SearchFilter {
  env?: string;
  source?: ExperienceSource;
  /** Task id. */
  task?: string;
}

export interface SearchOptions {
  /** How many results. @default 5 */
  k?: number;
  filter?: SearchFilter;
  /** Use exact search even when the ANN index is active. @default false */
  exact?: boolean;
  /** Collapse results with the same (state, action) to the best one. @default true */
  distinct?: boolean;
}

export interface SearchResult {
  score: number;
  transition: StoredTransition;
}

export interface BufferGroupStats {
  env: string;
  source: ExperienceSource;
  trajectories: number;
  transitions: number;
  successes: number;
  meanReward: number;
  /** Trajectories by total reward: 0, between 0 and 1, 1 or more. */
  rewardZero: number;
  rewardPartial: number;
  rewardFull: number;
}

export interface BufferStats {
  path: string;
  trajectories: number;
  transitions: number;
  seedTrajectories: number;
  embedder: string | null;
  dims: number | null;
  capacity: number | null;
  index: "exact" | "ann";
  fileBytes: number;
  groups: BufferGroupStats[];
}

export interface ReplayBufferOptions {
  /** The embedder for new vectors and queries. Default: the stored one, else a new HashingEmbedder. */
  embedder?: Embedder;
  /** Most transitions to keep; older non-seed trajectories are evicted first. @default unlimited */
  capacity?: number;
  /** Above this many transitions, searches use an HNSW index. @default 250000 */
  annThreshold?: number;
  /** Open read-only (stats, export, search; no appends). @default false */
  readonly?: boolean;
  /** fsync every commit (survives power loss, not only process death). @default false */
  durable?: boolean;
  /** Wait this long for a lock held by another process. @default 5000 */
  busyTimeoutMs?: number;
}

export interface AppendOptions {
  /** Marks the trajectories as the offline seed, which eviction never removes. @default false */
  seed?: boolean;
}

export interface AppendResult {
  added: number;
  duplicates: number;
  transitions: number;
  evicted: number;
}

const SCHEMA_VERSION = "1";
/** A first append to an empty buffer of at least this many transitions fits the default embedder's IDF. */
const IDF_FIT_MIN_TRANSITIONS = 100;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB);
CREATE TABLE IF NOT EXISTS texts (id INTEGER PRIMARY KEY, hash INTEGER NOT NULL UNIQUE, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trajectories (
  id INTEGER PRIMARY KEY,
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
  id INTEGER PRIMARY KEY,
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
CREATE INDEX IF NOT EXISTS trajectories_seed ON trajectories(seed, id);
`;

interface PendingStep {
  trajectoryRow: number | null;
  trajectoryUid: string;
  step: number;
  env: string;
  taskId: string;
  instruction: string;
  state: string;
  action: string;
  reward: number;
  nextState: string;
  terminated: boolean;
  truncated: boolean;
  reasoning?: string;
  info?: StepInfo;
  source: ExperienceSource;
  policy?: string;
  createdAt: string;
  vector?: Float32Array;
}

type Row = Record<string, unknown>;

/** A 63-bit key from SHA-1 (collisions are detected and probed past, see `textId`). */
const hashText = (text: string): bigint => hash("sha1", text, "buffer").readBigInt64LE(0) & 0x7fffffffffffffffn;

/**
 * The replay buffer: trajectories and their transitions in one SQLite file (WAL), with the
 * embedding of every (state, action) pair, and top-k retrieval by cosine similarity.
 */
export class ReplayBuffer {
  readonly path: string;
  readonly readonly: boolean;
  private readonly db: Database.Database;
  private embedderValue: Embedder | null;
  private embedderFrozen: boolean;
  private readonly capacity: number | null;
  private readonly annThreshold: number;
  private exact: ExactIndex | null = null;
  private ann: AnnIndex | null = null;
  private annDirty = false;
  private readonly codes = { env: new Map<string, number>(), task: new Map<string, number>() };
  private textCache = new Map<string, number>();
  private closed = false;
  /** Transitions in the file, kept in step with our own writes (so searches need no count query). */
  private size: number;

  private constructor(path: string, db: Database.Database, opts: ReplayBufferOptions) {
    this.path = path;
    this.db = db;
    this.readonly = opts.readonly ?? false;
    this.capacity = opts.capacity ?? null;
    this.annThreshold = opts.annThreshold ?? 250_000;
    const stored = this.storedEmbedder();
    if (stored && opts.embedder && opts.embedder.id !== stored.id) {
      throw new InvalidConfigError(
        `buffer ${path} holds vectors from embedder "${stored.id}" (${stored.dims} dims); the given embedder is "${opts.embedder.id}" (${opts.embedder.dims} dims). ` +
          "They cannot be mixed: use the buffer's embedder, or a new buffer.",
      );
    }
    this.embedderValue = opts.embedder ?? stored?.embedder ?? (stored ? null : new HashingEmbedder());
    this.embedderFrozen = stored !== null;
    if (stored && !this.embedderValue) this.missingEmbedder = stored.id;
    this.size = this.count();
  }

  private missingEmbedder: string | null = null;

  /** Opens (or creates) a buffer file. A corrupt or locked file is an error; nothing is overwritten. */
  static open(path: string, opts: ReplayBufferOptions = {}): ReplayBuffer {
    if (opts.capacity !== undefined && (!Number.isInteger(opts.capacity) || opts.capacity < 1)) {
      throw new InvalidConfigError(`capacity must be a positive integer, got ${opts.capacity}`);
    }
    if (opts.readonly && !existsSync(path)) throw new DataError("buffer file does not exist", { file: path });
    let db: Database.Database;
    try {
      db = new Database(path, { readonly: opts.readonly ?? false, fileMustExist: opts.readonly ?? false, timeout: opts.busyTimeoutMs ?? 5000 });
    } catch (e) {
      throw new DataError(`cannot open buffer: ${(e as Error).message}`, { file: path }, e);
    }
    try {
      // A quick read proves the file is a database before anything is written to it.
      db.prepare("SELECT count(*) FROM sqlite_master").get();
      if (!opts.readonly) {
        db.pragma("page_size = 8192");
        db.pragma("cache_size = -32768");
        db.pragma("journal_mode = WAL");
        db.pragma(`synchronous = ${opts.durable ? "FULL" : "NORMAL"}`);
        db.pragma("foreign_keys = ON");
        db.exec(SCHEMA);
        const version = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as Row | undefined;
        if (!version) db.prepare("INSERT INTO meta(key, value) VALUES ('schema_version', ?)").run(SCHEMA_VERSION);
        else if (String(version.value) !== SCHEMA_VERSION) throw new Error(`schema version ${String(version.value)} is not ${SCHEMA_VERSION}`);
      } else {
        db.prepare("SELECT count(*) FROM transitions").get();
      }
      return new ReplayBuffer(path, db, opts);
    } catch (e) {
      db.close();
      if (e instanceof InvalidConfigError) throw e;
      const msg = (e as Error).message;
      const hint = /locked|busy/i.test(msg) ? " (another process holds the file; close it or wait)" : /not a database|malformed|corrupt/i.test(msg) ? " (the file is not a dreamgym buffer or is corrupt; it was not modified)" : "";
      throw new DataError(`cannot open buffer: ${msg}${hint}`, { file: path }, e);
    }
  }

  /** The embedder of this buffer. */
  get embedder(): Embedder {
    if (!this.embedderValue) {
      throw new InvalidConfigError(`buffer ${this.path} was embedded with "${this.missingEmbedder}": pass that embedder to ReplayBuffer.open to append or search`);
    }
    return this.embedderValue;
  }

  private meta(key: string): Buffer | string | null {
    const row = this.db.prepare("SELECT value FROM meta WHERE key = ?").get(key) as Row | undefined;
    return (row?.value as Buffer | string | undefined) ?? null;
  }

  private storedEmbedder(): { id: string; dims: number; embedder: Embedder | null } | null {
    const id = this.meta("embedder_id");
    if (id === null) return null;
    const dims = Number(this.meta("embedder_dims"));
    let embedder: Embedder | null = null;
    if (this.meta("embedder_kind") === "hashing") {
      const blob = this.meta("embedder_idf") as Buffer | null;
      const idf = blob && blob.length > 0 ? new Float32Array(blob.buffer.slice(blob.byteOffset, blob.byteOffset + blob.byteLength)) : undefined;
      embedder = new HashingEmbedder({ dims, idf });
      if (embedder.id !== String(id)) throw new DataError(`stored embedder does not rebuild to its id (${embedder.id} vs ${String(id)})`, { file: this.path });
    }
    return { id: String(id), dims, embedder };
  }

  /** Fits the default embedder's IDF on a large first batch to an empty buffer. */
  private fitEmbedder(texts: string[]): void {
    if (this.embedderFrozen) return;
    const e = this.embedder;
    if (e instanceof HashingEmbedder && e.idf === null && texts.length >= IDF_FIT_MIN_TRANSITIONS) this.embedderValue = e.fit(texts);
  }

  /** Records which embedder made the buffer's vectors (after its first call, when a remote model's dims are known). */
  private freezeEmbedder(): void {
    if (this.embedderFrozen) return;
    const e = this.embedder;
    const put = this.db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)");
    this.db.transaction(() => {
      put.run("embedder_id", e.id);
      put.run("embedder_dims", String(e.dims));
      put.run("embedder_kind", e instanceof HashingEmbedder ? "hashing" : "external");
      if (e instanceof HashingEmbedder && e.idf) put.run("embedder_idf", Buffer.from(e.idf.buffer, e.idf.byteOffset, e.idf.byteLength));
    })();
    this.embedderFrozen = true;
  }

  private checkWritable(): void {
    if (this.closed) throw new InvalidConfigError("the buffer is closed");
    if (this.readonly) throw new InvalidConfigError(`buffer ${this.path} is open read-only`);
  }

  /** Embeds the pending steps' (state, action) texts; identical pairs are embedded once. */
  private async embedSteps(steps: PendingStep[]): Promise<void> {
    const texts = steps.map((s) => transitionText(s.state, s.action));
    this.fitEmbedder(texts);
    const unique = new Map<string, number>();
    const order: string[] = [];
    for (const t of texts) if (!unique.has(t)) unique.set(t, unique.size), order.push(t);
    const vectors = order.length > 0 ? await this.embedder.embed(order) : [];
    if (vectors.length > 0) this.freezeEmbedder();
    const dims = Number(this.meta("embedder_dims") ?? this.embedder.dims);
    steps.forEach((s, i) => {
      const v = vectors[unique.get(texts[i])!];
      if (!v || v.length !== dims) throw new DataError(`embedder "${this.embedder.id}" returned a vector of ${v?.length} dims; the buffer holds ${dims}`, { file: this.path });
      s.vector = v;
    });
  }

  private textId(text: string): number {
    const cached = this.textCache.get(text);
    if (cached !== undefined) return cached;
    let key = hashText(text);
    let id: number;
    for (;;) {
      const inserted = this.stmts.insertText.get(key, text) as Row | undefined;
      if (inserted) {
        id = Number(inserted.id);
        break;
      }
      const found = this.stmts.selectText.get(key) as Row;
      if (found.text === text) {
        id = Number(found.id);
        break;
      }
      key = (key + 1n) & 0x7fffffffffffffffn; // a different text under this key: probe the next one
    }
    if (this.textCache.size >= 20_000) this.textCache = new Map();
    this.textCache.set(text, id);
    return id;
  }

  private stmtsValue: ReturnType<ReplayBuffer["prepare"]> | null = null;
  private get stmts() {
    return (this.stmtsValue ??= this.prepare());
  }
  private prepare() {
    const db = this.db;
    return {
      insertText: db.prepare("INSERT INTO texts(hash, text) VALUES (?, ?) ON CONFLICT(hash) DO NOTHING RETURNING id"),
      selectText: db.prepare("SELECT id, text FROM texts WHERE hash = ?"),
      findTrajectory: db.prepare("SELECT id FROM trajectories WHERE uid = ?"),
      insertTrajectory: db.prepare(
        "INSERT INTO trajectories(uid, env, task_id, task_json, source, policy, total_reward, success, n_steps, seed, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      ),
      bumpTrajectory: db.prepare("UPDATE trajectories SET n_steps = n_steps + 1, total_reward = total_reward + ?, success = CASE WHEN total_reward + ? >= 1 THEN 1 ELSE 0 END WHERE id = ?"),
      insertTransition: db.prepare(
        `INSERT INTO transitions(trajectory_id, step, env, task_id, instruction_id, state_id, action, reward, next_state_id, terminated, truncated, reasoning, info_json, source, policy, created_at, embedding)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      countTransitions: db.prepare("SELECT count(*) AS n FROM transitions"),
    };
  }

  private tags(env: string, source: ExperienceSource, task: string, create = true): RowTags | null {
    const code = (m: Map<string, number>, key: string) => {
      let c = m.get(key);
      if (c === undefined) {
        if (!create) return -1;
        c = m.size + 1;
        m.set(key, c);
      }
      return c;
    };
    const e = code(this.codes.env, env);
    const t = code(this.codes.task, task);
    if (e < 0 || t < 0) return null;
    return { env: e, source: source === "real" ? 1 : 2, task: t };
  }

  /** Inserts pending steps (and their trajectories) in one transaction; returns new transition ids. */
  private insert(steps: PendingStep[], newTrajectories: { uid: string; t: Omit<Trajectory, "steps">; nSteps: number; seed: boolean }[], online: boolean): { ids: number[]; evicted: number[] } {
    const s = this.stmts;
    const run = this.db.transaction(() => {
      const rowOf = new Map<string, number>();
      for (const nt of newTrajectories) {
        const t = nt.t;
        const info = s.insertTrajectory.run(nt.uid, t.env, t.task.id, JSON.stringify(t.task), t.source, t.policy ?? null, online ? 0 : t.total_reward, online ? 0 : t.success ? 1 : 0, online ? 0 : nt.nSteps, nt.seed ? 1 : 0, t.created_at);
        rowOf.set(nt.uid, Number(info.lastInsertRowid));
      }
      const ids: number[] = [];
      // Within a trajectory, a step's state is usually the previous step's next state, and the
      // instruction repeats: reuse their text ids instead of looking the long strings up again.
      let prev: PendingStep | null = null;
      let prevNextId = 0;
      let prevInstructionId = 0;
      for (const p of steps) {
        let traj = p.trajectoryRow ?? rowOf.get(p.trajectoryUid);
        if (traj === undefined) {
          traj = Number((s.findTrajectory.get(p.trajectoryUid) as Row).id);
          rowOf.set(p.trajectoryUid, traj);
        }
        const v = p.vector!;
        const sameTrajectory = prev !== null && prev.trajectoryUid === p.trajectoryUid;
        const instructionId = sameTrajectory && prev!.instruction === p.instruction ? prevInstructionId : this.textId(p.instruction);
        const stateId = sameTrajectory && prev!.nextState === p.state ? prevNextId : this.textId(p.state);
        const nextId = this.textId(p.nextState);
        prev = p;
        prevNextId = nextId;
        prevInstructionId = instructionId;
        const info = s.insertTransition.run(
          traj, p.step, p.env, p.taskId, instructionId, stateId, p.action, p.reward, nextId,
          p.terminated ? 1 : 0, p.truncated ? 1 : 0, p.reasoning ?? null, p.info && Object.keys(p.info).length > 0 ? JSON.stringify(p.info) : null,
          p.source, p.policy ?? null, p.createdAt, encodeHalf(v),
        );
        if (online) s.bumpTrajectory.run(p.reward, p.reward, traj);
        ids.push(Number(info.lastInsertRowid));
      }
      const evicted = this.evict();
      return { ids, evicted };
    });
    try {
      return run.immediate();
    } catch (e) {
      this.textCache = new Map(); // ids of texts inserted by the rolled-back transaction are void
      const msg = (e as Error).message;
      const hint = /locked|busy/i.test(msg) ? " (another process holds the file)" : "";
      throw new DataError(`append failed, nothing was written: ${msg}${hint}`, { file: this.path }, e);
    }
  }

  /** Evicts the oldest non-seed trajectories while the buffer holds more than `capacity` transitions. */
  private evict(): number[] {
    if (this.capacity === null) return [];
    let count = Number((this.stmts.countTransitions.get() as Row).n);
    const evicted: number[] = [];
    if (count <= this.capacity) return evicted;
    const oldest = this.db.prepare("SELECT id, n_steps FROM trajectories WHERE seed = 0 ORDER BY id LIMIT 256");
    const ofTrajectory = this.db.prepare("SELECT id FROM transitions WHERE trajectory_id = ?");
    const del = this.db.prepare("DELETE FROM trajectories WHERE id = ?");
    while (count > this.capacity) {
      const rows = oldest.all() as Row[];
      if (rows.length === 0) break; // only the seed is left: it stays, even above capacity
      for (const r of rows) {
        if (count <= this.capacity) break;
        const ids = (ofTrajectory.all(r.id) as Row[]).map((x) => Number(x.id));
        del.run(r.id);
        evicted.push(...ids);
        count -= ids.length;
      }
    }
    return evicted;
  }

  /** Keeps the in-memory indexes in step with a committed write. */
  private afterCommit(steps: PendingStep[], ids: number[], evicted: number[]): void {
    this.size += ids.length - evicted.length;
    if (this.exact) {
      this.exact.remove(evicted);
      steps.forEach((p, i) => this.exact!.add(ids[i], p.vector!, this.tags(p.env, p.source, p.taskId)!));
    }
    if (this.ann) {
      this.ann.remove(evicted);
      if (ids.length > 0) {
        const m = new Float32Array(ids.length * this.embedder.dims);
        steps.forEach((p, i) => m.set(p.vector!, i * this.embedder.dims));
        this.ann.add(ids, m);
      }
      this.annDirty = true;
    }
  }

  /**
   * Appends whole trajectories, embedded, in one transaction: all of them or none. A trajectory
   * already in the buffer (same content id) is skipped.
   */
  async appendTrajectories(trajectories: Trajectory[], opts: AppendOptions = {}): Promise<AppendResult> {
    this.checkWritable();
    const fresh: { uid: string; t: Trajectory }[] = [];
    const seen = new Set<string>();
    let duplicates = 0;
    for (const t of trajectories) {
      const uid = trajectoryContentId(t);
      if (seen.has(uid) || this.stmts.findTrajectory.get(uid)) {
        duplicates++;
        continue;
      }
      seen.add(uid);
      fresh.push({ uid, t });
    }
    const steps: PendingStep[] = [];
    for (const { uid, t } of fresh) {
      t.steps.forEach((s, i) =>
        steps.push({
          trajectoryRow: null, trajectoryUid: uid, step: i, env: t.env, taskId: t.task.id, instruction: t.task.instruction,
          state: s.observation, action: s.action, reward: s.reward, nextState: s.next_observation, terminated: s.terminated,
          truncated: s.truncated, reasoning: s.reasoning, info: s.info, source: t.source, policy: t.policy, createdAt: t.created_at,
        }),
      );
    }
    await this.embedSteps(steps);
    const { ids, evicted } = this.insert(steps, fresh.map(({ uid, t }) => ({ uid, t, nSteps: t.steps.length, seed: opts.seed ?? false })), false);
    this.afterCommit(steps, ids, evicted);
    return { added: fresh.length, duplicates, transitions: ids.length, evicted: evicted.length };
  }

  async appendTrajectory(t: Trajectory, opts: AppendOptions = {}): Promise<AppendResult> {
    return this.appendTrajectories([t], opts);
  }

  /** Appends single steps as they happen (online growth); their trajectory rows are made as needed. Returns the new ids. */
  async appendTransitions(records: TransitionRecord[]): Promise<number[]> {
    this.checkWritable();
    const now = new Date().toISOString();
    const steps: PendingStep[] = records.map((r) => ({
      trajectoryRow: null, trajectoryUid: r.trajectoryId, step: r.step, env: r.env, taskId: r.task.id, instruction: r.task.instruction,
      state: r.state, action: r.action, reward: r.reward, nextState: r.nextState, terminated: r.terminated, truncated: r.truncated,
      reasoning: r.reasoning, info: r.info, source: r.source, policy: r.policy, createdAt: r.createdAt ?? now,
    }));
    const newTrajectories: { uid: string; t: Omit<Trajectory, "steps">; nSteps: number; seed: boolean }[] = [];
    const seen = new Set<string>();
    for (const r of records) {
      if (seen.has(r.trajectoryId) || this.stmts.findTrajectory.get(r.trajectoryId)) continue;
      seen.add(r.trajectoryId);
      newTrajectories.push({ uid: r.trajectoryId, t: { env: r.env, task: r.task, total_reward: 0, success: false, source: r.source, policy: r.policy, created_at: r.createdAt ?? now }, nSteps: 0, seed: false });
    }
    await this.embedSteps(steps);
    const { ids, evicted } = this.insert(steps, newTrajectories, true);
    this.afterCommit(steps, ids, evicted);
    return ids;
  }

  private toTransition(r: Row): StoredTransition {
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

  private static readonly SELECT = `SELECT x.id, x.step, x.env, x.task_id, ti.text AS instruction, ts.text AS state, x.action, x.reward,
    tn.text AS next_state, x.terminated, x.truncated, x.reasoning, x.info_json, x.source, x.policy, x.created_at, x.state_id, j.uid
    FROM transitions x JOIN trajectories j ON j.id = x.trajectory_id JOIN texts ti ON ti.id = x.instruction_id JOIN texts ts ON ts.id = x.state_id
    JOIN texts tn ON tn.id = x.next_state_id`;

  get(id: number): StoredTransition | undefined {
    const r = this.db.prepare(`${ReplayBuffer.SELECT} WHERE x.id = ?`).get(id) as Row | undefined;
    return r ? this.toTransition(r) : undefined;
  }

  private rowsByIds(ids: number[]): Map<number, Row> {
    const out = new Map<number, Row>();
    if (ids.length === 0) return out;
    const rows = this.db.prepare(`${ReplayBuffer.SELECT} WHERE x.id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(ids)) as Row[];
    for (const r of rows) out.set(Number(r.id), r);
    return out;
  }

  /** Number of transitions (optionally filtered). */
  count(filter: SearchFilter = {}): number {
    const { where, args } = whereOf(filter, "");
    return Number((this.db.prepare(`SELECT count(*) AS n FROM transitions ${where}`).get(...args) as Row).n);
  }

  /** Number of trajectories. */
  countTrajectories(): number {
    return Number((this.db.prepare("SELECT count(*) AS n FROM trajectories").get() as Row).n);
  }

  stats(): BufferStats {
    const groups = (this.db.prepare(
      `SELECT env, source, count(*) AS trajectories, sum(n_steps) AS transitions, sum(success) AS successes, avg(total_reward) AS mean_reward,
        sum(total_reward <= 0) AS r0, sum(total_reward > 0 AND total_reward < 1) AS rp, sum(total_reward >= 1) AS r1
       FROM trajectories GROUP BY env, source ORDER BY env, source`,
    ).all() as Row[]).map((r) => ({
      env: String(r.env), source: r.source as ExperienceSource, trajectories: Number(r.trajectories), transitions: Number(r.transitions),
      successes: Number(r.successes), meanReward: Number(r.mean_reward), rewardZero: Number(r.r0), rewardPartial: Number(r.rp), rewardFull: Number(r.r1),
    }));
    const stored = this.meta("embedder_id");
    const size = (p: string) => (existsSync(p) ? statSync(p).size : 0);
    return {
      path: this.path,
      trajectories: this.countTrajectories(),
      transitions: this.count(),
      seedTrajectories: Number((this.db.prepare("SELECT count(*) AS n FROM trajectories WHERE seed = 1").get() as Row).n),
      embedder: stored === null ? null : String(stored),
      dims: stored === null ? null : Number(this.meta("embedder_dims")),
      capacity: this.capacity,
      index: this.size >= this.annThreshold ? "ann" : "exact",
      fileBytes: size(this.path) + size(`${this.path}-wal`),
      groups,
    };
  }

  /** Streams trajectories (with all their steps) in insertion order. */
  *trajectories(filter: { env?: string; source?: ExperienceSource } = {}): Generator<Trajectory> {
    const { where, args } = whereOf(filter, "");
    const trajs = this.db.prepare(`SELECT id, env, task_json, source, policy, total_reward, success, created_at FROM trajectories ${where} ORDER BY id`);
    const steps = this.db.prepare(`${ReplayBuffer.SELECT} WHERE x.trajectory_id = ? ORDER BY x.step`);
    for (const t of trajs.iterate(...args) as IterableIterator<Row>) {
      const rows = (steps.all(t.id) as Row[]).map((r) => this.toTransition(r));
      yield {
        env: String(t.env), task: JSON.parse(String(t.task_json)) as Task,
        steps: rows.map((s) => ({
          observation: s.state, action: s.action, reward: s.reward, next_observation: s.nextState, terminated: s.terminated, truncated: s.truncated,
          ...(s.info ? { info: s.info } : {}), ...(s.reasoning !== undefined ? { reasoning: s.reasoning } : {}),
        })),
        total_reward: Number(t.total_reward), success: t.success === 1, source: t.source as ExperienceSource,
        ...(t.policy != null ? { policy: String(t.policy) } : {}), created_at: String(t.created_at),
      };
    }
  }

  private loadVectors(visit: (id: number, v: Float32Array, r: Row) => void): void {
    const stmt = this.db.prepare("SELECT id, env, source, task_id, embedding FROM transitions ORDER BY id");
    const v = new Float32Array(this.embedder.dims);
    for (const r of stmt.iterate() as IterableIterator<Row>) visit(Number(r.id), decodeHalf(r.embedding as Buffer, v), r);
  }

  private exactIndex(): ExactIndex {
    if (!this.exact) {
      const idx = new ExactIndex(this.embedder.dims, Math.max(1024, this.count()));
      this.loadVectors((id, v, r) => idx.add(id, v, this.tags(String(r.env), r.source as ExperienceSource, String(r.task_id))!));
      this.exact = idx;
    }
    return this.exact;
  }

  private annFile(): string {
    return `${this.path}.ann`;
  }

  private annIndex(): AnnIndex {
    if (this.ann) return this.ann;
    const dims = this.embedder.dims;
    const file = this.annFile();
    const savedRows = Number(this.meta("ann_rows") ?? -1);
    const savedMax = Number(this.meta("ann_max_id") ?? -1);
    const rowsUpTo = Number((this.db.prepare("SELECT count(*) AS n FROM transitions WHERE id <= ?").get(savedMax) as Row).n);
    let ann: AnnIndex | null = null;
    if (existsSync(file) && savedRows === rowsUpTo && savedRows >= 0) {
      try {
        ann = AnnIndex.load(file, dims);
        if (ann.size !== savedRows) ann = null;
      } catch {
        ann = null; // a stale or torn index file is rebuilt from the database
      }
    }
    const from = ann ? savedMax : -1;
    ann ??= new AnnIndex(dims);
    const stmt = this.db.prepare("SELECT id, embedding FROM transitions WHERE id > ? ORDER BY id");
    let ids: number[] = [];
    let m = new Float32Array(4096 * dims);
    for (const r of stmt.iterate(from) as IterableIterator<Row>) {
      decodeHalf(r.embedding as Buffer, m.subarray(ids.length * dims, (ids.length + 1) * dims));
      ids.push(Number(r.id));
      if (ids.length === 4096) {
        ann.add(ids, m);
        ids = [];
        m = new Float32Array(4096 * dims);
      }
    }
    ann.add(ids, m.subarray(0, ids.length * dims));
    this.ann = ann;
    this.annDirty = from !== Number(this.meta("ann_max_id") ?? -1) || ids.length > 0;
    return ann;
  }

  /**
   * Builds the search index now instead of at the first search (for buffers above the ANN
   * threshold: the HNSW index, saved beside the database).
   */
  buildIndex(): void {
    if (this.size >= this.annThreshold) {
      this.annIndex();
      this.saveIndex();
    }
  }

  /** Writes the ANN index beside the database (atomically), so the next open need not rebuild it. */
  saveIndex(): void {
    if (!this.ann || !this.annDirty || this.readonly) return;
    const tmp = `${this.annFile()}.tmp`;
    this.ann.save(tmp);
    const max = Number((this.db.prepare("SELECT coalesce(max(id), -1) AS m FROM transitions").get() as Row).m);
    renameSync(tmp, this.annFile());
    const put = this.db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)");
    this.db.transaction(() => {
      put.run("ann_rows", String(this.ann!.size));
      put.run("ann_max_id", String(max));
    })();
    this.annDirty = false;
  }

  /**
   * Embeds a query through `transitionText`: a (state, action) pair as indexed; a lone text as both
   * state and action, so it finds transitions whose state or whose action resembles it.
   */
  async embedQuery(query: string | { state: string; action: string }): Promise<Float32Array> {
    const text = typeof query === "string" ? transitionText(query, query) : transitionText(query.state, query.action);
    const [v] = await this.embedder.embed([text]);
    return v;
  }

  /** The top-k transitions by cosine similarity of their (state, action) embedding. */
  async search(query: string | { state: string; action: string }, opts: SearchOptions = {}): Promise<SearchResult[]> {
    if (this.size === 0) return [];
    return this.searchVector(await this.embedQuery(query), opts);
  }

  searchVector(vector: Float32Array, opts: SearchOptions = {}): SearchResult[] {
    if (this.closed) throw new InvalidConfigError("the buffer is closed");
    const k = opts.k ?? 5;
    if (!Number.isInteger(k) || k < 1) throw new InvalidConfigError(`k must be a positive integer, got ${k}`);
    if (vector.length !== this.embedder.dims) throw new InvalidConfigError(`query vector has ${vector.length} dims; the buffer's embedder "${this.embedder.id}" has ${this.embedder.dims}`);
    const filter = opts.filter ?? {};
    const distinct = opts.distinct ?? true;
    const total = this.size;
    const useAnn = !opts.exact && total >= this.annThreshold;
    let tags: Partial<RowTags> = {};
    if (!useAnn) {
      this.exactIndex();
      const env = filter.env === undefined ? undefined : this.codes.env.get(filter.env);
      const task = filter.task === undefined ? undefined : this.codes.task.get(filter.task);
      if ((filter.env !== undefined && env === undefined) || (filter.task !== undefined && task === undefined)) return []; // nothing has that env/task
      tags = { env, task, source: filter.source === undefined ? undefined : filter.source === "real" ? 1 : 2 };
    }
    const filtered = filter.env !== undefined || filter.source !== undefined || filter.task !== undefined;
    // Widen the candidate list until k distinct (and, for ANN, filter-passing) results are found.
    for (let want = k * (distinct || (useAnn && filtered) ? 4 : 1); ; want *= 4) {
      const candidates: Candidate[] = useAnn ? this.annIndex().search(vector, Math.min(want, total)) : this.exactIndex().search(vector, Math.min(want, total), tags);
      const rows = this.rowsByIds(candidates.map((c) => c.id));
      const out: SearchResult[] = [];
      const seen = new Set<string>();
      for (const c of candidates) {
        const r = rows.get(c.id);
        if (!r) continue; // evicted meanwhile
        if (useAnn && filtered && !matches(r, filter)) continue;
        if (distinct) {
          const key = `${String(r.state_id)}\u0000${String(r.action)}`;
          if (seen.has(key)) continue;
          seen.add(key);
        }
        out.push({ score: c.score, transition: this.toTransition(r) });
        if (out.length === k) return out;
      }
      if (candidates.length < Math.min(want, total) || want >= total) return out;
    }
  }

  close(): void {
    if (this.closed) return;
    this.saveIndex();
    this.db.close();
    this.closed = true;
  }

  /** Deletes a buffer file and its side files. */
  static remove(path: string): void {
    for (const p of [path, `${path}-wal`, `${path}-shm`, `${path}.ann`]) rmSync(p, { force: true });
  }
}

function whereOf(filter: SearchFilter, prefix: string): { where: string; args: string[] } {
  const conds: string[] = [];
  const args: string[] = [];
  if (filter.env !== undefined) conds.push(`${prefix}env = ?`), args.push(filter.env);
  if (filter.source !== undefined) conds.push(`${prefix}source = ?`), args.push(filter.source);
  if (filter.task !== undefined) conds.push(`${prefix}task_id = ?`), args.push(filter.task);
  return { where: conds.length ? `WHERE ${conds.join(" AND ")}` : "", args };
}

function matches(r: Row, f: SearchFilter): boolean {
  return (f.env === undefined || r.env === f.env) && (f.source === undefined || r.source === f.source) && (f.task === undefined || r.task_id === f.task);
}
