import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, statSync, type Stats } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import type { Task } from "../../core/index.ts";
import { auditTable, summarizeReplays, type AuditPair, type OnPolicyAuditSummary } from "../../experience/index.ts";
import { auditFiles, readAuditPairs, readMetrics, type Checkpoint, type EvalResult, type IterationMetrics } from "../../train/index.ts";

/** A run folder as the runs list shows it. */
export interface RunInfo {
  /** The folder relative to the runs root ("/"-separated; "." is the root itself): the id the API takes. */
  id: string;
  runId: string;
  /** The folder holding it, when it is one of several (an experiment's rows). */
  group: string;
  mode: string;
  env: string;
  algo: string;
  budget: number;
  realBudget: number;
  seed: number;
  iterations: number;
  realInteractions: number;
  syntheticInteractions: number;
  /** The final evaluation (summary.json), else the last interval one. */
  eval: EvalResult | null;
  finalEval: boolean;
  /** finished: summary.json written; running: metrics.jsonl written in the last two minutes; stopped: neither. */
  status: "finished" | "running" | "stopped";
  createdAt: string;
  audited: boolean;
  hasBuffer: boolean;
}

/** An audited episode as the audit table and its list show it: without its synthetic and real episodes. */
export type AuditHead = Omit<AuditPair, "synthetic" | "real"> & { iteration: number };

/**
 * What tells a file's content changed without reading it: another inode or birth time (a rewrite renames
 * a new file over it), size, mtime, or ctime (a rewrite at the same size within one mtime tick, or with
 * its mtime set back, still changes it).
 */
