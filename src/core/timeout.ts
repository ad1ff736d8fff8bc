/**
 * Calls `act` once `ms` have passed and the event loop has then read the sockets; returns what cancels it.
 * Each turn of the loop runs due timers before it reads the sockets, so a plain timer in a process that
 * stalled past it (a collector's pause, a loaded machine) would fire before an answer that came in time is
 * read; `act` runs in a `setImmediate` instead, after that read, and should check that the answer has still
 * not come (a compressed WebSocket message is inflated on the thread pool, later than that read).
 */
export function timeoutAfterRead(ms: number, act: () => void): () => void {
  let late: NodeJS.Immediate | undefined;
  const timer = setTimeout(() => (late = setImmediate(act)), ms);
  return () => {
    clearTimeout(timer);
    clearImmediate(late);
  };
}

/**
 * Resolves on the event loop's next turn, after it has read the sockets and run the handlers due (a
 * signal's among them). A loop of resolved promises never lets it turn: a long one awaits this now and then.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
