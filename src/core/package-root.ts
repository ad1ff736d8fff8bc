import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const found = findPackage(dirname(fileURLToPath(import.meta.url)));

/**
 * dreamgym's own folder, the one holding its package.json: the first folder up from this module whose
 * package.json names dreamgym, so the same answer from src/core, dist/core, an installed package's
 * dist/core and the test build's .test-build/src/core (whose depth differs).
 */
export const PACKAGE_ROOT = found.dir;

/** The version in dreamgym's package.json. */
export const PACKAGE_VERSION = found.version;

function findPackage(from: string): { dir: string; version: string } {
  for (let dir = from; ; dir = dirname(dir)) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      // Another package.json on the way (a folder's {"type": "module"}, a bundle's) is passed by.
      const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string };
      if (pkg.name === "dreamgym") return { dir, version: String(pkg.version) };
    }
    if (dirname(dir) === dir) throw new Error(`no package.json of dreamgym above ${from}: dreamgym's files are incomplete`);
  }
}
