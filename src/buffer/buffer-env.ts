import { existsSync, statSync } from "node:fs";
import { DataError, InvalidConfigError } from "../core/index.ts";
import type { ReplayBuffer } from "./replay-buffer.ts";

/**
 * Refuses a buffer of another env's trajectories and none of `env`'s: its states, in another format,
 * would ground nothing here. The message names both envs. An
 * empty buffer passes (a cold start); a mixed one too (retrieval filters by env).
 */
export function checkBufferEnv(buffer: ReplayBuffer, file: string, env: string): void {
  if (buffer.count({ env }) > 0) return;
  const others = [...new Set(buffer.stats().groups.map((g) => g.env))].filter((e) => e !== env);
  if (others.length > 0)
    throw new InvalidConfigError(`buffer ${file} holds ${others.join(", ")} trajectories, not ${env}: give a buffer of offline ${env} trajectories`);
}

/**
 * Refuses a buffer with no transition of `env` where a local experience model (the embedded one, or a
 * learned one, whose next states are the embedded one's) plays from it: each step is predicted from
 * the buffer's steps, and with none every synthetic episode fails or stands still. A chat model plays
 * from the env's profile instead (a cold start), so its callers do not ask.
 */
export function checkBufferGrounds(buffer: ReplayBuffer, file: string, env: string): void {
  if (buffer.count({ env }) === 0)
    throw new InvalidConfigError(
      `buffer ${file} has no ${env} transitions to ground the embedded model: import offline trajectories first (dreamgym buffer import F.jsonl --buffer ${file} --abstract)`,
    );
}

/** Refuses a folder given as a buffer file, which SQLite would only call a "disk I/O error". */
export function refuseBufferFolder(file: string): void {
  if (existsSync(file) && statSync(file).isDirectory()) throw new DataError("--buffer is a folder; give the buffer file", { file });
}
