import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { DreamGymError, type Episode, type Task } from "../core/index.ts";

/** One episode of an iteration's plan: the g-th of task t's group. */
export interface Slot {
  iteration: number;
  phase: "real" | "synthetic";
  t: number;
  g: number;
  task: Task;
  /** The env seed when the reset gives none (from the run seed, iteration, t, g). */
  seed: number;
}

/** A finished episode of the plan, as the journal keeps it until its iteration is checkpointed. */
export interface JournalEntry {
  iteration: number;
  t: number;
  g: number;
  taskId: string;
  group?: string;
  /** The env seed its reset played. */
  seed: number;
  episode: Episode;
}

/** A played episode of the plan and the env seed it was played with (an audit replays it from that seed). */
export interface BrokeredEpisode {
  e: Episode;
  seed: number;
}

/** A reset the broker cannot place: its group is full, or the run has ended. */
export class BrokerRefusal extends DreamGymError {
  constructor(message: string) {
    super(message, "SESSION_ERROR");
  }
}

interface PlannedGroup {
  task: Task;
  /** The group id that claimed it ("" for resets without one). */
  owner?: string;
  /** Per slot: free (undefined), being played, or played. */
  slots: ("playing" | Episode | undefined)[];
  /** The env seed each slot's reset gave (orders a group's episodes the same on every run). */
  seeds: number[];
}

interface Plan {
  iteration: number;
  phase: "real" | "synthetic";
  groups: PlannedGroup[];
  byName: Map<string, number>;
  seedOf: (t: number, g: number) => number;
  done: (groups: BrokeredEpisode[][]) => void;
  fail: (e: Error) => void;
}

const ANONYMOUS = "";

/**
 * Hands a served run's plan out to the trainer's sessions and collects what they play. The loop
 * opens an iteration's plan (its tasks, G episodes each) and waits for it; a reset takes a slot of
 * it: the slot of its named group (a new name claims the next unclaimed task), or, without a name,
 * the next free slot of a group of unnamed resets, so G resets in a row play one task. A reset past
 * the plan waits for the next one. Every finished episode goes to the journal, so a server killed
 * mid-iteration restarts with what its trainer had already played.
 */
export class EpisodeBroker {
  private plan: Plan | undefined;
  private waiting: (() => void)[] = [];
  private ended: string | undefined;

  constructor(
    private readonly journalFile: string,
    private readonly G: number,
  ) {}

  /** Finished episodes of `iteration` the journal holds (a restart's), and drops older ones. */
  restored(iteration: number): JournalEntry[] {
    if (!existsSync(this.journalFile)) return [];
    const entries: JournalEntry[] = [];
    for (const line of readFileSync(this.journalFile, "utf8").split("\n")) {
      if (!line.trim()) continue;
      try {
        const e = JSON.parse(line) as JournalEntry;
        if (e.iteration === iteration) entries.push(e);
      } catch {
        // a line cut by the kill: that episode is played again
      }
    }
    return entries;
  }

  /**
   * Opens an iteration's plan and resolves when every task has G played episodes, each group in the
   * order of its resets' env seeds. `restored` fills the slots a killed server had already collected.
   */
  play(
    iteration: number,
    phase: "real" | "synthetic",
    tasks: Task[],
    seedOf: (t: number, g: number) => number,
    restored: JournalEntry[] = [],
  ): Promise<BrokeredEpisode[][]> {
    if (this.ended) return Promise.reject(new BrokerRefusal(this.ended));
    return new Promise<BrokeredEpisode[][]>((resolve, reject) => {
      const groups: PlannedGroup[] = tasks.map((task) => ({ task, slots: new Array(this.G).fill(undefined), seeds: new Array(this.G).fill(0) }));
      const plan: Plan = { iteration, phase, groups, byName: new Map(), seedOf, done: resolve, fail: reject };
      for (const r of restored) {
        const g = groups[r.t];
        if (!g || g.task.id !== r.taskId || r.g >= this.G || g.slots[r.g] !== undefined) continue;
        g.slots[r.g] = r.episode;
        g.seeds[r.g] = r.seed;
        g.owner ??= r.group ?? ANONYMOUS;
        if (r.group) plan.byName.set(r.group, r.t);
      }
      this.plan = plan;
      this.finishIfDone();
      for (const wake of this.waiting.splice(0)) wake();
    });
  }

