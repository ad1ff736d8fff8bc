// The search thread's own side (see real-search.ts): a read-only connection to the buffer file and an
// exact index of its real transitions, answering candidate searches posted by the buffer. It imports
// narrowly (not the core's index): a run's first searches wait for it to be up.
import Database from "better-sqlite3";
import { workerData } from "node:worker_threads";
import { serveRequests } from "../core/request-thread.ts";
import type { Row } from "./buffer-db.ts";
import { realRows, realRowsKey } from "./real-rows.ts";
import { decodeHalf } from "./float16.ts";
import type { SearchThreadData, SearchThreadRequest } from "./real-search.ts";
import { ExactIndex, type Candidate } from "./vector-index.ts";

const { file, dims } = workerData as SearchThreadData;

/** The real rows as of `key`, with codes for the filters (per thread: codes are never compared across threads). */
let loaded: { key: string; index: ExactIndex; env: Map<string, number>; task: Map<string, number>; action: Map<string, number> } | undefined;

/** Reads the real rows, through a connection held only meanwhile (the buffer, closing, must find the file free to leave WAL mode). */
function load(): void {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    loaded = read(db);
  } finally {
    db.close();
  }
}

function read(db: Database.Database): NonNullable<typeof loaded> {
  // One read transaction: the key and the rows are of the same commit.
  return db.transaction(() => {
    const real = realRows(db);
    const key = realRowsKey(real);
    const index = new ExactIndex(dims, Math.max(1024, real.n));
    const codes = { env: new Map<string, number>(), task: new Map<string, number>(), action: new Map<string, number>() };
    const code = (m: Map<string, number>, k: string) => m.get(k) ?? (m.set(k, m.size + 1), m.size);
    const v = new Float32Array(dims);
    const rows = db.prepare("SELECT id, env, task_id, action, embedding FROM transitions WHERE source = 'real' ORDER BY id").iterate() as IterableIterator<Row>;
    for (const r of rows)
      index.add(Number(r.id), decodeHalf(r.embedding as Buffer, v), {
        env: code(codes.env, String(r.env)),
        source: 1,
        task: code(codes.task, String(r.task_id)),
        action: code(codes.action, String(r.action)),
      });
    return { key, index, ...codes };
  })();
}

function answer(q: SearchThreadRequest): Candidate[] | null {
  if ("warm" in q) {
    warmUp();
    return null; // not a search: nothing to answer
  }
  if (loaded?.key !== q.key) load();
  // The buffer asked about other real rows than the file now holds (a commit since): it searches itself.
  if (loaded!.key !== q.key) return null;
  const { index, env, task, action } = loaded!;
  const f = q.filter;
  const tags = {
    env: f.env === undefined ? undefined : env.get(f.env),
    task: f.task === undefined ? undefined : task.get(f.task),
    action: f.action === undefined ? undefined : action.get(f.action),
  };
  if (
    (f.env !== undefined && tags.env === undefined) ||
    (f.task !== undefined && tags.task === undefined) ||
    (f.action !== undefined && tags.action === undefined)
  )
    return [];
  return index.search(q.vector, q.want, tags);
}

/**
 * The real rows read before the first search asks (`ReplayBuffer.startSearchThread`), and each env's
 * view of them made once the searches asked meanwhile are answered: a run's first searches would
 * otherwise wait for both.
 */
function warmUp(): void {
  try {
    if (!loaded) load();
  } catch {
    // The first request reads the file again and says what is wrong.
    return;
  }
  // The views after the searches already asked: the first ones are of an action's rows, made at once.
  setImmediate(() => {
    const q = new Float32Array(dims);
    q[0] = 1;
    try {
      if (loaded) for (const env of loaded.env.values()) loaded.index.search(q, 1, { env });
    } catch {
      // A search that needs the view makes it.
    }
  });
}

serveRequests(answer);
