import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import {
  DataError,
  firstMissingFolder,
  InvalidConfigError,
  JsonlWriter,
  readJsonFile,
  readJsonl,
  repairJsonlTail,
  writeFileAtomic,
  type HistoryStep,
  type StateAbstraction,
  type Trajectory,
} from "../core/index.ts";
import { trajectoryContentId } from "../buffer/index.ts";
import type { ReplayBuffer } from "../buffer/index.ts";
import { EndpointFailedError, type ChatMessage, type ChatModel } from "../llm/index.ts";
import { retrieveDemos } from "./demos.ts";
import { ReasoningExperienceModel } from "./reasoning-model.ts";

export interface SftBuildOptions {
  /** The teacher that explains each transition. */
  teacher: ChatModel;
  abstraction: StateAbstraction;
  /** Real trajectories to annotate. */
  trajectories: Trajectory[];
  /** Output folder: train.jsonl and val.jsonl. */
  outDir: string;
  /** Grounds the prompts with demos, as at inference (the transition's own task left out). */
  buffer?: ReplayBuffer;
  /** Share of tasks held out for validation (split by task, never by transition). @default 0.1 */
  valFraction?: number;
  /** Teacher calls at once. @default 8 */
  concurrency?: number;
  onProgress?: (done: number, total: number) => void;
}

export interface SftBuildReport {
  examples: number;
  train: number;
  val: number;
  /** Already in the output from an earlier (interrupted) build: not paid for again. */
  skipped: number;
  failed: number;
  /** Lines of the existing output that were not examples (garbage, torn or foreign lines), removed. */
  dropped: number;
  /** Why the first failed teacher call failed. */
  firstFailure?: string;
}

/** An example line as this module writes it (anything else in the output is dropped on resume). */
function isExample(v: unknown): v is { key: string } {
  const e = v as { key?: unknown; messages?: unknown } | null;
  return typeof e === "object" && e !== null && !Array.isArray(e) && typeof e.key === "string" && Array.isArray(e.messages);
}

/** Rewrites `file` keeping only its example lines (atomically); returns how many lines went. */
function dropNonExamples(file: string): number {
  const lines = readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "");
  const keep = lines.filter((l) => {
    try {
      return isExample(JSON.parse(l));
    } catch {
      return false;
    }
  });
  if (keep.length < lines.length) writeFileAtomic(file, keep.map((l) => `${l}\n`).join(""));
  return lines.length - keep.length;
}

/** Deterministic split by task id. */
export function isValTask(taskId: string, valFraction: number): boolean {
  return createHash("sha256").update(taskId).digest().readUInt32LE(0) / 0x100000000 < valFraction;
}

const TEACHER_SYSTEM =
  "You explain environment dynamics. Given a state, an action and the state that really followed, explain briefly (2-4 sentences) why the action led to that next state and that reward. Do not restate the next state; explain the mechanism.";

/**
 * Training data for the reasoning experience model (the paper's joint objective): for each real
 * transition, a teacher explains why the action led to the next state; each example is the same
 * prompt the model gets at inference, answered with `{reasoning, next_state, reward, terminated}` —
 * reasoning first. Chat-format JSONL (`{"messages": [...]}`), split by task into train/val, ready
 * for TRL, LLaMA-Factory or OpenAI-style fine-tuning. Resumable: examples already written (by key)
 * are skipped, so an interrupted build continues without paying twice.
 */
export async function buildSftData(opts: SftBuildOptions): Promise<SftBuildReport> {
  const valFraction = opts.valFraction ?? 0.1;
  if (!(valFraction >= 0 && valFraction < 1)) throw new InvalidConfigError(`the validation share must be in [0, 1), got ${valFraction}`);
  const manifest = join(opts.outDir, "manifest.json");
  // The split must not change between a build and its resumption, or a task could land in both.
  if (existsSync(manifest)) {
    const saved = readJsonFile<{ valFraction?: unknown }>(manifest);
    if (typeof saved !== "object" || saved === null || typeof saved.valFraction !== "number") {
      throw new DataError("not an sft build manifest (no valFraction); remove the folder's files or use another --out", { file: manifest });
    }
    if (saved.valFraction !== valFraction)
      throw new InvalidConfigError(`${opts.outDir} was built with a validation share of ${saved.valFraction}; resume with the same, or use another folder`);
  }
  const created = firstMissingFolder(opts.outDir);
  try {
    mkdirSync(opts.outDir, { recursive: true });
  } catch (e) {
    throw new DataError(`cannot use the output folder: ${(e as Error).message}`, { file: opts.outDir }, e);
  }
  try {
    return await build(opts, valFraction, manifest);
  } catch (e) {
    // The folders this build made (the output's missing parents too) go if it put no example in them, so a rerun starts clean.
    if (created) removeIfNoExamples(opts.outDir, created);
    throw e;
  }
}

