import type Database from "better-sqlite3";
import { existsSync, renameSync } from "node:fs";
import type { ExperienceSource } from "../core/index.ts";
import type { SearchFilter } from "./buffer-types.ts";
import type { GoneRow, Row } from "./buffer-db.ts";
import { decodeHalf } from "./float16.ts";
import { dotAt } from "./embedder.ts";
import { AnnIndex, ExactIndex, TopK, withRoom, type Candidate, type RowTags } from "./vector-index.ts";

const newCodes = () => ({ env: new Map<string, number>(), task: new Map<string, number>(), action: new Map<string, number>() });
/** Codes beyond three a row (an env, a task and an action) kept before the exact index is made anew (its cost is a read of every row). */
const STALE_CODES = 4096;

/** A row just written, as the indexes need it. */
export interface IndexedRow extends GoneRow {
  /** Its vector as stored (f16 bytes). */
  half: Uint8Array;
}

/** Whether a row just written (or just gone) passes a search filter. */
export const rowMatches = (r: GoneRow, f: SearchFilter) =>
  (f.env === undefined || r.env === f.env) &&
  (f.source === undefined || r.source === f.source) &&
  (f.task === undefined || r.task === f.task) &&
  (f.action === undefined || r.action === f.action);

const metaNumber = (db: Database.Database, key: string, fallback: number) => {
  const r = db.prepare("SELECT value FROM meta WHERE key = ?").get(key) as Row | undefined;
  return r ? Number(r.value) : fallback;
};

/**
 * The buffer's vector indexes, built from the database on first use and kept in step with its
 * writes: an exact in-memory index, and above a size threshold an HNSW index saved beside the
 * database. A saved HNSW index is trusted only if nothing was evicted since it was saved; rows
 * appended since are added on load (ids only grow). Any doubt means a rebuild from the database.
 */
export class SearchIndexes {
  private exact: ExactIndex | null = null;
  private ann: AnnIndex | null = null;
  private annDirty = false;
  /** The exact index's codes for names (made as rows come, for any row since the index was built). */
  private codes = newCodes();

  constructor(
    private readonly db: Database.Database,
    private readonly file: string,
    private readonly dims: () => number,
    private readonly readonly: boolean,
  ) {}

  private code(m: Map<string, number>, key: string): number {
    let c = m.get(key);
    if (c === undefined) m.set(key, (c = m.size + 1));
    return c;
  }

  private tags(env: string, source: ExperienceSource, task: string, action: string): RowTags {
    return {
      env: this.code(this.codes.env, env),
      source: source === "real" ? 1 : 2,
      task: this.code(this.codes.task, task),
      action: this.code(this.codes.action, action),
    };
  }

  /** Filter codes for the exact index; null when the filter names an env, task or action with no rows. */
  private filterTags(filter: SearchFilter): Partial<RowTags> | null {
    const env = filter.env === undefined ? undefined : this.codes.env.get(filter.env);
    const task = filter.task === undefined ? undefined : this.codes.task.get(filter.task);
    const action = filter.action === undefined ? undefined : this.codes.action.get(filter.action);
    if (
      (filter.env !== undefined && env === undefined) ||
      (filter.task !== undefined && task === undefined) ||
      (filter.action !== undefined && action === undefined)
    )
      return null;
    return { env, task, action, source: filter.source === undefined ? undefined : filter.source === "real" ? 1 : 2 };
  }

  /** Names with a code, rows gone or not. @internal */
  get namesCoded(): number {
    return this.codes.env.size + this.codes.task.size + this.codes.action.size;
  }

  /** Drops the exact index and its codes (made again from the rows at the next exact search). */
  private dropExact(): void {
    this.exact = null;
    this.codes = newCodes();
  }

  /** Drops the in-memory indexes (they are rebuilt from the database when next needed). */
  invalidate(): void {
    this.dropExact();
    this.ann = null;
    this.annDirty = false;
    this.dropScans();
  }

