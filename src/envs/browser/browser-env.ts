import { readFileSync } from "node:fs";
import type { BrowserContext, Page } from "playwright-core";
import {
  ClosedEnvironmentError,
  InvalidConfigError,
  ResetNeededError,
  Rng,
  type Env,
  type ResetOptions,
  type ResetResult,
  type StepInfo,
  type StepResult,
  type Task,
} from "../../core/index.ts";
import { fitsElement, listActions, parseBrowserAction, type BrowserAction } from "./actions.ts";
import { SiteUnreachableError } from "./chromium.ts";
import { ID_ATTRIBUTE, readPageState, type PageState } from "./page-state.ts";
import { withTimeout, type BrowserLease, type BrowserPool } from "./pool.ts";
import type { BrowserSite } from "./site.ts";

export interface BrowserEnvOptions {
  /** The website and how it judges an episode. */
  site: BrowserSite;
  /** The browser contexts, shared with other envs. */
  pool: BrowserPool;
  /** The split `reset()` samples tasks from. @default "test" */
  split?: string;
  /** Steps before an episode is truncated. @default 15 */
  maxSteps?: number;
  /** Milliseconds an action (and reading the page after it) may take; past it the episode fails. @default 15000 */
  actionTimeoutMs?: number;
  /** Seed of task sampling. @default 0 */
  seed?: number;
  /** Called by `close()` after the env let go of its context (e.g. to release a shared pool and site). */
  onClose?: () => Promise<void>;
}

/** Chromium's network errors: the site did not answer at all (not a page error). */
const UNREACHABLE =
  /net::ERR_(CONNECTION_REFUSED|CONNECTION_RESET|CONNECTION_CLOSED|NAME_NOT_RESOLVED|ADDRESS_UNREACHABLE|CONNECTION_TIMED_OUT|TIMED_OUT|EMPTY_RESPONSE|INTERNET_DISCONNECTED)/;
/** The page navigated while it was read: read it again. */
const NAVIGATED = /Execution context was destroyed|navigat|Cannot find context/i;

interface Episode {
  task: Task;
  lease: BrowserLease;
  state: PageState;
  steps: number;
  /** URLs this episode visited, for go_back not to leave it. */
  history: string[];
}

/**
 * An `Env` over a real browser (Playwright, Debian's Chromium). Observations are the page's state
 * in the web meta-representation (see `page-state.ts`); actions are `click [id]`, `type [id] [text]`,
 * `select [id] [option]`, `go_back` (and `stop [answer]`); the reward is the site's verdict
 * (`BrowserSite.judge`). An episode holds one context of the pool from `reset()` until it ends. A
 * crash, a lost browser or an action past its timeout ends the episode as failed (truncated, reward
 * 0, `info.error`) and the context is replaced; the next `reset()` works.
 */
export class BrowserEnv implements Env {
  readonly site: BrowserSite;
  readonly pool: BrowserPool;
  readonly split: string;
  readonly maxSteps: number;
  readonly actionTimeoutMs: number;
  private readonly onClose?: () => Promise<void>;
  private rng: Rng;
  private taskList: Task[] | null = null;
  private episode: Episode | null = null;
  /** The episode whose idle context the pool gave to another env: its next step reports the failure. */
  private reclaimed: { observation: string; error: string } | null = null;
  private closed = false;

  constructor(o: BrowserEnvOptions) {
    const maxSteps = o.maxSteps ?? 15;
    if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new InvalidConfigError(`maxSteps must be a positive integer, got ${maxSteps}`);
    const timeout = o.actionTimeoutMs ?? 15_000;
    if (!(timeout > 0)) throw new InvalidConfigError(`actionTimeoutMs must be positive, got ${timeout}`);
    this.site = o.site;
    this.pool = o.pool;
    this.split = o.split ?? "test";
    this.maxSteps = maxSteps;
    this.actionTimeoutMs = timeout;
    this.onClose = o.onClose;
    this.rng = new Rng(o.seed ?? 0);
  }

  /** The tasks of this env's split. */
  tasks(): Task[] {
    return (this.taskList ??= this.site.tasks(this.split));
  }

  /** The page of the running episode (for a site's judge, tests and debugging); null between episodes. */
  get page(): Page | null {
    return this.episode?.lease.page ?? null;
  }

