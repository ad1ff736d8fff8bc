// `dreamgym serve` runs in a worker thread of its own, so that its isolate can have a larger young
// generation than the main thread's default (16 MB semi-spaces). Under the /ws load the objects of the
// steps in flight (pages, replies, frames) are still alive at each 16 MB scavenge and get copied; with
// 64 MB semi-spaces most die first (the collector's share of the server's busy time 9% → 3.5%:
// docs/benchmarks.md, Server). V8 sizes an isolate's young generation when the isolate is made, so the
// main thread's cannot be changed once the process runs; a worker's can (`resourceLimits`).
// The process stays one process: the main thread passes on signals, the thread's output and its exit code.
import { constants } from "node:os";
import { inspect } from "node:util";
import { parentPort, type ResourceLimits } from "node:worker_threads";
import { startWorker } from "../core/index.ts";

/** The serve thread's young generation: 64 MB semi-spaces (V8 counts three: the two semi-spaces and the young large objects). */
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
 * SIGTERM and SIGINT go to the thread's own handlers (`takeSignalsFromMainThread`): the first stops the
 * server gracefully, the second exits at once (130) from the thread, so that the thread's exit handlers
 * (a run folder's lock) still run; a third exits from here. A signal the thread has no handler for yet
 * (it is starting) comes back and takes its default action: the process ends by it.
 */
export function runInServeThread(entry: URL, argv: readonly string[]): Promise<number> {
  const worker = startWorker(entry, { argv: [...argv], resourceLimits: serveThreadLimits(process.execArgv, process.env.NODE_OPTIONS) });
  let signals = 0;
  const forward = (signal: NodeJS.Signals) => {
    if (++signals > 2) process.exit(130);
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
      // Its default action, now that no handler of ours is left; if another one is (a preloaded module's), the exit it would have been.
      if (process.listenerCount(m.unhandled) > 0) process.exit(128 + constants.signals[m.unhandled]);
      process.kill(process.pid, m.unhandled);
    });
    // A bug's error, thrown in the thread: printed as node prints an uncaught error (the thread exits 1).
    worker.on("error", (e) => process.stderr.write(`${inspect(e)}\n`));
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
