import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import {
  DataError,
  InvalidConfigError,
  RequestThread,
  readJsonl,
  writeJsonlAtomic,
  type JsonlLineError,
  type Trajectory,
  type Transition,
} from "../core/index.ts";
import type { SearchFilter, ThreadEmbedder } from "./buffer-types.ts";
import type { PreparedVectors } from "./import-vectors.ts";
import type { ReplayBuffer } from "./replay-buffer.ts";
import type { TrajectoryRules } from "../core/index.ts";
import { parseTrajectory, trajectoryContentId } from "./trajectory-schema.ts";

export interface ImportReport {
  file: string;
  added: number;
  duplicates: number;
  transitions: number;
  evicted: number;
  /** Lines that were not imported, with their numbers and what was wrong. */
  malformed: JsonlLineError[];
  /** Lines imported with a field set right (a total or success that disagreed with the steps and the env's rule). */
  corrected: JsonlLineError[];
  /** Batches whose content ids and vectors the import thread worked out (`ImportOptions.thread`). */
  onThread: number;
}

export interface ImportOptions {
  /** Mark the imported trajectories as the offline seed (never evicted). @default true */
  seed?: boolean;
  /** Trajectories per transaction. @default 500 */
  batch?: number;
  /** Called after each committed batch with the lines read so far. */
  onProgress?: (linesRead: number) => void;
  /**
   * Applied to each trajectory before it is stored (e.g. turning observations into abstract states).
   * With the import thread it runs up to two batches ahead of the writes: it must not change what it
   * returned before.
   */
  transform?: (t: Trajectory) => Trajectory;
  /** Known envs and their reward ranges: lines outside them are malformed. */
  rules?: TrajectoryRules;
  /**
   * Work out the next batches' content ids and vectors on a worker thread while this one writes,
   * where there are two cores and the buffer's embedder is the default one; "wait": with any number
   * of cores, and the thread is waited for before the first batch (tests). @default true
   */
  thread?: boolean | "wait";
}

/**
 * What the import thread is asked: vectors for a batch; without trajectories, whether it is up.
 * `embedder` goes with the first request and again after any batch whose vectors the buffer did
 * not use; the requests between use the thread's (with `fit`, the one it fitted on the first batch).
 */
export interface ImportThreadRequest {
  trajectories?: Trajectory[];
  embedder?: ThreadEmbedder;
}

const plainRecord = (v: unknown): boolean =>
  typeof v === "object" && v !== null && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);

/**
 * Whether the thread's copy of `t` (a structured clone) gets the content id `t` gets: the trajectory and
 * its steps are plain objects, and what the id reads of them is plain data (objects, arrays, primitives;
 * no `toJSON`, which a class instance loses in the copy, nor any object reached twice, such as a cycle).
 * Walking those objects costs far less than hashing their text again.
 */
function copiesAsIs(t: Trajectory): boolean {
  const seen = new Set<object>();
  const plain = (v: unknown): boolean => {
    if (typeof v !== "object" || v === null) return true;
    if (seen.has(v) || "toJSON" in v) return false;
    seen.add(v);
    if (Object.getPrototypeOf(v) === Array.prototype) return (v as unknown[]).every(plain);
    if (!plainRecord(v)) return false;
    for (const k in v) if (!plain((v as Record<string, unknown>)[k])) return false;
    return true;
  };
  if (!plainRecord(t) || !Array.isArray(t.steps) || Object.getPrototypeOf(t.steps) !== Array.prototype) return false;
  if (![t.env, t.task, t.source, t.policy, t.total_reward, t.success].every(plain)) return false;
  for (const s of t.steps)
    if (!plainRecord(s) || ![s.observation, s.action, s.reward, s.next_observation, s.terminated, s.truncated, s.reasoning, s.info].every(plain)) return false;
  return true;
}

