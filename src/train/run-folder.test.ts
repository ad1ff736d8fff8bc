import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lockRun } from "./run-folder.ts";

const linux = existsSync("/proc/self/stat");

test("lockRun: a lock whose pid another process has now is stale (a restarted container's PID 1 finds its own); one held is refused", {
  skip: !linux && "needs /proc",
}, () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-lock-"));
  const file = join(dir, "run.lock");
  writeFileSync(file, `${process.pid} 1\n`); // left by an earlier process that had this pid, started at another time
  const release = lockRun(dir);
  const [pid, start] = readFileSync(file, "utf8").trim().split(" ");
  assert.equal(pid, String(process.pid));
  assert.match(start, /^\d+$/);
  assert.notEqual(start, "1");
  assert.throws(() => lockRun(dir), new RegExp(`is being trained by process ${process.pid} now`));
  release();
  assert.ok(!existsSync(file));
  // A lock without its process's start (written by an earlier version) is held while its pid lives.
  writeFileSync(file, `${process.pid}\n`);
  assert.throws(() => lockRun(dir), /is being trained by process/);
});
