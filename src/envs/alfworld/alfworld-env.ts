import {
  checkAction,
  ClosedEnvironmentError,
  InvalidConfigError,
  ResetNeededError,
  Rng,
  type Env,
  type ResetOptions,
  type ResetResult,
  type StepResult,
  type Task,
} from "../../core/index.ts";
import { resolveDataDir } from "../data-dir.ts";
import { join } from "node:path";
import type { FactBase } from "./facts.ts";
import { ALFWORLD_SPLITS, alfworldGames, Game, TASK_TYPES, type AlfWorldSplit, type GameEntry } from "./game.ts";
import type { Formula } from "./pddl.ts";
import { specGoal, taskSpec } from "./variants.ts";

export interface AlfWorldOptions {
  dataDir?: string;
  /** @default "valid_unseen" */
  split?: AlfWorldSplit;
  /** Play only this game (its path under the data folder, or a task id `alfworld:<split>/<task>/<trial>`). */
  game?: string;
  /** Steps before truncation. @default 50 (ALFWorld's limit) */
  maxSteps?: number;
}

/**
 * A game as a task. `variant: true` marks a generated task (the curriculum's): its `task_type` and
 * `params` replace the game's own goal on the game's scene, and its `instruction` is the task line.
 */
export type AlfWorldTask = Task & { game: string; task_type: string; split: AlfWorldSplit; params: Record<string, string | boolean>; variant?: boolean };

/** Whether a task is a variant this env can play (a game file, a known task type, its targets). */
export function isVariantTask(task: Task): task is AlfWorldTask {
  const t = task as Partial<AlfWorldTask>;
  return (
    t.variant === true &&
    typeof t.game === "string" &&
    typeof t.task_type === "string" &&
    (TASK_TYPES as readonly string[]).includes(t.task_type) &&
    typeof t.params === "object" &&
    t.params !== null &&
    typeof t.params.object_target === "string"
  );
}

/** The intro text with another task line. */
const withTaskLine = (intro: string, instruction: string) => intro.replace(/Your task is to: .*$/s, `Your task is to: ${instruction}.`);

/**
 * Games loaded, by file, shared by the process's envs: up to `max`, the least lately used let go
 * first. A game holds ~215 KB and loads in ~2 ms. The shipped splits a run uses together (474 games)
 * stay loaded; ALFWorld's whole train split (3,553 games) would hold ~0.7 GB if none went.
 * @internal
 */
export class LoadedGames {
  private readonly games = new Map<string, Game>();
  constructor(readonly max: number) {}

  get size(): number {
    return this.games.size;
  }

  get(file: string, load: () => Game): Game {
    let g = this.games.get(file);
    if (g)
      this.games.delete(file); // put back below, as the latest used
    else {
      g = load();
      if (this.games.size >= this.max) this.games.delete(this.games.keys().next().value!);
    }
    this.games.set(file, g);
    return g;
  }
}
const loadedGames = new LoadedGames(512);