/**
 * Imports a trajectory JSONL file; malformed lines are reported with their numbers and skipped.
 * Where there are two cores and the buffer has the default embedder, a worker thread works out the
 * content ids, vectors and text keys of the next batches while this thread writes the one before (the
 * same content either way: the thread only does sooner what the buffer would do, a new buffer's IDF
 * fit on its first batch included). A first batch read before the thread is up is done here, and the
 * thread is asked for the next ones as soon as that batch has fixed the IDF.
 */
export async function importJsonl(buffer: ReplayBuffer, file: string, opts: ImportOptions = {}): Promise<ImportReport> {
  const report: ImportReport = { file, added: 0, duplicates: 0, transitions: 0, evicted: 0, malformed: [], corrected: [], onThread: 0 };
  const size = opts.batch ?? 500;
  const lines = readJsonl(file, {
    parse: (v, n) => parseTrajectory(v, opts.rules, (message) => report.corrected.push({ file, line: n, message })),
    onError: (e) => report.malformed.push(e),
  });
  /** The next batch and the line of its last trajectory (none: the file is read). */
  const read = async (): Promise<{ trajectories: Trajectory[]; line: number }> => {
    const trajectories: Trajectory[] = [];
    let line = 0;
    while (trajectories.length < size) {
      const r = await lines.next();
      if (r.done) break;
      line = r.value.line;
      trajectories.push(opts.transform ? opts.transform(r.value.value) : r.value.value);
    }
    return { trajectories, line };
  };
  const wanted = opts.thread === "wait" || ((opts.thread ?? true) && availableParallelism() > 1);
  const thread =
    wanted && buffer.defaultEmbedder
      ? new RequestThread<ImportThreadRequest, PreparedVectors | { up: true }>(new URL("./import-thread", import.meta.url), null)
      : undefined;
  let up = false;
  const started = thread?.request({}).then((r) => (up = r !== null));
  if (opts.thread === "wait") await started;
  let embedderSent = false;
  /** The import's first batch until it is written (then null: not kept alive). */
  let first: Trajectory[] | null | undefined;
  /**
   * Asks the thread for a batch's vectors once it is up. A new buffer fits its IDF on the import's
   * first batch: the thread fits it there, and uses that fit for the batches after; if the first
   * batch did not go to the thread, they wait for the IDF the buffer fits.
   */
  const ask = (trajectories: Trajectory[], embedder = buffer.threadEmbedder(), evenIfDown = false): Promise<PreparedVectors | null> | undefined => {
    if (first === undefined) first = trajectories;
    if (!(up || (evenIfDown && thread?.running)) || !embedder || (embedder.fit && trajectories !== first && !embedderSent)) return undefined;
    const sent = thread!.request({ trajectories, embedder: embedderSent ? undefined : embedder });
    embedderSent = true;
    return sent.then((r) => {
      if (r && "uids" in r) return r;
      embedderSent = false; // not sent, or not answered (a value that does not clone): embedded here, and the embedder sent again
      return null;
    });
  };
  // Batches read ahead (at most two besides the one being written), each with its vectors asked
  // of the thread, so that the thread always has the next one while this thread writes.
  const queue: { trajectories: Trajectory[]; line: number; vectors?: Promise<PreparedVectors | null> }[] = [];
  let end = false;
  // What stops reading (a transform's error) stops the import once the batches before it are written,
  // as it would have without reading ahead.
  let failed: { error: unknown } | undefined;
  try {
    for (;;) {
      // Without a thread nothing is read ahead: a transform runs just before its batch is written, as ever.
      while (!end && !failed && queue.length < (thread ? 3 : 1)) {
        try {
          const next = await read();
          if (next.trajectories.length === 0) end = true;
          else queue.push({ ...next, vectors: ask(next.trajectories) });
        } catch (error) {
          failed = { error };
        }
      }
      const batch = queue.shift();
      if (!batch) break;
      const threadMade = (await batch.vectors) ?? undefined;
      // The thread read copies: what a transform made may not copy as it is (a class's own toJSON). Unless
      // it is plain data, its output's content ids are made again here, and the thread's work is used
      // only where they agree.
      const made =
        threadMade &&
        (!opts.transform || batch.trajectories.every(copiesAsIs) || threadMade.uids.every((uid, i) => uid === trajectoryContentId(batch.trajectories[i])))
          ? threadMade
          : undefined;
      // Once the embedder is fixed (a first batch done here fits the IDF), the thread may start on the
      // next batches while this one is embedded and written: asked now, not at the end of this run of
      // code, and even if its word that it is up has not been read yet (this thread has not let go
      // since; it is up by now, or answers once it is). The buffer uses their vectors only if this
      // write went through.
      const r = await buffer.appendPrepared(batch.trajectories, made, { seed: opts.seed ?? true }, (embedder) => {
        for (const q of queue) q.vectors ??= ask(q.trajectories, embedder, true);
        thread?.flush();
      });
      // Vectors not used (made with an embedder the buffer does not have: a fit the buffer did not
      // take, a request that failed): the buffer's embedder goes with the next request.
      if (r.usedVectors) report.onThread++;
      else if (threadMade) embedderSent = false;
      first = null;
      report.added += r.added;
      report.duplicates += r.duplicates;
      report.transitions += r.transitions;
      report.evicted += r.evicted;
      opts.onProgress?.(batch.line);
      // The thread came up meanwhile (its word is read between tasks).
      if (thread && !up) await new Promise((r) => setImmediate(r));
      for (const q of queue) q.vectors ??= ask(q.trajectories);
    }
    if (failed) throw failed.error;
  } finally {
    thread?.close();
    await lines.return(undefined);
  }
  return report;
}

