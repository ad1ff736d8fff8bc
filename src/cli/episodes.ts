import { createEnv, createPolicy, runEpisode, type EnvName } from "../envs/index.ts";
import type { Trajectory } from "../core/index.ts";
import { progressBar } from "./progress.ts";

export interface EpisodesOptions {
  env: string;
  policy: string;
  split: string;
  episodes?: number;
  start?: number;
  seed?: number;
  data?: string;
  maxSteps?: number;
}

export { parseIntOption } from "./options.ts";

/**
 * Plays `episodes` episodes of a scripted policy over a split's tasks in order (wrapping around),
 * starting at task `start`; each episode gets seed `seed + i`. Calls `onEpisode` as they finish.
 */
export async function playEpisodes(
  o: EpisodesOptions,
  label: string,
  onEpisode: (t: Trajectory) => void,
  onReady: () => void = () => {},
): Promise<{ score: number; success: number; episodes: number }> {
  const env = createEnv(o.env as EnvName, { dataDir: o.data, split: o.split as never, maxSteps: o.maxSteps });
  const tasks = env.tasks();
  const episodes = o.episodes ?? tasks.length;
  const start = o.start ?? 0;
  const seed = o.seed ?? 0;
  const policy = createPolicy(o.env, o.policy, env, { seed });
  onReady(); // everything is valid: now outputs may be opened
  let score = 0;
  let success = 0;
  const bar = progressBar(label, episodes, { score: "0.0", success: "0.0%" });
  try {
    for (let i = 0; i < episodes; i++) {
      const task = tasks[(start + i) % tasks.length];
      const t = await runEpisode(env, policy, { envName: o.env, task, seed: seed + i });
      score += t.total_reward;
      if (t.success) success++;
      onEpisode(t);
      bar.update(i + 1, { score: ((100 * score) / (i + 1)).toFixed(1), success: `${((100 * success) / (i + 1)).toFixed(1)}%` });
    }
  } finally {
    bar.stop();
    await env.close();
  }
  return { score: episodes ? score / episodes : 0, success: episodes ? success / episodes : 0, episodes };
}