  /** The task of the running episode. */
  get task(): Task | null {
    return this.episode?.task ?? null;
  }

  async reset(opts: ResetOptions = {}): Promise<ResetResult> {
    if (this.closed) throw new ClosedEnvironmentError();
    await this.endEpisode(true);
    if (opts.seed !== undefined) this.rng = new Rng(opts.seed);
    let task = opts.task;
    if (!task) {
      const tasks = this.tasks();
      if (tasks.length === 0) throw new InvalidConfigError(`site ${this.site.name} has no tasks in split "${this.split}"`);
      task = tasks[this.rng.randbelow(tasks.length)];
    }
    // A context that breaks while the episode starts is replaced once; a site that does not answer is an error.
    for (let attempt = 0; ; attempt++) {
      this.reclaimed = null;
      const lease: BrowserLease = await this.pool.acquire(() => this.onReclaimed(lease));
      lease.busy(true);
      let url = "";
      try {
        url = await Promise.resolve()
          .then(() => this.site.startUrl(task))
          .catch(async (e: unknown) => {
            await lease.release(true); // the site refused the task: the context is fine
            throw e;
          });
        const signedIn = this.site.storageState?.(task);
        const state = await this.guarded(lease, `opening ${url}`, async () => {
          // A signed-in session (WebArena's .auth files): its cookies go into this pooled context.
          await lease.context.clearCookies();
          if (signedIn) await lease.context.addCookies(readStorageCookies(signedIn));
          await lease.page.goto(url, { waitUntil: "domcontentloaded", timeout: this.actionTimeoutMs });
          return this.read(lease.page);
        });
        if (this.closed) {
          await lease.release(true);
          throw new ClosedEnvironmentError();
        }
        this.episode = { task, lease, state, steps: 0, history: [lease.page.url()] };
        lease.busy(false);
        return { observation: state.text, info: { task, url: lease.page.url() } };
      } catch (e) {
        if (url === "") throw e;
        const message = String((e as Error)?.message ?? e);
        const unreachable = UNREACHABLE.exec(message);
        await lease.release(!!unreachable);
        if (unreachable) throw new SiteUnreachableError(url, unreachable[0], e);
        if (ClosedEnvironmentError.isInstance(e) || attempt >= 1) throw e;
      }
    }
  }

  availableActions(): string[] | undefined {
    const e = this.episode;
    if (!e) return [];
    return listActions(e.state.elements, { stop: this.site.stopAction ?? true });
  }

  /** The pool took this env's idle context for a waiting env: the episode is over, as failed. */
  private onReclaimed(lease: BrowserLease): void {
    const e = this.episode;
    if (!e || e.lease !== lease) return;
    this.episode = null;
    this.reclaimed = { observation: e.state.text, error: "the episode sat idle while another env waited for a browser context: its context was reclaimed" };
  }

  async step(action: string): Promise<StepResult> {
    if (this.closed) throw new ClosedEnvironmentError();
    if (this.reclaimed) {
      const { observation, error } = this.reclaimed;
      this.reclaimed = null;
      return { observation, reward: 0, terminated: false, truncated: true, info: { error, failed: true } };
    }
    const e = this.episode;
    if (!e) throw new ResetNeededError();
    e.lease.busy(true);
    try {
      return await this.stepIn(e, action);
    } finally {
      e.lease.busy(false);
    }
  }