export function alfworldTask(entry: GameEntry): AlfWorldTask {
  const id = entry.game.replace(/^games\//, "").replace(/\/game\.tw-pddl$/, "");
  return {
    id: `alfworld:${id}`,
    instruction: entry.goal.replace(/^Your task is to: /, "").replace(/\.$/, ""),
    game: entry.game,
    task_type: entry.taskType,
    split: entry.split,
    params: entry.params,
  };
}

/**
 * ALFWorld's text environment (AlfredTWEnv, text mode, before the "move X to Y" change), in-process:
 * PDDL state and actions, TextWorld's grammar for every text, ALFWorld's object names. A command
 * that is not admissible answers "Nothing happens." and changes nothing (`info.invalid`). Reward 1
 * and `terminated` when the goal holds; `truncated` after `maxSteps`.
 */
export class AlfWorldEnv implements Env {
  readonly split: AlfWorldSplit;
  readonly root: string;
  private readonly entries: GameEntry[];
  private readonly maxSteps: number;
  private rng = new Rng(0);
  private game: Game | undefined;
  private state: FactBase | undefined;
  private commands = new Map<string, ReturnType<Game["admissible"]> extends Map<string, infer V> ? V : never>();
  private steps = 0;
  private done = true;
  private closed = false;
  private task: AlfWorldTask | undefined;
  /** The goal of the running task: the game's own, or a variant's. */
  private goal: Formula | undefined;
  /** The receptacle of the last go-to ("" before the first). */
  private at = "";

  constructor(opts: AlfWorldOptions = {}) {
    this.root = resolveDataDir({ dataDir: opts.dataDir, subdir: "alfworld", files: ["index.json", "games"] });
    const split = opts.split ?? "valid_unseen";
    if (!ALFWORLD_SPLITS.includes(split)) throw new InvalidConfigError(`unknown ALFWorld split "${split}" (known: ${ALFWORLD_SPLITS.join(", ")})`);
    this.split = split;
    this.maxSteps = opts.maxSteps ?? 50;
    if (!Number.isInteger(this.maxSteps) || this.maxSteps < 1) throw new InvalidConfigError(`ALFWorld maxSteps must be an integer ≥ 1, got ${opts.maxSteps}`);
    let entries = alfworldGames(this.root).filter((g) => g.split === split);
    if (opts.game !== undefined) {
      const want = opts.game.replace(/^alfworld:/, "");
      const match = entries.filter(
        (g) => g.game === want || g.game === `games/${want}` || g.game === `games/${want}/game.tw-pddl` || g.game.includes(`/${want}/`),
      );
      if (match.length !== 1) {
        throw new InvalidConfigError(
          `unknown ALFWorld game "${opts.game}" in split ${split} (${match.length} matches; e.g. ${entries
            .slice(0, 2)
            .map((g) => alfworldTask(g).id)
            .join(", ")}; \`tasks()\` lists all ${entries.length})`,
        );
      }
      entries = match;
    }
    this.entries = entries;
  }

  /** The split's games as tasks, in the pack's order. */
  tasks(): AlfWorldTask[] {
    return this.entries.map(alfworldTask);
  }

  private load(game: string): Game {
    return loadedGames.get(join(this.root, game), () => Game.load(this.root, game));
  }

  /**
   * The game of a task: one of this split, or one of another split when the task names its game
   * file (AgentGym's game indexes span the splits).
   */
  private entryOf(task: Task): GameEntry {
    const t = task as Partial<AlfWorldTask>;
    const entry =
      this.entries.find((e) => e.game === t.game || alfworldTask(e).id === task.id) ??
      (typeof t.game === "string" ? alfworldGames(this.root).find((e) => e.game === t.game) : undefined);
    if (!entry) throw new InvalidConfigError(`task ${task.id} is not a game of ALFWorld split ${this.split}`);
    return entry;
  }

  /** The opening text of a task's game (the synthetic env's start state). */
  introOf(task: Task): string {
    const game = this.load(this.entryOf(task).game);
    const intro = game.intro(game.initialState());
    return isVariantTask(task) ? withTaskLine(intro, task.instruction) : intro;
  }

  async reset(opts: ResetOptions = {}): Promise<ResetResult> {
    if (this.closed) throw new ClosedEnvironmentError();
    if (opts.seed !== undefined) this.rng = new Rng(opts.seed);
    let task: AlfWorldTask;
    let goal: Formula | undefined;
    if (opts.task) {
      const entry = this.entryOf(opts.task);
      if (isVariantTask(opts.task)) {
        task = { ...opts.task, game: entry.game, split: entry.split };
        goal = specGoal(taskSpec(task.task_type, task.params));
      } else task = alfworldTask(entry);
    } else task = alfworldTask(this.entries[this.rng.randbelow(this.entries.length)]);
    this.task = task;
    this.game = this.load(task.game);
    this.goal = goal ?? this.game.problem.goal;
    this.state = this.game.initialState();
    this.commands = this.game.admissible(this.state);
    this.steps = 0;
    this.done = false;
    this.at = "";
    const intro = this.game.intro(this.state);
    return { observation: task.variant ? withTaskLine(intro, task.instruction) : intro, info: { task, task_type: task.task_type, ...this.stateInfo() } };
  }

  /** The running game and its state (for the expert, which plans from the state). */
  get current(): { game: Game; state: FactBase; task: AlfWorldTask } | undefined {
    return this.game && this.state && this.task ? { game: this.game, state: this.state, task: this.task } : undefined;
  }

  availableActions(): string[] {
    return this.done || this.closed ? [] : [...this.commands.keys()];
  }

  async step(action: string): Promise<StepResult> {
    if (this.closed) throw new ClosedEnvironmentError();
    if (this.done || !this.game || !this.state) throw new ResetNeededError();
    checkAction(action);
    this.steps++;
    const ground = this.commands.get(action.trim());
    let observation = "Nothing happens.";
    if (ground) {
      const r = this.game.apply(this.state, ground);
      this.state = r.state;
      observation = r.feedback;
      this.commands = this.game.admissible(this.state);
      if (action.trim().startsWith("go to ")) this.at = action.trim().slice(6);
    }
    const won = this.game.satisfies(this.goal ?? this.game.problem.goal, this.state);
    const truncated = !won && this.steps >= this.maxSteps;
    this.done = won || truncated;
    return { observation, reward: won ? 1 : 0, terminated: won, truncated, info: { ...(ground ? {} : { invalid: true }), won, ...this.stateInfo() } };
  }

  /**
   * What AgentGym's ALFWorld server returns with every step beside the text (the admissible commands),
   * and what the abstract state also shows: the instruction, the receptacle of the last go-to, the held object.
   */
  private stateInfo(): { instruction: string; location: string; holding: string; admissible_commands: string[] } {
    const s = this.state!;
    const held = s.tuples("holds").map((t) => this.game!.names.get(t[1]) ?? t[1]);
    return { instruction: this.task!.instruction, location: this.at, holding: held.join(", "), admissible_commands: [...this.commands.keys()] };
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
