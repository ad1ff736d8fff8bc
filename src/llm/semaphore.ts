/** Limits how many calls run at once; waiters are served first come, first served. */
export class Semaphore {
  private active = 0;
  private readonly queue: (() => void)[] = [];
  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`concurrency must be a positive integer, got ${limit}`);
  }
  get inFlight(): number {
    return this.active;
  }
  /** Calls waiting for a slot. */
  get waiting(): number {
    return this.queue.length;
  }
  async run<T>(fn: () => Promise<T>): Promise<T> {
    // A finishing call hands its slot straight to the first waiter, so no newcomer can slip in.
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.queue.push(resolve));
    else this.active++;
    try {
      return await fn();
    } finally {
      const next = this.queue.shift();
      if (next) next();
      else this.active--;
    }
  }
}
