import { createHash } from "node:crypto";
import { appendFileSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { threadId } from "node:worker_threads";

/**
 * What dreamgym works out once and keeps between processes (a WebShop title's nouns, the catalogue's
 * search index): files in the cache folder, named by what their content depends on, so that a file
 * is never stale, only unused. Every read and write here is best effort: a cache that cannot be read
 * or written is worked without, and deleting the folder at any time is safe.
 */

/** `$DREAMGYM_CACHE`, else `$XDG_CACHE_HOME/dreamgym`, else `~/.cache/dreamgym`; undefined with `DREAMGYM_CACHE=off`. */
export function resolveCacheDir(): string | undefined {
  const set = process.env.DREAMGYM_CACHE;
  if (set === "off") return undefined;
  if (set) return resolve(set);
  if (process.env.XDG_CACHE_HOME) return join(resolve(process.env.XDG_CACHE_HOME), "dreamgym");
  return join(homedir(), ".cache", "dreamgym");
}

/** The cache file for `name` whose content depends on `key` alone (versions, inputs), or undefined without a cache folder. */
export function cacheFile(name: string, key: string, extension: string): string | undefined {
  const dir = resolveCacheDir();
  if (!dir) return undefined;
  return join(dir, `${name}-${createHash("sha256").update(key).digest("hex").slice(0, 16)}.${extension}`);
}

/** The file's text, or undefined (none yet, or unreadable). */
export function readCache(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** Writes the file whole: a file of this writer's own, renamed into place, so that readers see all of it or none. */
export function writeCache(file: string, text: string): void {
  const tmp = `${file}.${process.pid}-${threadId}.tmp`;
  try {
    mkdirSync(join(file, ".."), { recursive: true });
    writeFileSync(tmp, text);
    renameSync(tmp, file);
  } catch {
    try {
      rmSync(tmp, { force: true });
    } catch {
      // Nothing was made, or the folder cannot be written: nothing to undo.
    }
  }
}

/**
 * Appends `record` on a line of its own, in one write (processes appending at once do not interleave
 * it); false when it could not. A record cut short (a full disk, a killed process) spoils only its own
 * line, since the next starts a new one: readers skip lines that do not parse.
 */
export function appendCache(file: string, record: string): boolean {
  try {
    mkdirSync(join(file, ".."), { recursive: true });
    appendFileSync(file, `\n${record}`);
    return true;
  } catch {
    return false;
  }
}
