// `dreamgym serve` runs in a worker thread of its own, so that its isolate can have a larger young
// generation than the main thread's default (16 MB semi-spaces). Under the /ws load the objects of the
// steps in flight (pages, replies, frames) are still alive at each 16 MB scavenge and get copied; with
// 64 MB semi-spaces most die first (the collector's share of the server's busy time 9% → 3.5%:
// docs/benchmarks.md, Server). V8 sizes an isolate's young generation when the isolate is made, so the
// main thread's cannot be changed once the process runs; a worker's can (`resourceLimits`).
// The process stays one process: the main thread only passes on signals and the exit code.
import { parentPort, Worker, type ResourceLimits } from "node:worker_threads";

/** The serve thread's young generation: three semi-spaces of 64 MB (V8: two, and one for large objects). */
export const SERVE_YOUNG_GENERATION_MB = 192;

/** The serve thread's limits: its larger young generation, unless the user set the semi-spaces' size on node's command line. */
export function serveThreadLimits(execArgv: readonly string[], nodeOptions = ""): ResourceLimits {
  const flags = [...execArgv, ...nodeOptions.split(/\s+/)];
  return flags.some((f) => /^--(max|min)[-_]semi[-_]space[-_]size\b/.test(f)) ? {} : { maxYoungGenerationSizeMb: SERVE_YOUNG_GENERATION_MB };
}

/** What the two threads tell each other: a signal the process got, or one the serve thread has no handler for. */
type SignalMessage = { signal: NodeJS.Signals } | { unhandled: NodeJS.Signals };

/**
 * Runs the CLI module `entry` with `argv` in the serve thread and resolves with its exit code.
 * SIGTERM and SIGINT reach the thread's own handlers (`takeSignalsFromMainThread`); a second one exits
 * the process at once (130), as a server command's second signal always has. A signal that comes
 * before the thread handles it (while it starts) ends the process as it would have without the thread.
 */
export function runInServeThread(entry: URL, argv: readonly string[]): Promise<number> {
  const worker = new Worker(entry, { argv: [...argv], resourceLimits: serveThreadLimits(process.execArgv, process.env.NODE_OPTIONS) });
  let signals = 0;
  const forward = (signal: NodeJS.Signals) => {
    if (++signals > 1) process.exit(130);
    worker.postMessage({ signal } satisfies SignalMessage);
  };
  const release = () => {
    process.off("SIGTERM", forward);
    process.off("SIGINT", forward);
  };
  process.on("SIGTERM", forward);
  process.on("SIGINT", forward);
  return new Promise((resolve) => {
    worker.on("message", (m: SignalMessage) => {
      if (!("unhandled" in m)) return;
      release();
      process.kill(process.pid, m.unhandled); // its default action, now that no handler is left
    });
    // A bug's error, thrown in the thread: its stack trace, as node prints an uncaught error's (the thread exits 1).
    worker.on("error", (e) => process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`));
    worker.on("exit", (code) => {
      release();
      resolve(code);
    });
  });
}

/**
 * The serve thread's side: each signal the main thread passes on goes to this thread's `process`
 * handlers (`untilStopSignal`, `stoppableLoop`), as the process's own signals would; one with no
 * handler yet goes back, to take its default action. The port does not keep the thread alive.
 */
export function takeSignalsFromMainThread(): void {
  const port = parentPort;
  if (port === null) return;
  port.on("message", (m: SignalMessage) => {
    if (!("signal" in m)) return;
    if (process.listenerCount(m.signal) > 0) process.emit(m.signal, m.signal);
    else port.postMessage({ unhandled: m.signal } satisfies SignalMessage);
  });
  port.unref();
}
