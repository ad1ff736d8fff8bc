import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { lockRun } from "./run-folder.ts";

test("lockRun: a lock naming this process's own pid is refused with what to check (a restarted container's PID 1 meets its predecessor's lock)", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-lock-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "run.lock");
  const ownPid = (e: Error) =>
    e.message.startsWith(`${file} names this process's own pid (${process.pid}): `) && e.message.endsWith(`if none trains it now, delete ${file}`);
  writeFileSync(file, `${process.pid}\n`); // as a killed predecessor with the same pid left it
  assert.throws(() => lockRun(dir), ownPid);
  rmSync(file);
  const release = lockRun(dir); // taken, then held: the same answer
  assert.throws(() => lockRun(dir), ownPid);
  release();
  assert.ok(!existsSync(file));
});

test("RunFolder.create: a process that exits before the run has started takes back what the start made; after it, the run stays", (t) => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-start-exit-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const module = pathToFileURL(join(import.meta.dirname, "run-folder.js")).href;
  /** A process that starts a run in `dir` and exits (as the CLI does on Ctrl-C) before or after `started()`. */
  const exitDuringStart = (dir: string, afterStarted: boolean) => {
    const script = `const { RunFolder } = await import(${JSON.stringify(module)});
await RunFolder.create(${JSON.stringify(dir)}, { mode: "real" }, async (_run, started) => { ${afterStarted ? "started();" : ""} process.exit(130); });`;
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
    assert.equal(r.status, 130, r.stderr);
  };
  const fresh = join(root, "a", "run"); // its parent made by the start too
  exitDuringStart(fresh, false);
  assert.deepEqual(readdirSync(root), [], "the folders it made are gone");
  const existing = join(root, "mine");
  mkdirSync(existing);
  writeFileSync(join(existing, "keep.txt"), "mine\n");
  exitDuringStart(existing, false);
  assert.deepEqual(readdirSync(existing), ["keep.txt"], "only what the start added is gone");
  exitDuringStart(fresh, true);
  assert.ok(existsSync(join(fresh, "config.json")), "a started run stays, to resume");
});
