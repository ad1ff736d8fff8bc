import type { Browser, BrowserContext, BrowserContextOptions, Page } from "playwright-core";
import { ClosedEnvironmentError, InvalidConfigError } from "../../core/index.ts";
import { BrowserUnavailableError, resolveChromium } from "./chromium.ts";
import { childPids, commandLine, memoryOf, processTree } from "./proc.ts";

export interface BrowserPoolOptions {
  /** Browser contexts at once (each one episode at a time). @default 4, the paper's limit on WebArena */
  size?: number;
  /** The Chromium executable. @default `$DREAMGYM_CHROMIUM`, else /usr/bin/chromium */
  executablePath?: string;
  /** Options of every context (viewport, locale, a logged-in storage state). */
  contextOptions?: BrowserContextOptions;
  /** Milliseconds for launching the browser or opening a context before it counts as failed. @default 30000 */
  launchTimeoutMs?: number;
  /**
   * While someone waits for a context, a lease idle this long (no reset or step in flight: an
   * episode its env abandoned) is reclaimed for the waiter. @default 30000
   */
  reclaimIdleMs?: number;
}

/** One context of the pool, held by one env for an episode. */
export interface BrowserLease {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Resolves when the page crashes, closes or the browser goes away (never rejects). */
  readonly lost: Promise<string>;
  /**
   * Marks the lease busy (a call in flight) or idle; an idle lease may be reclaimed for a waiter
   * after `reclaimIdleMs` (its holder is told through the `onReclaim` it passed to `acquire`).
   */
  busy(inFlight: boolean): void;
  /**
   * Gives the context back: a healthy one is kept for the next episode (cookies cleared), a broken
   * one is closed (and the browser restarted when it does not answer). Releasing twice is a no-op.
   */
  release(healthy: boolean): Promise<void>;
}

interface Slot {
  context: BrowserContext;
  page: Page;
  browser: Browser;
  lost: Promise<string>;
  lose: (why: string) => void;
}

/** Runs `p` for at most `ms`; past it rejects with `what` timed out (the work goes on until closed). */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * N browser contexts over one Chromium process, shared by env instances: `acquire()` waits while
 * all N are leased. A context is kept between episodes; a crashed page, a context that does not
 * close, or a browser that went away is replaced, the browser relaunched on the next acquire.
 */
export class BrowserPool {
  readonly size: number;
  private readonly explicitPath?: string;
  private executable: string | undefined;
  private readonly contextOptions: BrowserContextOptions;
  private readonly launchTimeoutMs: number;
  private browser: Browser | null = null;
  private launching: Promise<Browser> | null = null;
  private browserPid: number | undefined;
  private readonly idle: Slot[] = [];
  /** Every open context, to tell its holder when the browser goes away. */
  private readonly live = new Set<Slot>();
  private readonly reclaimIdleMs: number;
  /** Leases out now, with when they went idle (null: a call in flight) and how to take them back. */
  private readonly out = new Set<{ idleSince: number | null; reclaim: () => Promise<void> }>();
  private reclaimTimer: NodeJS.Timeout | null = null;
  private leased = 0;
  private readonly waiters: (() => void)[] = [];
  private closed = false;
  /** Launches, contexts opened, contexts dropped as broken, idle leases reclaimed for a waiter. */
  readonly stats = { launches: 0, contexts: 0, broken: 0, reclaimed: 0 };

  constructor(opts: BrowserPoolOptions = {}) {
    const size = opts.size ?? 4;
    if (!Number.isInteger(size) || size < 1) throw new InvalidConfigError(`the browser pool size must be a positive integer, got ${size}`);
    this.size = size;
    this.explicitPath = opts.executablePath;
    this.contextOptions = opts.contextOptions ?? {};
    this.launchTimeoutMs = opts.launchTimeoutMs ?? 30_000;
    this.reclaimIdleMs = opts.reclaimIdleMs ?? 30_000;
  }

