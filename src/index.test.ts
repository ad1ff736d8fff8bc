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