  /** Applies a committed write. A failure here never undoes the write: the indexes are dropped instead. */
  afterWrite(added: IndexedRow[], evicted: GoneRow[]): void {
    try {
      const d = this.scans.size > 0 ? this.dims() : 0;
      // A scan loses the rows of its filter that went (the others' rows are not in it) and takes those that came.
      for (const [key, scan] of this.scans) {
        for (const r of evicted)
          if (rowMatches(r, scan.filter)) {
            if (removeScanRow(scan, r.id, d)) this.scanRows--;
            else {
              this.scans.delete(key); // not as it should be: read again at its next search
              this.scanRows -= scan.ids.length;
              break;
            }
          }
        if (!this.scans.has(key)) continue;
        for (const r of added)
          if (rowMatches(r, scan.filter)) {
            addScanRow(scan, r.id, r.half, d);
            this.scanRows++;
          }
      }
      const gone = evicted.map((r) => r.id);
      if (this.exact) {
        this.exact.remove(gone);
        const v = new Float32Array(this.dims());
        for (const r of added) this.exact.add(r.id, decodeHalf(r.half, v), this.tags(r.env, r.source, r.task, r.action));
        // Names whose rows were evicted keep their codes (a long run of free-text actions in a bounded
        // buffer would grow them without end): once they far outnumber what the rows can hold (an
        // env, a task and an action each), the index is made anew, with codes for its rows' names only.
        if (this.namesCoded > 3 * this.exact.size + STALE_CODES) this.dropExact();
      }
      if (this.ann) {
        this.ann.remove(gone);
        const dims = this.dims();
        const m = new Float32Array(added.length * dims);
        added.forEach((r, i) => decodeHalf(r.half, m.subarray(i * dims, (i + 1) * dims)));
        this.ann.add(
          added.map((r) => r.id),
          m,
        );
        this.annDirty = true;
      }
    } catch {
      this.invalidate();
    }
  }

  private exactIndex(): ExactIndex {
    if (!this.exact) {
      const n = Number((this.db.prepare("SELECT count(*) AS n FROM transitions").get() as Row).n);
      const idx = new ExactIndex(this.dims(), Math.max(1024, n));
      const v = new Float32Array(this.dims());
      for (const r of this.db.prepare("SELECT id, env, source, task_id, action, embedding FROM transitions ORDER BY id").iterate() as IterableIterator<Row>) {
        idx.add(
          Number(r.id),
          decodeHalf(r.embedding as Buffer, v),
          this.tags(String(r.env), r.source as ExperienceSource, String(r.task_id), String(r.action)),
        );
      }
      this.exact = idx;
    }
    return this.exact;
  }

  private annFile(): string {
    return `${this.file}.ann`;
  }

  private annIndex(): AnnIndex {
    if (this.ann) return this.ann;
    const dims = this.dims();
    let ann: AnnIndex | null = null;
    let from = -1;
    const savedAt = metaNumber(this.db, "ann_generation", -1);
    const evictedAt = metaNumber(this.db, "evict_generation", -1);
    if (existsSync(this.annFile()) && savedAt >= 0 && evictedAt <= savedAt) {
      try {
        ann = AnnIndex.load(this.annFile(), dims);
        if (ann.size !== metaNumber(this.db, "ann_rows", -1)) ann = null;
        else from = metaNumber(this.db, "ann_max_id", -1);
      } catch {
        ann = null; // a torn or foreign file: rebuild
      }
    }
    ann ??= new AnnIndex(dims);
    const batch = 4096;
    let ids: number[] = [];
    let m = new Float32Array(batch * dims);
    let added = 0;
    for (const r of this.db.prepare("SELECT id, embedding FROM transitions WHERE id > ? ORDER BY id").iterate(from) as IterableIterator<Row>) {
      decodeHalf(r.embedding as Buffer, m.subarray(ids.length * dims, (ids.length + 1) * dims));
      ids.push(Number(r.id));
      if (ids.length === batch) {
        ann.add(ids, m);
        added += ids.length;
        ids = [];
        m = new Float32Array(batch * dims);
      }
    }
    ann.add(ids, m.subarray(0, ids.length * dims));
    added += ids.length;
    this.ann = ann;
    this.annDirty = added > 0 || from < 0;
    return ann;
  }

