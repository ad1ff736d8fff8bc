/**
 * An environment of our own, brought to dreamgym: "vault", a small parser game. Free-text commands
 * (no action list), dense rewards (+1 for each gem and the key, +5 for opening the chest, which ends
 * the episode), four rooms per task laid out from the task's number. Load it into any command with
 * `dreamgym --env-module examples/vault/vault.ts <command> --env vault …`.
 */
import { orderEnforcing, registerEnv, Rng, scripted, withTimeLimit, type Env, type ResetOptions, type StepResult, type Task } from "dreamgym";

const ROOMS = ["hall", "library", "kitchen", "cellar", "garden", "study", "attic", "pantry"];
const INSTRUCTION = "Find the key and open the chest; pick up every gem you see on the way.";
const SPLITS: Record<string, [number, number]> = { train: [0, 200], test: [1000, 1100] };

interface Layout {
  rooms: string[]; // grid cells 0 1 / 2 3; the agent starts in rooms[0]
  items: string[][]; // items lying in each room
}

/** Four rooms in a 2×2 grid, two gems, a key and a chest, placed from the task's number. */
function layoutOf(task: Task): Layout {
  const rng = new Rng(Number(task.layout));
  const rooms = rng.sample(ROOMS, 4);
  const items: string[][] = [[], [], [], []];
  items[rng.randbelow(4)].push("gem");
  items[rng.randbelow(4)].push("gem");
  items[rng.randbelow(4)].push("key");
  items[1 + rng.randbelow(3)].push("chest");
  return { rooms, items };
}

const EXITS: Record<number, Record<string, number>> = {
  0: { east: 1, south: 2 }, 1: { west: 0, south: 3 }, 2: { north: 0, east: 3 }, 3: { north: 1, west: 2 },
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
    return `You wake up. ${describe(layout, 0, layout.items, [])}`;
  }

  async reset(opts: ResetOptions = {}): Promise<{ observation: string; info: { task: Task } }> {
    if (opts.seed !== undefined) this.rng = new Rng(opts.seed);
    const task = opts.task ?? this.taskList[this.rng.randbelow(this.taskList.length)];
    this.layout = layoutOf(task);
    this.items = this.layout.items.map((r) => [...r]);
    this.at = 0;
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
    const wanted = (r: number) => this.items[r].includes("gem") || this.items[r].includes("key") || (this.carried.includes("key") && this.items[r].includes("chest"));
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
    const items = (/You see: ([^.]*)\./.exec(observation)?.[1] ?? "").split(", ").filter((i) => i !== "nothing").map((i) => i.replace(/^a /, ""));
    const options = [...exits.map((e) => `go ${e}`), ...items.map((i) => (i === "chest" ? "open chest" : `take ${i}`)), "look", "inventory", "go up", "take lamp", "dance"];
    return rng.choice(options);
  });
}

registerEnv<VaultEnv>("vault", {
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
      isState: (state: string) => state === "You found the treasure." || /^You are in the \w+\. Exits: [a-z, ]+\. You see: [a-z, ]+\. You carry: [a-z, ]+\.$/.test(state),
      isTerminal: (state: string) => state === "You found the treasure.",
      profile: "vault, a four-room parser game. A state is \"You are in the <room>. Exits: <directions>. You see: <items or nothing>. You carry: <items or nothing>.\", or \"You found the treasure.\" at the end. Commands: go <direction>, take <item>, open chest, look, inventory. Taking a gem or the key gives 1; opening the chest while carrying the key gives 5 and ends the episode.",
    },
    initialState: (task: Task) => VaultEnv.intro(task),
    maxSteps: 20, // the real env's step limit (the synthetic env's default is 15)
    policies: ["wander"],
  }),
  check: { invalidFeedback: (observation) => observation.startsWith("I don't understand that.") },
});
