import { nextTurn } from "../core/index.ts";

/**
 * Waits for SIGTERM or SIGINT (a server command runs until then). After it, a second signal while
 * the server shuts down stops the process at once (exit 130).
 */
export async function untilStopSignal(): Promise<NodeJS.Signals> {
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  const again = () => process.exit(130);
  process.once("SIGTERM", again);
  process.once("SIGINT", again);
  return signal;
}

/**
 * A loop that can be stopped: SIGINT or SIGTERM sets `signal`, and the loop ends after the item it
 * is on (a second signal exits at once, 130). `tick()` lets the signal in: a loop of resolved promises
 * never yields to the event loop, so it does, at most every 50 ms. `release()` removes the handlers.
 */
export function stoppableLoop(): { readonly signal: NodeJS.Signals | undefined; tick(): Promise<void>; release(): void } {
  let signal: NodeJS.Signals | undefined;
  const on = (s: NodeJS.Signals) => () => {
    if (signal !== undefined) process.exit(130);
    signal = s;
  };
  const int = on("SIGINT");
  const term = on("SIGTERM");
  process.on("SIGINT", int);
  process.on("SIGTERM", term);
  let last = performance.now();
  return {
    get signal() {
      return signal;
    },
    async tick() {
      if (performance.now() - last < 50) return;
      await nextTurn();
      last = performance.now();
    },
    release() {
      process.off("SIGINT", int);
      process.off("SIGTERM", term);
    },
  };
}

/**
 * SIGINT or SIGTERM stops the process at once, as a kill would, but says so first: `say(signal)`
 * tells where the work stands. The process exits 130, so its exit handlers run (a run's lock is
 * released; a run that had not started takes back its folder). Nothing needs a graceful end here:
 * what a run keeps (checkpoints, the buffer's transactions, LLM answers) is written whole, and a
 * resume takes back what came after the last checkpoint. Returns the function that removes the handlers.
 */
export function exitOnSignal(say: (signal: NodeJS.Signals) => void): () => void {
  const stop = (signal: NodeJS.Signals) => {
    try {
      say(signal);
    } finally {
      process.exit(130); // even if saying failed: the stop is what was asked for
    }
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  return () => {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  };
}
