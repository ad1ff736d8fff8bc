import { AsyncLocalStorage } from "node:async_hooks";
import { Console } from "node:console";
import { Readable } from "node:stream";

/** The streams a CLI run reads and writes: the process's for the binary, others for a run in-process (tests). */
export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Read by `env play` (default: an empty input, as `< /dev/null`). */
  stdin?: NodeJS.ReadableStream;
}

interface CliRun {
  readonly io: Required<CliIo>;
  readonly console: Console;
  exitCode: number;
}

const runs = new AsyncLocalStorage<CliRun>();
const processRun = (): CliRun => ({
  io: { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
  console: globalThis.console,
  exitCode: 0,
});
/**
 * The one run on the process's own streams (the binary's), held here rather than in `runs`: on Node 20
 * an AsyncLocalStorage in use puts a hook on every promise the process makes, and a training run or a
 * server makes several per step.
 */
let soleRun: CliRun | undefined;
const currentRun = (): CliRun | undefined => runs.getStore() ?? soleRun;

/**
 * Runs `fn` as one CLI run: what its commands print goes to `io`, and `setExitCode` sets the code
 * `fn` gets back (`run.exitCode`). Runs at once (in-process tests) each keep their own.
 */
export function withCliRun<T>(io: CliIo, fn: (run: { readonly console: Console; readonly exitCode: number }) => Promise<T>): Promise<T> {
  const full: Required<CliIo> = { stdout: io.stdout, stderr: io.stderr, stdin: io.stdin ?? Readable.from([]) };
  const own = io.stdout === process.stdout && io.stderr === process.stderr && io.stdin === process.stdin;
  if (own && soleRun === undefined && runs.getStore() === undefined) {
    // Its own Console, as before: an env module that patches the global console does not silence the CLI.
    const run: CliRun = { io: full, console: new Console({ stdout: full.stdout, stderr: full.stderr }), exitCode: 0 };
    soleRun = run;
    return (async () => {
      try {
        return await fn(run);
      } finally {
        soleRun = undefined;
      }
    })();
  }
  const run: CliRun = { io: full, console: new Console({ stdout: full.stdout, stderr: full.stderr }), exitCode: 0 };
  return runs.run(run, () => fn(run));
}

/** The current run's streams (the process's outside `withCliRun`). */
export function cliIo(): Required<CliIo> {
  return (currentRun() ?? processRun()).io;
}

/**
 * The exit code of a command that ends normally but not in full (130: stopped by a signal, what
 * was done is kept). Outside `withCliRun`: the process's `exitCode`.
 */
export function setExitCode(code: number): void {
  const run = currentRun();
  if (run) run.exitCode = code;
  else process.exitCode = code;
}

/**
 * `console.log` and `console.error` onto the current run's streams. The commands import it as
 * `console` (`import { cliConsole as console } from "./io.ts"`), so what they print goes where the
 * run says: the terminal for the binary, a buffer for a test that runs the CLI in-process.
 */
export const cliConsole = {
  log(...args: unknown[]): void {
    (currentRun() ?? processRun()).console.log(...args);
  },
  error(...args: unknown[]): void {
    (currentRun() ?? processRun()).console.error(...args);
  },
};
