// Apart from buffer-db.ts so that the search thread loads SQLite and this alone (not the core's
// schemas): the thread's start is on the way of a run's first searches.
import type Database from "better-sqlite3";

/**
 * What identifies the real transitions in the file: count, largest and sum of their ids, which change
 * whenever one comes or goes (ids only grow). Read by a buffer and by its search thread alike.
 */
export interface RealRows {
  n: number;
  max: number;
  sum: number;
}
export function realRows(db: Database.Database): RealRows {
  const r = db.prepare("SELECT count(*) AS n, coalesce(max(id), 0) AS m, coalesce(sum(id), 0) AS s FROM transitions WHERE source = 'real'").get() as {
    n: number;
    m: number;
    s: number;
  };
  return { n: Number(r.n), max: Number(r.m), sum: Number(r.s) };
}
/** The real rows as a key (`ReplayBuffer.realVersion`). */
export const realRowsKey = (r: RealRows) => `real:${r.n}:${r.max}:${r.sum}`;
