/**
 * A second environment of our own, unlike vault: "radio", a repair game told in prose. Free-text
 * commands, long episodes (a dozen steps or more for an expert, a 40-step limit), and a rare reward:
 * nothing at all until the radio plays (10, which ends the episode). The radio needs three parts,
 * hidden among six drawers; a part is taken from an open drawer, then fitted; switching the radio on
 * before all three are fitted only makes it crackle. Load it with
 * `dreamgym --env-module examples/radio/radio.ts <command> --env radio …`.
 */
import { orderEnforcing, registerEnv, scripted, withTimeLimit, type Env, type ResetOptions, type StepResult, type Task } from "dreamgym";
import { Rng } from "dreamgym/core";

const PARTS = ["valve", "coil", "dial", "fuse", "speaker", "antenna", "battery", "knob"];
const DRAWERS = 6;
const INSTRUCTION = "Repair the radio on the bench and switch it on.";
const SPLITS: Record<string, [number, number]> = { train: [0, 300], test: [5000, 5100] };
const words = ["", "one", "two", "three", "four", "five", "six"];

interface Layout {
  /** The three parts the radio lacks. */
  needed: string[];
  /** What each drawer holds (the needed parts and a few others). */
  drawers: string[][];
}

/** The parts the radio lacks and what lies in each drawer, from the task's number. */
function layoutOf(task: Task): Layout {
  const rng = new Rng(Number(task.layout));
  const parts = rng.sample(PARTS, 5);
  const drawers: string[][] = Array.from({ length: DRAWERS }, () => []);
  for (const p of parts) drawers[rng.randbelow(DRAWERS)].push(p);
  return { needed: parts.slice(0, 3).sort(), drawers };
}

const list = (xs: readonly string[]) =>
  xs.length === 0
    ? "nothing"
    : xs.length === 1
      ? `a ${xs[0]}`
      : `${xs
          .slice(0, -1)
          .map((x) => `a ${x}`)
          .join(", ")} and a ${xs.at(-1)}`;

/** The game; `orderEnforcing` and `withTimeLimit` add the call-order checks and the step limit. */
export class RadioEnv implements Env {
  private layout!: Layout;
  private drawers: string[][] = [];
  private open = new Set<number>();
  private held: string[] = [];
  private fitted: string[] = [];
  private rng = new Rng(0);
  private readonly taskList: Task[];

  constructor(opts: { split?: string } = {}) {
    const range = SPLITS[opts.split ?? "train"];
    if (!range) throw new Error(`radio has splits train and test, not ${opts.split}`);
    this.taskList = Array.from({ length: range[1] - range[0] }, (_, i) => ({ id: `radio:${range[0] + i}`, instruction: INSTRUCTION, layout: range[0] + i }));
  }

  tasks(): Task[] {
    return this.taskList;
  }

  /** The scene in prose: the radio, the open drawers and what the agent holds. */
  private scene(): string {
    const missing = this.layout.needed.filter((p) => !this.fitted.includes(p));
    const radio = missing.length === 0 ? "The radio on the bench looks whole again." : `The radio on the bench is missing its ${missing.join(", ")}.`;
    const drawers = Array.from({ length: DRAWERS }, (_, d) => d);
    const open = drawers.filter((d) => this.open.has(d)).map((d) => `Drawer ${words[d + 1]} is open and holds ${list(this.drawers[d])}.`);
    const closed = drawers.filter((d) => !this.open.has(d)).map((d) => `drawer ${words[d + 1]}`);
    const shut =
      closed.length === 0
        ? []
        : [
            `The closed ${closed.length === 1 ? "drawer is" : "drawers are"} ${closed.length === 1 ? closed[0] : `${closed.slice(0, -1).join(", ")} and ${closed.at(-1)}`}.`,
          ];
    return [radio, ...open, ...shut, `You hold ${list(this.held)}.`].join(" ");
  }

  /** The first observation of a task, without playing it (the synthetic env's start state). */
  static intro(task: Task): string {
    const env = new RadioEnv();
    env.begin(task);
    return `You step into the workshop. ${env.scene()}`;
  }

  private begin(task: Task): void {
    this.layout = layoutOf(task);
    this.drawers = this.layout.drawers.map((d) => [...d]);
    this.open = new Set();
    this.held = [];
    this.fitted = [];
  }

  async reset(opts: ResetOptions = {}): Promise<{ observation: string; info: { task: Task } }> {
    if (opts.seed !== undefined) this.rng = new Rng(opts.seed);
    const task = opts.task ?? this.taskList[this.rng.randbelow(this.taskList.length)];
    this.begin(task);
    return { observation: `You step into the workshop. ${this.scene()}`, info: { task } };
  }

