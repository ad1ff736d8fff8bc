import { stoppableLoop } from "./signals.ts";
import { actionVocabulary, createEnv, createPolicy, envTasks, runEpisode } from "../envs/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { closing, type ActionSource, type Trajectory } from "../core/index.ts";
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
  /** A buffer whose recorded commands the random policy picks from, for an env that lists no actions. */
  actionsFrom?: string;
  /** The split's task indexes to play, in this order (instead of every task from `start`). */
  order?: readonly number[];
}

export { parseIntOption } from "./options.ts";

/**
 * Plays `episodes` episodes of a scripted policy over a split's tasks in order (wrapping around),
 * starting at task `start`; each episode gets seed `seed + i`. Calls `onEpisode` as they finish.
 */
export async function playScriptedEpisodes(
  o: EpisodesOptions,
  label: string,
  onEpisode: (t: Trajectory) => void,
  onReady: () => void = () => {},
  /** SIGINT or SIGTERM ends the loop after the episode it is on (the caller keeps what was played). */
  stoppable = false,
): Promise<{ score: number; success: number; episodes: number; stopped?: NodeJS.Signals }> {
  const candidates: ActionSource | undefined =
    o.actionsFrom === undefined
      ? undefined
      : await closing(ReplayBuffer.open(o.actionsFrom, { readonly: true }), (b) => actionVocabulary(b.actions({ env: o.env, source: "real" })));
  const env = createEnv(o.env, { dataDir: o.data, split: o.split, maxSteps: o.maxSteps });
  const tasks = envTasks(o.env, env);
  const episodes = o.episodes ?? o.order?.length ?? tasks.length;
  const start = o.start ?? 0;
  const seed = o.seed ?? 0;
  const policy = createPolicy(o.env, o.policy, env, { seed, candidates });
  onReady(); // everything is valid: now outputs may be opened
  let score = 0;
  let success = 0;
  const bar = progressBar(label, episodes, { score: "0.0", success: "0.0%" });
  // Ctrl-C (or SIGTERM) ends the loop after the episode it is on: the episodes played are kept.
  const stop = stoppable ? stoppableLoop() : { signal: undefined, tick: async () => {}, release: () => {} };
  let played = 0;
  try {
    for (let i = 0; i < episodes && stop.signal === undefined; i++) {
      const task = o.order ? tasks[o.order[i % o.order.length]] : tasks[(start + i) % tasks.length];
      const t = await runEpisode(env, policy, { envName: o.env, task, seed: seed + i });
      score += t.total_reward;
      if (t.success) success++;
      onEpisode(t);
      played = i + 1;
      bar.update(i + 1, { score: ((100 * score) / (i + 1)).toFixed(1), success: `${((100 * success) / (i + 1)).toFixed(1)}%` });
      await stop.tick();
    }
  } finally {
    stop.release();
    bar.stop();
    await env.close();
  }
  return { score: played ? score / played : 0, success: played ? success / played : 0, episodes: played, ...(stop.signal ? { stopped: stop.signal } : {}) };
}