/**
 * Writes the buffer's trajectories (optionally filtered) as trajectory JSONL; returns how many. The
 * file appears whole or not at all (written beside it, then renamed).
 */
export function exportJsonl(buffer: ReplayBuffer, file: string, filter: Pick<SearchFilter, "env" | "source"> = {}): number {
  if (resolve(file) === resolve(buffer.path)) throw new InvalidConfigError(`cannot export over the buffer file itself (${file})`);
  return writeJsonlAtomic(file, (out) => {
    let n = 0;
    for (const t of buffer.trajectories(filter)) {
      out.write(t);
      n++;
    }
    return n;
  });
}

/**
 * Parses a few-shot transcript (an observation, then `> action` lines each followed by its
 * feedback) into a trajectory. `think: …` actions are kept as steps answered "OK." with
 * `info.think`. The transcripts are solved demonstrations: the last step is terminal with reward 1.
 */
export function parseTranscript(text: string, meta: { env: string; id: string; policy: string }): Trajectory {
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  const blocks: { action: string | null; feedback: string[] }[] = [{ action: null, feedback: [] }];
  for (const l of lines) {
    if (l.startsWith("> ")) blocks.push({ action: l.slice(2).trim(), feedback: [] });
    else blocks[blocks.length - 1].feedback.push(l);
  }
  const text0 = blocks[0].feedback.join("\n").trim();
  const task = /Your task is to: (.*)/.exec(text0)?.[1]?.trim() ?? "";
  if (blocks.length < 2) throw new Error(`transcript ${meta.id} has no "> action" lines`);
  const steps: Transition[] = [];
  let obs = text0;
  for (let i = 1; i < blocks.length; i++) {
    const b = blocks[i];
    const next = b.feedback.join("\n").trim();
    const last = i === blocks.length - 1;
    const think = b.action!.startsWith("think:");
    steps.push({
      observation: obs,
      action: b.action!,
      reward: last ? 1 : 0,
      next_observation: next,
      terminated: last,
      truncated: false,
      ...(think ? { info: { think: true } } : {}),
    });
    obs = next;
  }
  return {
    env: meta.env,
    task: { id: meta.id, instruction: task },
    steps,
    total_reward: 1,
    success: true,
    source: "real",
    policy: meta.policy,
    created_at: new Date(0).toISOString(),
  };
}
