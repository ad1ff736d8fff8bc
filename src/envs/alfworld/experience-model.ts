import {
  abstractTrajectory,
  Rng,
  type ExperienceModel,
  type HistoryStep,
  type PredictInput,
  type Prediction,
  type Trajectory,
  type TrajectoryStore,
} from "../../core/index.ts";
import { alfworldAbstraction, listedEntities, parseAlfState, renderAlfState, type AlfState } from "./abstraction.ts";

/**
 * The embedded (no LLM) experience model of ALFWorld, learned from offline trajectories only (the
 * buffer's real ALFWorld episodes, abstract states): it never reads a game's PDDL or hidden state.
 *
 * Transitions are de-lexicalised: an entity ("drawer 3", "mug 1") is a slot, typed by its class
 * ("drawer"), so what is learned in one game transfers to another whose objects and rooms differ.
 * From the data it counts, each a table keyed from specific to general (back-off):
 * - **response templates** per command pattern ("go to {1}", "take {1} from {2}"), keyed by the
 *   slots' types and what the episode knows of them (opened, held, heated…): "The {1} is closed.",
 *   "On the {1}, you see {LIST}.";
 * - **admissible commands**: each listed command as a pattern over roles (the receptacle here, the
 *   held object, an object seen here, another receptacle of the room), and how often a candidate of
 *   that pattern and those types is listed (take only pickupable things, put only where it fits);
 * - **where objects are**: how many objects of which types a receptacle type holds when first seen,
 *   and in which receptacle types each object type is found;
 * - **rewards and ends**: whether a step earns the task's reward, from de-lexicalised features (the
 *   command pattern; whether its slots' types are named in the task; the held object's type and
 *   treatments; whether the receptacle already holds one of that type; the task's sentence with its
 *   types blanked).
 *
 * Each episode gets a hidden room of its own, drawn from the priors (seeded by the task, with the
 * task's objects placed where their types are found): opening a drawer reveals its drawn contents,
 * and the episode's memory (what was seen where, taken, put, opened, treated) keeps later states
 * consistent. The step's `info.u` is how unsure the tables are (the reward's spread, the counts behind
 * the chosen cells, how far it backed off), for pessimism.
 *
 * What is not learned but written: the memory's verb semantics (go to moves, take and put move an
 * object, open/close, clean/heat/cool mark the held object).
 */
export class AlfWorldExperienceModel implements ExperienceModel {
  readonly id = "alfworld-template-v1";
  readonly usesDemos = false;
  private tables = new Tables();
  private fittedOn: TrajectoryStore | undefined;
  private readonly memories = new WeakMap<HistoryStep[], { n: number; mem: Memory }>();
  private readonly worlds = new Map<string, Map<string, string[]>>();

  /** Learns from the buffer's real ALFWorld trajectories (once per buffer). */
  async fit(buffer: TrajectoryStore): Promise<void> {
    if (this.fittedOn === buffer) return;
    this.fittedOn = buffer;
    this.learn(buffer.trajectories({ env: "alfworld", source: "real" }));
  }

  /** Learns from these trajectories (raw or abstract), replacing what was learned. */
  learn(trajectories: Iterable<Trajectory>): { episodes: number; steps: number } {
    const t = new Tables();
    let episodes = 0;
    let steps = 0;
    for (const raw of trajectories) {
      const traj = abstractTrajectory(raw, alfworldAbstraction);
      if (traj.steps.length === 0) continue;
      const first = parseAlfState(traj.steps[0].observation);
      if (!first) continue;
      episodes++;
      const mem = Memory.start(first);
      for (const s of traj.steps) {
        const state = parseAlfState(s.observation);
        const next = parseAlfState(s.next_observation);
        if (!state || !next) break;
        mem.sync(state);
        t.learnListing(state, mem);
        t.learnStep(mem, s.action.trim(), next, s.reward, s.terminated);
        mem.apply(s.action.trim(), next, t.firstReveal);
        steps++;
        if (s.terminated || s.truncated) {
          mem.sync(next);
          t.learnListing(next, mem);
        }
      }
    }
    t.finish();
    this.tables = t;
    this.worlds.clear();
    return { episodes, steps };
  }

