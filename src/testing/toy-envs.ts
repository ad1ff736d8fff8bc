import { FREE_TEXT_SLOT, Rng, type Env, type ResetOptions, type ResetResult, type StateAbstraction, type StepResult, type Task } from "../core/index.ts";

/**
 * Small environments with a known optimum, in the abstract-state format ("page: kind" first), for
 * checking that a learner learns: a bandit, a chain, and a web shop in miniature.
 * Every one lists its actions, treats an unlisted action as an invalid no-op, and truncates.
 */
abstract class ToyEnv implements Env {
  protected state = "";
  protected actions: string[] = [];
  protected steps = 0;
  protected task: Task | undefined;
  protected rng = new Rng(0);
  constructor(protected readonly maxSteps: number) {}

  abstract tasks(count: number, seed?: number): Task[];
  protected abstract start(task: Task): void;
  /** Applies a listed action: the reward and whether the episode ends. */
  protected abstract apply(action: string): { reward: number; terminated: boolean };

  async reset(opts: ResetOptions = {}): Promise<ResetResult> {
    if (opts.seed !== undefined) this.rng = new Rng(opts.seed);
    this.task = opts.task ?? this.tasks(1, this.rng.randbelow(1_000_000))[0];
    this.steps = 0;
    this.start(this.task);
    return { observation: this.state, info: { task: this.task } };
  }

  async step(action: string): Promise<StepResult> {
    if (!this.task) throw new Error("reset() first");
    this.steps++;
    const listed =
      this.actions.includes(action) || this.actions.some((a) => a.includes(FREE_TEXT_SLOT) && action.startsWith(a.slice(0, a.indexOf(FREE_TEXT_SLOT))));
    const r = listed ? this.apply(action) : { reward: 0, terminated: false };
    return {
      observation: this.state,
      reward: r.reward,
      terminated: r.terminated,
      truncated: !r.terminated && this.steps >= this.maxSteps,
      info: listed ? {} : { invalid: true },
    };
  }

  availableActions(): string[] {
    return [...this.actions];
  }

  async close(): Promise<void> {}
}

/** K arms, one of which (fixed by the env's `best`) pays 1. Chance: 1/K. */
export class BanditEnv extends ToyEnv {
  constructor(
    readonly arms = 5,
    readonly best = 3,
  ) {
    super(1);
  }
  tasks(count: number): Task[] {
    return Array.from({ length: count }, (_, i) => ({ id: `bandit:${i}`, instruction: "pull the arm that pays" }));
  }
  protected start(task: Task): void {
    this.actions = Array.from({ length: this.arms }, (_, i) => `click[arm ${i}]`);
    this.state = `page: bandit\ninstruction: ${task.instruction}\n${this.actions.map((a) => a.slice(5)).join(" ")}`;
  }
  protected apply(action: string) {
    return { reward: action === `click[arm ${this.best}]` ? 1 : 0, terminated: true };
  }
}

/** The bandit's first page for an instruction (as `BanditEnv` shows it). */
export const banditPage = (instruction: string, arms = 5) =>
  `page: bandit\ninstruction: ${instruction}\n${Array.from({ length: arms }, (_, i) => `[arm ${i}]`).join(" ")}`;

/**
 * Synthetic support for a `BanditEnv` registered as `env` (`registerEnv(env, { synthetic })`): its page
 * is the abstract state and its arms the actions, so DreamGym's loop can run it.
 */
export function banditSyntheticSupport(env: string, arms = 5): { abstraction: StateAbstraction; initialState: (task: Task) => string } {
  return {
    abstraction: {
      env,
      abstract: (o) => o,
      actions: (s) => [...s.matchAll(/\[(arm \d+)\]/g)].map((m) => `click[${m[1]}]`),
      isTerminal: () => false,
      profile: "a bandit: click[arm i] ends the episode",
    },
    initialState: (task) => banditPage(task.instruction, arms),
  };
}

/** Positions 0..length; start at 0; reach the end (reward 1) within `maxSteps`. Chance is small. */
export class ChainEnv extends ToyEnv {
  private position = 0;
  constructor(
    readonly length = 6,
    maxSteps = 10,
  ) {
    super(maxSteps);
  }
  tasks(count: number): Task[] {
    return Array.from({ length: count }, (_, i) => ({ id: `chain:${i}`, instruction: "walk to the end of the corridor" }));
  }
  protected start(task: Task): void {
    this.position = 0;
    this.actions = ["click[left]", "click[right]"];
    this.render(task);
  }
  private render(task: Task) {
    this.state = `page: corridor\ninstruction: ${task.instruction}\nposition ${this.position} of ${this.length}\n[left] [right]`;
  }
  protected apply(action: string) {
    this.position = Math.max(0, this.position + (action === "click[right]" ? 1 : -1));
    this.render(this.task!);
    return this.position === this.length ? { reward: 1, terminated: true } : { reward: 0, terminated: false };
  }
}

