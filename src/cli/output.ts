import { accessSync, closeSync, constants, existsSync, fstatSync, fsyncSync, ftruncateSync, openSync, readSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parseTrajectory } from "../buffer/index.ts";
import { DataError, jsonlEnd, repairJsonlTail, writeAll } from "../core/index.ts";
import { safeText, tagFile } from "./errors.ts";

/** The nearest folder on the way up from `path` that exists (the one a mkdir -p would write into). */
function nearestExisting(path: string): string {
  let p = resolve(path);
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  return p;
}

function checkWritableFolder(dir: string, file: string, flag: string): void {
  if (!statSync(dir).isDirectory()) throw new DataError(`${flag}: ${dir} is a file, not a folder; check the path`, { file });
  try {
    accessSync(dir, constants.W_OK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new DataError(
      `${flag}: cannot write in ${dir} (${code === "EROFS" ? "read-only file system" : "permission denied"}); choose a writable location`,
      { file },
      e,
    );
  }
}

/**
 * Checks, before any work, that an output file can be written: not a folder, its folder exists and
 * is writable. Devices and pipes (`/dev/null`) pass: they are written directly.
 */
export function checkOutputFile(file: string, flag = "--out"): void {
  if (existsSync(file)) {
    const st = statSync(file);
    if (st.isDirectory()) throw new DataError(`${flag} is a folder; give a file path`, { file });
    if (!st.isFile()) return;
  }
  const dir = dirname(resolve(file));
  if (!existsSync(dir)) throw new DataError(`${flag}: the folder ${dir} does not exist; create it or choose another path`, { file });
  checkWritableFolder(dir, file, flag);
}

/** Checks that an output folder can be made (folders on the way are created) and written. */
export function checkOutputFolder(dir: string, flag = "--out"): void {
  if (existsSync(dir) && !statSync(dir).isDirectory()) throw new DataError(`${flag} is a file, not a folder; give a folder path`, { file: dir });
  checkWritableFolder(nearestExisting(dir), dir, flag);
}

/** Whether a file's first 64 KiB are text: UTF-8 (a character cut at their end is fine) with no NUL byte. */
export function isTextFile(file: string): boolean {
  const head = Buffer.alloc(1 << 16);
  const fd = openSync(file, "r");
  let n: number;
  try {
    n = readSync(fd, head, 0, head.length, 0);
  } finally {
    closeSync(fd);
  }
  const bytes = head.subarray(0, n);
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes, { stream: true });
  } catch {
    return false;
  }
  return !bytes.includes(0);
}

/**
 * The longest end `checkAppendFile` reads back for a file's last line, so a huge file is never read
 * whole: a trajectory line is far shorter, and a file with no line end in as much is no JSONL.
 */
const APPEND_SCAN = 64 << 20;

/** A torn last line of a file to append to: where it starts and its length in bytes. */
export interface TornTail {
  at: number;
  bytes: number;
}

/**
 * Checks, before any work, a file `--append` is to add trajectories to: text, and its last line a
 * trajectory (its shape; other envs' are fine). Only its head and its end are read. A file that is
 * not trajectory JSONL is refused, untouched. Returns the torn last line a killed earlier run left
 * (which `JsonlOutput` cuts before appending, and the caller says so), else null.
 */
export function checkAppendFile(file: string, flag = "--out"): TornTail | null {
  const st = existsSync(file) ? statSync(file) : undefined;
  if (!st?.isFile() || st.size === 0) return null;
  const refuse = (why: string) =>
    new DataError(`${why}; --append adds to a trajectory JSONL file: choose another ${flag}, or drop --append to replace the file`, { file });
  if (!isTextFile(file)) throw refuse("not a text file (binary bytes)");
  const end = jsonlEnd(file, APPEND_SCAN);
  if (!end) throw refuse(`no line end in its last ${APPEND_SCAN >> 20} MiB, so not JSONL`);
  const blank = end.tail.trim() === "";
  const tail = blank ? null : lineProblem(end.tail);
  const torn = tail !== null && !tail.json;
  if (!blank && !torn) {
    // A last line of whole JSON only lacks its newline (it gets one): it must be a trajectory.
    if (tail) throw refuse(`its last line (from byte ${end.tailStart}) ${tail.why}`);
    return null;
  }
  // Blank, or torn (to be cut off): the last whole line must be a trajectory.
  if (!end.last) {
    if (blank) return null; // blank lines only: nothing to add to
    throw refuse(`no whole line in it (${end.size - end.tailStart} bytes with no line end)`);
  }
  const problem = lineProblem(end.last.text);
  if (problem) throw refuse(`its last line (from byte ${end.last.start}) ${problem.why}`);
  return torn ? { at: end.tailStart, bytes: end.size - end.tailStart } : null;
}

