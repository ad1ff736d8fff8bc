import { abstractTrajectory, type HistoryStep, type StateAbstraction, type Task, type TrajectoryStore } from "../core/index.ts";

/** A real recorded step of the table. */
interface Recorded {
  task: string;
  state: string;
  next: string;
  reward: number;
  terminated: boolean;
}

/** A step replayed from the record: its next state and the recorded steps it was read from. */
export interface Replayed {
  nextState: string;
  /** The recorded outcomes of the level the step was read from (their rewards and ends may differ). */
  pool: { reward: number; terminated: boolean }[];
  /** Where it came from, for the step's info. */
  how: string;
}

/** Answers kept (then forgotten at once): ~1–2 KB each. */
const ANSWERS_KEPT = 16_384;

/** The task whose record is a task's own: its world's (a variant that keeps its parent's world), else its own. */
const worldOf = (task: Task) => task.world ?? task.id;

/** A command as a parser reads it: case and spacing do not matter. */
const commandOf = (action: string) => action.trim().toLowerCase().split(/\s+/).join(" ");

/** 32-bit FNV-1a of a text: a draw that is the same for the same text. */
function draw(text: string, n: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % n;
}

/**
 * The real recorded steps of a free-text env whose states are made of parts (`StateAbstraction.parts`)
 * at a place (`place`), by command. The parts that name the place (a vault room and its exits) are
 * those the data never shows differing at one place of one task; the others are what lies there and
 * what the agent carries. A step is replayed from the first of these that has it:
 *
 * 1. the task's own record: the command in this very state; a move (the place changes) by the
 *    command from this place, whatever else the state holds (the parts a move changes, as the data
 *    shows them: the place and what lies there, from it; what the agent carries as it is); the way
 *    back along a move the task recorded into this place (a command that, in the data, undoes the one
 *    that led here: `go west` after `go east`); the command in the same situation at another place
 *    (every part but the place's alike: taking a gem, opening the chest), where it did the same;
 * 2. the other tasks' records, likewise, except that where this place leads by this command in this
 *    task is a guess: one of the other tasks' moves from the same place, drawn by the task, the place
 *    and the command (so a task's places stay where they are across its episodes and a GRPO group
 *    plays one world, and the places drawn are as varied as the data's, not its most frequent: an
 *    empty room).
 *
 * A command that moves anywhere in the data is not carried over to another place (where `go east`
 * leads, or whether it can, is the place's). Within a level the most frequent outcome wins (ties: the
 * first in text order). Then the episode's own moves come first: a move it made from this place by
 * this command, or back along one it made into this place, leads where it led; and a move to a place
 * the episode has been at shows it as the episode last saw it (an item it took stays taken, one it
 * left is still there). A command with none of these is not replayed (undefined). The table is built
 * from the store's real trajectories (`fit`), all of them: audit it on trajectories of tasks the
 * store does not hold.
 */
export class RecordedSteps {
  private readonly abstraction: StateAbstraction;
  private readonly parts: (state: string) => string[] | undefined;
  private readonly place: (state: string) => string | undefined;
  private fittedOn: TrajectoryStore | undefined;
  /** command \t state → steps. */
  private readonly exact = new Map<string, Recorded[]>();
  /** command \t place → moves from it. */
  private readonly moves = new Map<string, Recorded[]>();
  /** task \t place → the task's moves into it. */
  private readonly into = new Map<string, (Recorded & { command: string })[]>();
  /** command → the commands that, in the data, lead back to where it came from. */
  private readonly undo = new Map<string, Set<string>>();
  /** command and the parts that do not name the place → the steps of commands that never move. */
  private readonly situations = new Map<string, Recorded[]>();
  /** The parts a move changes (indices), anywhere in the data. */
  private moveParts: number[] = [];
  /** The parts that name the place (indices). */
  private placeParts: number[] = [];
  /** task → the places its record shows. */
  private readonly places = new Map<string, Set<string>>();
  /** Answers before the episode's own moves, by task, command and state (a policy asks the same again and again). */
  private readonly answers = new Map<string, Replayed | null>();

  constructor(abstraction: StateAbstraction) {
    if (!abstraction.parts) throw new Error("RecordedSteps needs an abstraction whose states are made of parts");
    this.abstraction = abstraction;
    this.parts = abstraction.parts.bind(abstraction);
    this.place = (state) => abstraction.place?.(state);
  }