  /** How much was learned (for reports). */
  get learned(): { steps: number; templates: number; patterns: number } {
    return { steps: this.tables.steps, templates: this.tables.templateCount(), patterns: this.tables.rolePatterns.size };
  }

  async predict({ task, history, state, action }: PredictInput): Promise<Prediction> {
    const cur = parseAlfState(state);
    if (!cur) return { nextState: state, reward: 0, terminated: false, info: { failed: "the state is not an ALFWorld abstract state" } };
    if (this.tables.steps === 0)
      return {
        nextState: state,
        reward: 0,
        terminated: false,
        info: { failed: "no offline ALFWorld trajectories to learn from (the buffer has no real alfworld episodes)" },
      };
    const cmd = action.trim();
    if (!cur.actions.includes(cmd)) {
      return { nextState: renderAlfState({ ...cur, observation: "Nothing happens." }), reward: 0, terminated: false, info: { invalid: true, u: 0 } };
    }
    const mem = this.memoryOf(history, cur, task.id).clone();
    mem.sync(cur);
    const t = this.tables;
    const { pattern, args } = delex(cmd);
    const reward = t.reward(mem, pattern, args);
    const tpl = t.template(mem, pattern, args);
    // The room behind this episode, drawn once per task from the priors.
    mem.world = this.worldOf(task.id, mem);
    const before = { at: mem.at, holding: mem.holding };
    let observation = "Nothing happens.";
    if (tpl) {
      let list: string[] | undefined;
      if (tpl.text.includes("{LIST}")) {
        list = mem.contentsOf(args[0]);
      }
      observation = fill(tpl.text, args, before.at, before.holding, list);
    }
    mem.effects(cmd, pattern, args);
    if (tpl?.text.includes("{LIST}") && args[0]) mem.reveal(args[0], mem.contentsOf(args[0]));
    const next: AlfState = { task: cur.task, at: mem.at, holding: mem.holding, observation, actions: t.listing(mem) };
    const terminated = reward.p >= 0.5;
    const uState = tpl ? tpl.u : 1;
    const u = round(Math.max(reward.u, uState));
    return {
      nextState: renderAlfState(next),
      reward: terminated ? 1 : 0,
      terminated,
      info: { u, u_reward: round(reward.u), u_state: round(uState), p_success: round(reward.p), ...(tpl ? {} : { unknown_command: pattern }) },
    };
  }

  /** The episode's memory after its history (kept per history array, extended step by step). */
  private memoryOf(history: HistoryStep[], cur: AlfState, taskId: string): Memory {
    const hit = this.memories.get(history);
    let entry = hit && hit.n <= history.length ? hit : undefined;
    if (!entry) {
      const first = history.length > 0 ? (parseAlfState(history[0].state) ?? cur) : cur;
      entry = { n: 0, mem: Memory.start(first) };
      entry.mem.world = this.worldOf(taskId, entry.mem);
      this.memories.set(history, entry);
    }
    for (; entry.n < history.length; entry.n++) {
      const h = history[entry.n];
      const s = parseAlfState(h.state);
      const nx = parseAlfState(h.nextState);
      if (!s || !nx) continue;
      entry.mem.sync(s);
      entry.mem.apply(h.action.trim(), nx);
    }
    return entry.mem;
  }

  private worldOf(taskId: string, mem: Memory): Map<string, string[]> {
    const key = `${taskId}|${mem.receptacles.join(",")}`;
    let w = this.worlds.get(key);
    if (!w) {
      w = this.tables.drawWorld(mem, new Rng(hash(key)));
      if (this.worlds.size > 4096) this.worlds.clear();
      this.worlds.set(key, w);
    }
    return w;
  }
}