  async step(action: string): Promise<StepResult> {
    const m = /^(open|close) drawer (one|two|three|four|five|six)$|^take (\w+)$|^fit (\w+)$|^(switch on|look)$/.exec(action.trim().toLowerCase());
    let feedback: string;
    let reward = 0;
    let terminated = false;
    let invalid = false;
    if (!m) {
      invalid = true;
      feedback = "Nothing happens.";
    } else if (m[1]) {
      const d = words.indexOf(m[2]) - 1;
      if (m[1] === "open") {
        feedback = this.open.has(d) ? `Drawer ${m[2]} is already open.` : `You pull drawer ${m[2]} open.`;
        this.open.add(d);
      } else {
        feedback = this.open.delete(d) ? `You push drawer ${m[2]} shut.` : `Drawer ${m[2]} is already closed.`;
      }
    } else if (m[3]) {
      const d = [...this.open].find((i) => this.drawers[i].includes(m[3]));
      if (d === undefined) feedback = `You see no ${m[3]} within reach.`;
      else {
        this.drawers[d].splice(this.drawers[d].indexOf(m[3]), 1);
        this.held.push(m[3]);
        feedback = `You take the ${m[3]}.`;
      }
    } else if (m[4]) {
      if (!this.held.includes(m[4])) feedback = `You are not holding a ${m[4]}.`;
      else if (!this.layout.needed.includes(m[4]) || this.fitted.includes(m[4])) feedback = `The ${m[4]} does not fit the radio.`;
      else {
        this.held.splice(this.held.indexOf(m[4]), 1);
        this.fitted.push(m[4]);
        feedback = `The ${m[4]} clicks into place.`;
      }
    } else if (m[5] === "switch on") {
      if (this.fitted.length === this.layout.needed.length) {
        reward = 10;
        terminated = true;
        feedback = "The radio hums, then music fills the workshop!";
      } else feedback = "The radio crackles and dies.";
    } else feedback = "You look around the workshop.";
    return { observation: `${feedback} ${this.scene()}`, reward, terminated, truncated: false, info: invalid ? { invalid: true } : {} };
  }

  availableActions(): undefined {
    return undefined; // a parser game: any text is a command
  }

  async close(): Promise<void> {}

  /** The expert: fit what it holds, take a needed part it sees, open the next closed drawer, then switch on. */
  expertAction(): string {
    const missing = this.layout.needed.filter((p) => !this.fitted.includes(p));
    if (missing.length === 0) return "switch on";
    const holding = this.held.find((p) => missing.includes(p));
    if (holding) return `fit ${holding}`;
    const seen = missing.find((p) => [...this.open].some((d) => this.drawers[d].includes(p)));
    if (seen) return `take ${seen}`;
    const closed = Array.from({ length: DRAWERS }, (_, i) => i).find((i) => !this.open.has(i));
    return closed === undefined ? "look" : `open drawer ${words[closed + 1]}`;
  }
}

/** Reads the scene and picks a plausible command at random: opens and closes drawers, takes and fits what it sees, switches on too early. */
function tinkerer(seed: number) {
  const rng = new Rng(seed);
  return scripted("tinker", ({ observation }) => {
    const seen = [...observation.matchAll(/holds ([^.]*)\./g)]
      .flatMap((x) => x[1].split(/, | and /))
      .filter((x) => x !== "nothing")
      .map((x) => x.replace(/^a /, ""));
    const held = (/You hold ([^.]*)\./.exec(observation)?.[1] ?? "nothing")
      .split(/, | and /)
      .filter((x) => x !== "nothing")
      .map((x) => x.replace(/^a /, ""));
    const options = [
      ...words.slice(1).map((w) => `open drawer ${w}`),
      `close drawer ${rng.choice(words.slice(1))}`,
      ...seen.map((p) => `take ${p}`),
      ...held.flatMap((p) => [`fit ${p}`, `fit ${p}`]),
      "switch on",
      "look",
      "kick radio",
    ];
    return rng.choice(options);
  });
}

/** A scene without the last command's feedback: what is open, held and missing, so a situation reads the same whatever was just said. */
function sceneOf(observation: string): string {
  if (observation.startsWith("The radio hums")) return "The radio plays.";
  const at = observation.indexOf("The radio on the bench");
  return at < 0 ? observation : observation.slice(at);
}

registerEnv<RadioEnv>("radio", {
  description: "radio (example): a repair game in prose, free-text commands, long episodes, a reward only at the end",
  create: (opts) => orderEnforcing(withTimeLimit(new RadioEnv(opts), opts.maxSteps ?? 40)),
  splits: { train: "train", eval: "test" },
  // Dense as far as the API goes (any step may pay), rare in fact: only the radio playing pays.
  rewards: { min: 0, max: 10, dense: true },
  policies: {
    expert: (env) => scripted("expert", () => env.expertAction()),
    tinker: (_env, { seed }) => tinkerer(seed),
  },
  synthetic: () => ({
    abstraction: {
      env: "radio",
      abstract: sceneOf,
      actions: () => undefined,
      isState: (state: string) =>
        state === "The radio plays." || /^The radio on the bench (is missing its [a-z, ]+|looks whole again)\. .*You hold [a-z, ]+\.$/.test(state),
      isTerminal: (state: string) => state === "The radio plays.",
      profile:
        'radio, a repair game told in prose. A state is the scene: what the radio on the bench is missing, which of the six drawers are open and what each holds, and what the agent holds; "The radio plays." at the end. Commands: open drawer <one..six>, close drawer <n>, take <part>, fit <part>, switch on, look. Only switching on the radio with its three missing parts fitted pays (10) and ends the episode; every other step pays 0.',
    },
    initialState: (task: Task) => RadioEnv.intro(task),
    maxSteps: 40, // the real env's step limit (the synthetic env's default is 15)
    policies: ["tinker"],
  }),
  check: { invalidFeedback: (observation) => observation.startsWith("Nothing happens."), probeActions: ["look", "open drawer one", "kick radio"] },
});
