import {
  InvalidConfigError,
  pickKind,
  requestRng,
  type Oracle,
  type OracleAnswer,
  type OracleNoise,
  type RewardNoiseKind,
  type Rng,
  type StateNoiseKind,
} from "../../core/index.ts";
import { pyFloat, type Catalogue, type Product } from "./catalogue.ts";
import { pageText, renderItemPage } from "./pages.ts";
import { webshopAbstraction } from "./state-abstraction.ts";
import { WebShopEnv, webshopTask } from "./webshop-env.ts";

/** A real env that has played a prefix of an episode, and the abstract states it passed. */
interface Replay {
  env: WebShopEnv;
  states: string[];
  done: boolean;
  last: { reward: number; terminated: boolean; invalid: boolean };
}

export interface WebShopOracleOptions {
  noise: OracleNoise;
  dataDir?: string;
  /** Real envs kept at the end of an episode prefix, so the next step of that episode is one env step. @default 256 */
  cacheSize?: number;
}

const kindOf = (state: string) => /^page: (\S+)/.exec(state)?.[1] ?? "";

/**
 * The experience model that knows the truth: it replays an episode's actions in a real WebShop env
 * (abstract states, as the synthetic env shows them) and corrupts the step by the noise's seeded
 * draws. Catalogue goals only (task ids `webshop:<goal index>`): a task generated with a goal object
 * of its own does not travel in the prompt.
 */
export class WebShopOracle implements Oracle {
  readonly catalogue: Catalogue;
  private readonly abstraction;
  private readonly byTitle = new Map<string, Product>();
  private readonly replays = new Map<string, Replay>();
  private readonly free: WebShopEnv[] = [];
  private readonly noise: Required<Omit<OracleNoise, "rewardKinds" | "stateKinds">> & Pick<OracleNoise, "rewardKinds" | "stateKinds">;
  private readonly rewardKinds: Partial<Record<RewardNoiseKind, number>>;
  private readonly stateKinds: Partial<Record<StateNoiseKind, number>>;
  private readonly cacheSize: number;
  private readonly dataDir?: string;
  /** Env steps taken, and steps saved by the prefix cache. */
  readonly stats = { requests: 0, envSteps: 0, cachedSteps: 0 };

  constructor(opts: WebShopOracleOptions) {
    const { epsilonR, epsilonP } = opts.noise;
    for (const [k, v] of Object.entries({ epsilonR, epsilonP })) {
      if (!(v >= 0 && v <= 1)) throw new InvalidConfigError(`the oracle's ${k} must be in [0, 1], got ${v}`);
    }
    this.noise = { seed: 0, ...opts.noise };
    this.rewardKinds = opts.noise.rewardKinds ?? { "false-success": 1, miss: 1, "wrong-score": 1 };
    this.stateKinds = opts.noise.stateKinds ?? { "other-product": 1, "drop-element": 1, "wrong-kind": 1 };
    this.cacheSize = opts.cacheSize ?? 256;
    this.dataDir = opts.dataDir;
    const env = new WebShopEnv({ split: "all", dataDir: opts.dataDir, maxSteps: 10_000 });
    this.catalogue = env.catalogue;
    this.free.push(env);
    this.abstraction = webshopAbstraction(this.catalogue);
    for (const p of this.catalogue.products) if (!this.byTitle.has(p.Title.trim())) this.byTitle.set(p.Title.trim(), p);
  }

