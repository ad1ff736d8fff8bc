import { createHash, randomBytes } from "node:crypto";
import { appendFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * What dreamgym works out once and keeps between processes (a WebShop title's nouns, the catalogue's
 * search index): files in the cache folder, named by a digest of all their content depends on (the
 * inputs, the code that works it out, the libraries' versions, the Unicode tables), so that a file is
 * never stale, only unused. Every read and write here is best effort: a cache that cannot be read or
 * written is worked without, and deleting the folder at any time is safe.
 */

/**
 * `$DREAMGYM_CACHE`, else `$XDG_CACHE_HOME/dreamgym` (an absolute one, as XDG says), else `~/.cache/dreamgym`;
 * undefined with `DREAMGYM_CACHE=off` (or `0`, `false`, `no`) or with no home folder to find.
 */
export function resolveCacheDir(): string | undefined {
  const set = process.env.DREAMGYM_CACHE;
  if (set !== undefined && /^(off|0|false|no)$/i.test(set)) return undefined;
  if (set) return resolve(set);
  const xdg = process.env.XDG_CACHE_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, "dreamgym");
  try {
    return join(homedir(), ".cache", "dreamgym");
  } catch {
    return undefined; // no HOME and no passwd entry (a container's arbitrary uid)
  }
}

/** What a cache file's content is worked out from: all of it goes into the file's name. */
export interface CacheKey {
  /** The code that works it out: `sourceDigest` of its module, taken as the module loads. */
  code: string | undefined;
  /** The packages that code calls (their versions). */
  packages: readonly string[];
  /** The inputs, if any (JSON). */
  input?: unknown;
}

/**
 * The cache file for `name`, named by a digest of `key` and of the Unicode tables (case and word
 * classes); undefined without a cache folder, or when the code or a package's version cannot be read.
 */
export function cacheFile(name: string, extension: string, key: CacheKey): string | undefined {
  const dir = resolveCacheDir();
  if (!dir || key.code === undefined) return undefined;
  let versions: string[];
  try {
    const require = createRequire(import.meta.url);
    versions = key.packages.map((p) => `${p}@${(require(`${p}/package.json`) as { version: string }).version}`);
  } catch {
    return undefined;
  }
  const digest = createHash("sha256")
    .update(JSON.stringify([key.code, versions, process.versions.unicode, key.input ?? null]))
    .digest("hex");
  return join(dir, `${name}-${digest.slice(0, 16)}.${extension}`);
}

/**
 * A digest of a module's own code (pass its `import.meta.url`), so that a change to it names its cache
 * files anew without anyone remembering to; undefined when the file cannot be read (then keep nothing).
 */
export function sourceDigest(moduleUrl: string): string | undefined {
  try {
    return createHash("sha256")
      .update(readFileSync(fileURLToPath(moduleUrl)))
      .digest("hex");
  } catch {
    return undefined;
  }
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
  const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`; // a writer's own, whatever its process, thread or container
  try {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(tmp, text);
    renameSync(tmp, file);
    prune(file);
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
    mkdirSync(dirname(file), { recursive: true });
    appendFileSync(file, `\n${record}`);
    prune(file);
    return true;
  } catch {
    return false;
  }
}

/** Removes a cache file (one that is full, to start anew); false when it could not. */
export function removeCache(file: string): boolean {
  try {
    rmSync(file, { force: true });
    return true;
  } catch {
    return false;
  }
}

const DAY_MS = 24 * 3600 * 1000;
const pruned = new Set<string>();

/**
 * Removes, once a process for each kind of file, the files of `file`'s kind (its name, another digest)
 * not written for 30 days (those of older code or other catalogues; one still in use is made again at
 * its next use) and their temp files an hour old (a writer killed before its rename). Nothing else:
 * the folder may be shared.
 */
function prune(file: string): void {
  const kind = /^(.+)-[0-9a-f]{16}(\.[a-z]+)$/.exec(basename(file));
  if (!kind) return;
  const dir = dirname(file);
  const key = `${dir}\0${kind[1]}${kind[2]}`;
  if (pruned.has(key)) return;
  pruned.add(key);
  const escaped = kind[1].replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const ours = new RegExp(`^${escaped}-[0-9a-f]{16}\\${kind[2]}(\\.[0-9a-f]{12}\\.tmp)?$`);
  const now = Date.now();
  try {
    for (const name of readdirSync(dir)) {
      const match = ours.exec(name);
      if (!match) continue;
      const stale = match[1] ? DAY_MS / 24 : 30 * DAY_MS;
      try {
        if (now - statSync(join(dir, name)).mtimeMs > stale) rmSync(join(dir, name), { force: true });
      } catch {
        // Gone already, or not ours to remove.
      }
    }
  } catch {
    // The folder cannot be listed: nothing pruned.
  }
}