const fileStamp = (st: Stats) => `${st.ino}:${st.birthtimeMs}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;

/** How long after its last metrics line a run without a summary still counts as training. */
const RUNNING_WINDOW_MS = 120_000;
/** Folders below the root searched for runs (an experiment: root/experiment/row). */
const MAX_DEPTH = 4;
/**
 * Heads of audited episodes the store keeps, over all runs (~0.94 KB each in memory, measured on
 * WebShop's; an audit file holds ~16): a run audited at the defaults (16 episodes every 5 iterations)
 * for 15,000 iterations fits.
 */
const AUDIT_HEADS_KEPT = 50_000;

/**
 * Whether `file` is the run folder's own: it resolves inside `dir`. A symlink from a run folder to
 * anywhere else (`config.json → ~/.ssh/…`) is not served; a run folder that is itself a symlink is.
 */
export function ownFile(dir: string, file: string): boolean {
  try {
    return realpathSync(file).startsWith(realpathSync(dir) + sep);
  } catch {
    return false; // absent
  }
}

const readJson = <T>(file: string): T | undefined => {
  try {
    if (!ownFile(dirname(file), file)) return undefined;
    return JSON.parse(readFileSync(file, "utf8")) as T;
  } catch {
    return undefined; // absent, or caught mid-write by a running trainer: the next poll reads it
  }
};

const isFolder = (path: string) => {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false; // a dangling link
  }
};
const ownMetrics = (dir: string) => (ownFile(dir, join(dir, "metrics.jsonl")) ? readMetrics(dir) : []);

/**
 * The run folders under one root, found again on every listing (a new run appears while the app is
 * open). A run's id is its path under the root, and only ids found there are served: a request cannot
 * name a folder outside it.
 */
export class RunStore {
  private cached: { at: number; folders: Map<string, string> } | undefined;
  private readonly auditHeadsKept: number;
  /** `auditHeadsKept`: heads of audited episodes kept in memory, over all runs (default AUDIT_HEADS_KEPT). */
  constructor(
    readonly root: string,
    o: { auditHeadsKept?: number } = {},
  ) {
    this.auditHeadsKept = o.auditHeadsKept ?? AUDIT_HEADS_KEPT;
  }

  /** Folders holding a run (config.json with a runId), under the root, sorted by path; walked again after a second. */
  private folders(): Map<string, string> {
    if (this.cached && Date.now() - this.cached.at < 1000) return this.cached.folders;
    const found = new Map<string, string>();
    const walk = (dir: string, depth: number) => {
      if (existsSync(join(dir, "config.json")) && typeof readJson<{ runId?: unknown }>(join(dir, "config.json"))?.runId === "string") {
        found.set(relative(this.root, dir).split(sep).join("/") || ".", dir);
        return; // a run's own folders (checkpoints, audit) hold no runs
      }
      if (depth >= MAX_DEPTH) return;
      let entries;
      try {
        entries = readdirSync(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
        // A folder linked in (runs shared between experiments) is walked too; the depth bounds a loop.
        const folder = e.isDirectory() || (e.isSymbolicLink() && isFolder(join(dir, e.name)));
        if (folder && !e.name.startsWith(".") && e.name !== "node_modules") walk(join(dir, e.name), depth + 1);
      }
    };
    walk(this.root, 0);
    this.cached = { at: Date.now(), folders: found };
    return found;
  }

  /** The folder of a run id, or undefined when the root holds no such run. */
  dir(id: string): string | undefined {
    return this.folders().get(id);
  }

  list(): RunInfo[] {
    return [...this.folders()].map(([id, dir]) => this.info(id, dir));
  }

  /** What the runs list reads of each run's metrics, by the file's identity, size and time: a run that has not changed is not read again. */
  private readonly metricsSeen = new Map<string, { key: string; last?: IterationMetrics; lastEval?: EvalResult; audited: boolean }>();

  private metricsSummary(dir: string): { last?: IterationMetrics; lastEval?: EvalResult; audited: boolean; mtimeMs?: number } {
    const file = join(dir, "metrics.jsonl");
    let st;
    try {
      st = statSync(file);
    } catch {
      return { audited: false };
    }
    const key = fileStamp(st);
    let seen = this.metricsSeen.get(dir);
    if (seen?.key !== key) {
      const metrics = ownMetrics(dir);
      seen = {
        key,
        last: metrics.at(-1),
        lastEval: metrics.findLast((m) => m.eval !== undefined)?.eval,
        audited: metrics.some((m) => m.onPolicyAudit !== undefined),
      };
      this.metricsSeen.set(dir, seen);
    }
    return { ...seen, mtimeMs: st.mtimeMs };
  }

  info(id: string, dir: string): RunInfo {
    const config = readJson<Record<string, unknown>>(join(dir, "config.json")) ?? {};
    const { last, lastEval, audited, mtimeMs } = this.metricsSummary(dir);
    const summary = readJson<{ final?: EvalResult }>(join(dir, "summary.json"));
    const fresh = mtimeMs !== undefined && Date.now() - mtimeMs < RUNNING_WINDOW_MS;
    const num = (v: unknown) => (typeof v === "number" ? v : 0);
    return {
      id,
      runId: String(config.runId),
      group: id.includes("/") ? id.slice(0, id.lastIndexOf("/")) : "",
      mode: String(config.mode ?? "?"),
      env: String(config.env ?? "?"),
      algo: String(config.algo ?? "?"),
      budget: num(config.budget),
      realBudget: num(config.realBudget),
      seed: num(config.seed),
      iterations: last?.iteration ?? 0,
      realInteractions: last?.realInteractions ?? 0,
      syntheticInteractions: last?.syntheticInteractions ?? 0,
      eval: summary?.final ?? lastEval ?? null,
      finalEval: summary?.final !== undefined,
      status: summary ? "finished" : fresh ? "running" : "stopped",
      createdAt: String(config.createdAt ?? ""),
      audited,
      hasBuffer: existsSync(join(dir, "buffer.db")),
    };
  }

  config(dir: string): Record<string, unknown> {
    return readJson<Record<string, unknown>>(join(dir, "config.json")) ?? {};
  }

  /** Metrics lines from index `since` on (a live view asks for what it has not seen). */
  metrics(dir: string, since = 0): IterationMetrics[] {
    return ownMetrics(dir).slice(since);
  }

  /** What the store keeps of each audit file it read (the heads), by the file's identity, size and time; the least lately used first. */
  private readonly auditSeen = new Map<string, { key: string; heads: readonly AuditHead[] }>();
  private headsKept = 0;
  /** Each run's pooled audit row, with the keys of the files it was made of. */
  private readonly pooledSeen = new Map<string, { keys: string; summary: OnPolicyAuditSummary }>();

  /**
   * The heads of the run's audited episodes (each without its two episodes), by iteration, and a key
   * that changes when any of them does. A file is parsed once, and again when it changes (`fileStamp`).
   * A file removed (a resume drops those past its checkpoint) is not listed, so not shown.
   */
  auditHeads(dir: string): { heads: AuditHead[]; keys: string } {
    const heads: AuditHead[] = [];
    const keys: string[] = [];
    const files = auditFiles(dir);
    // One realpath for the folder, not two a file: a plain file in an own folder is own; a link is followed.
    const ownFolder = files.length > 0 && ownFile(dir, join(dir, "audit"));
    for (const { file, iteration } of files) {
      let st;
      try {
        st = lstatSync(file);
        if (st.isSymbolicLink() ? !ownFile(dir, file) : !ownFolder) continue;
        if (st.isSymbolicLink()) st = statSync(file);
      } catch {
        continue; // removed since the folder was listed
      }
      // Stated before it is read: a file replaced in between is kept under the older key, so read again next time.
      const key = `${iteration}:${fileStamp(st)}`;
      const got = this.headsOf(file, key, iteration);
      if (got === undefined) continue;
      keys.push(key);
      for (const h of got) heads.push(h);
    }
    return { heads, keys: keys.join(" ") };
  }

  private headsOf(file: string, key: string, iteration: number): readonly AuditHead[] | undefined {
    const seen = this.auditSeen.get(file);
    if (seen) {
      this.auditSeen.delete(file);
      this.headsKept -= seen.heads.length;
    }
    let heads = seen?.key === key ? seen.heads : undefined;
    if (!heads) {
      try {
        heads = readAuditPairs(file).map(({ synthetic: _s, real: _r, ...head }) => ({ ...head, iteration }));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined; // removed since it was stated
        throw e;
      }
    }
    this.auditSeen.set(file, { key, heads });
    this.headsKept += heads.length;
    for (const [f, old] of this.auditSeen) {
      if (this.headsKept <= this.auditHeadsKept || f === file) break;
      this.auditSeen.delete(f);
      this.headsKept -= old.heads.length;
    }
    return heads;
  }

  /** One iteration's audited episodes, whole (its files `audit/iteration-NNNN.jsonl`, however padded; no other file is read). */
  auditPairsOf(dir: string, iteration: number): (AuditPair & { iteration: number })[] {
    return auditFiles(dir)
      .filter((f) => f.iteration === iteration && ownFile(dir, f.file))
      .flatMap((f) => readAuditPairs(f.file).map((p) => ({ ...p, iteration })));
  }

  /**
   * The on-policy audit table: a row per audited iteration (metrics.jsonl's figures) and, where the
   * episodes were kept, one over all of them, as `dreamgym audit --run` prints it; and the heads of
   * those episodes.
   */
  audit(dir: string): {
    header: string[];
    lines: string[][];
    rows: { iteration: number | "all"; summary: OnPolicyAuditSummary }[];
    pairs: AuditHead[];
  } {
    const rows: { iteration: number | "all"; summary: OnPolicyAuditSummary }[] = ownMetrics(dir)
      .filter((m) => m.onPolicyAudit !== undefined)
      .map((m) => ({ iteration: m.iteration, summary: m.onPolicyAudit! }));
    const { heads: pairs, keys } = this.auditHeads(dir);
    if (pairs.length > 0) {
      let pooled = this.pooledSeen.get(dir);
      if (pooled?.keys !== keys) {
        // A group is one iteration's: its key names the iteration, so the pooled row never mixes two.
        pooled = { keys, summary: summarizeReplays(pairs.map((p) => (p.group === undefined ? p : { ...p, group: `${p.iteration}/${p.group}` }))) };
        this.pooledSeen.set(dir, pooled);
      }
      rows.push({ iteration: "all", summary: pooled.summary });
    }
    return { ...auditTable(rows), rows, pairs };
  }

  /** The curriculum's generated tasks (the last checkpoint's pool) with their lineage. */
  generatedTasks(dir: string): (Task & { lineage: { parent: string; generation: number } })[] {
    const latest = readJson<Checkpoint>(join(dir, "checkpoints", "latest.json"));
    const c = latest?.curriculum as { generated?: (Task & { lineage: { parent: string; generation: number } })[] } | undefined;
    return Array.isArray(c?.generated) ? c.generated : [];
  }
}
