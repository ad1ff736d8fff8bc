import { Worker } from "node:worker_threads";
import type { SearchFilter } from "./buffer-types.ts";
import type { Candidate } from "./vector-index.ts";

/** What the thread is started with. */
export interface SearchThreadData {
  file: string;
  dims: number;
}
/** A candidate search of real rows: `key` names the real rows the buffer sees (`realRowsKey`). */
export interface CandidateRequest {
  id: number;
  vector: Float32Array;
  want: number;
  filter: Omit<SearchFilter, "source">;
  key: string;
}
/** The exact candidates, or null when the file's real rows are no longer those of `key`. */
export interface CandidateReply {
  id: number;
  candidates: Candidate[] | null;
}

/**
 * Searches of a buffer's real transitions on a worker thread, so that a synthetic env's retrieval
 * runs on a second core while the policy acts on the first. The thread reads the buffer file
 * through its own read-only connection and keeps an exact index of the real rows (which a training
 * run's synthetic appends never change); its candidates are the very ones the buffer's own exact
 * index gives (the exact top by score, ties by id), so where a search runs changes nothing but the
 * time. Any trouble with the thread (it cannot start, it dies) makes every search, waiting or to
 * come, run in the buffer's own thread instead.
 */
export class RealSearchThread {
  private worker: Worker | null;
  private next = 0;
  private readonly waiting = new Map<number, (c: Candidate[] | null) => void>();
  /** Searches the thread has answered. */
  answered = 0;

  constructor(data: SearchThreadData) {
    let worker: Worker | null = null;
    try {
      worker = startThread(data);
    } catch {
      worker = null;
    }
    this.worker = worker;
    if (!worker) return;
    worker.unref(); // an open buffer does not keep the process alive
    worker.on("message", (r: CandidateReply) => {
      const done = this.waiting.get(r.id);
      this.waiting.delete(r.id);
      if (this.waiting.size === 0) this.worker?.unref();
      if (r.candidates !== null) this.answered++;
      done?.(r.candidates);
    });
    const fail = () => this.stop();
    worker.on("error", fail);
    worker.on("exit", fail);
  }

  /** The exact candidates for a real-rows search, or null: then the caller searches itself. */
  candidates(vector: Float32Array, want: number, filter: SearchFilter, key: string): Promise<Candidate[] | null> {
    if (!this.worker) return Promise.resolve(null);
    const id = this.next++;
    const { source: _s, ...rest } = filter;
    // Referenced while a search waits: a process awaiting nothing else must not exit under it.
    if (this.waiting.size === 0) this.worker.ref();
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.worker!.postMessage({ id, vector, want, filter: rest, key } satisfies CandidateRequest);
    });
  }

  /** Ends the thread; searches still waiting get null. */
  close(): void {
    if (this.worker) this.worker.postMessage("close");
    this.stop();
  }

  private stop(): void {
    this.worker = null;
    for (const done of this.waiting.values()) done(null);
    this.waiting.clear();
  }
}

/**
 * The thread, from the module beside this one: compiled JavaScript in dist/; TypeScript where this
 * module runs under tsx (tests, benchmarks), whose loader a Node 20 worker does not inherit, so the
 * worker registers it first.
 */
function startThread(data: SearchThreadData): Worker {
  if (!import.meta.url.endsWith(".ts")) return new Worker(new URL("./real-search-thread.js", import.meta.url), { workerData: data });
  const api = JSON.stringify(import.meta.resolve("tsx/esm/api"));
  const entry = JSON.stringify(new URL("./real-search-thread.ts", import.meta.url).href);
  return new Worker(`import(${api}).then((tsx) => { tsx.register(); return import(${entry}); })`, { eval: true, workerData: data });
}