  private async stepIn(e: Episode, action: string): Promise<StepResult> {
    e.steps++;
    const parsed = parseBrowserAction(action);
    const info: StepInfo = {};
    let reward = 0;
    let terminated = false;
    const valid = parsed !== null && fitsElement(parsed, e.state.elements) && !(parsed.kind === "go_back" && e.history.length < 2);
    if (!valid) {
      info.invalid = true;
    } else {
      try {
        const verdict = await this.guarded(e.lease, `action "${action}"`, async () => {
          await this.perform(e, parsed);
          e.state = await this.read(e.lease.page);
          const url = e.lease.page.url();
          if (parsed.kind !== "go_back" && url !== e.history.at(-1)) e.history.push(url);
          return this.site.judge(e.lease.page, e.task, parsed.kind === "stop" ? { stopped: true, answer: parsed.answer } : { stopped: false });
        });
        if (verdict) {
          reward = verdict.reward;
          terminated = true;
          if (verdict.detail !== undefined) info.verdict = verdict.detail;
        } else if (parsed.kind === "stop") {
          terminated = true; // a site that does not judge a stop still ends the episode there
        }
      } catch (err) {
        return this.fail(e, err);
      }
    }
    info.url = e.lease.page.url();
    const truncated = !terminated && e.steps >= this.maxSteps;
    if (truncated) {
      // A cut-off episode is judged as if it stopped with no answer (WebArena scores those too; a
      // WebShop episode that never bought earns 0 either way).
      try {
        const verdict = await this.guarded(e.lease, "judging the cut-off episode", () => this.site.judge(e.lease.page, e.task, { stopped: true, answer: "" }));
        if (verdict) {
          reward = verdict.reward;
          if (verdict.detail !== undefined) info.verdict = verdict.detail;
        }
      } catch (err) {
        return this.fail(e, err);
      }
    }
    const observation = e.state.text;
    if (terminated || truncated) await this.endEpisode(true);
    return { observation, reward, terminated, truncated, info };
  }

  /** The episode failed (crash, lost browser, timeout): its context is dropped; reported as truncated with the error. */
  private async fail(e: Episode, err: unknown): Promise<StepResult> {
    const error = String((err as Error)?.message ?? err).split("\n")[0];
    let url = "";
    try {
      url = e.lease.page.url();
    } catch {
      /* page gone */
    }
    this.episode = null;
    await e.lease.release(false);
    return { observation: e.state.text, reward: 0, terminated: false, truncated: true, info: { error, failed: true, ...(url ? { url } : {}) } };
  }

  /** Runs `fn` against the page within the action timeout, failing at once when the page or browser is lost. */
  private async guarded<T>(lease: BrowserLease, what: string, fn: () => Promise<T>): Promise<T> {
    const lost = lease.lost.then((why) => Promise.reject(new Error(`${why} during ${what}`)));
    lost.catch(() => {}); // only raced, never left unhandled
    return withTimeout(Promise.race([fn(), lost]), this.actionTimeoutMs, what);
  }

  private async perform(e: Episode, a: BrowserAction): Promise<void> {
    const page = e.lease.page;
    const t = { timeout: this.actionTimeoutMs };
    const target = (id: number) => page.locator(`[${ID_ATTRIBUTE}="${id}"]`);
    switch (a.kind) {
      case "click":
        await target(a.id).click(t);
        break;
      case "type":
        await target(a.id).fill(a.text, t);
        if (a.enter) await target(a.id).press("Enter", t);
        break;
      case "select":
        await target(a.id).selectOption({ label: a.option }, t);
        break;
      case "go_back":
        e.history.pop();
        await page.goBack({ waitUntil: "domcontentloaded", ...t });
        break;
      case "stop":
        return;
    }
    await page.waitForLoadState("domcontentloaded", t);
  }

  /** The page's state; read again when a navigation replaced the document while it was read. */
  private async read(page: Page): Promise<PageState> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await readPageState(page);
      } catch (err) {
        if (attempt >= 5 || !NAVIGATED.test(String((err as Error)?.message ?? err))) throw err;
        await page.waitForLoadState("domcontentloaded", { timeout: this.actionTimeoutMs });
      }
    }
  }

  private async endEpisode(healthy: boolean): Promise<void> {
    const e = this.episode;
    this.episode = null;
    if (e) await e.lease.release(healthy);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.endEpisode(true);
    await this.onClose?.();
  }
}

/** The cookies of a Playwright storage-state file; a missing or malformed file is an error naming it. */
function readStorageCookies(file: string): Parameters<BrowserContext["addCookies"]>[0] {
  let state: unknown;
  try {
    state = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new InvalidConfigError(`${file}: not a readable storage-state file (${(e as Error).message})`);
  }
  const cookies = (state as { cookies?: unknown })?.cookies;
  if (!Array.isArray(cookies)) throw new InvalidConfigError(`${file}: a storage-state file needs a "cookies" list`);
  return cookies as Parameters<BrowserContext["addCookies"]>[0];
}
