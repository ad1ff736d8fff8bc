import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as root from "./index.ts";
import { PACKAGE_ROOT } from "./core/index.ts";

test("the root export is narrow (≤ 40 names) and each of its export lines says what it gives", () => {
  const names = Object.keys(root);
  assert.ok(names.length <= 40, `${names.length} root exports: ${names.join(", ")}`);
  const lines = readFileSync(join(PACKAGE_ROOT, "src", "index.ts"), "utf8").split("\n");
  const undocumented = lines.filter((l, i) => /^export \{/.test(l) && !/\*\/$/.test(lines[i - 1].trim())).map((l) => l.trim());
  assert.deepEqual(undocumented, []);
  // Internals stay in their rooms.
  for (const internal of ["readJsonl", "writeFileAtomic", "JsonlWriter", "deriveSeed", "parseConfig", "FeatureBuilder", "pickKind"])
    assert.ok(!(internal in root), internal);
});

/** The modules `entry` loads when it runs (its static imports, not `import type`), and the packages among them. */
function runtimeImports(entry: string): { modules: string[]; packages: string[] } {
  const modules = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (modules.has(file)) return;
    modules.add(file);
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/^(?:import|export)\s+(type\s)?[^;]*?\bfrom\s+"([^"]+)"|^import\s+"([^"]+)"/gm)) {
      if (m[1]) continue; // types only
      const spec = m[2] ?? m[3];
      if (spec.startsWith(".")) visit(join(file, "..", spec));
      else if (!spec.startsWith("node:")) packages.add(spec);
    }
  };
  visit(join(PACKAGE_ROOT, "src", entry));
  const src = join(PACKAGE_ROOT, "src") + "/";
  return { modules: [...modules].map((f) => f.slice(src.length)), packages: [...packages].sort() };
}

test("the core loads no package, and each helper thread loads only what it uses (a run's first steps wait for them)", () => {
  assert.deepEqual(runtimeImports("core/index.ts").packages, []);
  const threads: [string, string[]][] = [
    ["experience/estimate-thread.ts", ["stemmer"]],
    ["rl/reference-thread.ts", ["stemmer"]],
    ["buffer/real-search-thread.ts", ["better-sqlite3"]],
    ["buffer/import-thread.ts", []],
  ];
  for (const [entry, packages] of threads) {
    const loaded = runtimeImports(entry);
    assert.deepEqual(loaded.packages, packages, entry);
    // Not the envs (every env with its packages), nor a component's whole index but the core's.
    assert.deepEqual(
      loaded.modules.filter((m) => m.startsWith("envs/") || (m.endsWith("/index.ts") && m !== "core/index.ts")),
      [],
      entry,
    );
  }
});
