// Shared by the end-to-end CLI tests: the real `bin/dreamgym` in a child process, as a user runs it, and
// the same CLI in the test's process (the fuzz table's cases, and the steps that only make a test's data).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Writable } from "node:stream";
import { PACKAGE_ROOT } from "../src/core/index.ts";

/** The project folder (tests may run compiled, from .test-build/, a folder deeper). */
export const ROOT = PACKAGE_ROOT;

export const BIN = join(ROOT, "bin", "dreamgym");

export const run = (args: string[], input?: string, env: NodeJS.ProcessEnv = process.env) =>
  spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", input, env, timeout: 300_000 });

/**
 * `dreamgym <args>` in this process, through `runCli` (the entry point the binary runs), its output
 * captured; a bug, which the binary would die of, is exit 1 and its stack. The CLI fuzz table runs its
 * cases so, and the end-to-end tests their data-making steps, refusals and quick commands: these write
 * and print what the binary would, timestamps aside (cli.test.ts compares a collect, model-cli.test.ts a
 * model's bytes), without a new process's start-up each time (~0.4 s of CPU). What only a process shows
 * still runs through `run`/`runAsync`, as a user runs it: a binary run of each file's main commands,
 * training runs (threads, signal handlers, the run lock), kills and resumes, servers, stdin, another
 * environment, an exit with calls in flight.
 *
 * `dist: true` runs the compiled CLI in dist/, the one the binary loads: an env module that imports
 * "dreamgym" (the package, so dist/) then registers its envs with the registry that CLI reads.
 */
export async function runInProcess(args: string[], opts: { dist?: boolean } = {}): Promise<{ status: number; stdout: string; stderr: string }> {
  // Loaded at the first call: the tests that never call this do not pay for the CLI's modules.
  const dist = join(ROOT, "dist", "cli", "run.js");
  if (opts.dist && !existsSync(dist)) throw new Error("dist/ is missing: run `npm run build` (npm test does)");
  const { runCli } = (opts.dist ? await import(pathToFileURL(dist).href) : await import("../src/cli/run.ts")) as typeof import("../src/cli/run.ts");
  const text = { stdout: "", stderr: "" };
  const sink = (key: keyof typeof text) =>
    new Writable({
      write(chunk, _encoding, done) {
        text[key] += String(chunk);
        done();
      },
    });
  let status: number;
  try {
    status = await runCli(args, { stdout: sink("stdout"), stderr: sink("stderr") });
  } catch (e) {
    status = 1;
    text.stderr += `${(e as Error)?.stack ?? e}\n`;
  }
  await new Promise((resolve) => setImmediate(resolve)); // writes still on their way
  return { status, ...text };
}

/** As `run`, without blocking this process's event loop (a test server in this process must answer). */
export function runAsync(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

const TIMING = new Set(["rolloutSeconds", "updateSeconds", "evalSeconds", "auditSeconds", "wallSeconds"]);

/** A run's metrics lines without their timings (which differ between runs that are otherwise equal). */
export const metricsOf = (dir: string) =>
  readFileSync(join(dir, "metrics.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => {
      const m = JSON.parse(l) as Record<string, unknown>;
      for (const k of TIMING) delete m[k];
      return m;
    });

/** Starts `dreamgym <args> --out out` and kills it with SIGKILL once its checkpoint reaches `iteration`. */
export async function killAfterCheckpoint(args: string[], out: string, iteration: number): Promise<void> {
  const child = spawn(process.execPath, [BIN, ...args, "--out", out], { stdio: "ignore" });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  const latest = join(out, "checkpoints", "latest.json");
  for (;;) {
    if (existsSync(latest)) {
      try {
        if (JSON.parse(readFileSync(latest, "utf8")).iteration >= iteration) break;
      } catch {
        // between write and rename: read again
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  child.kill("SIGKILL");
  await exited;
}
