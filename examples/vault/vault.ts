/**
 * An environment of our own, brought to dreamgym: "vault", a small parser game. Free-text commands
 * (no action list), dense rewards (+1 for each gem and the key, +5 for opening the chest, which ends
 * the episode), four rooms per task laid out from the task's number. Load it into any command with
 * `dreamgym --env-module examples/vault/vault.ts <command> --env vault …`. Besides the Env contract it
 * plugs in what a built-in env can: its own embedded experience model and a task generator for the
 * curriculum (see the end of the file).
 */
import { orderEnforcing, registerEnv, scripted, withTimeLimit, type EnvSpec, type ExperienceModelContext } from "dreamgym";
// The Env contract and the plug points' interfaces.
import {
  abstractTrajectory,
  Rng,
  type Env,
  type ExperienceModel,
  type PredictInput,
  type Prediction,
  type ResetOptions,
  type RewardSpec,
  type StateAbstraction,
  type StepResult,
  type Task,
  type TaskGenerator,
  type TrajectoryStore,
} from "dreamgym/core";

const ROOMS = ["hall", "library", "kitchen", "cellar", "garden", "study", "attic", "pantry"];
const INSTRUCTION = "Find the key and open the chest; pick up every gem you see on the way.";
const SPLITS: Record<string, [number, number]> = { train: [0, 200], test: [1000, 1100] };

interface Layout {
  rooms: string[]; // grid cells 0 1 / 2 3
  items: string[][]; // items lying in each room
  start: number; // the cell the agent starts in: 0, or a curriculum variant's
}

/**
 * Four rooms in a 2×2 grid, two gems, a key and a chest, placed from the task's number; the agent
 * starts in the first room, or where a curriculum variant says (`start`). (`items`, which placed the
 * gems, the key and the chest from a number of their own, is read for the variants of runs from before.)
 */
function layoutOf(task: Task): Layout {
  const rng = new Rng(Number(task.layout));
  const rooms = rng.sample(ROOMS, 4);
  const place = task.items === undefined ? rng : new Rng(Number(task.items));
  const items: string[][] = [[], [], [], []];
  items[place.randbelow(4)].push("gem");
  items[place.randbelow(4)].push("gem");
  items[place.randbelow(4)].push("key");
  items[1 + place.randbelow(3)].push("chest");
  return { rooms, items, start: task.start === undefined ? 0 : Number(task.start) };
}

const EXITS: Record<number, Record<string, number>> = {
  0: { east: 1, south: 2 },
  1: { west: 0, south: 3 },
  2: { north: 0, east: 3 },
  3: { north: 1, west: 2 },
};

function describe(layout: Layout, at: number, items: string[][], carried: string[]): string {
  const list = (xs: string[]) => (xs.length ? xs.map((i) => `a ${i}`).join(", ") : "nothing");
  return `You are in the ${layout.rooms[at]}. Exits: ${Object.keys(EXITS[at]).join(", ")}. You see: ${list(items[at])}. You carry: ${list(carried)}.`;
}

/** The game itself; `orderEnforcing` and `withTimeLimit` add the call-order checks and the step limit. */
export class VaultEnv implements Env {
  private layout!: Layout;
  private at = 0;
  private items: string[][] = [];
  private carried: string[] = [];
  private rng = new Rng(0);
  private readonly taskList: Task[];

  constructor(opts: { split?: string } = {}) {
    const range = SPLITS[opts.split ?? "train"];
    if (!range) throw new Error(`vault has splits train and test, not ${opts.split}`);
    this.taskList = Array.from({ length: range[1] - range[0] }, (_, i) => ({ id: `vault:${range[0] + i}`, instruction: INSTRUCTION, layout: range[0] + i }));
  }

  tasks(): Task[] {
    return this.taskList;
  }

  /** The first observation of a task, without playing it (the synthetic env's start state). */
  static intro(task: Task): string {
    const layout = layoutOf(task);
    return `You wake up. ${describe(layout, layout.start, layout.items, [])}`;
  }

  async reset(opts: ResetOptions = {}): Promise<{ observation: string; info: { task: Task } }> {
    if (opts.seed !== undefined) this.rng = new Rng(opts.seed);
    const task = opts.task ?? this.taskList[this.rng.randbelow(this.taskList.length)];
    this.layout = layoutOf(task);
    this.items = this.layout.items.map((r) => [...r]);
    this.at = this.layout.start;
    this.carried = [];
    return { observation: VaultEnv.intro(task), info: { task } };
  }

