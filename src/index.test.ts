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

/**
 * The modules `entry` loads when it runs: its static imports, followed (not `import type`), and the
 * packages among them; `import("…")` and `require("…")` calls are listed as they are written, not
 * followed (a lazy load is the point of them).
 */
function runtimeImports(entry: string): { modules: string[]; packages: string[]; lazy: string[] } {
  const src = join(PACKAGE_ROOT, "src") + "/";
  const modules = new Set<string>();
  const packages = new Set<string>();
  const lazy = new Set<string>();
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
    for (const m of text.matchAll(/\b(?:import|require)\(\s*"([^"]+)"\s*\)/g)) {
      const spec = m[1];
      if (spec.startsWith(".")) lazy.add(join(file, "..", spec).slice(src.length));
      else if (!spec.startsWith("node:")) packages.add(spec); // loaded as the module runs (a native addon through `createRequire`), or lazily
    }
  };
  visit(join(src, entry));
  return { modules: [...modules].map((f) => f.slice(src.length)), packages: [...packages].sort(), lazy: [...lazy].sort() };
}

test("the core loads no package, and each helper thread loads only what it uses (a run's first steps wait for them)", () => {
  assert.deepEqual(runtimeImports("core/index.ts").packages, []);
  const threads: [string, string[], string[]][] = [
    // The envs only for an env with policy features of its own (their estimates read them).
    ["experience/estimate-thread.ts", ["stemmer"], ["envs/index.ts"]],
    ["rl/reference-thread.ts", ["stemmer"], []],
    ["buffer/real-search-thread.ts", ["better-sqlite3", "usearch"], []],
    ["buffer/import-thread.ts", [], []],
  ];
  for (const [entry, packages, lazy] of threads) {
    const loaded = runtimeImports(entry);
    assert.deepEqual(loaded.packages, packages, entry);
    assert.deepEqual(loaded.lazy, lazy, entry);
    // Not the envs (every env with its packages), nor a component's whole index but the core's.
    assert.deepEqual(
      loaded.modules.filter((m) => m.startsWith("envs/") || (m.endsWith("/index.ts") && m !== "core/index.ts")),
      [],
      entry,
    );
  }
});