  /** Builds the HNSW index now and saves it. */
  buildAnn(generation: number): void {
    this.annIndex();
    this.save(generation);
  }

  /** Saves a changed HNSW index beside the database (atomically, then its metadata). */
  save(generation: number): void {
    if (!this.ann || !this.annDirty || this.readonly) return;
    const tmp = `${this.annFile()}.tmp`;
    this.ann.save(tmp);
    renameSync(tmp, this.annFile());
    const max = Number((this.db.prepare("SELECT coalesce(max(id), -1) AS m FROM transitions").get() as Row).m);
    const put = this.db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)");
    this.db.transaction(() => {
      put.run("ann_rows", this.ann!.size);
      put.run("ann_max_id", max);
      put.run("ann_generation", generation);
    })();
    this.annDirty = false;
  }

  /** Exact candidates from the in-memory index (filtered there); [] when the filter matches nothing known. */
  exactCandidates(vector: Float32Array, want: number, filter: SearchFilter): Candidate[] {
    const idx = this.exactIndex();
    const tags = this.filterTags(filter);
    return tags === null ? [] : idx.search(vector, want, tags);
  }

  /** HNSW candidates (unfiltered; the caller filters). */
  annCandidates(vector: Float32Array, want: number): Candidate[] {
    return this.annIndex().search(vector, want);
  }

  /**
   * Exact candidates among the rows a filter selects (for selective filters on large buffers): read
   * from the database at the filter's first search and kept, taking the filter's new rows as they
   * come and letting go of those that go (a synthetic env asks the same filters step after step while
   * it records, and a bounded buffer evicts every few steps).
   */
  scanCandidates(vector: Float32Array, want: number, filter: SearchFilter, where: string, args: string[]): Candidate[] {
    const key = JSON.stringify([where, args]);
    let scan = this.scans.get(key);
    if (!scan) {
      const d = this.dims();
      const rows = this.db.prepare(`SELECT id, embedding FROM transitions ${where}`).all(...args) as Row[];
      if (this.scanRows + rows.length > SCAN_ROWS_KEPT) this.dropScans();
      scan = { filter: { ...filter }, ids: [], matrix: new Float32Array(Math.max(16, rows.length) * d) };
      for (const r of rows) addScanRow(scan, Number(r.id), r.embedding as Uint8Array, d);
      this.scans.set(key, scan);
      this.scanRows += rows.length;
    }
    const top = new TopK(want);
    const d = this.dims();
    const m = scan.matrix;
    for (let i = 0; i < scan.ids.length; i++) top.push(scan.ids[i], dotAt(m, i * d, vector, d));
    return top.sorted();
  }
  private readonly scans = new Map<string, Scan>();
  private scanRows = 0;
  private dropScans(): void {
    this.scans.clear();
    this.scanRows = 0;
  }
}

/** A filter's rows as a scan read them (ids, and their vectors decoded, with room to grow). */
interface Scan {
  filter: SearchFilter;
  ids: number[];
  matrix: Float32Array;
}
/** Rows kept by scans at most (their vectors as float32). */
const SCAN_ROWS_KEPT = 65_536;

function addScanRow(scan: Scan, id: number, half: Uint8Array, d: number): void {
  const i = scan.ids.length;
  scan.matrix = withRoom(scan.matrix, (i + 1) * d);
  decodeHalf(half, scan.matrix.subarray(i * d, (i + 1) * d));
  scan.ids.push(id);
}
/** Removes a row from a scan, its last row into its place (a scan's order does not matter: ties go by id); false where it is not there. */
function removeScanRow(scan: Scan, id: number, d: number): boolean {
  const i = scan.ids.indexOf(id); // rows go oldest first: near the front
  if (i < 0) return false;
  const j = scan.ids.length - 1;
  scan.ids[i] = scan.ids[j];
  scan.matrix.copyWithin(i * d, j * d, (j + 1) * d);
  scan.ids.pop();
  return true;
}
