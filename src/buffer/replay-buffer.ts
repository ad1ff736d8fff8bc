import type Database from "better-sqlite3";
import { existsSync, rmSync, statSync } from "node:fs";
import { DataError, InvalidConfigError, type ExperienceSource, type Trajectory } from "../core/index.ts";
import type {
  AnnouncedStep,
  AppendOptions,
  AppendResult,
  BufferStats,
  ReplayBufferOptions,
  SearchFilter,
  SearchOptions,
  SearchResult,
  StepFields,
  StoredTransition,
  ThreadEmbedder,
  TransitionRecord,
} from "./buffer-types.ts";
import {
  deleteUnreferencedTexts,
  evictOldest,
  type GoneRow,
  goneRow,
  groupStats,
  openDatabase,
  prepareStatements,
  readTrajectories,
  realRows,
  realRowsKey,
  type RealRows,
  SELECT_TRANSITIONS,
  toTransition,
  whereOf,
  type Row,
  type Statements,
} from "./buffer-db.ts";
import type { Embedder } from "./embedder.ts";
import { episodeById, episodePage, rewardsByTaskAndPolicy, type EpisodePage, type EpisodeQuery, type EpisodeSummary } from "./episode-pages.ts";
import { encodeHalf } from "./float16.ts";
import { textKey } from "./text-key.ts";
import { HashingEmbedder, IDF_FIT_MIN_TRANSITIONS } from "./hashing-embedder.ts";
import { rowMatches, SearchIndexes, type IndexedRow } from "./search-indexes.ts";
import { transitionText } from "./transition-text.ts";
import type { PreparedVectors } from "./import-vectors.ts";
import { trajectoryContentId } from "./trajectory-schema.ts";
import type { Candidate } from "./vector-index.ts";
import { RealSearchThread } from "./real-search.ts";

/** On buffers served by HNSW, a filter keeping at most this many rows is answered by an exact scan. */
const SCAN_FILTER_MAX = 20_000;
/**
 * Candidates looked at most when collapsing duplicates (the result may then have fewer than k); a
 * filtered HNSW search that has not found k by then scans the filter's rows exactly instead.
 */
const MAX_CANDIDATES = 4096;
const spellingKey = (action: string) => action.trim().toLowerCase();
/** An action's spellings by their trimmed lowercase text, each with its rows (so that one that goes with its last row is let go). */
type Spellings = Map<string, Map<string, number>>;
function addSpelling(spellings: Spellings, action: string, rows = 1): void {
  const k = spellingKey(action);
  const counts = spellings.get(k);
  if (counts) counts.set(action, (counts.get(action) ?? 0) + rows);
  else spellings.set(k, new Map([[action, rows]]));
}
/** A row of `action` went; false where the spellings did not count it (they are then read again). */
function removeSpelling(spellings: Spellings, action: string): boolean {
  const k = spellingKey(action);
  const counts = spellings.get(k);
  const n = counts?.get(action);
  if (counts === undefined || n === undefined) return false;
  if (n > 1) counts.set(action, n - 1);
  else if (counts.size > 1) counts.delete(action);
  else spellings.delete(k);
  return true;
}
/** Whether a row is among those of a spelling slot ("source\tenv"; no source: any). */
function slotHolds(slot: string, r: { env: string; source: string }): boolean {
  const tab = slot.indexOf("\t");
  return slot.slice(tab + 1) === r.env && (tab === 0 || slot.slice(0, tab) === r.source);
}
/** The meta key of the rows evicted or deleted since unused texts were last deleted (`cleanUpTexts`). */
const ROWS_GONE = "rows_gone_since_text_cleanup";
/** Rows kept by id for searches (see `cachedRows`): full rows (texts and all, ~2 KB each) and their keys. */
const ROW_CACHE_MAX = { rows: 20_000, keys: 100_000 };
/** The longest a commit of online steps waits for steps on their way (`announceStep`). */
const COMMIT_WAIT_MAX_MS = 25;

/** A step on its way into the database. */
interface PendingStep extends StepFields {
  trajectoryUid: string;
  taskId: string;
  instruction: string;
  createdAt: string;
  vector?: Float32Array;
  /** Made by the import thread: the vector as stored (f16), and the keys of the instruction, state and next state. */
  half?: Buffer;
  keys?: { all: BigInt64Array; at: number };
}

interface NewTrajectory {
  uid: string;
  t: Omit<Trajectory, "steps">;
  nSteps: number;
  seed: boolean;
}

/**
 * The replay buffer: trajectories and their transitions in one SQLite file (WAL), with the
 * embedding of every (state, action) pair, and top-k retrieval by cosine similarity. One process
 * writes a buffer at a time; readers in other processes see its commits.
 */
export class ReplayBuffer {
  readonly path: string;
  readonly readonly: boolean;
  private readonly db: Database.Database;
  private readonly stmts: Statements;
  private readonly indexes: SearchIndexes;
  private embedderValue: Embedder | null;
  private embedderFrozen: boolean;
  /** Only the default embedder is fitted; an embedder the caller chose is used as given. */
  private readonly fitDefaultEmbedder: boolean;
  private missingEmbedder: string | null;
  private readonly capacity: number | null;
  private readonly annThreshold: number;
  /** Transitions in the file, kept in step with writes (so searches need no count query). */
  private size: number;
  /** SQLite's data_version: it changes when another connection commits. */
  private dataVersion: number;
  private textCache = new Map<string, number>();
  /** Rows per filter (HNSW-served searches ask), kept in step with the rows that come and go. */
  private readonly filterCounts = new Map<string, { filter: SearchFilter; n: number }>();
  /** Bumped by every change of the content, ours or another connection's (see `version`). */
  private changes = 0;
  /** Appends run one at a time: their checks and their transaction see each other's results. */
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly statements = new Map<string, Database.Statement>();

  /** A prepared statement, prepared once (searches run several queries per call). */
  private sql(text: string): Database.Statement {
    let st = this.statements.get(text);
    if (!st) this.statements.set(text, (st = this.db.prepare(text)));
    return st;
  }

  private constructor(path: string, db: Database.Database, opts: ReplayBufferOptions) {
    this.path = path;
    this.db = db;
    this.readonly = opts.readonly ?? false;
    this.capacity = opts.capacity ?? null;
    this.annThreshold = opts.annThreshold ?? 250_000;
    this.searchThreadWanted = opts.searchThread ?? false;
    this.stmts = prepareStatements(db);
    this.embedderValue = opts.embedder ?? new HashingEmbedder();
    this.embedderFrozen = false;
    this.fitDefaultEmbedder = !opts.embedder;
    this.missingEmbedder = null;
    this.adoptStoredEmbedder(); // the file's own, where it holds vectors
    this.indexes = new SearchIndexes(db, path, () => this.embedder.dims, this.readonly);
    this.size = this.count();
    this.dataVersion = Number(db.pragma("data_version", { simple: true }));
  }

  /**
   * Starts the search thread now, where it would start at the first search of real rows, and has it
   * read the real rows meanwhile: a training run calls it before the rest of its setup (its first
   * searches waited 0.26 s for the thread). Only where the buffer was opened with `searchThread`,
   * holds vectors, and is below `annThreshold` (above it, searches use HNSW here).
   */
  startSearchThread(): void {
    this.checkOpen();
    if (this.searchThread || !this.searchThreadWanted || this.path === ":memory:" || !this.embedderFrozen || !this.embedderValue) return;
    if (this.size >= this.annThreshold) return;
    this.searchThread = new RealSearchThread({ file: this.path, dims: this.embedderValue.dims });
    this.searchThread.warm();
  }

