import {
  createReadStream,
  promises as fsp,
  readFileSync,
  openSync,
  writeSync,
  fsyncSync,
  closeSync,
  existsSync,
  fstatSync,
  statSync,
  readSync,
  ftruncateSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, resolve } from "node:path";
import { DataError } from "./errors.ts";

/** A line that could not be parsed, reported with its 1-based line number. */
export interface JsonlLineError {
  file: string;
  line: number;
  message: string;
}

export interface ReadJsonlOptions<T> {
  /** Validates/converts a parsed value; throw to reject the line. */
  parse?: (value: unknown, line: number) => T;
  /**
   * Called for a malformed line. Without it, the first malformed line throws a DataError naming
   * the file and line; with it, the line is reported and reading goes on.
   */
  onError?: (error: JsonlLineError) => void;
}

/** Streams a JSONL file, one parsed value a line, skipping blank lines. */
export async function* readJsonl<T = unknown>(file: string, opts: ReadJsonlOptions<T> = {}): AsyncGenerator<{ value: T; line: number }> {
  try {
    await fsp.access(file);
  } catch (e) {
    throw new DataError(`cannot read JSONL file: ${(e as Error).message}`, { file }, e);
  }
  let n = 0;
  for await (const text of lines(file)) {
    n++;
    if (text.trim() === "") continue;
    let value: T;
    try {
      const raw: unknown = JSON.parse(text);
      value = opts.parse ? opts.parse(raw, n) : (raw as T);
    } catch (e) {
      const message = (e as Error).message;
      if (!opts.onError) throw new DataError(`malformed line: ${message}`, { file, line: n }, e);
      opts.onError({ file, line: n, message });
      continue;
    }
    yield { value, line: n };
  }
}

/**
 * The lines of a UTF-8 file, read in large chunks (faster than readline for big files). Lines are
 * cut at newline bytes and each is decoded alone, so a line of ASCII is a one-byte string however
 * many other characters its chunk holds (parsing it, and everything made from it, is cheaper).
 */
async function* lines(file: string): AsyncGenerator<string> {
  const stream = createReadStream(file, { highWaterMark: 1 << 20 });
  let rest: Buffer | null = null;
  let first = true;
  for await (const data of stream as AsyncIterable<Buffer>) {
    let chunk: Buffer = rest ? Buffer.concat([rest, data]) : data;
    rest = null;
    if (first) {
      if (chunk.length < BOM.length && BOM.subarray(0, chunk.length).equals(chunk)) {
        rest = chunk; // may yet be a byte-order mark
        continue;
      }
      first = false;
      // A byte-order mark (editors on Windows write one) is not part of the first line.
      if (chunk.subarray(0, BOM.length).equals(BOM)) chunk = chunk.subarray(BOM.length);
    }
    let start = 0;
    for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, start)) {
      yield lineText(chunk, start, nl);
      start = nl + 1;
    }
    if (start < chunk.length) rest = chunk.subarray(start);
  }
  if (rest) yield lineText(rest, 0, rest.length);
}

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
/** Bytes [start, end) of a buffer as text, without a carriage return at the end. */
const lineText = (b: Buffer, start: number, end: number) => b.toString("utf8", start, end > start && b[end - 1] === 13 ? end - 1 : end);

/** Reads a whole JSONL file into memory (for small files). */
export async function readJsonlAll<T = unknown>(file: string, opts: ReadJsonlOptions<T> = {}): Promise<T[]> {
  const out: T[] = [];
  for await (const { value } of readJsonl(file, opts)) out.push(value);
  return out;
}

/**
 * Appends records to a JSONL file. Each `write` is one `write(2)` of whole lines, so a killed
 * process leaves at most a torn last line, which `readJsonl` reports and skips.
 */
export class JsonlWriter {
  private fd: number;
  readonly file: string;
  constructor(file: string, opts: { append?: boolean } = {}) {
    this.file = file;
    this.fd = openSync(file, opts.append === false ? "w" : "a");
  }
  write(...records: unknown[]): void {
    if (records.length === 0) return;
    writeAll(this.fd, Buffer.from(records.map((r) => JSON.stringify(r)).join("\n") + "\n"));
  }
  /** Flushes to disk (a no-op for files that cannot be synced, like /dev/null or a pipe). */
  sync(): void {
    try {
      fsyncSync(this.fd);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EINVAL") throw e;
    }
  }
  close(): void {
    if (this.fd < 0) return;
    this.sync();
    closeSync(this.fd);
    this.fd = -1;
  }
}

