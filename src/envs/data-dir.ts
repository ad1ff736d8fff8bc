import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { DataError, PACKAGE_ROOT } from "../core/index.ts";

const HOW_TO_GET =
  "Get the data pack (WebShop, ALFWorld, WebArena files; see docs/data-formats.md) and pass " +
  "--data <folder>, set DREAMGYM_DATA=<folder>, or place it at ../shared/data beside the project.";

/**
 * Finds the data folder: the explicit `dataDir`, else `$DREAMGYM_DATA`, else `../shared/data` from
 * the project root (or from the working directory) when it exists. With `subdir` and `files`, it also
 * checks that those files are there and names the missing ones.
 */
export function resolveDataDir(opts: { dataDir?: string; subdir?: string; files?: string[] } = {}): string {
  const candidates: string[] = [];
  if (opts.dataDir) candidates.push(resolve(opts.dataDir));
  else if (process.env.DREAMGYM_DATA) candidates.push(resolve(process.env.DREAMGYM_DATA));
  else {
    candidates.push(resolve(PACKAGE_ROOT, "..", "shared", "data"));
    const fromCwd = resolve(process.cwd(), "..", "shared", "data");
    if (!candidates.includes(fromCwd)) candidates.push(fromCwd);
  }
  const source = opts.dataDir ? "--data/dataDir" : process.env.DREAMGYM_DATA ? "DREAMGYM_DATA" : "default";
  const found = candidates.find((c) => existsSync(c) && statSync(c).isDirectory());
  if (!found) {
    throw new DataError(`data folder not found (looked in ${candidates.join(", ")}; from ${source}). ${HOW_TO_GET}`);
  }
  if (!opts.subdir) return found;
  const dir = join(found, opts.subdir);
  const expected = opts.files ?? [];
  const missing = expected.filter((f) => !existsSync(join(dir, f)));
  if (!existsSync(dir) || missing.length > 0) {
    throw new DataError(
      `data folder ${dir} is missing ${existsSync(dir) ? missing.join(", ") : "entirely"} ` +
        `(expected: ${expected.join(", ")}; data root from ${source}). ${HOW_TO_GET}`,
    );
  }
  return dir;
}