  /** Contexts leased now. */
  get inUse(): number {
    return this.leased;
  }

  /** The browser process id, when it runs (Linux). */
  get pid(): number | undefined {
    return this.browser?.isConnected() ? this.browserPid : undefined;
  }

  /** The browser's processes now (it and its renderers, GPU and utility processes), with their memory in bytes. */
  processes(): { pid: number; rss: number; pss: number; command: string }[] {
    const root = this.pid;
    if (root === undefined) return [];
    return processTree(root).map((pid) => ({ pid, ...memoryOf(pid), command: commandLine(pid) }));
  }

  private async ensureBrowser(): Promise<Browser> {
    if (this.browser?.isConnected()) return this.browser;
    this.browser = null;
    return (this.launching ??= this.launch().finally(() => (this.launching = null)));
  }

  private async launch(): Promise<Browser> {
    // The browser is a child of this process: the new chromium child after launch is its pid (for /proc and a hard kill).
    // Checked here, not at construction: an env made only to read its tasks or synthetic support needs no browser.
    this.executable ??= resolveChromium(this.explicitPath);
    const before = new Set(childPids(process.pid));
    let browser: Browser;
    // Loaded at the first launch: playwright-core costs a third of the CLI's start-up otherwise.
    const { chromium } = await import("playwright-core");
    try {
      browser = await chromium.launch({
        executablePath: this.executable,
        headless: true,
        timeout: this.launchTimeoutMs,
        args: ["--disable-dev-shm-usage", "--disable-gpu"],
      });
    } catch (e) {
      throw new BrowserUnavailableError(`Chromium at ${this.executable} failed to start (${firstLine(e)}): check it runs (apt-get install chromium)`, e);
    }
    if (this.closed) {
      await browser.close().catch(() => {});
      throw new ClosedEnvironmentError("the browser pool is closed");
    }
    this.stats.launches++;
    const fresh = childPids(process.pid).filter((p) => !before.has(p) && /chrom/i.test(commandLine(p)));
    this.browserPid = fresh.length === 1 ? fresh[0] : undefined;
    browser.on("disconnected", () => {
      if (this.browser === browser) this.browser = null;
      // Idle contexts of a dead browser are gone with it.
      for (let i = this.idle.length - 1; i >= 0; i--) if (this.idle[i].browser === browser) this.idle.splice(i, 1);
      for (const slot of this.live) {
        if (slot.browser !== browser) continue;
        slot.lose("the browser went away");
        this.live.delete(slot);
      }
    });
    this.browser = browser;
    return browser;
  }

  private async openSlot(): Promise<Slot> {
    for (let attempt = 0; ; attempt++) {
      const browser = await this.ensureBrowser();
      try {
        const context = await withTimeout(browser.newContext(this.contextOptions), this.launchTimeoutMs, "opening a browser context");
        const page = await withTimeout(context.newPage(), this.launchTimeoutMs, "opening a page");
        this.stats.contexts++;
        let lose!: (why: string) => void;
        const lost = new Promise<string>((resolve) => (lose = resolve));
        page.once("crash", () => lose("the page crashed"));
        page.once("close", () => lose("the page was closed"));
        const slot: Slot = { context, page, browser, lost, lose };
        this.live.add(slot);
        return slot;
      } catch (e) {
        // A browser that cannot open a context is restarted once; twice is a browser that does not work here.
        if (attempt >= 1) {
          throw new BrowserUnavailableError(`Chromium at ${this.executable} could not open a page, twice, with a restart between (${firstLine(e)})`, e);
        }
        await this.restartBrowser();
      }
    }
  }