  /** Opens (or creates) a buffer file. A corrupt or locked file is an error; nothing is overwritten. */
  static open(path: string, opts: ReplayBufferOptions = {}): ReplayBuffer {
    if (opts.capacity !== undefined && (!Number.isInteger(opts.capacity) || opts.capacity < 1)) {
      throw new InvalidConfigError(`capacity must be a positive integer, got ${opts.capacity}`);
    }
    const db = openDatabase(path, opts);
    try {
      return new ReplayBuffer(path, db, opts);
    } catch (e) {
      db.close();
      throw e;
    }
  }

  /** The embedder of this buffer. */
  get embedder(): Embedder {
    if (!this.embedderValue) {
      throw new InvalidConfigError(
        `buffer ${this.path} was embedded with "${this.missingEmbedder}": pass that embedder to ReplayBuffer.open to append or search`,
      );
    }
    return this.embedderValue;
  }

  private meta(key: string): Buffer | string | number | null {
    const row = this.stmts.getMeta.get(key) as Row | undefined;
    return (row?.value as Buffer | string | number | undefined) ?? null;
  }

  private generation(): number {
    return Number(this.meta("generation") ?? 0);
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

  private checkOpen(): void {
    if (this.closed) throw new InvalidConfigError("the buffer is closed");
  }

  private checkWritable(): void {
    this.checkOpen();
    if (this.readonly) throw new InvalidConfigError(`buffer ${this.path} is open read-only`);
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Takes the embedder stored with the file's first vectors: at open, and later where another
   * connection stored them after this one opened the file: vectors of two embedders must not mix, nor
   * a query's with the rows'. An embedder the caller gave must be that one.
   */
  private adoptStoredEmbedder(): void {
    if (this.embedderFrozen) return;
    const stored = this.storedEmbedder();
    if (!stored) return;
    const given = this.embedderValue;
    if (!this.fitDefaultEmbedder && given && given.id !== stored.id) {
      // Every later use fails the same way (through `embedder`), not this call alone.
      this.embedderValue = null;
      this.missingEmbedder = stored.id;
      this.embedderFrozen = true;
      throw new InvalidConfigError(
        `buffer ${this.path} holds vectors from embedder "${stored.id}" (${stored.dims} dims); the given embedder is "${given.id}"${given.dims > 0 ? ` (${given.dims} dims)` : ""}. ` +
          "They cannot be mixed: use the buffer's embedder, or a new buffer.",
      );
    }
    if (this.fitDefaultEmbedder) this.embedderValue = stored.embedder;
    this.missingEmbedder = this.embedderValue ? null : stored.id;
    this.embedderFrozen = true;
  }

  /** Embeds the steps' (state, action) texts; identical pairs are embedded once. `fixed`: called once the embedder is (after a fit), before the steps are embedded. */
  private async embedSteps(steps: PendingStep[], mayFit: boolean, fixed?: () => void): Promise<void> {
    this.followOtherWriters(); // another connection's first vectors fix the embedder
    const e = this.embedder;
    if (mayFit && this.fitsOn(steps.length) && e instanceof HashingEmbedder) this.embedderValue = e.fit(steps.map((s) => transitionText(s.state, s.action)));
    fixed?.();
    const dimsNow = () => (this.embedderFrozen ? Number(this.meta("embedder_dims")) : this.embedder.dims);
    const hashing = this.embedder;
    if (hashing instanceof HashingEmbedder && hashing.dims === dimsNow()) {
      // The default embedder, in process: each pair embedded as is (its cache holds repeated states),
      // with the vectors `embed` gives, without building the texts.
      for (const s of steps) s.vector = hashing.embedPair(s.state, s.action);
      return;
    }
    const texts = steps.map((s) => transitionText(s.state, s.action));
    const unique = new Map<string, number>();
    const order: string[] = [];
    for (const t of texts) if (!unique.has(t)) unique.set(t, unique.size), order.push(t);
    const vectors = order.length > 0 ? await this.embedder.embed(order) : [];
    // After embedding: a server's embedder learns its dimensions from its first answer.
    const dims = dimsNow();
    steps.forEach((s, i) => {
      const v = vectors[unique.get(texts[i])!];
      if (!v || v.length !== dims)
        throw new DataError(`embedder "${this.embedder.id}" returned a vector of ${v?.length} dims; the buffer holds ${dims}`, { file: this.path });
      s.vector = v;
    });
  }

  /** Whether a first append of `transitions` new steps fits the default embedder's IDF on them. */
  private fitsOn(transitions: number): boolean {
    const e = this.embedderValue;
    return this.fitDefaultEmbedder && !this.embedderFrozen && e instanceof HashingEmbedder && e.idf === null && transitions >= IDF_FIT_MIN_TRANSITIONS;
  }

  /** Records which embedder made the vectors, in the transaction that stores the first ones. */
  private writeEmbedderMeta(): void {
    if (this.embedderFrozen) return;
    const e = this.embedder;
    // Another connection stored the first vectors after this append was embedded: not written (rolled back).
    const stored = this.meta("embedder_id");
    if (stored !== null && String(stored) !== e.id)
      throw new Error(`another connection stored vectors from embedder "${String(stored)}" meanwhile; these were embedded with "${e.id}"`);
    const put = this.stmts.putMeta;
    put.run("embedder_id", e.id);
    put.run("embedder_dims", String(e.dims));
    put.run("embedder_kind", e instanceof HashingEmbedder ? "hashing" : "external");
    if (e instanceof HashingEmbedder && e.idf) put.run("embedder_idf", Buffer.from(e.idf.buffer, e.idf.byteOffset, e.idf.byteLength));
  }

  /** `keys[at]`, when given and not -1, is the text's `textKey` (read only when needed: a read makes a bigint). */
  private textId(text: string, keys?: BigInt64Array, at = 0): number {
    const cached = this.textCache.get(text);
    if (cached !== undefined) return cached;
    let key = keys ? keys[at] : -1n;
    if (key < 0n) key = textKey(text);
    let id: number;
    for (;;) {
      const inserted = this.stmts.insertText.run(key, text);
      if (inserted.changes === 1) {
        id = Number(inserted.lastInsertRowid);
        break;
      }
      const found = this.stmts.selectText.get(key) as Row;
      if (found.text === text) {
        id = Number(found.id);
        break;
      }
      key = (key + 1n) & 0x7fffffffffffffffn; // another text holds this key: probe the next one
    }
    if (this.textCache.size >= 20_000) this.textCache = new Map();
    this.textCache.set(text, id);
    return id;
  }

  /**
   * Writes steps and their new trajectories in one transaction. A new trajectory whose uid is
   * already stored is a duplicate: for whole trajectories its steps are skipped; online steps join it.
   */
  private insert(steps: PendingStep[], trajectories: NewTrajectory[], online: boolean): { added: IndexedRow[]; evicted: GoneRow[]; duplicates: number } {
    const s = this.stmts;
    const run = this.db.transaction(() => {
      // Another connection may have committed since this append last looked (it may have waited on
      // its embedder meanwhile): a text id kept here may have been deleted and given to another text.
      if (Number(this.sql("PRAGMA data_version").pluck().get()) !== this.dataVersion) this.textCache = new Map();
      this.writeEmbedderMeta();
      const rowOf = new Map<string, number>();
      const skip = new Set<string>();
      for (const nt of trajectories) {
        const t = nt.t;
        // An online step mostly joins its episode's trajectory, stored with its first step: a lookup is
        // cheaper than an insert that conflicts. A whole trajectory already stored is a duplicate: skipped.
        const row = ((online ? s.findTrajectory.get(nt.uid) : undefined) ??
          s.insertTrajectory.get(
            nt.uid,
            t.env,
            t.task.id,
            JSON.stringify(t.task),
            t.source,
            t.policy ?? null,
            online ? 0 : t.total_reward,
            online ? 0 : t.success ? 1 : 0,
            online ? 0 : nt.nSteps,
            nt.seed ? 1 : 0,
            t.created_at,
          )) as Row | undefined;
        if (row) rowOf.set(nt.uid, Number(row.id));
        else skip.add(nt.uid);
      }
      const added: IndexedRow[] = [];
      // Within a trajectory a step's state is usually the previous step's next state, and the
      // instruction repeats: reuse their text ids instead of looking the long strings up again.
      let prev: PendingStep | null = null;
      let prevNextId = 0;
      let prevInstructionId = 0;
      for (const p of steps) {
        if (skip.has(p.trajectoryUid)) continue;
        const traj = rowOf.get(p.trajectoryUid)!; // each step's trajectory is among `trajectories`
        const same = prev !== null && prev.trajectoryUid === p.trajectoryUid;
        const k = p.keys;
        const instructionId = same && prev!.instruction === p.instruction ? prevInstructionId : this.textId(p.instruction, k?.all, k?.at);
        const stateId = same && prev!.nextState === p.state ? prevNextId : this.textId(p.state, k?.all, k && k.at + 1);
        const nextId = this.textId(p.nextState, k?.all, k && k.at + 2);
        prev = p;
        prevNextId = nextId;
        prevInstructionId = instructionId;
        const half = p.half ?? encodeHalf(p.vector!);
        const info = s.insertTransition.run(
          traj,
          p.step,
          p.env,
          p.taskId,
          instructionId,
          stateId,
          p.action,
          p.reward,
          nextId,
          p.terminated ? 1 : 0,
          p.truncated ? 1 : 0,
          p.reasoning ?? null,
          p.info && Object.keys(p.info).length > 0 ? JSON.stringify(p.info) : null,
          p.source,
          p.policy ?? null,
          p.createdAt,
          half,
        );
        if (online) s.bumpTrajectory.run(p.reward, p.reward, traj);
        // The index gets the vector as stored (f16), so that scores are the same as after a reopen
        // (a resumed run rebuilds the index from the stored vectors and must score identically);
        // it is decoded only if an index is in memory to take it (an import builds none).
        added.push({ id: Number(info.lastInsertRowid), half, env: p.env, source: p.source, task: p.taskId, action: p.action });
      }
      s.bumpGeneration.run();
      const evicted = this.evict();
      if (evicted.length > 0) this.rowsWent(evicted.length);
      return { added, evicted, duplicates: skip.size };
    });
    let r: ReturnType<typeof run.immediate>;
    try {
      r = run.immediate();
      this.embedderFrozen = true;
    } catch (e) {
      this.textCache = new Map(); // ids of texts written by the rolled-back transaction are void
      const msg = (e as Error).message;
      const hint = /locked|busy/i.test(msg) ? " (another process holds the file)" : "";
      throw new DataError(`append failed, nothing was written: ${msg}${hint}`, { file: this.path }, e);
    }
    return r;
  }

  /**
   * Evicts the oldest non-seed trajectories while the buffer holds more than `capacity` transitions.
   * Texts only evicted rows used go now and then, after the commit (`cleanUpTexts`), so capacity also
   * bounds the file.
   */
  private evict(): GoneRow[] {
    if (this.capacity === null) return [];
    return evictOldest(this.db, this.capacity);
  }

  /**
   * Texts only evicted or deleted rows used are deleted now and then: once the rows gone since the
   * last time reach a tenth of the buffer (at least 1,000). The deletion reads every row, so doing it
   * at every eviction would cost in proportion to the buffer, not to what went.
   */
  private cleanUpTexts(): void {
    if (Number(this.meta(ROWS_GONE) ?? 0) >= Math.max(1000, (this.capacity ?? this.size) / 10)) this.deleteUnusedTexts();
  }

  /**
   * In the transaction that evicts or deletes `n` rows (after its generation bump): other connections
   * learn that rows went (`evict_generation`), and the rows gone since the last text clean-up are
   * counted in the file, so the count outlives the process, as the texts do.
   */
  private rowsWent(n: number): void {
    this.stmts.putMeta.run("evict_generation", this.generation());
    this.stmts.putMeta.run(ROWS_GONE, Number(this.meta(ROWS_GONE) ?? 0) + n);
  }

  /**
   * Deletes the texts no transition uses any more, after the write that left them unused, in a
   * transaction of its own with foreign keys off (the pragma is set outside transactions): it deletes
   * only texts no row refers to, and with them on SQLite would look for rows that refer to each text
   * deleted through every transition (the text columns are not indexed, but for states in a buffer
   * replayed exactly: seconds for a few thousand texts in a buffer of 20k rows).
   */
  private deleteUnusedTexts(): void {
    try {
      this.db.pragma("foreign_keys = OFF");
      this.db
        .transaction(() => {
          deleteUnreferencedTexts(this.db);
          this.stmts.putMeta.run(ROWS_GONE, 0);
        })
        .immediate();
    } catch {
      // The rows' change is written; these texts go at a later cleanup.
    } finally {
      this.db.pragma("foreign_keys = ON");
      this.textCache = new Map();
    }
  }

  /**
   * After a commit: counts, caches and indexes follow the rows that came (`added`) and went (`gone`,
   * evicted or deleted); rows evicted in the same transaction are not indexed. Only what the rows that
   * went were part of changes: a bounded buffer that records synthetic steps evicts every few steps,
   * and its caches of real rows (the real rows' key, their keys, their spellings, the index's views of
   * them) stay as they are (read again at every eviction, they cost 10 ms an eviction at 20k rows,
   * 65 ms at 100k). Counts and spellings of any rows follow both ways. Texts only the rows that went
   * used are deleted now and then (`cleanUpTexts`).
   */
  private afterCommit(added: IndexedRow[], gone: GoneRow[]): void {
    // The real rows' key follows the commit (real rows counted in and out: synthetic ones evicted
    // leave it); read again where the largest real id went.
    const k = this.realKey;
    if (k && k.at === this.changes) {
      const rows = { ...k.rows };
      for (const r of added)
        if (r.source === "real") {
          rows.n++;
          rows.max = Math.max(rows.max, r.id);
          rows.sum += r.id;
        }
      let known = true;
      for (const r of gone)
        if (r.source === "real") {
          known &&= r.id !== rows.max;
          rows.n--;
          rows.sum -= r.id;
        }
      if (known) this.realKey = { at: this.changes + 1, rows, key: realRowsKey(rows) };
    }
    this.changes++;
    this.size += added.length - gone.length;
    // Counted in, then out: a row added and evicted in one commit is in both.
    for (const c of this.filterCounts.values()) {
      for (const r of added) if (rowMatches(r, c.filter)) c.n++;
      for (const r of gone) if (rowMatches(r, c.filter)) c.n--;
    }
    for (const [slot, spellings] of this.spellings) {
      for (const r of added) if (slotHolds(slot, r)) addSpelling(spellings, r.action);
      for (const r of gone) if (slotHolds(slot, r) && !removeSpelling(spellings, r.action)) this.spellings.delete(slot);
    }
    // Rows kept by id: a row never changes, so only those that went are wrong now.
    for (const r of gone) {
      this.rowCache.delete(r.id);
      this.keyCache.delete(r.id);
    }
    const goneIds = new Set(gone.map((r) => r.id));
    const addedIds = new Set(added.map((r) => r.id));
    this.indexes.afterWrite(
      goneIds.size > 0 ? added.filter((r) => !goneIds.has(r.id)) : added,
      addedIds.size > 0 ? gone.filter((r) => !addedIds.has(r.id)) : gone,
    );
    if (gone.length > 0) this.cleanUpTexts();
  }

  /**
   * Appends whole trajectories, embedded, in one transaction: all of them or none. A trajectory
   * already in the buffer (same content id) is skipped.
   */
  appendTrajectories(trajectories: Trajectory[], opts: AppendOptions = {}): Promise<AppendResult> {
    return this.appendPrepared(trajectories, undefined, opts).then(({ usedVectors: _, ...r }) => r);
  }

  /** Whether this buffer embeds with the default embedder (not one the caller chose). @internal */
  get defaultEmbedder(): boolean {
    return this.fitDefaultEmbedder && this.embedderValue instanceof HashingEmbedder;
  }

  /**
   * The default embedder's settings, for a thread that makes vectors for `appendPrepared`; before
   * the first commit of a new buffer, with `fit` (the thread fits the IDF on the first batch, as this
   * buffer would). Null for any other embedder.
   * @internal
   */
  threadEmbedder(): ThreadEmbedder | null {
    this.checkOpen();
    this.followOtherWriters(); // another connection's first vectors fix the embedder
    const s = this.defaultEmbedderSettings();
    return s && !this.embedderFrozen && !s.idf ? { ...s, fit: true } : s;
  }

  private defaultEmbedderSettings(): ThreadEmbedder | null {
    const e = this.embedderValue;
    if (!this.fitDefaultEmbedder || !(e instanceof HashingEmbedder) || (this.embedderFrozen && e.dims !== Number(this.meta("embedder_dims")))) return null;
    return { dims: e.dims, idf: e.idf ?? undefined };
  }

  /**
   * `appendTrajectories`, with content ids and vectors made beforehand (by the import thread); the
   * vectors are used if this buffer's embedder made them (`embedderId`) and no IDF fit is still to
   * come (`fitsOn`), else the steps are embedded here. A new buffer's first append takes the IDF the
   * thread fitted on the same steps (`vectors.idf`). `usedVectors` says whether the vectors were used.
   * `embedded` is told the default embedder's settings once they are fixed, before the steps are
   * embedded and written: after a first append's IDF fit, the ones the buffer keeps if the write succeeds.
   * @internal
   */
  appendPrepared(
    trajectories: Trajectory[],
    vectors: PreparedVectors | undefined,
    opts: AppendOptions = {},
    embedded?: (embedder: ThreadEmbedder | null) => void,
  ): Promise<AppendResult & { usedVectors: boolean }> {
    this.checkWritable();
    return this.exclusive(async () => {
      this.followOtherWriters(); // before `fitsOn` and the vectors' embedder are judged
      const fresh: { uid: string; t: Trajectory; row: number }[] = [];
      const seen = new Set<string>();
      let duplicates = 0;
      trajectories.forEach((t, i) => {
        const uid = vectors ? vectors.uids[i] : trajectoryContentId(t);
        if (seen.has(uid) || this.stmts.findTrajectory.get(uid)) {
          duplicates++;
          return;
        }
        seen.add(uid);
        fresh.push({ uid, t, row: vectors ? vectors.firstRow[i] : -1 });
      });
      // A new buffer's first batch: the thread fitted the IDF on the same steps (the first of each
      // content id, none already here) that `embedSteps` would fit it on, so the same IDF.
      const newSteps = fresh.reduce((n, f) => n + f.t.steps.length, 0);
      if (vectors?.idf && this.fitsOn(newSteps) && fresh.length === vectors.firstRow.filter((r) => r >= 0).length)
        this.embedderValue = new HashingEmbedder({ dims: this.embedderValue!.dims, idf: vectors.idf });
      // Vectors made beforehand count only if no fit is still to come (it would change them).
      const made = vectors && !this.fitsOn(newSteps) && this.embedderValue?.id === vectors.embedderId ? vectors : undefined;
      const halves = made ? Buffer.from(made.half.buffer, made.half.byteOffset, made.half.byteLength) : undefined;
      const bytes = 2 * (this.embedderValue?.dims ?? 0);
      const steps: PendingStep[] = [];
      for (const { uid, t, row } of fresh) {
        t.steps.forEach((s, i) =>
          steps.push({
            trajectoryUid: uid,
            step: i,
            env: t.env,
            taskId: t.task.id,
            instruction: t.task.instruction,
            state: s.observation,
            action: s.action,
            reward: s.reward,
            nextState: s.next_observation,
            terminated: s.terminated,
            truncated: s.truncated,
            reasoning: s.reasoning,
            info: s.info,
            source: t.source,
            policy: t.policy,
            createdAt: t.created_at,
            half: halves?.subarray((row + i) * bytes, (row + i + 1) * bytes),
            keys: made && { all: made.keys, at: 3 * (row + i) },
          }),
        );
      }
      // The settings go out before this batch is embedded: a thread can start on the next meanwhile.
      const tell = () => embedded?.(this.defaultEmbedderSettings());
      if (halves) tell();
      else await this.embedSteps(steps, true, tell);
      const r = this.insert(
        steps,
        fresh.map(({ uid, t }) => ({ uid, t, nSteps: t.steps.length, seed: opts.seed ?? false })),
        false,
      );
      this.afterCommit(r.added, r.evicted);
      return {
        added: fresh.length - r.duplicates,
        duplicates: duplicates + r.duplicates,
        transitions: r.added.length,
        evicted: r.evicted.length,
        usedVectors: made !== undefined,
      };
    });
  }

  appendTrajectory(t: Trajectory, opts: AppendOptions = {}): Promise<AppendResult> {
    return this.appendTrajectories([t], opts);
  }

  /**
   * Appends single steps as they happen (online growth); their trajectory rows are made as needed.
   * Calls made in the same tick (e.g. by concurrent synthetic episodes) are committed together in
   * one transaction, and with them any that waited for steps on their way (`announceStep`); if that
   * fails, each call is retried alone so one bad call fails only itself. Returns the new ids.
   */
  appendTransitions(records: TransitionRecord[]): Promise<number[]> {
    return this.queueOnline(records, 0);
  }

  /**
   * Says that a step is on its way to the buffer (a synthetic step whose model is still thinking).
   * A step that comes with `append` while others are on their way waits for them, a tenth of its
   * own time since it was announced at most (≤ 25 ms; a wait under 1 ms is none), so that one
   * commit carries several: a commit is a recorded step's largest SQL cost, and grows far slower
   * than the steps it carries (PostgreSQL's `commit_delay` with `commit_siblings`). The last one to
   * come, or a step with none on its way (one env stepping alone), is committed at once, as
   * `appendTransitions` is. `cancel` says the step will not come. Call exactly one of them, once:
   * a step left announced makes every later one wait its bound.
   */
  announceStep(): AnnouncedStep {
    this.checkWritable();
    this.onTheWay++;
    const t0 = Date.now(); // Date rather than performance.now: tests move it with mock timers
    let open = true;
    const arrive = () => {
      if (!open) return false;
      open = false;
      this.onTheWay--;
      return true;
    };
    return {
      append: (records) => {
        const wait = arrive() ? Math.min(COMMIT_WAIT_MAX_MS, Math.max(0, Date.now() - t0) / 10) : 0;
        return this.queueOnline(records, wait);
      },
      cancel: () => {
        if (arrive() && this.onTheWay === 0 && this.pendingOnline.length > 0) this.scheduleFlush(0);
      },
    };
  }

  private queueOnline(records: TransitionRecord[], waitMs: number): Promise<number[]> {
    this.checkWritable();
    return new Promise<number[]>((resolve, reject) => {
      this.pendingOnline.push({ records, resolve, reject });
      this.scheduleFlush(waitMs);
    });
  }

  private pendingOnline: { records: TransitionRecord[]; resolve: (ids: number[]) => void; reject: (e: unknown) => void }[] = [];
  /** Announced steps not yet appended. */
  private onTheWay = 0;
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the timer fires (Date.now()). */
  private flushAt = 0;
  private flushSoon = false;

  /**
   * A flush within `waitMs` while steps are on their way, else at the next turn; one scheduled at
   * a time (the earliest). Node's timers round a wait under 1 ms up to 1 ms: such a wait is none.
   */
  private scheduleFlush(waitMs: number): void {
    if (this.flushSoon) return;
    if (this.onTheWay > 0 && waitMs >= 1) {
      const at = Date.now() + waitMs;
      // The timer set stands if it fires first, or if it seems due further off than the bound: the
      // clock went back, and it fires within the bound all the same.
      if (this.flushTimer !== undefined && (this.flushAt <= at || this.flushAt - Date.now() > COMMIT_WAIT_MAX_MS)) return;
      clearTimeout(this.flushTimer);
      this.flushAt = at;
      this.flushTimer = setTimeout(() => {
        this.flushTimer = undefined;
        void this.flushOnline();
      }, waitMs);
      return;
    }
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.flushSoon = true;
    setImmediate(() => {
      this.flushSoon = false;
      void this.flushOnline();
    });
  }

  private async flushOnline(): Promise<void> {
    const calls = this.pendingOnline;
    this.pendingOnline = [];
    if (calls.length === 0) return;
    try {
      const ids = await this.exclusive(() => this.writeOnline(calls.flatMap((c) => c.records)));
      let i = 0;
      for (const c of calls) {
        c.resolve(ids.slice(i, i + c.records.length).filter((id) => id >= 0));
        i += c.records.length;
      }
    } catch (e) {
      if (calls.length === 1) return calls[0].reject(e);
      for (const c of calls) {
        try {
          c.resolve((await this.exclusive(() => this.writeOnline(c.records))).filter((id) => id >= 0));
        } catch (err) {
          c.reject(err);
        }
      }
    }
  }

  /** Writes online steps in one transaction; returns an id per record (-1 where it was evicted at once). */
  private async writeOnline(records: TransitionRecord[]): Promise<number[]> {
    const now = new Date().toISOString();
    const steps: PendingStep[] = records.map((r) => ({
      trajectoryUid: r.trajectoryId,
      step: r.step,
      env: r.env,
      taskId: r.task.id,
      instruction: r.task.instruction,
      state: r.state,
      action: r.action,
      reward: r.reward,
      nextState: r.nextState,
      terminated: r.terminated,
      truncated: r.truncated,
      reasoning: r.reasoning,
      info: r.info,
      source: r.source,
      policy: r.policy,
      createdAt: r.createdAt ?? now,
    }));
    const trajectories: NewTrajectory[] = [];
    const seen = new Set<string>();
    for (const r of records) {
      if (seen.has(r.trajectoryId)) continue;
      seen.add(r.trajectoryId);
      trajectories.push({
        uid: r.trajectoryId,
        t: { env: r.env, task: r.task, total_reward: 0, success: false, source: r.source, policy: r.policy, created_at: r.createdAt ?? now },
        nSteps: 0,
        seed: false,
      });
    }
    await this.embedSteps(steps, false); // online batches depend on timing: they never fit the IDF
    const r = this.insert(steps, trajectories, true);
    this.afterCommit(r.added, r.evicted);
    const gone = new Set(r.evicted.map((g) => g.id));
    return r.added.map((a) => (gone.has(a.id) ? -1 : a.id));
  }

  get(id: number): StoredTransition | undefined {
    const r = this.sql(`${SELECT_TRANSITIONS} WHERE x.id = ?`).get(id) as Row | undefined;
    return r ? toTransition(r) : undefined;
  }

  private rowsByIds(ids: number[]): ReadonlyMap<number, Row> {
    return this.cachedRows(this.rowCache, ROW_CACHE_MAX.rows, ids, `${SELECT_TRANSITIONS} WHERE x.id IN (SELECT value FROM json_each(?))`);
  }

  /**
   * Rows by id, read once: a transition row never changes after its commit and its id is never
   * reused (AUTOINCREMENT), so only a deletion makes a kept row wrong (ours: `afterCommit` lets it go;
   * another connection's: `dropCachedRows`). A search's candidates recur across queries (a synthetic
   * env asks about the same pages again and again). The map returned may be the cache itself (live,
   * holding other ids too): read the asked ids from it at once, before the next call on the same cache.
   */
  private cachedRows(cache: Map<number, Row>, max: number, ids: number[], sql: string): ReadonlyMap<number, Row> {
    let missing: number[] | undefined;
    for (const id of ids) if (!cache.has(id)) (missing ??= []).push(id);
    // All kept (most searches of a run): the cache answers for them, with no map made per search.
    if (!missing) return cache;
    const out = new Map<number, Row>();
    for (const id of ids) {
      const r = cache.get(id);
      if (r) out.set(id, r);
    }
    if (cache.size + missing.length > max) cache.clear();
    for (const r of this.sql(sql).all(JSON.stringify(missing)) as Row[]) {
      const id = Number(r.id);
      out.set(id, r);
      cache.set(id, r);
    }
    return out;
  }
  private readonly rowCache = new Map<number, Row>();
  private readonly keyCache = new Map<number, Row>();
  private dropCachedRows(): void {
    this.rowCache.clear();
    this.keyCache.clear();
    this.realKeysLoaded = false;
    this.spellings.clear();
  }

  /** Whether searches are exact now: below `annThreshold` (above it, HNSW answers those not asked `exact`). */
  get searchesExactly(): boolean {
    this.checkOpen();
    this.followOtherWriters();
    return this.size < this.annThreshold;
  }

  /**
   * How many ways `action` is spelled among the rows of `env` (and of `source`): the distinct recorded
   * actions that are the same text trimmed and lowercased (what models count as one action), read
   * once per env and source and followed through appends and evictions (retrieval asks at every step).
   */
  actionSpellings(action: string, env: string, source?: ExperienceSource): number {
    this.checkOpen();
    this.followOtherWriters();
    const slot = `${source ?? ""}\t${env}`;
    let spellings = this.spellings.get(slot);
    if (!spellings) {
      spellings = new Map();
      const { where, args } = whereOf({ env, source });
      for (const r of this.sql(`SELECT action, count(*) AS n FROM transitions ${where} GROUP BY action`).all(...args) as Row[])
        addSpelling(spellings, String(r.action), Number(r.n));
      this.spellings.set(slot, spellings);
    }
    return spellings.get(spellingKey(action))?.size ?? 0;
  }
  /** Per "source\tenv": each action's spellings by their trimmed lowercase text, with their rows. */
  private readonly spellings = new Map<string, Spellings>();

  /**
   * The keys of every real row, read in one query where they fit the key cache: searches of real rows
   * (the search thread's) otherwise ask for them a few at a time (2,340 queries in a 20k-step run).
   */
  private loadRealKeys(): void {
    if (this.realKeysLoaded) return;
    this.realKeysLoaded = true;
    const real = this.realKey?.rows.n ?? Number.POSITIVE_INFINITY;
    if (this.keyCache.size + real > ROW_CACHE_MAX.keys / 2) return; // room left for the rows searches add
    for (const r of this.sql("SELECT id, state_id, action, env, source, task_id FROM transitions WHERE source = 'real'").all() as Row[])
      this.keyCache.set(Number(r.id), r);
  }
  private realKeysLoaded = false;

  /** Number of transitions, without a query (kept in step with writes, including other connections'). */
  get transitions(): number {
    this.checkOpen();
    this.followOtherWriters();
    return this.size;
  }

  /** Number of transitions (optionally filtered). */
  count(filter: SearchFilter = {}): number {
    const { where, args } = whereOf(filter);
    return Number((this.sql(`SELECT count(*) AS n FROM transitions ${where}`).get(...args) as Row).n);
  }

  /** The distinct actions taken (optionally filtered), sorted: e.g. a free-text env's command vocabulary. */
  actions(filter: SearchFilter = {}): string[] {
    this.checkOpen();
    const { where, args } = whereOf(filter);
    return (this.sql(`SELECT DISTINCT action FROM transitions ${where} ORDER BY action`).all(...args) as Row[]).map((r) => String(r.action));
  }

  countTrajectories(): number {
    return Number((this.sql("SELECT count(*) AS n FROM trajectories").get() as Row).n);
  }

  stats(): BufferStats {
    const groups = groupStats(this.db);
    const stored = this.meta("embedder_id");
    const size = (p: string) => (existsSync(p) ? statSync(p).size : 0);
    const transitions = this.count();
    return {
      path: this.path,
      trajectories: this.countTrajectories(),
      transitions,
      seedTrajectories: Number((this.db.prepare("SELECT count(*) AS n FROM trajectories WHERE seed = 1").get() as Row).n),
      embedder: stored === null ? null : String(stored),
      dims: stored === null ? null : Number(this.meta("embedder_dims")),
      capacity: this.capacity,
      index: transitions >= this.annThreshold ? "ann" : "exact",
      fileBytes: size(this.path) + size(`${this.path}-wal`),
      groups,
    };
  }

  /**
   * SQLite's quick check of every page: [] when the file is sound, else the problems found (corrupt
   * pages, broken indexes), at most `max`. Queries that miss a corrupt page still work, so a file
   * can look fine until a search or an export reads the page.
   */
  integrityProblems(max = 100): string[] {
    this.checkOpen();
    try {
      const rows = this.db.prepare(`PRAGMA quick_check(${Math.max(1, Math.floor(max))})`).all() as { quick_check: string }[];
      return rows.map((r) => r.quick_check).filter((m) => m !== "ok");
    } catch (e) {
      return [(e as Error).message]; // damage so bad the check itself cannot read the file
    }
  }

  /** Streams trajectories (with all their steps) in insertion order. */
  trajectories(filter: { env?: string; source?: ExperienceSource } = {}): Generator<Trajectory> {
    this.checkOpen();
    return readTrajectories(this.db, filter);
  }

  /** A page of episodes (no steps), filtered; paged by key, so a page costs the same in a buffer of any size. */
  episodes(query: EpisodeQuery = {}): EpisodePage {
    this.checkOpen();
    return episodePage(this.db, query);
  }

  /** One episode and its steps, by its id in `episodes()` (undefined: none). */
  episode(id: number): { episode: EpisodeSummary; steps: StoredTransition[] } | undefined {
    this.checkOpen();
    return episodeById(this.db, id);
  }

  /** Transitions of the seed (offline data imported as such: never evicted). */
  seedTransitions(): number {
    this.checkOpen();
    return Number((this.sql("SELECT count(*) AS n FROM transitions x JOIN trajectories t ON t.id = x.trajectory_id WHERE t.seed = 1").get() as Row).n);
  }

  /** The distinct task ids of the trajectories (of `env`, of `source`), without reading their steps. */
  taskIds(filter: { env?: string; source?: ExperienceSource } = {}): Set<string> {
    this.checkOpen();
    const { where, args } = whereOf({ env: filter.env, source: filter.source });
    return new Set(
      (
        this.sql(`SELECT DISTINCT task_id FROM trajectories ${where}`)
          .pluck()
          .all(...args) as unknown[]
      ).map(String),
    );
  }

  /**
   * The total reward of each trajectory (of `env`, of `source`) that has at least one step, in the
   * buffer's order, without reading the steps: what counting the successful ones by an env's own rule
   * (a predicate on the total reward) needs.
   */
  totalRewards(filter: { env?: string; source?: ExperienceSource } = {}): number[] {
    this.checkOpen();
    const { where, args } = whereOf({ env: filter.env, source: filter.source });
    const hasSteps = "EXISTS (SELECT 1 FROM transitions x WHERE x.trajectory_id = trajectories.id)";
    return (
      this.sql(`SELECT total_reward FROM trajectories ${where ? `${where} AND` : "WHERE"} ${hasSteps} ORDER BY id`)
        .pluck()
        .all(...args) as unknown[]
    ).map(Number);
  }

  /** The instruction of a task the buffer holds steps of (undefined: none), by the task index. */
  instructionOf(taskId: string): string | undefined {
    this.checkOpen();
    const r = this.sql("SELECT ti.text AS text FROM transitions x JOIN texts ti ON ti.id = x.instruction_id WHERE x.task_id = ? LIMIT 1").get(taskId) as
      | Row
      | undefined;
    return r === undefined ? undefined : String(r.text);
  }

  /** Rewards of the episodes whose policy label starts with `policyPrefix`, grouped by task and label. */
  rewardsByTask(policyPrefix: string): { task: string; policy: string; rewards: number[] }[] {
    this.checkOpen();
    return rewardsByTaskAndPolicy(this.db, policyPrefix);
  }

  /**
   * The transitions that took exactly `action` in exactly `state` (oldest first, at most `limit`), by
   * the stored texts' keys, without embedding anything: what a model that only replays recorded steps
   * needs, at a cost that does not grow with the buffer's vectors.
   */
  findExact(
    query: { state: string; action: string },
    opts: { env?: string; excludeTask?: string; preferTask?: string; limit?: number; source?: ExperienceSource } = {},
  ): StoredTransition[] {
    this.checkOpen();
    this.followOtherWriters();
    let key = textKey(query.state);
    let stateId: number | undefined;
    for (;;) {
      const found = this.stmts.selectText.get(key) as Row | undefined;
      if (!found) break;
      if (found.text === query.state) {
        stateId = Number(found.id);
        break;
      }
      key = (key + 1n) & 0x7fffffffffffffffn; // as textId probes past a colliding key
    }
    if (stateId === undefined) return [];
    this.indexStates();
    const conds = ["x.state_id = ?", "x.action = ?"];
    const args: (string | number)[] = [stateId, query.action];
    if (opts.env !== undefined) conds.push("x.env = ?"), args.push(opts.env);
    if (opts.excludeTask !== undefined) conds.push("x.task_id != ?"), args.push(opts.excludeTask);
    if (opts.source !== undefined) conds.push("x.source = ?"), args.push(opts.source);
    // The task's own steps first (`preferTask`), then the oldest.
    const order = opts.preferTask !== undefined ? "ORDER BY x.task_id = ? DESC, x.id" : "ORDER BY x.id";
    if (opts.preferTask !== undefined) args.push(opts.preferTask);
    const rows = this.sql(`${SELECT_TRANSITIONS} WHERE ${conds.join(" AND ")} ${order} LIMIT ?`).all(...args, opts.limit ?? 10) as Row[];
    return rows.map(toTransition);
  }

  /**
   * The rows by state, for `findExact`, made at its first use on a writable buffer: without it, it
   * reads every row of the action (28 ms a call at 100k rows); with it, every later write to the file
   * costs more (a WebShop import 3–17% slower), which buffers never replayed exactly need not pay.
   * It never waits for another writer: if the file is busy, the lookup goes on without it, and it is
   * tried again 1,000 lookups later.
   */
  private indexStates(): void {
    if (this.statesIndexed || this.readonly || this.db.inTransaction || --this.stateIndexWait > 0) return;
    const timeout = this.db.pragma("busy_timeout", { simple: true }) as number;
    try {
      this.db.pragma("busy_timeout = 0");
      this.db.exec("CREATE INDEX IF NOT EXISTS transitions_state ON transitions(state_id)");
      this.statesIndexed = true;
    } catch {
      this.stateIndexWait = 1000; // another writer, or a query still open on this connection
    } finally {
      this.db.pragma(`busy_timeout = ${timeout}`);
    }
  }
  private statesIndexed = false;
  private stateIndexWait = 0;

  /** Builds the search index now instead of at the first search (HNSW for buffers above the threshold, then saved). */
  buildIndex(): void {
    this.checkOpen();
    if (this.size >= this.annThreshold) this.indexes.buildAnn(this.generation());
  }

  /** Saves the HNSW index beside the database, so the next open need not rebuild it. */
  saveIndex(): void {
    this.indexes.save(this.generation());
  }

  /**
   * Embeds a query through `transitionText`: a (state, action) pair as indexed; a lone text as both
   * state and action, so it finds transitions whose state or whose action resembles it.
   */
  async embedQuery(query: string | { state: string; action: string }): Promise<Float32Array> {
    this.checkOpen();
    this.followOtherWriters();
    const text = typeof query === "string" ? transitionText(query, query) : transitionText(query.state, query.action);
    const [v] = await this.embedder.embed([text]);
    return v;
  }

  /** The top-k transitions by cosine similarity of their (state, action) embedding. */
  async search(query: string | { state: string; action: string }, opts: SearchOptions = {}): Promise<SearchResult[]> {
    this.checkOpen();
    this.followOtherWriters();
    if (this.size === 0) return [];
    return this.searchVector(await this.embedQuery(query), opts);
  }

  /**
   * A number that changes whenever the buffer's content may have changed (a write here or by
   * another connection): a search's result may be reused while it stays the same.
   */
  get version(): number {
    this.checkOpen();
    this.followOtherWriters();
    return this.changes;
  }

  /**
   * Like `version`, for what a search restricted to real transitions (`filter.source: "real"`) can
   * see: it stays the same while only synthetic transitions come and go (a training run's appends
   * and trims), so such a search's result may be reused across them. Exact search filters before it
   * ranks, so it holds there; past `annThreshold` (HNSW, which filters after) it is `version`.
   */
  get realVersion(): string {
    const v = this.version;
    if (this.size >= this.annThreshold) return `all:${v}`;
    if (this.realKey?.at !== v) {
      const rows = realRows(this.db);
      this.realKey = { at: v, rows, key: realRowsKey(rows) };
    }
    return this.realKey.key;
  }
  /** The real rows as of content version `at`, followed through appends (`afterCommit`). */
  private realKey: { at: number; rows: RealRows; key: string } | undefined;
  private followedThisTick = false;

  /** Another connection committed: our counts and indexes are stale. */
  private followOtherWriters(): void {
    // Once per run of synchronous code: a step's retrieval asks several times (version, count,
    // searches), and another process's commit that lands meanwhile is as if it landed just after.
    if (this.followedThisTick) return;
    this.followedThisTick = true;
    queueMicrotask(() => {
      this.followedThisTick = false;
    });
    const v = Number(this.sql("PRAGMA data_version").pluck().get());
    if (v === this.dataVersion) return;
    this.dataVersion = v;
    this.changes++;
    this.size = this.count();
    this.filterCounts.clear();
    this.textCache = new Map();
    this.dropCachedRows();
    this.indexes.invalidate();
    this.adoptStoredEmbedder(); // last: it may refuse the given embedder
  }

  private filterCount(filter: SearchFilter): number {
    const key = JSON.stringify([filter.env, filter.source, filter.task, filter.action]);
    let n = this.filterCounts.get(key)?.n;
    if (n === undefined) this.filterCounts.set(key, { filter: { ...filter }, n: (n = this.count(filter)) });
    return n;
  }

  searchVector(vector: Float32Array, opts: SearchOptions = {}): SearchResult[] {
    const k = this.checkSearch(vector, opts);
    if (this.size === 0) return [];
    const filter = opts.filter ?? {};
    const distinct = opts.distinct ?? true;
    const filtered = filter.env !== undefined || filter.source !== undefined || filter.task !== undefined || filter.action !== undefined;
    let mode: "exact" | "ann" | "scan" = !opts.exact && this.size >= this.annThreshold ? "ann" : "exact";
    if (mode === "ann" && filtered) {
      const n = this.filterCount(filter);
      if (n === 0) return [];
      if (n <= SCAN_FILTER_MAX && n * 2 < this.size) mode = "scan"; // a filter keeping most rows is cheaper to apply after HNSW
    }
    const { where, args } = whereOf(filter);
    // Widen the candidate list until k distinct (and, for HNSW, filter-passing) results are found,
    // looking only at small keys; full rows are read for the k chosen. Many copies of one (state,
    // action) — common in synthetic experience — stop the widening at MAX_CANDIDATES.
    for (let want = k * (distinct || mode === "ann" ? 4 : 1); ; want *= 4) {
      const limit = Math.min(want, this.size);
      const candidates: Candidate[] =
        mode === "ann"
          ? this.indexes.annCandidates(vector, limit)
          : mode === "scan"
            ? this.indexes.scanCandidates(vector, limit, filter, where, args)
            : this.indexes.exactCandidates(vector, limit, filter);
      const r = this.choose(candidates, { k, limit, want, size: this.size, distinct, filter: mode === "ann" && filtered ? filter : undefined });
      if (r) return r;
      if (mode === "ann" && filtered && want >= MAX_CANDIDATES) mode = "scan"; // a selective filter: scan its rows exactly
    }
  }

  /**
   * `searchVector`, with a search of real transitions only (`filter.source: "real"`, exact search)
   * run on the buffer's search thread when it has one (`ReplayBufferOptions.searchThread`): the same
   * results, while this thread does other work. Any other search runs here, as `searchVector`.
   */
  async searchVectorAsync(vector: Float32Array, opts: SearchOptions = {}): Promise<SearchResult[]> {
    const filter = opts.filter ?? {};
    if (!this.searchThreadWanted || filter.source !== "real" || this.path === ":memory:" || (!opts.exact && this.size >= this.annThreshold))
      return this.searchVector(vector, opts);
    const k = this.checkSearch(vector, opts);
    if (this.size === 0) return [];
    const distinct = opts.distinct ?? true;
    const key = this.realVersion;
    const size = this.size;
    this.loadRealKeys();
    this.searchThread ??= new RealSearchThread({ file: this.path, dims: this.embedder.dims });
    for (let want = k * (distinct ? 4 : 1); ; want *= 4) {
      const limit = Math.min(want, size);
      // The answer is for the real rows as of the call (`key`), as a search made here then would be.
      const candidates = await this.searchThread.candidates(vector, limit, filter, key);
      this.checkOpen();
      // The thread could not answer for those rows (a commit since, or no thread): search here.
      if (candidates === null) return this.searchVector(vector, opts);
      const r = this.choose(candidates, { k, limit, want, size, distinct });
      if (r) return r;
    }
  }
  private readonly searchThreadWanted: boolean;
  private searchThread: RealSearchThread | undefined;
  /** Searches answered on the search thread so far (`searchThread`). */
  get searchesOnThread(): number {
    return this.searchThread?.answered ?? 0;
  }

  /** Checks a search's arguments; returns its k. */
  private checkSearch(vector: Float32Array, opts: SearchOptions): number {
    this.checkOpen();
    this.followOtherWriters();
    const k = opts.k ?? 5;
    if (!Number.isInteger(k) || k < 1) throw new InvalidConfigError(`k must be a positive integer, got ${k}`);
    if (vector.length !== this.embedder.dims)
      throw new InvalidConfigError(`query vector has ${vector.length} dims; the buffer's embedder "${this.embedder.id}" has ${this.embedder.dims}`);
    return k;
  }

  /**
   * The k results among one round of candidates (best first), distinct by (state, action) unless
   * told otherwise, and those of `filter` only (HNSW candidates, unfiltered); undefined: widen and
   * ask again.
   */
  private choose(
    candidates: Candidate[],
    o: { k: number; limit: number; want: number; size: number; distinct: boolean; filter?: SearchFilter },
  ): SearchResult[] | undefined {
    const keys = this.keysByIds(candidates.map((c) => c.id));
    const chosen: Candidate[] = [];
    const seen = new Set<string>();
    for (const c of candidates) {
      const r = keys.get(c.id);
      if (!r) continue; // evicted by another writer meanwhile
      if (o.filter && !matchesFilter(r, o.filter)) continue;
      if (o.distinct) {
        const key = `${String(r.state_id)}\u0000${String(r.action)}`;
        if (seen.has(key)) continue;
        seen.add(key);
      }
      chosen.push(c);
      if (chosen.length === o.k) break;
    }
    const exhausted = candidates.length < o.limit || o.limit >= o.size || (!o.filter && o.want >= MAX_CANDIDATES);
    if (chosen.length < o.k && !exhausted) return undefined;
    const rows = this.rowsByIds(chosen.map((c) => c.id));
    return chosen.filter((c) => rows.has(c.id)).map((c) => ({ score: c.score, transition: toTransition(rows.get(c.id)!) }));
  }

  /** The small facts search needs to filter and collapse candidates. */
  private keysByIds(ids: number[]): ReadonlyMap<number, Row> {
    return this.cachedRows(
      this.keyCache,
      ROW_CACHE_MAX.keys,
      ids,
      "SELECT id, state_id, action, env, source, task_id FROM transitions WHERE id IN (SELECT value FROM json_each(?))",
    );
  }

  close(): void {
    if (this.closed) return;
    const threadReading = this.searchThread?.busy ?? false;
    this.searchThread?.close();
    clearTimeout(this.flushTimer);
    for (const c of this.pendingOnline.splice(0)) c.reject(new InvalidConfigError(`buffer ${this.path} was closed before these steps were written`));
    try {
      this.saveIndex();
      // Back out of WAL mode, so a read-only open later (`dreamgym view` of a finished run) needs no
      // -wal/-shm side files and writes nothing beside the buffer. Another connection still open
      // keeps WAL mode (busy), which is fine: it closes the same way.
      // The search thread, still reading the real rows (a warm-up, a search), holds the file a moment:
      // that is waited for (at most 2 s; SQLite does not wait itself for a change of journal mode).
      if (!this.readonly) {
        for (let waited = 0; ; waited += 10) {
          let mode: unknown;
          try {
            mode = this.db.pragma("journal_mode = DELETE", { simple: true });
          } catch {
            break;
          }
          if (mode !== "wal" || !threadReading || waited >= 2000) break;
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
        }
      }
    } finally {
      this.db.close();
      this.closed = true;
    }
  }

  /**
   * Deletes whole trajectories by their `policy` label (e.g. the steps a killed training run wrote
   * after its last checkpoint, which the resumed run writes again); returns how many went. Seed
   * trajectories are kept.
   */
  deleteTrajectories(filter: { policies: readonly string[] }): Promise<number> {
    this.checkWritable();
    return this.exclusive(async () => {
      if (filter.policies.length === 0) return 0;
      const run = this.db.transaction(() => {
        const rows = this.sql(
          "SELECT t.id AS traj, x.id, x.env, x.source, x.task_id, x.action FROM trajectories t JOIN transitions x ON x.trajectory_id = t.id WHERE t.seed = 0 AND t.policy IN (SELECT value FROM json_each(?))",
        ).all(JSON.stringify(filter.policies)) as Row[];
        const trajectories = [...new Set(rows.map((r) => Number(r.traj)))];
        const del = this.sql("DELETE FROM trajectories WHERE id = ?");
        for (const id of trajectories) del.run(id);
        if (trajectories.length > 0) {
          this.stmts.bumpGeneration.run();
          this.rowsWent(rows.length);
        }
        return { trajectories: trajectories.length, gone: rows.map(goneRow) };
      });
      const r = run.immediate();
      if (r.trajectories > 0) this.afterCommit([], r.gone);
      return r.trajectories;
    });
  }

  /**
   * Evicts the oldest non-seed trajectories until at most `capacity` transitions remain besides
   * the seed (the seed always stays); returns the transitions evicted. A caller that needs
   * reproducible contents (a training run that resumes) trims at points of its own choosing instead
   * of opening the buffer with a capacity.
   */
  trim(capacity: number): Promise<number> {
    this.checkWritable();
    if (!Number.isInteger(capacity) || capacity < 0) throw new InvalidConfigError(`trim capacity must be an integer ≥ 0, got ${capacity}`);
    return this.exclusive(async () => {
      const run = this.db.transaction(() => {
        const evicted = evictOldest(this.db, this.seedTransitions() + capacity);
        if (evicted.length > 0) {
          this.stmts.bumpGeneration.run();
          this.rowsWent(evicted.length);
        }
        return evicted;
      });
      const evicted = run.immediate();
      if (evicted.length > 0) this.afterCommit([], evicted);
      return evicted.length;
    });
  }

  /** Deletes a buffer file and its side files. */
  static remove(path: string): void {
    for (const p of [path, `${path}-wal`, `${path}-shm`, `${path}.ann`, `${path}.ann.tmp`]) rmSync(p, { force: true });
  }
}

function matchesFilter(r: Row, f: SearchFilter): boolean {
  return (
    (f.env === undefined || r.env === f.env) &&
    (f.source === undefined || r.source === f.source) &&
    (f.task === undefined || r.task_id === f.task) &&
    (f.action === undefined || r.action === f.action)
  );
}