  async step(action: string): Promise<StepResult> {
    const [verb, ...rest] = action.trim().toLowerCase().split(/\s+/);
    const object = rest.join(" ");
    let feedback: string;
    let reward = 0;
    let terminated = false;
    let invalid = false;
    if (verb === "go" && EXITS[this.at][object] !== undefined) {
      this.at = EXITS[this.at][object];
      feedback = `You go ${object}.`;
    } else if (verb === "go") {
      feedback = "You can't go that way.";
    } else if (verb === "take" && object !== "chest" && this.items[this.at].includes(object)) {
      this.items[this.at].splice(this.items[this.at].indexOf(object), 1);
      this.carried.push(object);
      reward = 1;
      feedback = `You take the ${object}.`;
    } else if (verb === "take") {
      feedback = object === "chest" ? "The chest is too heavy." : "You don't see that here.";
    } else if (verb === "open" && object === "chest" && this.items[this.at].includes("chest")) {
      if (this.carried.includes("key")) {
        reward = 5;
        terminated = true;
        feedback = "You unlock the chest and find the treasure!";
      } else feedback = "The chest is locked.";
    } else if (verb === "open") {
      feedback = "You don't see a chest here.";
    } else if (verb === "look" && object === "") {
      feedback = "You look around.";
    } else if (verb === "inventory" && object === "") {
      feedback = "You check your pockets.";
    } else {
      invalid = true;
      feedback = "I don't understand that.";
    }
    const observation = `${feedback} ${describe(this.layout, this.at, this.items, this.carried)}`;
    return { observation, reward, terminated, truncated: false, info: invalid ? { invalid: true } : {} };
  }

  availableActions(): undefined {
    return undefined; // a parser game: any text is a command
  }

  async close(): Promise<void> {}

  /** The expert's next command: gems and the key where it stands, else towards the nearest one, else the chest. */
  expertAction(): string {
    const here = this.items[this.at];
    for (const item of ["gem", "key"]) if (here.includes(item)) return `take ${item}`;
    if (here.includes("chest") && this.carried.includes("key") && !this.items.some((r) => r.includes("gem"))) return "open chest";
    const wanted = (r: number) =>
      this.items[r].includes("gem") || this.items[r].includes("key") || (this.carried.includes("key") && this.items[r].includes("chest"));
    // Breadth-first search over the grid for the nearest room holding something wanted.
    const queue: [number, string | undefined][] = [[this.at, undefined]];
    const seen = new Set([this.at]);
    while (queue.length) {
      const [room, first] = queue.shift()!;
      if (first && wanted(room)) return `go ${first}`;
      for (const [dir, next] of Object.entries(EXITS[room])) if (!seen.has(next)) seen.add(next), queue.push([next, first ?? dir]);
    }
    return "open chest";
  }
}

/** Reads exits and items off the observation and picks a command at random (some of them wrong). */
function wanderer(seed: number) {
  const rng = new Rng(seed);
  return scripted("wander", ({ observation }) => {
    const exits = /Exits: ([^.]*)\./.exec(observation)?.[1].split(", ") ?? [];
    const items = (/You see: ([^.]*)\./.exec(observation)?.[1] ?? "")
      .split(", ")
      .filter((i) => i !== "nothing")
      .map((i) => i.replace(/^a /, ""));
    const options = [
      ...exits.map((e) => `go ${e}`),
      ...items.map((i) => (i === "chest" ? "open chest" : `take ${i}`)),
      "look",
      "inventory",
      "go up",
      "take lamp",
      "dance",
    ];
    return rng.choice(options);
  });
}

/** What the buffer's real episodes recorded after a command in a state. */
interface Outcome {
  task: string;
  next: string;
  reward: number;
  terminated: boolean;
}

/** A state and a command as the game reads it (case and spacing do not matter to its parser). */
const stepKey = (state: string, command: string) => `${state}\t${command.trim().toLowerCase().split(/\s+/).join(" ")}`;

/**
 * Vault's own embedded experience model (the spec's `experienceModel`): a table of the buffer's real
 * transitions by (state, command). A recorded step replays what followed it, in the episode's own
 * layout where the data has it, else what followed most often; any other command is an invalid no-op,
 * so a policy cannot earn a reward the data never showed in that state. Its `u` (for pessimism) is
 * how much the recorded rewards and ends of the step disagree.
 */
export class VaultTableModel implements ExperienceModel {
  readonly id = "vault-table-v1";
  /** It reads its own table, not the demos the synthetic env would retrieve. */
  readonly usesDemos = false;
  private readonly abstraction: StateAbstraction;
  private readonly rewards: RewardSpec;
  private readonly table = new Map<string, Outcome[]>();
  private fittedOn: TrajectoryStore | undefined;

  constructor(context: ExperienceModelContext) {
    this.abstraction = context.abstraction;
    this.rewards = context.rewards;
  }

  /** Reads the buffer's real episodes of this env (once per buffer). */
  async fit(buffer: TrajectoryStore): Promise<void> {
    if (this.fittedOn === buffer) return;
    this.fittedOn = buffer;
    this.table.clear();
    for (const t of buffer.trajectories({ env: this.abstraction.env, source: "real" })) {
      for (const s of abstractTrajectory(t, this.abstraction).steps) {
        const key = stepKey(s.observation, s.action);
        const outcomes = this.table.get(key) ?? [];
        outcomes.push({ task: t.task.id, next: s.next_observation, reward: s.reward, terminated: s.terminated });
        this.table.set(key, outcomes);
      }
    }
  }

