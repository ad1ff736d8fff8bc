import { resolve } from "node:path";
import { DataError, InvalidConfigError, readJsonl, writeJsonlAtomic, type JsonlLineError, type Trajectory, type Transition } from "../core/index.ts";
import type { SearchFilter } from "./buffer-types.ts";
import type { ReplayBuffer } from "./replay-buffer.ts";
import type { TrajectoryRules } from "../core/index.ts";
import { parseTrajectory } from "./trajectory-schema.ts";

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
}

export interface ImportOptions {
  /** Mark the imported trajectories as the offline seed (never evicted). @default true */
  seed?: boolean;
  /** Trajectories per transaction. @default 500 */
  batch?: number;
  /** Called after each committed batch with the lines read so far. */
  onProgress?: (linesRead: number) => void;
  /** Applied to each trajectory before it is stored (e.g. turning observations into abstract states). */
  transform?: (t: Trajectory) => Trajectory;
  /** Known envs and their reward ranges: lines outside them are malformed. */
  rules?: TrajectoryRules;
}

/** Imports a trajectory JSONL file; malformed lines are reported with their numbers and skipped. */
export async function importJsonl(buffer: ReplayBuffer, file: string, opts: ImportOptions = {}): Promise<ImportReport> {
  const report: ImportReport = { file, added: 0, duplicates: 0, transitions: 0, evicted: 0, malformed: [], corrected: [] };
  const size = opts.batch ?? 500;
  let batch: Trajectory[] = [];
  let line = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const r = await buffer.appendTrajectories(batch, { seed: opts.seed ?? true });
    report.added += r.added;
    report.duplicates += r.duplicates;
    report.transitions += r.transitions;
    report.evicted += r.evicted;
    batch = [];
    opts.onProgress?.(line);
  };
  for await (const { value, line: n } of readJsonl(file, {
    parse: (v, n) => parseTrajectory(v, opts.rules, (message) => report.corrected.push({ file, line: n, message })),
    onError: (e) => report.malformed.push(e),
  })) {
    line = n;
    batch.push(opts.transform ? opts.transform(value) : value);
    if (batch.length >= size) await flush();
  }
  await flush();
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