  /** Builds the table from the store's real trajectories of the env (once per store). */
  fit(store: TrajectoryStore): void {
    if (this.fittedOn === store) return;
    this.fittedOn = store;
    for (const m of [this.exact, this.moves, this.into, this.undo, this.situations, this.answers, this.places]) m.clear();
    const moveParts = new Set<number>();
    const movers = new Set<string>();
    const stays: { command: string; step: Recorded; parts: string[] }[] = [];
    // Each part's text at each place of each task (undefined once it differs there).
    const atPlace = new Map<string, (string | undefined)[]>();
    // How often the first move out of a place went back where the move into it came from, by the pair of commands.
    const back = new Map<string, { n: number; hits: number }>();
    const push = <T>(m: Map<string, T[]>, key: string, x: T) => {
      const list = m.get(key);
      if (list) list.push(x);
      else m.set(key, [x]);
    };
    for (const t of store.trajectories({ env: this.abstraction.env, source: "real" })) {
      let arrived: { command: string; from: string } | undefined;
      for (const s of abstractTrajectory(t, this.abstraction).steps) {
        const command = commandOf(s.action);
        const step = { task: t.task.id, state: s.observation, next: s.next_observation, reward: s.reward, terminated: s.terminated };
        push(this.exact, `${command}\t${step.state}`, step);
        const before = this.parts(step.state);
        const from = this.place(step.state);
        if (before === undefined || from === undefined) continue;
        const seen = atPlace.get(`${step.task}\t${from}`);
        if (seen === undefined || seen.length !== before.length) atPlace.set(`${step.task}\t${from}`, [...before]);
        else before.forEach((p, i) => seen[i] !== p && (seen[i] = undefined));
        const to = this.place(step.next);
        const places = this.places.get(step.task) ?? this.places.set(step.task, new Set()).get(step.task)!;
        places.add(from);
        if (to !== undefined) places.add(to);
        if (to !== undefined && to !== from) {
          movers.add(command);
          push(this.moves, `${command}\t${from}`, step);
          push(this.into, `${step.task}\t${to}`, { ...step, command });
          const after = this.parts(step.next);
          before.forEach((p, i) => after?.[i] !== p && moveParts.add(i));
          if (arrived) {
            const c = back.get(`${arrived.command}\t${command}`) ?? { n: 0, hits: 0 };
            c.n++;
            if (to === arrived.from) c.hits++;
            back.set(`${arrived.command}\t${command}`, c);
          }
          arrived = { command, from };
        } else stays.push({ command, step, parts: before });
      }
    }
    this.moveParts = [...moveParts].sort((x, y) => x - y);
    const width = Math.max(0, ...[...atPlace.values()].map((p) => p.length));
    this.placeParts = Array.from({ length: width }, (_, i) => i).filter((i) => [...atPlace.values()].every((p) => p.length !== width || p[i] !== undefined));
    // A command undoes another when, over enough first moves out, it always went back (as the learned model's return rules).
    for (const [key, c] of back) {
      if (c.n < 10 || c.hits < 0.95 * c.n) continue;
      const [first, second] = key.split("\t");
      this.undo.set(first, (this.undo.get(first) ?? new Set()).add(second));
    }
    for (const o of stays) if (!movers.has(o.command)) push(this.situations, this.situationKey(o.command, o.parts), o.step);
  }

  /** A command and a state's parts but those that name its place. */
  private situationKey(command: string, parts: readonly string[]): string {
    return JSON.stringify([command, parts.length, parts.filter((_, i) => !this.placeParts.includes(i))]);
  }

  /** `from` parts (indices) of `next` over `state`'s own, or undefined where the two are not made of the same parts. */
  private over(state: string, next: string, from: readonly number[]): string | undefined {
    const mine = this.parts(state);
    const theirs = this.parts(next);
    if (mine === undefined || theirs === undefined || theirs.length !== mine.length) return undefined;
    for (const i of from) mine[i] = theirs[i];
    return mine.join(" ");
  }

  /**
   * Whether a state lies at a place that its task's world has a record of, but that the record never
   * shows: a place drawn from other worlds' moves (a guess), where nothing in the data vouches for what
   * lies there. A world with no record at all (a held-out task) is all generalisation, never a guess.
   */
  guessed(task: Task, state: string): boolean {
    const places = this.places.get(worldOf(task));
    const place = this.place(state);
    return places !== undefined && place !== undefined && !places.has(place);
  }