  /**
   * Waits for a free context (at most `size` are leased at once) and leases it. `onReclaim` is
   * called when the lease, idle, is taken back for another env (see `reclaimIdleMs`).
   */
  async acquire(onReclaim?: () => void): Promise<BrowserLease> {
    if (this.closed) throw new ClosedEnvironmentError("the browser pool is closed");
    while (this.leased >= this.size) {
      this.watchIdle();
      await new Promise<void>((resolve) => this.waiters.push(resolve));
      if (this.closed) throw new ClosedEnvironmentError("the browser pool is closed");
    }
    this.leased++;
    let slot: Slot | undefined;
    try {
      while ((slot = this.idle.pop()) && (!slot.browser.isConnected() || slot.page.isClosed())) slot = undefined;
      slot ??= await this.openSlot();
    } catch (e) {
      this.free();
      throw e;
    }
    const s = slot;
    let released = false;
    const entry = {
      idleSince: Date.now() as number | null,
      reclaim: async () => {
        onReclaim?.();
        await lease.release(true);
      },
    };
    this.out.add(entry);
    const lease: BrowserLease = {
      context: s.context,
      page: s.page,
      lost: s.lost,
      busy: (inFlight) => {
        entry.idleSince = inFlight ? null : Date.now();
      },
      release: async (healthy) => {
        if (released) return;
        released = true;
        this.out.delete(entry);
        try {
          if (healthy && !this.closed && s.browser.isConnected() && !s.page.isClosed()) {
            await withTimeout(s.context.clearCookies(), this.launchTimeoutMs, "clearing cookies");
            this.idle.push(s);
          } else {
            await this.drop(s, healthy);
          }
        } catch {
          await this.drop(s, false);
        } finally {
          this.free();
        }
      },
    };
    return lease;
  }

  /**
   * While envs wait, looks every second for a lease idle past `reclaimIdleMs` (an abandoned
   * episode would otherwise hold its context forever) and gives the longest idle one to a waiter.
   */
  private watchIdle(): void {
    if (this.reclaimTimer) return;
    this.reclaimTimer = setInterval(
      () => {
        if (this.waiters.length === 0 || this.closed) {
          clearInterval(this.reclaimTimer!);
          this.reclaimTimer = null;
          return;
        }
        const now = Date.now();
        let oldest: { idleSince: number | null; reclaim: () => Promise<void> } | undefined;
        for (const e of this.out)
          if (e.idleSince !== null && now - e.idleSince >= this.reclaimIdleMs && (!oldest || e.idleSince < oldest.idleSince!)) oldest = e;
        if (oldest) {
          this.stats.reclaimed++;
          void oldest.reclaim();
        }
      },
      Math.min(1000, this.reclaimIdleMs),
    );
    this.reclaimTimer.unref();
  }

  private free(): void {
    this.leased--;
    this.waiters.shift()?.();
  }

  /** Closes a context; one that does not close in time takes the browser with it. */
  private async drop(s: Slot, healthy: boolean): Promise<void> {
    if (!healthy) this.stats.broken++;
    this.live.delete(s);
    if (!s.browser.isConnected()) return;
    try {
      await withTimeout(s.context.close(), 5000, "closing a browser context");
    } catch {
      if (s.browser === this.browser) await this.restartBrowser();
    }
  }

  /** Closes (or kills) the browser; the next acquire launches a new one. Leased contexts become lost. */
  async restartBrowser(): Promise<void> {
    const browser = this.browser;
    const pid = this.browserPid;
    this.browser = null;
    this.idle.length = 0;
    if (!browser) return;
    try {
      await withTimeout(browser.close(), 5000, "closing the browser");
    } catch {
      if (pid !== undefined) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* already gone */
        }
      }
    }
  }

  /** Closes every context and the browser; waiting acquirers get a closed-pool error. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.reclaimTimer) clearInterval(this.reclaimTimer);
    this.reclaimTimer = null;
    for (const w of this.waiters.splice(0)) w();
    const launching = this.launching;
    if (launching) await launching.catch(() => {});
    await this.restartBrowser();
  }
}

/** An error's first line: Playwright's messages go on with call logs. */
function firstLine(e: unknown): string {
  return String((e as Error)?.message ?? e).split("\n")[0];
}
