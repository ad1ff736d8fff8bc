import { accessSync, closeSync, constants, existsSync, fstatSync, fsyncSync, ftruncateSync, openSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { DataError, writeAll } from "../core/index.ts";
import { tagFile } from "./errors.ts";

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

/**
 * A JSONL output that is never left cut off. A new file is written beside its target and renamed
 * into place by `commit()`; `abort()` removes it. With `append`, `abort()` cuts the file back to
 * its last whole record, so what earlier runs and this one wrote stays. Devices (`/dev/null`) are
 * written directly.
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

/** An input file must be there and be a file (`what`: e.g. "trajectory file"; `hint`: what to give instead). */
export function checkInputFile(file: string, what: string, hint: string): void {
  if (!existsSync(file)) throw new DataError(`no such ${what}`, { file });
  if (!statSync(file).isFile()) throw new DataError(`not a file; ${hint}`, { file });
}

/**
 * Text from data (trajectories, tasks, LLM answers) made safe for a terminal: control characters
 * (ESC, NUL, …, C1), and the marks that reorder or hide text (bidi overrides and isolates,
 * zero-width characters), are shown as `\u{…}` instead of acting on the terminal.
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g, (c) => `\\u{${c.charCodeAt(0).toString(16)}}`);
}
