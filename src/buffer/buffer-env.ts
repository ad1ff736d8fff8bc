import { InvalidConfigError } from "../core/index.ts";
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
