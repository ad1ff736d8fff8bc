import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lockRun } from "./run-folder.ts";

test("lockRun: a lock naming this process that it does not hold is stale (a restarted container's PID 1); one it holds is refused", () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-lock-"));
  const file = join(dir, "run.lock");
  writeFileSync(file, `${process.pid}\n`); // left by an earlier process that had this pid
  const release = lockRun(dir);
  assert.equal(readFileSync(file, "utf8"), `${process.pid}\n`);
  assert.throws(() => lockRun(dir), new RegExp(`is being trained by process ${process.pid} now`));
  assert.throws(() => lockRun(`${dir}/.`), /is being trained by process/, "the same folder however it is written");
  release();
  assert.ok(!existsSync(file));
  lockRun(dir)(); // free again
});