/** Writes all of `data` to `fd`: a nearly full disk writes part of it before it fails, so write the rest, or fail. */
export function writeAll(fd: number, data: Uint8Array): void {
  for (let off = 0; off < data.length; ) off += writeSync(fd, data, off, data.length - off);
}

/** Writes a file beside its target, flushes it to disk, renames it over the target: readers see the old file or the new one. */
export function writeFileAtomic(file: string, data: string | Uint8Array): void {
  if (isSpecial(file)) return writeFileSync(file, data);
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, "w");
  try {
    writeFileSync(fd, data);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, file);
  } catch (e) {
    try {
      closeSync(fd);
    } catch {
      // closed already
    }
    rmSync(tmp, { force: true });
    // A write to the open file fails without a path (a full disk): the error names the file.
    const err = e as NodeJS.ErrnoException;
    if (typeof err === "object" && err !== null && typeof err.syscall === "string" && err.path === undefined) err.path = file;
    throw e;
  }
}

/** A device or pipe (`/dev/null`): written in place, never replaced by a renamed file. */
function isSpecial(file: string): boolean {
  return existsSync(file) && !statSync(file).isFile();
}

/**
 * Writes JSONL through `write` into a file beside `file`, then renames it into place: the file
 * appears whole or not at all, and a failure leaves any old one as it was.
 */
export function writeJsonlAtomic<T>(file: string, write: (out: JsonlWriter) => T): T {
  const tmp = isSpecial(file) ? file : `${file}.${process.pid}.tmp`;
  const out = new JsonlWriter(tmp, { append: false });
  try {
    const result = write(out);
    out.close();
    if (tmp !== file) renameSync(tmp, file);
    return result;
  } catch (e) {
    try {
      out.close();
    } catch {
      // a failed flush: the file goes anyway
    }
    if (tmp !== file) rmSync(tmp, { force: true });
    throw e;
  }
}

/** How a JSONL file ends (`jsonlEnd`). */
export interface JsonlEnd {
  size: number;
  /** Where the bytes after the last newline start (`size` when the file ends with one). */
  tailStart: number;
  /** Those bytes as text: a torn last line, or a whole one that lacks its newline. */
  tail: string;
  /** The last non-blank line that ends with a newline, from byte `start`; null when there is none. */
  last: { start: number; text: string } | null;
}

/**
 * How a JSONL file ends, read backwards in chunks, never the whole file. Past `limit` bytes from
 * the end without the newlines it looks for (no line file, or a huge line), it gives up: null.
 */
export function jsonlEnd(file: string, limit = Infinity): JsonlEnd | null {
  const fd = openSync(file, "r");
  try {
    const size = fstatSync(fd).size;
    const chunk = Buffer.alloc(Math.max(1, Math.min(size, 1 << 16)));
    let cStart = 0; // the chunk holds the file's bytes [cStart, cEnd)
    let cEnd = 0;
    /** The offset of the last newline before `before`, -1 if none; null past the limit. */
    const newlineBefore = (before: number): number | null => {
      for (let end = before; end > 0; end = cStart) {
        if (!(end > cStart && end <= cEnd)) {
          if (size - end >= limit) return null;
          cStart = Math.max(0, end - chunk.length);
          cEnd = end;
          readSync(fd, chunk, 0, cEnd - cStart, cStart);
        }
        const i = chunk.lastIndexOf(10, end - cStart - 1);
        if (i >= 0) return cStart + i;
      }
      return -1;
    };
    const read = (start: number, end: number): string => {
      const b = Buffer.alloc(end - start);
      readSync(fd, b, 0, b.length, start);
      // A byte-order mark (editors on Windows write one) is not part of the first line.
      const from = start === 0 && b.subarray(0, BOM.length).equals(BOM) ? BOM.length : 0;
      return lineText(b, from, b.length);
    };
    const nl = newlineBefore(size);
    if (nl === null) return null;
    const tailStart = nl + 1;
    const tail = read(tailStart, size);
    for (let end = nl; end >= 0; ) {
      const prev = newlineBefore(end);
      if (prev === null) return null;
      const text = read(prev + 1, end);
      if (text.trim() !== "") return { size, tailStart, tail, last: { start: prev + 1, text } };
      end = prev;
    }
    return { size, tailStart, tail, last: null };
  } finally {
    closeSync(fd);
  }
}