  /** The step after `actions` (the episode's actions, this one last) of task `taskId`. */
  async answer(taskId: string, actions: readonly string[]): Promise<OracleAnswer> {
    this.stats.requests++;
    if (actions.length === 0) throw new InvalidConfigError("the oracle needs the step's action");
    const m = /^webshop:(\d+)$/.exec(taskId);
    if (!m || Number(m[1]) >= this.catalogue.goals.length) {
      throw new InvalidConfigError(`the oracle plays WebShop catalogue goals (task ids webshop:<goal index>), not "${taskId}"`);
    }
    const r = await this.replay(taskId, Number(m[1]), actions);
    const real = { nextState: r.states.at(-1)!, ...r.last };
    const action = actions.at(-1)!;
    const rng = requestRng(this.noise.seed, taskId, actions);
    const rewardDraw = rng.random();
    const stateDraw = rng.random();
    let next = real.nextState;
    let reward = real.reward;
    let terminated = real.terminated;
    const noise: OracleAnswer["noise"] = {};
    if (rewardDraw < this.noise.epsilonR) {
      const applicable: RewardNoiseKind[] = [];
      if (!(terminated && reward >= 0.99)) applicable.push("false-success");
      if (terminated && reward > 0.01) applicable.push("miss");
      if (terminated) applicable.push("wrong-score");
      const kind = pickKind(rng, this.rewardKinds, applicable);
      if (kind) {
        noise.reward = kind;
        reward = kind === "false-success" ? 1 : kind === "miss" ? 0 : wrongScore(rng, reward);
        terminated = true;
        next = `page: done\ninstruction: \nbought ${this.boughtAsin(r.states)}\nscore: ${pyFloat(reward)}`;
      }
    } else if (stateDraw < this.noise.epsilonP) {
      const options = this.stateCorruptions(next, r.states.slice(0, -1), rng);
      const kind = pickKind(rng, this.stateKinds, Object.keys(options) as StateNoiseKind[]);
      if (kind) {
        noise.state = kind;
        next = options[kind]!();
      }
    }
    const did = `Replayed ${actions.length} action${actions.length === 1 ? "" : "s"} of ${taskId} in the real WebShop env: ${action} → page: ${kindOf(real.nextState)}${real.invalid ? " (invalid there: nothing changed)" : ""}${real.terminated ? `, reward ${real.reward}` : ""}.`;
    const changed = noise.reward
      ? ` Noise: the reward is corrupted (${noise.reward}: ends with ${reward}).`
      : noise.state
        ? ` Noise: the next state is corrupted (${noise.state}).`
        : "";
    return { reasoning: did + changed, next_state: next, reward, terminated, real, noise };
  }

  /** The real env after `actions`, from the longest cached prefix (else from the start). */
  private async replay(taskId: string, goalIndex: number, actions: readonly string[]): Promise<Replay> {
    let from = actions.length - 1;
    let r: Replay | undefined;
    for (; from >= 1; from--) {
      const key = JSON.stringify([taskId, actions.slice(0, from)]);
      r = this.replays.get(key);
      if (r) {
        this.replays.delete(key);
        this.stats.cachedSteps += from;
        break;
      }
    }
    if (!r) {
      from = 0;
      const env = this.free.pop() ?? new WebShopEnv({ split: "all", dataDir: this.dataDir, maxSteps: 10_000 });
      const start = await env.reset({ task: webshopTask(this.catalogue, goalIndex), seed: 0 });
      r = { env, states: [this.abstraction.abstract(start.observation, start.info)], done: false, last: { reward: 0, terminated: false, invalid: false } };
    }
    for (const a of actions.slice(from)) {
      if (r.done) {
        // Past the real episode's end (only noise could lead here): the end page again, nothing earned.
        r.states.push(r.states.at(-1)!);
        r.last = { reward: 0, terminated: true, invalid: true };
        continue;
      }
      const x = await r.env.step(a);
      this.stats.envSteps++;
      r.states.push(this.abstraction.abstract(x.observation, x.info));
      r.done = x.terminated || x.truncated;
      r.last = { reward: x.reward, terminated: x.terminated, invalid: x.info.invalid === true };
    }
    if (!r.done) {
      // Kept for the episode's next step; the oldest prefixes go first.
      this.replays.set(JSON.stringify([taskId, actions]), { ...r, states: [...r.states] });
      if (this.replays.size > this.cacheSize) {
        const [oldest, old] = this.replays.entries().next().value!;
        this.replays.delete(oldest);
        this.free.push(old.env);
      }
      // The cached replay owns the env now: return a copy of its view.
      return { ...r };
    }
    this.free.push(r.env);
    return r;
  }

  /** The product a false success claims was bought: the one on the page, else the first listed, else the last seen. */
  private boughtAsin(states: readonly string[]): string {
    for (let i = states.length - 1; i >= 0; i--) {
      const p = this.productOn(states[i]);
      if (p) return p.asin;
      const listed = /^\[([a-z0-9]{10})\] /m.exec(states[i]);
      if (listed) return listed[1].toUpperCase();
    }
    return "none";
  }

  private productOn(state: string): Product | undefined {
    for (const line of state.split("\n").slice(2)) {
      const p = this.byTitle.get(line.trim());
      if (p) return p;
    }
    return undefined;
  }

