import type Database from "better-sqlite3";
import { InvalidConfigError, type ExperienceSource, type Task } from "../core/index.ts";
import { SELECT_TRANSITIONS, toTransition, type Row } from "./buffer-db.ts";
import type { StoredTransition } from "./buffer-types.ts";

/** Where an episode came from: the offline seed (whatever its source), or real / synthetic experience added later. */
export type EpisodeOrigin = "offline" | ExperienceSource;

/** A filter and a page of the buffer's episodes (keyset paging: a page starts after the id `after`). */
export interface EpisodeQuery {
  env?: string;
  origin?: EpisodeOrigin;
  /** Text the task contains: its id, instruction or goal fields (case-insensitive for ASCII). */
  task?: string;
  success?: boolean;
  /** Total reward at least / at most this. */
  minReward?: number;
  maxReward?: number;
  /** Episodes whose policy label starts with this (a run's synthetic episodes: `neural@<runId>#`). */
  policyPrefix?: string;
  /** Only episodes with a larger id (the `next` of the page before). */
  after?: number;
  /** Episodes per page. @default 50 */
  limit?: number;
}

/** One episode's line in a listing (no steps). */
export interface EpisodeSummary {
  id: number;
  uid: string;
  env: string;
  task: Task;
  origin: EpisodeOrigin;
  source: ExperienceSource;
  policy?: string;
  totalReward: number;
  success: boolean;
  steps: number;
  createdAt: string;
}

export interface EpisodePage {
  episodes: EpisodeSummary[];
  /** The `after` of the next page (null: this is the last one). */
  next: number | null;
  /** Episodes that pass the filter, over all pages. */
  total: number;
}

/** LIKE's wildcards in user text match themselves. */
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

function whereOfQuery(q: EpisodeQuery): { conds: string[]; args: (string | number)[] } {
  const conds: string[] = [];
  const args: (string | number)[] = [];
  if (q.env !== undefined) conds.push("env = ?"), args.push(q.env);
  if (q.origin === "offline") conds.push("seed = 1");
  else if (q.origin !== undefined) conds.push("seed = 0 AND source = ?"), args.push(q.origin);
  if (q.success !== undefined) conds.push("success = ?"), args.push(q.success ? 1 : 0);
  if (q.minReward !== undefined) conds.push("total_reward >= ?"), args.push(q.minReward);
  if (q.maxReward !== undefined) conds.push("total_reward <= ?"), args.push(q.maxReward);
  if (q.policyPrefix !== undefined) conds.push("policy LIKE ? ESCAPE '\\'"), args.push(`${likeEscape(q.policyPrefix)}%`);
  if (q.task !== undefined && q.task !== "") {
    // The task's JSON (id, instruction, goal fields): one scan of the trajectories table, not of the transitions.
    conds.push("task_json LIKE ? ESCAPE '\\'");
    args.push(`%${likeEscape(JSON.stringify(q.task).slice(1, -1))}%`);
  }
  return { conds, args };
}

function toSummary(r: Row): EpisodeSummary {
  const source = r.source as ExperienceSource;
  return {
    id: Number(r.id),
    uid: String(r.uid),
    env: String(r.env),
    task: JSON.parse(String(r.task_json)) as Task,
    origin: r.seed === 1 ? "offline" : source,
    source,
    ...(r.policy != null ? { policy: String(r.policy) } : {}),
    totalReward: Number(r.total_reward),
    success: r.success === 1,
    steps: Number(r.n_steps),
    createdAt: String(r.created_at),
  };
}

/** A page of episodes, oldest first; a page reads at most `limit + 1` rows whatever the buffer's size. */
export function episodePage(db: Database.Database, q: EpisodeQuery): EpisodePage {
  const limit = q.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new InvalidConfigError(`limit must be an integer from 1 to 1000, got ${limit}`);
  const { conds, args } = whereOfQuery(q);
  const total = Number((db.prepare(`SELECT count(*) AS n FROM trajectories ${conds.length ? `WHERE ${conds.join(" AND ")}` : ""}`).get(...args) as Row).n);
  const page = [...conds, ...(q.after !== undefined ? ["id > ?"] : [])];
  const rows = db
    .prepare(`SELECT id, uid, env, task_json, source, seed, policy, total_reward, success, n_steps, created_at FROM trajectories
      ${page.length ? `WHERE ${page.join(" AND ")}` : ""} ORDER BY id LIMIT ?`)
    .all(...args, ...(q.after !== undefined ? [q.after] : []), limit + 1) as Row[];
  const more = rows.length > limit;
  const episodes = rows.slice(0, limit).map(toSummary);
  return { episodes, next: more ? episodes[episodes.length - 1].id : null, total };
}

/** One episode with its steps (undefined: no such id). */
export function episodeById(db: Database.Database, id: number): { episode: EpisodeSummary; steps: StoredTransition[] } | undefined {
  const r = db
    .prepare("SELECT id, uid, env, task_json, source, seed, policy, total_reward, success, n_steps, created_at FROM trajectories WHERE id = ?")
    .get(id) as Row | undefined;
  if (!r) return undefined;
  const steps = (db.prepare(`${SELECT_TRANSITIONS} WHERE x.trajectory_id = ? ORDER BY x.step`).all(id) as Row[]).map(toTransition);
  return { episode: toSummary(r), steps };
}

/** Per task and policy label, the episodes' rewards (e.g. a run's synthetic episodes by iteration: `neural@<runId>#<iteration>`). */
export function rewardsByTaskAndPolicy(db: Database.Database, policyPrefix: string): { task: string; policy: string; rewards: number[] }[] {
  const rows = db
    .prepare(
      `SELECT task_id, policy, json_group_array(total_reward) AS rewards FROM trajectories WHERE policy LIKE ? ESCAPE '\\' GROUP BY task_id, policy ORDER BY task_id, policy`,
    )
    .all(`${likeEscape(policyPrefix)}%`) as Row[];
  return rows.map((r) => ({ task: String(r.task_id), policy: String(r.policy), rewards: JSON.parse(String(r.rewards)) as number[] }));
}
