import { test } from "node:test";
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { cliConsole, cliIo, setExitCode, withCliRun } from "./io.ts";

const sink = () => {
  const out = { text: "" };
  const stream = new Writable({
    write(chunk, _enc, done) {
      out.text += String(chunk);
      done();
    },
  });
  return { out, stream };
};
const tick = () => new Promise((resolve) => setImmediate(resolve));

test("the binary's run (the process's streams) and in-process runs each keep their streams and exit codes, across awaits", async () => {
  const own = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin };
  const before = process.exitCode;
  const a = sink();
  const b = sink();
  let inner: number[] = [];
  const code = await withCliRun(own, async (run) => {
    assert.equal(cliIo().stdout, process.stdout);
    assert.notEqual(run.console, globalThis.console, "its own Console: an env module's patch of the global one does not silence it");
    // Two in-process runs at once, inside the binary's: each sees its own streams and code.
    inner = await Promise.all(
      [a, b].map((s, i) =>
        withCliRun({ stdout: s.stream, stderr: s.stream }, async (r) => {
          await tick();
          cliConsole.log(`run ${i}`);
          assert.equal(cliIo().stdout, s.stream);
          setExitCode(10 + i);
          await tick();
          return r.exitCode;
        }),
      ),
    );
    await tick();
    assert.equal(cliIo().stdout, process.stdout, "back in the binary's run");
    setExitCode(130);
    return run.exitCode;
  });
  assert.deepEqual(inner, [10, 11]);
  assert.equal(code, 130);
  assert.equal(process.exitCode, before, "the run's code is returned, not set on the process");
  assert.equal(a.out.text, "run 0\n");
  assert.equal(b.out.text, "run 1\n");
  // After the run, the process's own again; a second binary run starts from 0, also after one that threw at once.
  await assert.rejects(
    withCliRun(own, () => {
      throw new Error("thrown before any promise");
    }),
    /thrown before any promise/,
  );
  setExitCode(7); // outside any run: the process's code, not a finished run's
  assert.equal(process.exitCode, 7);
  process.exitCode = before;
  assert.equal(await withCliRun(own, async (run) => run.exitCode), 0);
});