function removeIfNoExamples(dir: string, created: string): void {
  for (const f of ["train.jsonl", "val.jsonl"]) if (existsSync(join(dir, f)) && readFileSync(join(dir, f)).length > 0) return;
  rmSync(created, { recursive: true, force: true });
}

async function build(opts: SftBuildOptions, valFraction: number, manifest: string): Promise<SftBuildReport> {
  if (!existsSync(manifest)) writeFileAtomic(manifest, JSON.stringify({ valFraction }) + "\n");
  const files = { train: join(opts.outDir, "train.jsonl"), val: join(opts.outDir, "val.jsonl") };
  const done = new Set<string>();
  let dropped = 0;
  for (const f of Object.values(files)) {
    if (!existsSync(f)) continue;
    // A torn last line from a killed build is cut off here and its example built again; lines that
    // are not examples at all would break a fine-tuning run, so they go too.
    repairJsonlTail(f);
    dropped += dropNonExamples(f);
    for await (const { value } of readJsonl<{ key?: string }>(f, { onError: () => {} })) if (value.key) done.add(value.key);
  }
  const writers = { train: new JsonlWriter(files.train), val: new JsonlWriter(files.val) };
  // The student's prompt is the reasoning model's own, so training and inference see the same text.
  const student = new ReasoningExperienceModel({ chat: opts.teacher, abstraction: opts.abstraction });
  const report: SftBuildReport = { examples: 0, train: 0, val: 0, skipped: 0, failed: 0, dropped };
  const jobs: (() => Promise<void>)[] = [];
  for (const t of opts.trajectories) {
    const history: HistoryStep[] = [];
    const split = isValTask(t.task.id, valFraction) ? "val" : "train";
    const trajectoryId = trajectoryContentId(t);
    t.steps.forEach((s, i) => {
      const state = opts.abstraction.abstract(s.observation);
      const nextState = opts.abstraction.abstract(s.next_observation, s.info);
      // One example per step of each distinct trajectory (identical trajectories share their keys).
      const key = createHash("sha256")
        .update(JSON.stringify([trajectoryId, i]))
        .digest("hex")
        .slice(0, 24);
      const past = history.slice();
      history.push({ state, action: s.action, nextState, reward: s.reward });
      if (done.has(key)) {
        report.skipped++;
        return;
      }
      done.add(key);
      jobs.push(async () => {
        const demos = opts.buffer ? await retrieveDemos(opts.buffer, opts.abstraction, { state, action: s.action }, { k: 5, excludeTask: t.task.id }) : [];
        const teacherMessages: ChatMessage[] = [
          { role: "system", content: TEACHER_SYSTEM },
          {
            role: "user",
            content: `${opts.abstraction.profile}\n\nTask: ${t.task.instruction}\n\nState:\n${state}\n\nAction: ${s.action}\n\nNext state:\n${nextState}\n\nReward: ${s.reward}${s.terminated ? " (the episode ended)" : ""}\n\nWhy?`,
          },
        ];
        let reasoning: string;
        try {
          reasoning = (await opts.teacher.generate({ messages: teacherMessages, temperature: 0, maxTokens: 300 })).choices[0]?.text.trim() ?? "";
        } catch (e) {
          if (e instanceof EndpointFailedError) throw e;
          report.failed++;
          report.firstFailure ??= (e as Error).message;
          opts.teacher.breaker?.stepFailed((e as Error).message, t.task.id);
          return;
        }
        if (!reasoning) {
          report.failed++;
          report.firstFailure ??= "the teacher gave an empty answer";
          opts.teacher.breaker?.stepFailed("the teacher gave an empty answer", t.task.id);
          return;
        }
        opts.teacher.breaker?.stepSucceeded();
        const messages = student.messages({ task: t.task, history: past, state, action: s.action, demos });
        const answer = JSON.stringify({ reasoning, next_state: nextState, reward: s.terminated ? s.reward : 0, terminated: s.terminated });
        writers[split].write({ key, task: t.task.id, split, messages: [...messages, { role: "assistant", content: answer }] });
        report.examples++;
        report[split]++;
        opts.onProgress?.(report.examples + report.skipped + report.failed, total);
      });
    });
  }
  const total = jobs.length + report.skipped;
  let next = 0;
  // Every worker finishes before the files close; the first unexpected error is raised after.
  const results = await Promise.allSettled(
    Array.from({ length: Math.max(1, opts.concurrency ?? 8) }, async () => {
      for (let j = next++; j < jobs.length; j = next++) await jobs[j]();
    }),
  );
  writers.train.close();
  writers.val.close();
  const broken = results.find((r) => r.status === "rejected");
  if (broken) throw (broken as PromiseRejectedResult).reason;
  if (jobs.length > 0 && report.failed === jobs.length) throw new InvalidConfigError(`every teacher call failed; the first: ${report.firstFailure}`);
  return report;
}