const COLORS = ["red", "blue", "green", "black", "white", "yellow"];
const MATERIALS = ["wool", "cotton", "leather", "silk", "linen"];
const KINDS = ["hat", "scarf", "glove", "sock", "jacket", "boot"];
const SIZES = ["small", "medium", "large"];

interface ToyProduct {
  id: string;
  color: string;
  material: string;
  kind: string;
  price: number;
}

/**
 * A web shop in miniature: search → 6 results of the searched kind → an item with sizes → buy. The
 * reward is the share of (kind, color, material, size) the purchase matches; 1 is success.
 */
export class ShopToyEnv extends ToyEnv {
  private readonly products: ToyProduct[] = [];
  private page: "search" | "results" | "item" | "done" = "search";
  private results: ToyProduct[] = [];
  private item: ToyProduct | undefined;
  private size: string | undefined;

  constructor(maxSteps = 8) {
    super(maxSteps);
    const rng = new Rng(7);
    let n = 0;
    for (const kind of KINDS)
      for (const color of COLORS)
        for (const material of MATERIALS) {
          n++;
          this.products.push({ id: `p${(1000 + n * 37).toString(36)}x${n}`, color, material, kind, price: 5 + rng.randbelow(40) });
        }
  }

  tasks(count: number, seed = 0): Task[] {
    const rng = new Rng(seed);
    return Array.from({ length: count }, (_, i) => {
      const p = rng.choice(this.products);
      const size = rng.choice(SIZES);
      return { id: `shop:${seed}:${i}`, instruction: `i want a ${p.color} ${p.material} ${p.kind} in size ${size}`, target: { ...p, size } };
    });
  }

  protected start(task: Task): void {
    this.page = "search";
    this.item = undefined;
    this.size = undefined;
    this.render(task);
  }

  private render(task: Task) {
    const head = [`page: ${this.page}`, `instruction: ${task.instruction}`];
    if (this.page === "search") {
      this.actions = [`search[${FREE_TEXT_SLOT}]`];
      this.state = [...head, "[search box]"].join("\n");
    } else if (this.page === "results") {
      this.actions = ["click[back to search]", ...this.results.map((p) => `click[${p.id}]`)];
      this.state = [...head, "[back to search]", ...this.results.map((p) => `[${p.id}] ${p.color} ${p.material} ${p.kind} | $${p.price}.00`)].join("\n");
    } else if (this.page === "item") {
      const p = this.item!;
      this.actions = ["click[< prev]", ...SIZES.map((s) => `click[${s}]`), "click[buy now]"];
      this.state = [
        ...head,
        "[< prev]",
        `size: ${SIZES.map((s) => `[${s}]`).join(" ")}`,
        `${p.color} ${p.material} ${p.kind}`,
        `Price: $${p.price}.00`,
        "[buy now]",
      ].join("\n");
    } else {
      this.actions = [];
      this.state = [...head, "thank you"].join("\n");
    }
  }

  protected apply(action: string) {
    const task = this.task!;
    let reward = 0;
    let terminated = false;
    if (action.startsWith("search[")) {
      const words = new Set(action.slice(7, -1).toLowerCase().split(/\W+/));
      const kind = KINDS.find((k) => words.has(k));
      // Six products of the searched kind (else any), in an order fixed by the query.
      const pool = this.products.filter((p) => !kind || p.kind === kind);
      const rng = new Rng([...action].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 1_000_003, 7));
      const target = task.target as ToyProduct & { size: string };
      const shown = rng.sample(
        pool.filter((p) => p.id !== target.id),
        5,
      );
      if (pool.some((p) => p.id === target.id)) shown.splice(rng.randbelow(6), 0, target);
      this.results = shown;
      this.page = "results";
    } else if (action === "click[back to search]") {
      this.page = "search";
    } else if (action === "click[< prev]") {
      this.page = "results";
    } else if (this.page === "results") {
      this.item = this.results.find((p) => `click[${p.id}]` === action);
      this.size = undefined;
      this.page = "item";
    } else if (action === "click[buy now]") {
      const t = task.target as ToyProduct & { size: string };
      const p = this.item!;
      reward = [p.kind === t.kind, p.color === t.color, p.material === t.material, this.size === t.size].filter(Boolean).length / 4;
      terminated = true;
      this.page = "done";
    } else {
      this.size = action.slice(6, -1);
    }
    this.render(task);
    return { reward, terminated };
  }
}
