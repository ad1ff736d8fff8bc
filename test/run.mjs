// `npm test`: every *.test.ts under src and test, compiled, in Node's runner, with TMPDIR pointed at a folder
// of this run's own, removed at the end: tests make temp folders (run dirs, buffers, sockets) and
// not all of them clean up after a failure; none of it should outlive the run.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join, relative } from "node:path";

const root = join(import.meta.dirname, "..");
/** Every file under `dir`. */
const files = (dir) => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
// The files run compiled: under tsx each file, and each worker thread it starts, spent most of a second
// of CPU in loader hooks. `tsc -p tsconfig.test.json` type-checks everything and writes .test-build/
// (incremental: a few seconds when little changed); what it wrote for sources since deleted goes.
const built = join(root, ".test-build");
const tsc = spawnSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.test.json"], { cwd: root, stdio: "inherit" });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
for (const f of files(built)) {
  const source = join(root, relative(built, f)).replace(/\.js$/, ".ts");
  if (!f.endsWith(".tsbuildinfo") && !existsSync(source)) rmSync(f);
}
const tests = ["src", "test"]
  .flatMap((d) => files(join(root, d)))
  .filter((f) => f.endsWith(".test.ts"))
  .map((f) => join(".test-build", relative(root, f)).replace(/\.ts$/, ".js"))
  .sort();
const tmp = mkdtempSync(join(tmpdir(), "dreamgym-test-"));
try {
  // Files run one more at a time than there are cores, at least three (Node's default is one fewer than the
  // cores: one, on the 2-core machines CI uses): most wait on child processes, servers and browsers. On 2
  // cores three gave 206 / 213 s against 223 / 224 s for two (compiled, alternating). Every file makes its
  // own temp folders and takes its ports from the OS, so files do not meet.
  const concurrency = Number(process.env.DREAMGYM_TEST_CONCURRENCY) || Math.max(3, availableParallelism() + 1);
  const run = spawnSync(process.execPath, ["--test", `--test-concurrency=${concurrency}`, ...tests], {
    cwd: root,
    stdio: "inherit",
    // The cache folder (WebShop's search index and its titles' nouns, worked out once) is the run's own too: shared
    // by its files, never the user's; DREAMGYM_CACHE=off runs the suite without one.
    env: { ...process.env, TMPDIR: tmp, DREAMGYM_CACHE: /^(off|0|false|no)$/i.test(process.env.DREAMGYM_CACHE ?? "") ? "off" : join(tmp, "cache") },
  });
  process.exitCode = run.status ?? 1;
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
