import { parentPort, Worker, type WorkerOptions } from "node:worker_threads";

/** Answers that took longer than this (with those before them) are sent before the rest of their batch. */
const SLOW_ANSWER_MS = 1;
/** Requests go in batches: those made in one run of code (and its microtasks) in one message, answered in one. */
type Message<T> = { batch: { id: number; body: T }[] } | { control: unknown };
/** Answers, or the word that the thread's module has set up its handler (`up`). */
type Answers<T> = { batch: { id: number; body: T | null }[] };
type Reply<T> = Answers<T> | { up: true };

/**
 * A worker thread that answers requests in the order they come (its module calls `serveRequests`),
 * so that work with no effect on the caller's state runs on another core. A reply of null, or any
 * trouble with the thread (it cannot start, it dies, it is closed), resolves to null: the caller
 * then does the work itself, so a thread changes when work is done, never what it gives.
 */
export class RequestThread<Req, Rep> {
  private worker: Worker | null;
  private next = 0;
  private readonly waiting = new Map<number, (r: Rep | null) => void>();
  /** Requests answered (not null) so far. */
  answered = 0;
  private isUp = false;
  private onUp: (up: boolean) => void = () => {};
  /** Resolves true once the thread is up (`up`), false if it stops before. */
  readonly ready = new Promise<boolean>((resolve) => (this.onUp = resolve));

  /**
   * `module`: the thread's module beside the caller's, without extension (`new URL("./x", import.meta.url)`):
   * compiled JavaScript in dist/ (and in the test build); TypeScript where the caller runs under tsx (benchmarks, a test file run alone).
   */
  constructor(module: URL, data: unknown) {
    let worker: Worker | null = null;
    try {
      worker = startThread(module, data);
    } catch {
      worker = null;
    }
    this.worker = worker;
    if (!worker) {
      this.onUp(false);
      return;
    }
    worker.unref(); // an idle thread does not keep the process alive
    worker.on("message", (r: Reply<Rep>) => {
      if ("up" in r) {
        this.isUp = true;
        this.onUp(true);
        return;
      }
      for (const { id, body } of r.batch) {
        const done = this.waiting.get(id);
        this.waiting.delete(id);
        if (body !== null) this.answered++;
        done?.(body);
      }
      if (this.waiting.size === 0) this.worker?.unref();
    });
    const fail = () => this.stop();
    worker.on("error", fail);
    worker.on("exit", fail);
  }

  /** Whether the thread runs (a request may still be answered null). */
  get running(): boolean {
    return this.worker !== null;
  }

  /**
   * Whether the thread has loaded its module and answers requests now: until then, a caller that can
   * do the work itself at a small cost may rather do it than wait (a thread takes a few hundred
   * milliseconds to load its modules while its caller sets up).
   */
  get up(): boolean {
    return this.isUp && this.worker !== null;
  }

  request(body: Req): Promise<Rep | null> {
    if (!this.worker) return Promise.resolve(null);
    // Referenced while a request waits: a process awaiting nothing else must not exit under it.
    if (this.waiting.size === 0) this.worker.ref();
    const id = this.next++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      // Sent with the others made in this run of code (at the end of the microtasks queued so far):
      // a message costs a wake-up of the thread, 40–90 µs of this one's time on a busy 2-core machine.
      this.outbox.push({ id, body });
      if (this.outbox.length === 1) queueMicrotask(() => this.flush());
    });
  }
  private outbox: { id: number; body: Req }[] = [];

  /**
   * Sends the requests made so far now, not at the end of this run of code: for one that should start
   * before a long stretch of it, such as a warm-up asked just before a run's setup.
   */
  flush(): void {
    const batch = this.outbox;
    if (batch.length === 0) return;
    this.outbox = [];
    try {
      this.worker?.postMessage({ batch } satisfies Message<Req>);
    } catch {
      // A body that does not copy (a function, a class the thread cannot rebuild): the caller does
      // that one; the others go one by one.
      for (const m of batch) {
        try {
          this.worker?.postMessage({ batch: [m] } satisfies Message<Req>);
        } catch {
          const done = this.waiting.get(m.id);
          this.waiting.delete(m.id);
          done?.(null);
        }
      }
      if (this.waiting.size === 0) this.worker?.unref();
    }
  }

  /** A message for the thread's `onControl`, handled in order with the requests (those made before it go first). */
  control(message: unknown): void {
    this.flush();
    this.worker?.postMessage({ control: message } satisfies Message<Req>);
  }

  /**
   * Ends the thread at once, work it was sent included: requests still waiting get null (the caller
   * does them). A request queued in the thread must not run after its caller closed, such as a search
   * thread's read of a buffer file that a later connection is taking out of WAL mode.
   */
  close(): void {
    const worker = this.worker;
    this.stop();
    if (!worker) return;
    worker.unref(); // the process need not wait for it
    worker.terminate().catch(() => {});
  }

  private stop(): void {
    this.onUp(false); // no effect once up
    this.worker = null;
    this.outbox = [];
    for (const done of this.waiting.values()) done(null);
    this.waiting.clear();
  }
}

/** In a thread's module: answers each request with `answer` (null: the caller does it), in order. */
export function serveRequests<Req, Rep>(answer: (req: Req) => Rep | null, onControl?: (message: unknown) => void): void {
  const port = parentPort;
  if (!port) throw new Error("serveRequests runs in a worker thread");
  port.postMessage({ up: true } satisfies Reply<Rep>);
  port.on("message", (m: Message<Req>) => {
    if ("control" in m) onControl?.(m.control);
    else {
      // Answers go together, but not behind a slow one: the asker may wait for the first alone (an
      // import's next batch of vectors, asked with the one after it).
      let replies: Answers<Rep>["batch"] = [];
      let since = performance.now();
      for (const { id, body } of m.batch) {
        replies.push({ id, body: answerOrNull(answer, body) });
        if (performance.now() - since > SLOW_ANSWER_MS) {
          port.postMessage({ batch: replies } satisfies Reply<Rep>);
          replies = [];
          since = performance.now();
        }
      }
      if (replies.length > 0) port.postMessage({ batch: replies } satisfies Reply<Rep>);
    }
  });
}

/** A request the thread fails on is left to the caller. */
function answerOrNull<Req, Rep>(answer: (req: Req) => Rep | null, req: Req): Rep | null {
  try {
    return answer(req);
  } catch {
    return null;
  }
}

/** Starts the thread of `module` (its URL without the extension: .ts under tsx, .js compiled). */
function startThread(module: URL, data: unknown): Worker {
  return startWorker(new URL(`${module.href}${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`), { workerData: data });
}

/** A worker running `entry`; under tsx (an entry ending in .ts), whose loader a Node 20 worker does not inherit, it registers tsx first. */
export function startWorker(entry: URL, options: WorkerOptions = {}): Worker {
  if (!entry.href.endsWith(".ts")) return new Worker(entry, options);
  const api = JSON.stringify(import.meta.resolve("tsx/esm/api"));
  return new Worker(`import(${api}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })`, { ...options, eval: true });
}