  /** A session's reset: the slot it plays, once a plan has one for it. */
  async assign(group: string | undefined, seed: number | undefined, index?: number): Promise<Slot> {
    for (;;) {
      if (this.ended) throw new BrokerRefusal(this.ended);
      const slot = this.plan && this.take(this.plan, group, index);
      if (slot) {
        const p = this.plan!;
        p.groups[slot.t].seeds[slot.g] = seed ?? slot.seed;
        return slot;
      }
      await new Promise<void>((wake) => this.waiting.push(wake));
    }
  }

  /** A slot's episode ended: kept (and journalled) if its plan is still open. */
  finish(slot: Slot, episode: Episode, group: string | undefined): void {
    const p = this.plan;
    if (!p || p.iteration !== slot.iteration || p.groups[slot.t].slots[slot.g] !== "playing") return;
    const seed = p.groups[slot.t].seeds[slot.g];
    const entry: JournalEntry = {
      iteration: slot.iteration,
      t: slot.t,
      g: slot.g,
      taskId: slot.task.id,
      ...(group ? { group } : {}),
      seed,
      episode,
    };
    appendFileSync(this.journalFile, JSON.stringify(entry) + "\n");
    p.groups[slot.t].slots[slot.g] = episode;
    this.finishIfDone();
  }

  /** A slot's episode will not end (a reset or close mid-episode): the slot is free for another reset of its group. */
  abandon(slot: Slot): void {
    const p = this.plan;
    if (!p || p.iteration !== slot.iteration || p.groups[slot.t].slots[slot.g] !== "playing") return;
    p.groups[slot.t].slots[slot.g] = undefined;
    for (const wake of this.waiting.splice(0)) wake();
  }

  /** The iteration is checkpointed: its journal is no longer needed. */
  checkpointed(): void {
    writeFileSync(this.journalFile, "");
  }

  /** No more plans: the open one fails (its iteration is not written), and waiting and later resets hear `reason`. */
  end(reason: string): void {
    this.ended = reason;
    this.plan?.fail(new BrokerRefusal(reason));
    this.plan = undefined;
    for (const wake of this.waiting.splice(0)) wake();
  }

  private take(p: Plan, group: string | undefined, index: number | undefined): Slot | undefined {
    const owner = group ?? ANONYMOUS;
    let t = group !== undefined ? p.byName.get(group) : undefined;
    if (t === undefined && group !== undefined && index !== undefined) {
      // The trainer says which of the batch's groups this is: its task, whatever arrived first.
      if (index >= p.groups.length)
        throw new BrokerRefusal(`group_index ${index} is past the plan's ${p.groups.length} groups (the server's --tasks-per-iter)`);
      if (p.groups[index].owner !== undefined)
        throw new BrokerRefusal(`group_index ${index} of iteration ${p.iteration} belongs to another group than ${group}`);
      t = index;
      p.groups[t].owner = owner;
      p.byName.set(group, t);
    }
    if (t === undefined) {
      // Unnamed resets fill one group before they claim the next; a new name claims an unclaimed task.
      if (group === undefined) t = p.groups.findIndex((x) => x.owner === ANONYMOUS && x.slots.includes(undefined));
      if (t === undefined || t < 0) t = p.groups.findIndex((x) => x.owner === undefined);
      if (t < 0) return undefined;
      p.groups[t].owner = owner;
      if (group !== undefined) p.byName.set(group, t);
    }
    const g = p.groups[t].slots.indexOf(undefined);
    if (g < 0) {
      if (group === undefined) return undefined;
      throw new BrokerRefusal(
        `group ${group} already has its ${this.G} episodes (playing or played) in iteration ${p.iteration}: a group is one prompt's G generations (the server's --group)`,
      );
    }
    p.groups[t].slots[g] = "playing";
    return { iteration: p.iteration, phase: p.phase, t, g, task: p.groups[t].task, seed: p.seedOf(t, g) };
  }

  private finishIfDone(): void {
    const p = this.plan;
    if (!p || !p.groups.every((x) => x.slots.every((s) => s !== undefined && s !== "playing"))) return;
    this.plan = undefined;
    p.done(
      p.groups.map((x) =>
        x.slots
          .map((e, g) => ({ e: e as Episode, seed: x.seeds[g], g }))
          .sort((a, b) => a.seed - b.seed || a.g - b.g)
          .map(({ e, seed }) => ({ e, seed })),
      ),
    );
  }
}
