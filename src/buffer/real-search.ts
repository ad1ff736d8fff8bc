import { RequestThread } from "../core/index.ts";
import type { SearchFilter } from "./buffer-types.ts";
import type { Candidate } from "./vector-index.ts";

/** What the thread is started with. */
export interface SearchThreadData {
  file: string;
  dims: number;
}
/** A candidate search of real rows: `key` names the real rows the buffer sees (`realRowsKey`). */
export interface CandidateRequest {
  vector: Float32Array;
  want: number;
  filter: Omit<SearchFilter, "source">;
  key: string;
}
/** What the thread is asked: a search, or to read the real rows and make each env's view before the first one. */
export type SearchThreadRequest = CandidateRequest | { warm: true };

/**
 * Searches of a buffer's real transitions on a worker thread, so that a synthetic env's retrieval
 * runs on a second core while the policy acts on the first. The thread reads the buffer file
 * through its own read-only connection and keeps an exact index of the real rows (which a training
 * run's synthetic appends never change); its candidates are the very ones the buffer's own exact
 * index gives (the exact top by score, ties by id), so where a search runs changes nothing but the
 * time. It answers null where the file's real rows are no longer those the buffer asked about, and
 * the buffer then searches itself.
 */
export class RealSearchThread {
  private readonly thread: RequestThread<SearchThreadRequest, Candidate[]>;
  private asked = 0;

  constructor(data: SearchThreadData) {
    this.thread = new RequestThread(new URL("./real-search-thread", import.meta.url), data);
  }

  get answered(): number {
    return this.thread.answered;
  }

  /** Whether the thread may be reading the file now: a warm-up or a search not answered yet. */
  get busy(): boolean {
    return this.asked > 0;
  }

  /**
   * Reads the real rows and makes each env's view now, before the first search asks: sent at once
   * (a run asks this before its setup, which takes the main thread for a few hundred milliseconds).
   */
  warm(): void {
    void this.ask({ warm: true });
    this.thread.flush();
  }

  /** The exact candidates for a real-rows search, or null: then the caller searches itself. */
  candidates(vector: Float32Array, want: number, filter: SearchFilter, key: string): Promise<Candidate[] | null> {
    const { source: _s, ...rest } = filter;
    return this.ask({ vector, want, filter: rest, key });
  }

  private ask(req: SearchThreadRequest): Promise<Candidate[] | null> {
    this.asked++;
    return this.thread.request(req).finally(() => this.asked--);
  }

  close(): void {
    this.thread.close();
  }
}
