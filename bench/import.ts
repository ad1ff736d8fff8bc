// `dreamgym buffer import` end to end (read, parse, check, abstract, embed, store), as the CLI runs it.
// Each import runs the compiled CLI's `runCli(["buffer", "import", …])` (dist/, under plain node, what `dreamgym`
// runs: under tsx, the import thread's start and the lazy loads pay for tsx) in a fresh process (import-child.mjs)
// on a JSONL file written once;
// the rate is the one the command prints (its import, without the process start), and the CPU time
// is the process's during the command, its modules loaded before (CPU time is less sensitive than
// wall time to other jobs on the machine; lazy loads such as the WebShop catalogue count in both).
// "main thread" is that thread's CPU time alone (Linux): with a second core free, what bounds the wall
// time of an import whose other work runs on the import thread.
//   npm run bench:import -- [--runs 3] [--only short|webshop|abstract] [--dir DIR] [--root DIR]
// (it builds dist/ first). --root runs another checkout's compiled code (`npm run build` there first) on the
// same files, for before/after comparisons.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "3" },
    only: { type: "string" },
    dir: { type: "string", default: join(tmpdir(), "dreamgym-bench-import") },
    root: { type: "string", default: join(import.meta.dirname, "..") },
  },
  allowPositionals: true,
});

const { writeJsonl } = await import("../src/core/index.ts");
const { shortEpisodes, webshopEpisodes } = await import("./buffer.ts");
type Trajectory = import("../src/core/index.ts").Trajectory;
const dir = values.dir!;
mkdirSync(dir, { recursive: true });
const shortFile = join(dir, "short.jsonl"); // 5,000 trajectories × 10 steps, ~150-character texts
const webshopFile = join(dir, "webshop.jsonl"); // ~30,000 steps of real WebShop episodes (text pages)
if (!existsSync(shortFile))
  await writeJsonl(
    shortFile,
    shortEpisodes(5000).map((t) => ({ ...t, env: "alfworld" })),
  ); // an env the CLI knows
if (!existsSync(webshopFile)) {
  const all: Trajectory[] = [];
  for await (const batch of webshopEpisodes(30_000, 2)) all.push(...batch);
  await writeJsonl(webshopFile, all);
}

function importOnce(file: string, extra: string[]): { transitions: number; rate: number; cpu: number; main: number } {
  const buffer = join(dir, "bench.db");
  for (const p of [buffer, `${buffer}-wal`, `${buffer}-shm`, `${buffer}.ann`]) rmSync(p, { force: true });
  const root = resolve(values.root!);
  const out = execFileSync(
    process.execPath,
    // Plain node, as `dreamgym` runs (not under tsx, which the import thread would inherit).
    [join(import.meta.dirname, "import-child.mjs"), root, "--", "buffer", "import", file, "--buffer", buffer, ...extra],
    { encoding: "utf8", env: { ...process.env, CI: "1" } },
  );
  return JSON.parse(out.trim().split("\n").at(-1)!);
}

const cases: [string, string, string[]][] = [
  ["short", shortFile, []],
  ["webshop", webshopFile, []],
  ["abstract", webshopFile, ["--abstract"]],
];
for (const [name, file, extra] of cases) {
  if (values.only && values.only !== name) continue;
  const runs = Array.from({ length: Number(values.runs) }, () => importOnce(file, extra));
  const n = runs[0].transitions;
  const best = Math.max(...runs.map((r) => r.rate));
  const cpuBest = Math.min(...runs.map((r) => r.cpu));
  const mainBest = Math.min(...runs.map((r) => r.main));
  console.log(
    `buffer import, ${name.padEnd(8)} ${n} transitions: best ${best.toLocaleString("en-US")}/s (runs ${runs.map((r) => r.rate.toLocaleString("en-US")).join(", ")}); ` +
      `CPU best ${Math.round(n / cpuBest).toLocaleString("en-US")}/s, main thread ${Math.round(n / mainBest).toLocaleString("en-US")}/s`,
  );
}
