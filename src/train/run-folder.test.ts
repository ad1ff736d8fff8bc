import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