  async predict({ task, state, action }: PredictInput): Promise<Prediction> {
    const recorded = this.table.get(stepKey(state, action)) ?? [];
    if (recorded.length === 0) return { nextState: state, reward: 0, terminated: false, info: { invalid: true, unrecorded: true } };
    const own = recorded.filter((o) => o.task === (task.world ?? task.id));
    const pool = own.length > 0 ? own : recorded;
    // The most frequent outcome; ties go to the first in text order, so the same data always answers the same.
    const counts = new Map<string, number>();
    for (const o of pool) {
      const k = JSON.stringify([o.next, o.reward, o.terminated]);
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    const [best] = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0];
    const [nextState, reward, terminated] = JSON.parse(best) as [string, number, boolean];
    return { nextState, reward, terminated: terminated || this.abstraction.isTerminal(nextState), info: { recorded: pool.length, u: this.disagreement(pool) } };
  }

  /** The larger of the rewards' spread (over half the reward range) and how split the outcomes are on ending. */
  private disagreement(pool: readonly Outcome[]): number {
    const mean = pool.reduce((s, o) => s + o.reward, 0) / pool.length;
    const sd = Math.sqrt(pool.reduce((s, o) => s + (o.reward - mean) ** 2, 0) / pool.length);
    const ended = pool.filter((o) => o.terminated).length / pool.length;
    const u = Math.max(Math.min(1, sd / Math.max((this.rewards.max - this.rewards.min) / 2, 1e-9)), 2 * Math.min(ended, 1 - ended));
    return Math.round(u * 1e6) / 1e6;
  }
}

/**
 * Vault's own task variation for the curriculum (the spec's `taskGenerator`): the parent's world (its
 * rooms and what lies in them) entered from another room. The variant names the parent's world
 * (`world`), so a model that learnt the world from the parent's record knows where things lie. (Items
 * placed anew, as this generator once made, are a world no record shows: the model could only guess
 * it, and 76–91% of the synthetic successes on such variants failed in the real game.) Every start can
 * be won; a variant whose layout and start a known task already has is a duplicate by its key.
 */
export class VaultStartGenerator implements TaskGenerator {
  readonly name = "vault-start";

  async generate(parent: Task, count: number, rng: Rng): Promise<{ tasks: Task[]; infeasible: number }> {
    const from = layoutOf(parent).start;
    const starts = rng.sample(
      [0, 1, 2, 3].filter((c) => c !== from),
      Math.min(count, 3),
    );
    const tasks = starts.map((start) => ({
      ...parent,
      id: `${parent.id}~start${start}`,
      start,
      world: parent.world ?? parent.id,
    }));
    return { tasks, infeasible: 0 };
  }

  key(task: Task): string {
    return JSON.stringify(layoutOf(task));
  }
}

export const vaultSpec: EnvSpec<VaultEnv> = {
  description: "vault (example): a four-room parser game, free-text commands, dense rewards",
  create: (opts) => orderEnforcing(withTimeLimit(new VaultEnv(opts), opts.maxSteps ?? 20)),
  splits: { train: "train", eval: "test" },
  rewards: { min: 0, max: 5, dense: true },
  // success: the default, a return at or above rewards.max (the chest's 5)
  policies: {
    expert: (env) => scripted("expert", () => env.expertAction()),
    wander: (_env, { seed }) => wanderer(seed),
  },
  synthetic: () => ({
    abstraction: {
      env: "vault",
      // The state without the last command's feedback (the room, its exits and items, what the agent
      // carries), so the same situation reads the same in every layout; the end has a state of its own.
      abstract: (observation: string) =>
        observation.startsWith("You unlock the chest") ? "You found the treasure." : observation.slice(Math.max(0, observation.indexOf("You are in the "))),
      actions: () => undefined,
      isState: (state: string) =>
        state === "You found the treasure." || /^You are in the \w+\. Exits: [a-z, ]+\. You see: [a-z, ]+\. You carry: [a-z, ]+\.$/.test(state),
      isTerminal: (state: string) => state === "You found the treasure.",
      // Its four sentences (the room, its exits, what lies there, what the agent carries), which a
      // command changes one by one; the room and its exits are where the agent is.
      parts: (state: string) => (state.startsWith("You are in the ") ? state.split(/(?<=\.) (?=You |Exits: )/) : undefined),
      place: (state: string) => /^You are in the \w+\. Exits: [a-z, ]+\./.exec(state)?.[0],
      profile:
        'vault, a four-room parser game. A state is "You are in the <room>. Exits: <directions>. You see: <items or nothing>. You carry: <items or nothing>.", or "You found the treasure." at the end. Commands: go <direction>, take <item>, open chest, look, inventory. Taking a gem or the key gives 1; opening the chest while carrying the key gives 5 and ends the episode.',
    },
    initialState: (task: Task) => VaultEnv.intro(task),
    maxSteps: 20, // the real env's step limit (the synthetic env's default is 15)
    policies: ["wander"],
  }),
  check: { invalidFeedback: (observation) => observation.startsWith("I don't understand that.") },
  // Plug points: the same parts a built-in env gives the framework.
  experienceModel: (context) => new VaultTableModel(context),
  taskGenerator: () => new VaultStartGenerator(),
  // A task is a layout, not its sentence (every task says the same): an LLM's free-text tasks would have no rooms.
  llmTasks: false,
};
registerEnv("vault", vaultSpec);
