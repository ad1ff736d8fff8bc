import type { Task, Verifier } from "../../core/index.ts";
import { alfworldAbstract } from "./abstraction.ts";
import { AlfWorldEnv } from "./alfworld-env.ts";
import type { AlfWorldSplit } from "./game.ts";

/** A command sequence played in the real game. */
export interface Replayed {
  /** Every command was admissible in the real game when it came (and none came after the task was done). */
  playable: boolean;
  /** After the last command, when playable: the real abstract state, reward and end. */
  state?: string;
  reward: number;
  terminated: boolean;
}

export interface AlfWorldReplayOptions {
  /** The data root (as the env's `dataDir`). */
  dataDir?: string;
  /** The split tasks are looked up in first (a task naming its game file plays from any split). @default valid_train */
  split?: AlfWorldSplit;
  /** Live games kept for sequences to grow from. @default 256 */
  capacity?: number;
}

interface Live {
  env: AlfWorldEnv | null;
  result: Replayed;
}

const NOT_PLAYABLE: Replayed = Object.freeze({ playable: false, reward: 0, terminated: false });

/**
 * Plays a task's command sequences in the real game (the task's own goal, a variant's included). An
 * episode asks for sequences that grow by one command a step, so the live game of the sequence one
 * shorter is stepped on, and only a sequence it has not seen is replayed from the start; games are
 * kept for the `capacity` latest sequences. A sequence stops being playable at its first command
 * the real game does not admit there: from then on the synthetic world is not the real one.
 */
export class AlfWorldReplay {
  private readonly live = new Map<string, Live>();
  private readonly o: Required<Omit<AlfWorldReplayOptions, "dataDir">> & { dataDir?: string };

  constructor(opts: AlfWorldReplayOptions = {}) {
    this.o = { split: "valid_train", capacity: 256, ...opts };
  }

  async play(task: Task, commands: readonly string[]): Promise<Replayed> {
    const key = (n: number) => [task.id, task.instruction, ...commands.slice(0, n)].join("\u0001");
    // The longest prefix with a live game (an episode's previous step, usually), else the start.
    let n = commands.length;
    let entry: Live | undefined;
    for (; n >= 0 && !entry; n--) entry = this.live.get(key(n));
    n++;
    if (entry) this.live.delete(key(n));
    else {
      const env = new AlfWorldEnv({ dataDir: this.o.dataDir, split: this.o.split, maxSteps: 1_000_000 });
      const r = await env.reset({ task });
      entry = { env, result: { playable: true, state: alfworldAbstract(r.observation, r.info), reward: 0, terminated: false } };
      n = 0;
    }
    for (; n < commands.length; n++) entry = await advance(entry, commands[n]);
    this.live.set(key(commands.length), entry);
    while (this.live.size > this.o.capacity) this.live.delete(this.live.keys().next().value!);
    return entry.result;
  }
}

async function advance(entry: Live, command: string): Promise<Live> {
  const env = entry.env;
  if (!env || !entry.result.playable || entry.result.terminated || !env.availableActions().includes(command.trim())) return { env: null, result: NOT_PLAYABLE };
  const r = await env.step(command);
  return { env, result: { playable: true, state: alfworldAbstract(r.observation, r.info), reward: r.reward, terminated: r.terminated } };
}

/**
 * ALFWorld's hybrid verifier: the synthetic episode's commands replayed in the real game. While each
 * was admissible there, the real game's reward and end are the step's (a false success is undone, a
 * missed one granted); once the synthetic world has let the agent do what the real game would not
 * (an object found where the game has none), it cannot say, and the model's own reward stands. The
 * next state stays the model's: only rewards and ends are checked.
 */
export function alfworldVerifier(replay: AlfWorldReplay = new AlfWorldReplay()): Verifier {
  return async (task, history, _state, action) => {
    const r = await replay.play(task, [...history.map((h) => h.action), action]);
    return r.playable ? { reward: r.reward, terminated: r.terminated } : null;
  };
}