  /** The step replayed from the record, or undefined where the record has nothing of the command to go by. */
  replay(input: { task: Task; history: readonly HistoryStep[]; state: string; action: string }): Replayed | undefined {
    const { history, state } = input;
    const command = commandOf(input.action);
    const key = JSON.stringify([worldOf(input.task), command, state]);
    let answer = this.answers.get(key);
    if (answer === undefined) {
      if (this.answers.size >= ANSWERS_KEPT) this.answers.clear(); // a long run's states have no end
      this.answers.set(key, (answer = this.lookUp(input.task, state, command) ?? null));
    }
    if (answer === null) return undefined;
    const here = this.place(state);
    const to = this.place(answer.nextState);
    if (here === undefined || to === undefined || to === here) return answer;
    // A move: where the episode's own moves say it leads, as the episode last saw it there.
    let r = answer;
    for (let i = history.length - 1; i >= 0; i--) {
      const h = history[i];
      const hFrom = this.place(h.state);
      const hTo = this.place(h.nextState);
      if (hFrom === undefined || hTo === undefined || hFrom === hTo) continue;
      const dest =
        hFrom === here && commandOf(h.action) === command
          ? h.nextState
          : hTo === here && this.undo.get(commandOf(h.action))?.has(command)
            ? h.state
            : undefined;
      const next = dest === undefined ? undefined : this.over(state, dest, this.moveParts);
      if (next !== undefined) {
        r = { ...answer, nextState: next, how: "where this episode's own moves lead" };
        break;
      }
    }
    const seen = this.lastSeen(history, r.nextState);
    return seen === undefined ? r : { ...r, nextState: seen, how: `${r.how}; the place as this episode last saw it` };
  }

  private lookUp(task: Task, state: string, command: string): Replayed | undefined {
    const parts = this.parts(state);
    const place = this.place(state);
    const world = worldOf(task);
    const mine = (s: { task: string }) => s.task === world;
    const theirs = (s: { task: string }) => s.task !== world;
    const exact = this.exact.get(`${command}\t${state}`) ?? [];
    const moves = place === undefined ? [] : (this.moves.get(`${command}\t${place}`) ?? []);
    const alike = parts === undefined || place === undefined ? [] : (this.situations.get(this.situationKey(command, parts)) ?? []);
    const undone = place === undefined ? [] : (this.into.get(`${world}\t${place}`) ?? []).filter((s) => this.undo.get(s.command)?.has(command));
    // A step in the same situation elsewhere: its changes, at this place (the end as it is).
    const elsewhere = (s: Recorded) =>
      this.parts(s.next) === undefined
        ? s.next
        : this.over(
            state,
            s.next,
            (parts ?? []).map((_, i) => i).filter((i) => !this.placeParts.includes(i)),
          );
    const move = (s: Recorded) => this.over(state, s.next, this.moveParts);
    const levels: { how: string; steps: Recorded[]; next: (s: Recorded) => string | undefined; drawn?: boolean }[] = [
      { how: "recorded in this state (this task)", steps: exact.filter(mine), next: (s) => s.next },
      { how: "a move recorded from this place (this task)", steps: moves.filter(mine), next: move },
      { how: "back along a move recorded into this place (this task)", steps: undone, next: (s) => this.over(state, s.state, this.moveParts) },
      { how: "recorded in the same situation at another place (this task)", steps: alike.filter(mine), next: elsewhere },
      { how: "a move from this place in another task's record", steps: moves.filter(theirs), next: move, drawn: true },
      { how: "recorded in this state (another task)", steps: exact.filter(theirs), next: (s) => s.next },
      { how: "recorded in the same situation at another place (another task)", steps: alike.filter(theirs), next: elsewhere },
    ];
    for (const level of levels) {
      const pool = level.steps.flatMap((s) => {
        const next = level.next(s);
        return next === undefined ? [] : [{ next, reward: s.reward, terminated: s.terminated }];
      });
      if (pool.length === 0) continue;
      if (level.drawn) return { nextState: pool[draw(JSON.stringify([world, place, command]), pool.length)].next, pool, how: level.how };
      const counts = new Map<string, number>();
      for (const o of pool) {
        const k = JSON.stringify([o.next, o.reward, o.terminated]);
        counts.set(k, (counts.get(k) ?? 0) + 1);
      }
      const [best] = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0];
      return { nextState: (JSON.parse(best) as [string])[0], pool, how: level.how };
    }
    return undefined;
  }

  /** `next` with the parts a move changes as the episode last saw its place, where the episode has been there (undefined: it has not). */
  private lastSeen(history: readonly HistoryStep[], next: string): string | undefined {
    const to = this.place(next);
    if (to === undefined) return undefined;
    for (let i = history.length - 1; i >= 0; i--) {
      for (const s of [history[i].nextState, history[i].state]) {
        if (this.place(s) === to) return this.over(next, s, this.moveParts);
      }
    }
    return undefined;
  }
}