/** Whether a line is whole JSON (a record that only lacks its newline), not a torn one. */
function isWholeJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

/**
 * Drops a torn last line (what a killed writer may leave), so appending continues on a clean line;
 * a last line that is complete JSON but lacks its newline gets one instead. Returns whether the file changed.
 */
export function repairJsonlTail(file: string): boolean {
  if (!existsSync(file)) return false;
  const end = jsonlEnd(file)!;
  if (end.tailStart === end.size) return false; // ends cleanly (or is empty)
  const fd = openSync(file, "r+");
  try {
    if (isWholeJson(end.tail)) writeSync(fd, "\n", end.size);
    else ftruncateSync(fd, end.tailStart);
    return true;
  } finally {
    closeSync(fd);
  }
}

/** Writes records as a new JSONL file (replacing it). */
export async function writeJsonl(file: string, records: Iterable<unknown>): Promise<void> {
  const w = new JsonlWriter(file, { append: false });
  try {
    for (const r of records) w.write(r);
  } finally {
    w.close();
  }
}

/** Reads a JSON file; a syntax error names the file, line and column. */
export function readJsonFile<T = unknown>(file: string): T {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new DataError(`cannot read file: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { file }, e);
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    const message = (e as Error).message;
    const m = /position (\d+)/.exec(message);
    const pos = m ? Number(m[1]) : jsonErrorPosition(text);
    if (pos >= 0) {
      const before = text.slice(0, pos);
      const line = before.split("\n").length;
      const column = pos - before.lastIndexOf("\n");
      throw new DataError(`corrupt JSON at position ${pos}: ${message}`, { file, line, column }, e);
    }
    throw new DataError(`corrupt JSON: ${message}`, { file }, e);
  }
}

/**
 * The offset of the first syntax error in a JSON text, or -1 if there is none. Node 20's
 * `JSON.parse` does not always say where it failed, so we scan for it (only on the error path).
 */
export function jsonErrorPosition(text: string): number {
  let i = 0;
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const fail = (): never => {
    throw i;
  };
  const literal = (word: string) => {
    if (text.startsWith(word, i)) i += word.length;
    else fail();
  };
  const string = () => {
    i++; // opening quote
    while (i < text.length && text[i] !== '"') {
      const ch = text.charCodeAt(i);
      if (ch < 0x20) fail();
      if (text[i] === "\\") {
        i++;
        if (text[i] === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) fail();
          i += 4;
        } else if (!'"\\/bfnrt'.includes(text[i] ?? "")) fail();
      }
      i++;
    }
    if (i >= text.length) fail();
    i++;
  };
  const number = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 64));
    if (!m) fail();
    i += m![0].length;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      ws();
      if (text[i] === "}") return void i++;
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        string();
        ws();
        if (text[i] !== ":") fail();
        i++;
        value();
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "}") return void i++;
        else fail();
      }
    } else if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") return void i++;
      for (;;) {
        value();
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "]") return void i++;
        else fail();
      }
    } else if (c === '"') string();
    else if (c === "t") literal("true");
    else if (c === "f") literal("false");
    else if (c === "n") literal("null");
    else number();
  };
  try {
    value();
    ws();
    return i < text.length ? i : -1;
  } catch (pos) {
    return pos as number;
  }
}

/** The outermost folder of `dir` that does not exist yet (what `mkdir -p` would create), or null: what a failed start removes again. */
export function firstMissingFolder(dir: string): string | null {
  let p = resolve(dir);
  if (existsSync(p)) return null;
  while (!existsSync(dirname(p))) p = dirname(p);
  return p;
}