/** Why a JSONL line is not a trajectory, and whether it is JSON at all (null: it is a trajectory). */
function lineProblem(line: string): { json: boolean; why: string } | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (e) {
    return { json: false, why: `is not JSON (${safeText((e as Error).message, 80)})` };
  }
  try {
    parseTrajectory(value);
    return null;
  } catch (e) {
    return { json: true, why: `is ${safeText((e as Error).message, 120)}` };
  }
}

/**
 * A JSONL output that is never left cut off. A new file is written beside its target and renamed
 * into place by `commit()`; `abort()` removes it. With `append`, a torn last line an earlier run
 * left is cut first (`checkAppendFile` finds it, for the caller to say so), so the first record
 * starts a line of its own, and `abort()` cuts the file back to its last whole record, so what
 * earlier runs and this one wrote stays. Devices (`/dev/null`) are written directly.
 */
export class JsonlOutput {
  private fd: number;
  private readonly tmp: string | null;
  private committed: number;
  constructor(
    readonly file: string,
    opts: { append?: boolean } = {},
  ) {
    const special = existsSync(file) && !statSync(file).isFile();
    this.tmp = special || opts.append ? null : `${file}.${process.pid}.tmp`;
    if (opts.append && !special) repairJsonlTail(file);
    try {
      this.fd = openSync(this.tmp ?? file, this.tmp ? "w" : "a");
    } catch (e) {
      // The user knows the output by its name, not by the temporary file's.
      if ((e as NodeJS.ErrnoException).path === this.tmp) (e as NodeJS.ErrnoException).path = file;
      throw e;
    }
    this.committed = special ? 0 : fstatSync(this.fd).size;
    // Ctrl-C is the command's to handle (collect keeps the episodes played: `stoppableLoop`). A
    // process killed outright leaves `<out>.<pid>.tmp`, never a cut-off `<out>`.
  }
  write(record: unknown): void {
    const data = Buffer.from(JSON.stringify(record) + "\n");
    try {
      writeAll(this.fd, data);
    } catch (e) {
      tagFile(e, this.file, "fs");
      throw e;
    }
    this.committed += data.length;
  }
  /** Flushes and puts the file in place. */
  commit(): void {
    if (this.fd < 0) return;
    try {
      fsyncSync(this.fd);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EINVAL") {
        this.abort();
        tagFile(e, this.file, "fs");
        throw e;
      }
    }
    this.close();
    if (this.tmp) {
      try {
        renameSync(this.tmp, this.file);
      } catch (e) {
        rmSync(this.tmp, { force: true });
        throw e;
      }
    }
  }
  /** Drops what is incomplete: the new file, or an appended record that was cut off. Never throws. */
  abort(): void {
    if (this.fd < 0) return;
    try {
      if (!this.tmp && fstatSync(this.fd).isFile()) ftruncateSync(this.fd, this.committed);
    } catch {
      // the file stays as the failed write left it; the error being raised says why
    }
    this.close();
    if (this.tmp) rmSync(this.tmp, { force: true });
  }
  private close(): void {
    closeSync(this.fd);
    this.fd = -1;
  }
}

/** An input file must be there and be readable as a file: a file, a pipe or a device (`what`: e.g. "trajectory file"; `hint`: what to give instead). */
export function checkInputFile(file: string, what: string, hint: string): void {
  if (!existsSync(file)) throw new DataError(`no such ${what}`, { file });
  // A pipe or a device (`--config <(…)`, /dev/stdin) is read as a file is; a folder or a socket is not.
  const st = statSync(file);
  if (st.isDirectory() || st.isSocket()) throw new DataError(`not a file; ${hint}`, { file });
}

/** A trajectory JSONL input: as `checkInputFile`, and text (a file's head is read; a pipe is left for its one reader). */
export function checkTrajectoryFile(file: string): void {
  checkInputFile(file, "trajectory file", "give a trajectory JSONL file");
  if (statSync(file).isFile() && !isTextFile(file)) throw new DataError("not a text file (binary bytes); give a trajectory JSONL file", { file });
}

/**
 * Text from data (trajectories, tasks, LLM answers) made safe for a terminal: control characters
 * (ESC, NUL, …, C1), and the marks that reorder or hide text (bidi overrides and isolates,
 * zero-width characters), are shown as `\u{…}` instead of acting on the terminal.
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g, (c) => `\\u{${c.charCodeAt(0).toString(16)}}`);
}