// ---------------------------------------------------------------------------------------------

const ENTITY = /\b[a-z]+ \d+\b/g;
export const typeOf = (name: string) => name.slice(0, name.lastIndexOf(" "));
const round = (x: number) => Math.round(x * 1e6) / 1e6;
/** How many observations a more general key's rate counts for, in a more specific key's estimate. */
const PRIOR = 2;

/** A command as a pattern over its entities: "take mug 1 from countertop 2" → "take {1} from {2}", [mug 1, countertop 2]. */
export function delex(command: string): { pattern: string; args: string[] } {
  const args: string[] = [];
  const pattern = command.replace(ENTITY, (m) => {
    args.push(m);
    return `{${args.length}}`;
  });
  return { pattern, args };
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const replaceName = (text: string, name: string, slot: string) => (name ? text.replace(new RegExp(`\\b${escape(name)}(?!\\d)`, "g"), slot) : text);

/** A feedback as a template: the command's entities, the receptacle here and the held object as slots; the list of what `{1}` holds as {LIST}. */
export function delexObservation(obs: string, args: string[], at: string, holding: string): { text: string; list?: string[] } {
  let text = obs;
  let list: string[] | undefined;
  const see = obs.indexOf("you see ");
  if (see >= 0 && args[0] && new RegExp(`\\b${escape(args[0])}(?!\\d)`).test(obs.slice(0, see)) && obs.endsWith(".")) {
    const items = obs.slice(see + 8, -1);
    list = items === "nothing" ? [] : listedEntities(items);
    text = `${obs.slice(0, see)}you see {LIST}.`;
  }
  // Longer names first ("cabinet 10" before "cabinet 1"; the boundary check keeps them apart too).
  const slots: [string, string][] = [...args.map((a, i) => [a, `{${i + 1}}`] as [string, string]), [at, "{HERE}"], [holding, "{HELD}"]];
  for (const [name, slot] of slots) text = replaceName(text, name, slot);
  return { text, ...(list ? { list } : {}) };
}

/** "a x 1, a y 2, and a z 3" (ALFWorld's list), "nothing" for none. */
export function listText(names: string[]): string {
  if (names.length === 0) return "nothing";
  const items = names.map((n) => `a ${n}`);
  if (items.length === 1) return items[0];
  return `${items.slice(0, -1).join(", ")}, and ${items[items.length - 1]}`;
}

function fill(template: string, args: string[], at: string, holding: string, list?: string[]): string {
  return template.replace(/\{(\d+|HERE|HELD|LIST)\}/g, (_, k: string) => {
    if (k === "HERE") return at;
    if (k === "HELD") return holding;
    if (k === "LIST") return listText(list ?? []);
    return args[Number(k) - 1] ?? "";
  });
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** What an episode has seen and done, as the model tracks it. */
class Memory {
  task = "";
  taskWords = new Set<string>();
  receptacles: string[] = [];
  at = "";
  holding = "";
  /** Known contents (seen, or drawn and revealed); a put into an unseen receptacle adds to it. */
  contents = new Map<string, string[]>();
  revealed = new Set<string>();
  opened = new Set<string>();
  treated = new Map<string, string[]>();
  /** Receptacles something was put into before they were seen (their first sight is not a prior). */
  touched = new Set<string>();
  world: Map<string, string[]> | undefined;

  static start(first: AlfState): Memory {
    const m = new Memory();
    m.task = first.task;
    m.taskWords = new Set(
      first.task
        .toLowerCase()
        .split(/[^a-z]+/)
        .filter(Boolean),
    );
    const look = /Looking quickly around you, you see (.*)\.$/.exec(first.observation);
    m.receptacles = look
      ? listedEntities(look[1])
      : first.actions
          .filter((a) => a.startsWith("go to "))
          .map((a) => a.slice(6))
          .concat(first.at ? [first.at] : []);
    return m;
  }

  clone(): Memory {
    const m = new Memory();
    m.task = this.task;
    m.taskWords = this.taskWords;
    m.receptacles = this.receptacles;
    m.at = this.at;
    m.holding = this.holding;
    m.contents = new Map(this.contents);
    m.revealed = new Set(this.revealed);
    m.opened = new Set(this.opened);
    m.treated = new Map(this.treated);
    m.touched = new Set(this.touched);
    m.world = this.world;
    return m;
  }

  /** Where the agent is and what it holds, as the state says. */
  sync(s: AlfState): void {
    this.at = s.at;
    this.holding = s.holding;
  }

  /** Contents of a receptacle: seen, else the episode's drawn room (as far as it is known). */
  contentsOf(r: string | undefined): string[] {
    if (!r) return [];
    return this.contents.get(r) ?? this.world?.get(r)?.filter((o) => o !== this.holding) ?? [];
  }

  reveal(r: string, list: string[]): void {
    this.contents.set(r, list);
    this.revealed.add(r);
  }

  /** The verb semantics (written, not learned): moves, takes, puts, opens, closes, treatments. */
  effects(cmd: string, pattern: string, args: string[]): void {
    const verb = pattern.split(" ", 1)[0];
    if (pattern === "go to {1}") this.at = args[0];
    else if (pattern === "open {1}") this.opened.add(args[0]);
    else if (pattern === "close {1}") this.opened.delete(args[0]);
    else if (pattern === "take {1} from {2}") {
      for (const [r, objs] of this.contents)
        if (objs.includes(args[0]))
          this.contents.set(
            r,
            objs.filter((o) => o !== args[0]),
          );
      if (!this.contents.has(args[1]) && this.world?.has(args[1]))
        this.contents.set(
          args[1],
          this.world.get(args[1])!.filter((o) => o !== args[0]),
        );
      this.holding = args[0];
    } else if (pattern === "put {1} in/on {2}") {
      const known = this.contents.get(args[1]) ?? (this.revealed.has(args[1]) ? [] : this.world?.get(args[1]));
      if (!this.revealed.has(args[1])) this.touched.add(args[1]);
      this.contents.set(args[1], [...(known ?? []).filter((o) => o !== args[0]), args[0]]);
      this.holding = "";
    } else if (/^\w+ \{1\} with \{2\}$/.test(pattern)) {
      const seq = this.treated.get(args[0]) ?? [];
      if (seq.at(-1) !== verb) this.treated.set(args[0], [...seq, verb].slice(-2));
    }
    void cmd;
  }

  /** After a real (or predicted) step: its effects, and what its feedback revealed. */
  apply(cmd: string, next: AlfState, firstReveal?: (mem: Memory, r: string, list: string[]) => void): void {
    if (next.observation === "Nothing happens.") return;
    const { pattern, args } = delex(cmd);
    const d = delexObservation(next.observation, args, this.at, this.holding);
    this.effects(cmd, pattern, args);
    if (d.list && args[0]) {
      if (firstReveal && !this.revealed.has(args[0]) && !this.touched.has(args[0])) firstReveal(this, args[0], d.list);
      this.reveal(args[0], d.list);
    }
    this.sync(next);
  }

  openFlag(r: string | undefined): string {
    return r && this.opened.has(r) ? "o" : "c";
  }

  treatFlag(o: string | undefined): string {
    return o ? (this.treated.get(o) ?? []).join("+") : "";
  }
}

type Counts = Map<string, number>;
const bump = (m: Counts, k: string, by = 1) => m.set(k, (m.get(k) ?? 0) + by);

/** The learned tables. */
class Tables {
  steps = 0;
  /** Key → template → count. */
  private templates = new Map<string, Counts>();
  /** Key → [listed, candidates]. */
  private listed = new Map<string, [number, number]>();
  rolePatterns = new Set<string>();
  /** Key → [successes, steps]. */
  private rewards = new Map<string, [number, number]>();
  /** Receptacle type → object count → times; receptacle type → object type → times; object type → receptacle type → times. */
  private counts = new Map<string, Counts>();
  private objectsIn = new Map<string, Counts>();
  private foundIn = new Map<string, Counts>();
  private objectTypes = new Set<string>();
  private receptacleTypes = new Set<string>();
  private best = new Map<string, { text: string; n: number }>();

  firstReveal = (_mem: Memory, r: string, list: string[]): void => {
    const rt = typeOf(r);
    this.receptacleTypes.add(rt);
    const byCount = this.counts.get(rt) ?? new Map();
    bump(byCount, String(list.length));
    this.counts.set(rt, byCount);
    const objs = this.objectsIn.get(rt) ?? new Map();
    for (const o of list) {
      const ot = typeOf(o);
      this.objectTypes.add(ot);
      bump(objs, ot);
      const where = this.foundIn.get(ot) ?? new Map();
      bump(where, rt);
      this.foundIn.set(ot, where);
    }
    this.objectsIn.set(rt, objs);
  };

  templateCount(): number {
    return [...this.templates.values()].reduce((s, c) => s + c.size, 0);
  }

  // --- response templates -------------------------------------------------------------------

  private templateKeys(mem: Memory, pattern: string, args: string[]): string[] {
    const types = args.map(typeOf).join(",");
    const last = args.length > 0 ? typeOf(args[args.length - 1]) : "";
    const o = mem.openFlag(args[0]);
    const h = mem.holding ? "h" : "e";
    const t = mem.treatFlag(args[0]);
    return [
      `${pattern}|${types}|${o}|${h}|${t}`,
      `${pattern}|${types}|${o}|${t}`,
      `${pattern}|${types}|${o}`,
      `${pattern}|~${last}|${o}`,
      `${pattern}||${o}|${h}|${t}`,
      `${pattern}||${o}`,
      `${pattern}|`,
    ];
  }

  learnStep(mem: Memory, cmd: string, next: AlfState, reward: number, terminated: boolean): void {
    this.steps++;
    const { pattern, args } = delex(cmd);
    const rkeys = this.rewardKeys(mem, pattern, args);
    const success = terminated && reward >= 1 - 1e-9 ? 1 : 0;
    for (const k of rkeys) {
      const c = this.rewards.get(k) ?? [0, 0];
      c[0] += success;
      c[1]++;
      this.rewards.set(k, c);
    }
    if (next.observation === "Nothing happens.") return;
    const d = delexObservation(next.observation, args, mem.at, mem.holding);
    for (const k of this.templateKeys(mem, pattern, args)) {
      const c = this.templates.get(k) ?? new Map();
      bump(c, d.text);
      this.templates.set(k, c);
    }
  }

  finish(): void {
    this.best.clear();
    for (const [k, c] of this.templates) {
      let text = "";
      let n = 0;
      let total = 0;
      for (const [t, x] of c) {
        total += x;
        if (x > n) [text, n] = [t, x];
      }
      this.best.set(k, { text, n: total });
    }
  }

  /**
   * The most frequent template of the most specific key seen. Its `u` says only how novel the step
   * is: 0 while the slots' types have been seen with this pattern, rising as the choice backs off to
   * type-blind keys (a receptacle type never seen). A template's own ambiguity (a drawer that opens
   * in one game and not in another) is the world's, not a doubt about rewards: it does not count.
   */
  template(mem: Memory, pattern: string, args: string[]): { text: string; u: number } | undefined {
    const keys = this.templateKeys(mem, pattern, args);
    for (const [level, k] of keys.entries()) {
      const b = this.best.get(k);
      if (!b) continue;
      return { text: b.text, u: level <= 3 ? 0 : Math.min(1, 0.25 * (level - 2)) };
    }
    return undefined;
  }

  // --- admissible commands ------------------------------------------------------------------

  /** A listed command as a pattern over roles, or undefined when an entity plays none. */
  private rolePattern(cmd: string, mem: Memory, here: ReadonlySet<string>, rooms: ReadonlySet<string>): string | undefined {
    let ok = true;
    const p = cmd.replace(ENTITY, (e) => {
      if (e === mem.at) return "{HERE}";
      if (e === mem.holding) return "{HELD}";
      if (here.has(e)) return "{IN}";
      if (rooms.has(e)) return "{ROOM}";
      ok = false;
      return e;
    });
    return ok ? p : undefined;
  }

  private listingKeys(rp: string, mem: Memory, values: string[]): string[] {
    const types = values.map(typeOf).join(",");
    const o = mem.openFlag(mem.at);
    const h = mem.holding ? "h" : "e";
    return [`${rp}|${types}|${o}|${h}`, `${rp}|${types}|${h}`, `${rp}||${o}|${h}`, `${rp}|`];
  }

  /** The candidates of every known role pattern in this memory: command → key values. */
  private candidates(mem: Memory): Map<string, { rp: string; values: string[] }> {
    const out = new Map<string, { rp: string; values: string[] }>();
    const inHere = mem.at && mem.revealed.has(mem.at) ? (mem.contents.get(mem.at) ?? []).filter((o) => o !== mem.holding) : [];
    const rooms = mem.receptacles.filter((r) => r !== mem.at);
    for (const rp of this.rolePatterns) {
      const slots = [...rp.matchAll(/\{(HERE|HELD|IN|ROOM)\}/g)].map((m) => m[1]);
      const choices = slots.map((s) =>
        s === "HERE" ? (mem.at ? [mem.at] : []) : s === "HELD" ? (mem.holding ? [mem.holding] : []) : s === "IN" ? inHere : rooms,
      );
      const fillIn = (i: number, vals: string[]) => {
        if (i === slots.length) {
          let j = 0;
          out.set(
            rp.replace(/\{(HERE|HELD|IN|ROOM)\}/g, () => vals[j++]),
            { rp, values: vals },
          );
          return;
        }
        for (const v of choices[i]) fillIn(i + 1, [...vals, v]);
      };
      fillIn(0, []);
    }
    return out;
  }

  learnListing(state: AlfState, mem: Memory): void {
    const here = new Set(mem.at && mem.revealed.has(mem.at) ? (mem.contents.get(mem.at) ?? []) : []);
    const rooms = new Set(mem.receptacles.filter((r) => r !== mem.at));
    for (const a of state.actions) {
      const rp = this.rolePattern(a, mem, here, rooms);
      if (rp) this.rolePatterns.add(rp);
    }
    const listed = new Set(state.actions);
    for (const [cmd, { rp, values }] of this.candidates(mem)) {
      const y = listed.has(cmd) ? 1 : 0;
      for (const k of this.listingKeys(rp, mem, values)) {
        const c = this.listed.get(k) ?? [0, 0];
        c[0] += y;
        c[1]++;
        this.listed.set(k, c);
      }
    }
  }

  /** The admissible commands predicted for this memory, sorted as the real env sorts them. */
  listing(mem: Memory): string[] {
    const out: string[] = [];
    for (const [cmd, { rp, values }] of this.candidates(mem)) {
      for (const k of this.listingKeys(rp, mem, values)) {
        const c = this.listed.get(k);
        if (!c) continue;
        if (c[0] * 2 >= c[1]) out.push(cmd);
        break;
      }
    }
    return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  // --- rewards and ends ---------------------------------------------------------------------

  private taskTemplate(mem: Memory): string {
    return mem.task
      .toLowerCase()
      .split(/\s+/)
      .map((w) => (this.objectTypes.has(w) || this.receptacleTypes.has(w) ? "_" : w))
      .join(" ");
  }

  private rewardKeys(mem: Memory, pattern: string, args: string[]): string[] {
    const m = args.map((a) => (mem.taskWords.has(typeOf(a)) ? 1 : 0)).join("");
    const mh = mem.holding && mem.taskWords.has(typeOf(mem.holding)) ? 1 : 0;
    const tr = mem.treatFlag(mem.holding || undefined);
    let pair = "-";
    if (mem.holding && args.length === 2) {
      const ht = typeOf(mem.holding);
      pair = mem.contentsOf(args[1]).some((o) => o !== mem.holding && typeOf(o) === ht) ? "2" : "1";
    }
    return [`${pattern}|${m}|${mh}|${tr}|${pair}|${this.taskTemplate(mem)}`, `${pattern}|${m}|${mh}|${tr}|${pair}`, `${pattern}|${m}|${mh}`, `${pattern}`];
  }

  /**
   * P(the step completes the task): each key's success rate shrunk towards the next more general
   * key's (a key seen twice says little), from the most general to the most specific. `u` is the
   * spread of that Bernoulli, 2·min(p, 1 − p): 0 for a step the data agrees on, 1 for a coin toss.
   */
  reward(mem: Memory, pattern: string, args: string[]): { p: number; u: number } {
    const keys = this.rewardKeys(mem, pattern, args);
    let p = 0;
    let seen = false;
    for (let level = keys.length - 1; level >= 0; level--) {
      const c = this.rewards.get(keys[level]);
      if (!c) continue;
      p = seen ? (c[0] + PRIOR * p) / (c[1] + PRIOR) : (c[0] + 0.5) / (c[1] + 1);
      seen = true;
    }
    if (!seen) return { p: 0, u: 1 };
    return { p, u: 2 * Math.min(p, 1 - p) };
  }

  // --- the hidden room ----------------------------------------------------------------------

  private sample(counts: Counts | undefined, rng: Rng): string | undefined {
    if (!counts || counts.size === 0) return undefined;
    let total = 0;
    for (const x of counts.values()) total += x;
    let r = rng.random() * total;
    for (const [k, x] of counts) {
      r -= x;
      if (r < 0) return k;
    }
    return [...counts.keys()].at(-1);
  }

  /** A room for an episode: each receptacle's contents drawn from the priors; the task's objects placed where their types are found. */
  drawWorld(mem: Memory, rng: Rng): Map<string, string[]> {
    const world = new Map<string, string[]>();
    const numbers = new Map<string, number>();
    const name = (ot: string) => {
      const n = (numbers.get(ot) ?? 0) + 1;
      numbers.set(ot, n);
      return `${ot} ${n}`;
    };
    const allCounts = new Map<string, number>();
    for (const c of this.counts.values()) for (const [k, x] of c) bump(allCounts, k, x);
    const allObjects = new Map<string, number>();
    for (const c of this.objectsIn.values()) for (const [k, x] of c) bump(allObjects, k, x);
    const roomTypes = new Set(mem.receptacles.map(typeOf));
    const needed = [...mem.taskWords].filter((w) => this.objectTypes.has(w) && !roomTypes.has(w));
    for (const r of mem.receptacles) {
      const rt = typeOf(r);
      const n = Number(this.sample(this.counts.get(rt) ?? allCounts, rng) ?? 0);
      const objs: string[] = [];
      for (let i = 0; i < n; i++) {
        const ot = this.sample(this.objectsIn.get(rt) ?? allObjects, rng);
        if (ot) objs.push(name(ot));
      }
      world.set(r, objs);
    }
    // The task's objects exist (as in every ALFWorld game): as many as it needs, where their type is found.
    const want = mem.taskWords.has("two") ? 2 : 1;
    for (const ot of needed) {
      let have = [...world.values()].flat().filter((o) => typeOf(o) === ot).length;
      const where = this.foundIn.get(ot);
      const candidates = mem.receptacles.filter((r) => !mem.taskWords.has(typeOf(r)));
      while (have < want && candidates.length > 0) {
        const weights = new Map(candidates.map((r) => [r, (where?.get(typeOf(r)) ?? 0) + 0.05]));
        const r = this.sample(weights, rng)!;
        world.get(r)!.push(name(ot));
        have++;
      }
    }
    return world;
  }
}
