import { ApiCallError } from "../core/index.ts";

/**
 * An endpoint that cannot be reached or keeps failing: the run stops here (the CLI prints the
 * message as one line and exits 2). Work already done is kept by the caller.
 */
export class EndpointFailedError extends ApiCallError {
  constructor(message: string, url: string, cause?: unknown) {
    super(message, { url, isRetryable: false, cause });
    // The URL leads (ApiCallError puts it last, which reads badly in a one-line message).
    this.message = message;
  }
}

export interface BreakerOptions {
  /** Failed calls in a row, or tasks failed in a row, that stop the run. @default 10 */
  maxFailures?: number;
  /** What the endpoint is, for the message. @default "LLM endpoint" */
  what?: string;
}

const oneLine = (s: string) => s.replace(/\s+/g, " ").trim();

/**
 * A circuit breaker for one endpoint. Two counts of failures in a row, each reset by a success of
 * its kind: calls (the HTTP layer: a call that failed after its retries) and steps (the users that
 * check the output: a step with no valid answer after its repairs). Failed steps count by task: the
 * distinct tasks with a failed step since the last good step. One hard task can fail every step of
 * its episodes (the state does not move, so the same question comes back) without meaning the model
 * is broken; failures on `maxFailures` different tasks with no good step between do. Either count
 * reaching `maxFailures` trips it; so does a transport failure (no connection, no answer in time,
 * not the protocol) before the endpoint ever answered, because then it is down or misconfigured and
 * waiting buys nothing. Once tripped, every call fails at once and calls in flight are aborted.
 */
export class FailureBreaker {
  readonly maxFailures: number;
  private readonly what: string;
  private calls = 0;
  private readonly failedTasks = new Set<string>();
  private anonymous = 0;
  private reachedOnce = false;
  private error: EndpointFailedError | null = null;
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly url: string,
    opts: BreakerOptions = {},
  ) {
    this.maxFailures = opts.maxFailures ?? 10;
    if (!Number.isInteger(this.maxFailures) || this.maxFailures < 1) throw new RangeError(`maxFailures must be a positive integer, got ${this.maxFailures}`);
    this.what = opts.what ?? "LLM endpoint";
  }

  /**
   * Calls `fn` if it trips (e.g. to abort a call in flight); returns the unsubscribe. One listener
   * per call, removed after it, so a long run does not pile listeners onto one signal.
   */
  onTrip(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** The error that tripped it, if it has. */
  get tripped(): EndpointFailedError | null {
    return this.error;
  }

  /** Has the endpoint ever answered over HTTP (any status)? */
  get reached(): boolean {
    return this.reachedOnce;
  }

  /** Throws the trip error if it has tripped. */
  check(): void {
    if (this.error) throw this.error;
  }

  /** An HTTP answer came back (any status): the endpoint is there. */
  answered(): void {
    this.reachedOnce = true;
  }

  /** A call succeeded. */
  callSucceeded(): void {
    this.reachedOnce = true;
    this.calls = 0;
  }

  /** A call failed after its retries; throws `EndpointFailedError` when that trips the breaker. */
  callFailed(error: string, opts: { transport?: boolean; cause?: unknown } = {}): void {
    this.check();
    this.calls++;
    if (opts.transport && !this.reachedOnce) this.trip(`cannot be reached`, error, opts.cause);
    if (this.calls >= this.maxFailures) this.trip(`failed ${this.calls} call${this.calls === 1 ? "" : "s"} in a row`, error, opts.cause);
  }

  /** A step got a valid answer. */
  stepSucceeded(): void {
    this.failedTasks.clear();
  }

  /**
   * A step of `task` got no valid answer (without a task, each failure counts); throws
   * `EndpointFailedError` when that trips the breaker.
   */
  stepFailed(reason: string, task?: string): void {
    this.check();
    this.failedTasks.add(task ?? `\0${this.anonymous++}`);
    const n = this.failedTasks.size;
    if (n >= this.maxFailures) this.trip(`gave no valid answer on ${n} task${n === 1 ? "" : "s"} in a row`, reason);
  }

  private trip(what: string, last: string, cause?: unknown): never {
    this.error = new EndpointFailedError(
      `${this.what} ${this.url} ${what}; last error: ${oneLine(last)} (stopped: check the server, or raise --request-timeout / --max-failures)`,
      this.url,
      cause,
    );
    for (const fn of [...this.listeners]) fn();
    this.listeners.clear();
    throw this.error;
  }
}
