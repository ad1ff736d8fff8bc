import { DreamGymError } from "../core/index.ts";

/**
 * Text from files or users made safe for a terminal: control and binary bytes become escapes (a
 * garbage file must not drive the terminal), and long excerpts are cut.
 */
export function safeText(text: string, max = 200): string {
  const escaped = text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\ufffd]/g, (c) =>
    c === "\ufffd" ? "\\ufffd" : `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`,
  );
  return escaped.length > max ? `${escaped.slice(0, max)}…` : escaped;
}

/** Errors from a database file carry its path, so the one-line error can name it. */
const FILE = Symbol.for("dreamgym.file");

/**
 * Runs `fn`; a database error it throws (`kind` "db") or a file-system error that names no path
 * (`kind` "fs": a failed write to an open file) remembers `file`, so the one-line error can name it.
 */
export async function inFile<T>(file: string, fn: () => T | Promise<T>, kind: "db" | "fs" = "db"): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    tagFile(e, file, kind);
    throw e;
  }
}

/** As `inFile`, for an error already caught. */
export function tagFile(e: unknown, file: string, kind: "db" | "fs"): void {
  if (typeof e !== "object" || e === null || FILE in e) return;
  const err = e as NodeJS.ErrnoException;
  const matches = kind === "db" ? err.name === "SqliteError" : typeof err.syscall === "string" && err.path === undefined;
  if (matches) (e as Record<symbol, unknown>)[FILE] = file;
}

const FS_ERRORS: Record<string, [what: string, todo: string]> = {
  ENOENT: ["no such file or folder", "check the path (does its folder exist?)"],
  EACCES: ["permission denied", "check its permissions or choose another path"],
  EPERM: ["operation not permitted", "check its permissions or choose another path"],
  EROFS: ["read-only file system", "choose a path on a writable file system"],
  ENOSPC: ["no space left on device", "free some space and run it again"],
  EDQUOT: ["disk quota exceeded", "free some space and run it again"],
  EFBIG: ["file too large", "choose another location"],
  EISDIR: ["it is a folder, not a file", "give a file path"],
  ENOTDIR: ["a part of the path is a file, not a folder", "check the path"],
  EEXIST: ["it already exists", "choose another path"],
  ENAMETOOLONG: ["the path is too long", "choose a shorter path"],
  ELOOP: ["too many symbolic links", "check the path"],
  EMFILE: ["too many open files", "raise the open-file limit (ulimit -n)"],
  EIO: ["input/output error", "check the disk"],
  EBUSY: ["the file is busy", "close what holds it"],
  ETXTBSY: ["the file is busy", "close what holds it"],
};

const SYSCALLS: Record<string, string> = {
  open: "open",
  read: "read",
  write: "write to",
  mkdir: "create the folder",
  rename: "rename",
  unlink: "remove",
  rmdir: "remove",
  scandir: "list",
  stat: "read",
  lstat: "read",
  copyfile: "copy",
  fsync: "write to",
  access: "use",
  close: "write to",
  ftruncate: "write to",
  rm: "remove",
};

const SQLITE_ERRORS: Record<string, string> = {
  SQLITE_CORRUPT: "the database is corrupt (corrupt pages); run `dreamgym buffer stats --buffer <file>` to check it, and restore it from a copy or rebuild it",
  SQLITE_NOTADB: "the file is not a database; check the path",
  SQLITE_FULL: "the disk is full; free some space and run it again",
  SQLITE_READONLY: "the database is read-only; check its permissions or copy it somewhere writable",
  SQLITE_CANTOPEN: "the database cannot be opened; check the path and its permissions",
  SQLITE_BUSY: "another process holds the database; close it or wait",
  SQLITE_LOCKED: "another process holds the database; close it or wait",
  SQLITE_IOERR: "input/output error on the database; check the disk (is it full?)",
  SQLITE_PERM: "permission denied on the database; check its permissions",
};

/**
 * The one line a user sees for an error, or null for an error that is a bug (which keeps its stack
 * trace). File-system and SQLite errors say what went wrong, on which path, and what to do.
 */
export function describeError(e: unknown): string | null {
  if (DreamGymError.isInstance(e)) return oneLine(e.message);
  if (typeof e !== "object" || e === null) return null;
  const err = e as NodeJS.ErrnoException & { dest?: string; [FILE]?: string };
  const code = typeof err.code === "string" ? err.code : "";
  const fs = FS_ERRORS[code];
  if (fs && (err.syscall || err.path)) {
    const verb = SYSCALLS[err.syscall ?? ""] ?? "use";
    const path = err.path ?? err[FILE];
    const where = path ? ` ${path}${err.dest ? ` → ${err.dest}` : ""}` : "";
    return oneLine(`cannot ${verb}${where}: ${fs[0]} (${code}); ${fs[1]}`);
  }
  if (err.name === "SqliteError" && code.startsWith("SQLITE_")) {
    const base = Object.keys(SQLITE_ERRORS).find((k) => code === k || code.startsWith(`${k}_`));
    const file = err[FILE];
    const todo = base ? SQLITE_ERRORS[base] : "check the file";
    return oneLine(`${file ? `${file}: ` : ""}${err.message} (${code}); ${file ? todo.replace("<file>", file) : todo}`);
  }
  return null;
}

/** One line: a multi-line message (a config with several bad keys) is joined with "; ". */
function oneLine(message: string): string {
  return safeText(
    message.replace(/:?\s*\n\s*/g, (m) => (m.startsWith(":") ? ": " : "; ")),
    2000,
  );
}