  /** The state corruptions that apply to a next state (each a thunk), given the episode's earlier real states. */
  private stateCorruptions(state: string, earlier: readonly string[], rng: Rng): Partial<Record<StateNoiseKind, () => string>> {
    const kind = kindOf(state);
    const lines = state.split("\n");
    const out: Partial<Record<StateNoiseKind, () => string>> = {};
    const randomProduct = (not: Set<string>) => {
      for (let i = 0; i < 20; i++) {
        const p = this.catalogue.products[rng.randbelow(this.catalogue.products.length)];
        if (!not.has(p.asin)) return p;
      }
      return this.catalogue.products[0];
    };
    if (kind === "item") {
      const current = this.productOn(state);
      out["other-product"] = () => {
        // Another product of the episode's results, else any product of the catalogue.
        const seen = [...new Set(earlier.flatMap((s) => [...s.matchAll(/^\[([a-z0-9]{10})\] /gm)].map((m) => m[1].toUpperCase())))].filter(
          (a) => a !== current?.asin && this.catalogue.byAsin.has(a),
        );
        const other = seen.length > 0 ? this.catalogue.byAsin.get(rng.choice(seen))! : randomProduct(new Set([current?.asin ?? ""]));
        return this.abstraction.abstract(pageText(renderItemPage(lines[1].slice("instruction: ".length), other, false)));
      };
    } else if (kind === "results" && lines.some((l) => /^\[[a-z0-9]{10}\] /.test(l))) {
      out["other-product"] = () => {
        const rows = lines.map((l, i) => (/^\[[a-z0-9]{10}\] /.test(l) ? i : -1)).filter((i) => i >= 0);
        const listed = new Set(rows.map((i) => lines[i].slice(1, 11).toUpperCase()));
        const p = randomProduct(listed);
        const copy = [...lines];
        copy[rng.choice(rows)] = `[${p.asin.toLowerCase()}] ${p.Title} | ${p.Price}`;
        return copy.join("\n");
      };
    } else if (kind === "done") {
      out["other-product"] = () => {
        const bought = lines.findIndex((l) => l.startsWith("bought "));
        const p = randomProduct(new Set([lines[bought]?.slice("bought ".length) ?? ""]));
        const copy = [...lines];
        if (bought >= 0) copy[bought] = `bought ${p.asin}`;
        return copy.join("\n");
      };
    }
    if (kind === "results" || kind === "item" || kind === "item_sub") {
      // Elements: each bracketed label of a line holding labels, each other line (past page and instruction).
      const elements: { line: number; label?: string }[] = [];
      lines.forEach((l, i) => {
        if (i < 2) return;
        const labels = /^\[[a-z0-9]{10}\] /.test(l) ? [] : [...l.matchAll(/\[([^\]]+)\]/g)].map((m) => m[0]);
        if (labels.length > 0) for (const label of labels) elements.push({ line: i, label });
        else if (l.trim() !== "") elements.push({ line: i });
      });
      if (elements.length > 1) {
        out["drop-element"] = () => {
          const e = rng.choice(elements);
          const copy = [...lines];
          if (e.label === undefined) copy.splice(e.line, 1);
          else {
            const rest = copy[e.line].replace(e.label, "").replace(/ {2,}/g, " ").trimEnd();
            // An option group with no value left, or an empty button line, goes.
            if (/^[^[]*:$/.test(rest.trim()) || rest.trim() === "") copy.splice(e.line, 1);
            else copy[e.line] = rest.startsWith(" ") ? rest.trimStart() : rest;
          }
          return copy.join("\n");
        };
      }
    }
    if (kind !== "done") {
      const others = earlier.filter((s) => kindOf(s) !== kind && kindOf(s) !== "done");
      if (others.length > 0) out["wrong-kind"] = () => rng.choice(others);
    }
    return out;
  }

  close(): void {
    for (const r of this.replays.values()) void r.env.close();
    this.replays.clear();
    for (const e of this.free.splice(0)) void e.close();
  }
}

/** A plausible wrong score: the true one moved by 0.2–0.6 either way (kept in [0, 1], never within 0.01 of it). */
function wrongScore(rng: Rng, reward: number): number {
  const delta = 0.2 + 0.4 * rng.random();
  const up = Math.min(1, reward + delta);
  const down = Math.max(0, reward - delta);
  const candidates = [up, down].filter((x) => Math.abs(x - reward) > 0.01);
  const x = candidates.length === 2 ? candidates[rng.randbelow(2)] : candidates[0];
  return Math.round(x * 1000) / 1000;
}
