import type { Page } from "playwright-core";
import type { Task } from "../../core/index.ts";

/**
 * A website a {@link BrowserEnv} can train on: where an episode starts and how it is judged.
 * WebShop served locally (`dreamgym serve-site webshop`) is one; a WebArena deployment judged by
 * WebArena's evaluators is another. The browser env owns the pages; a site only reads them.
 */
export interface BrowserSite {
  /** e.g. `webshop`, `webarena`. */
  readonly name: string;
  /** The tasks of a split (WebShop: goals; WebArena: the task list). */
  tasks(split?: string): Task[];
  /** The URL an episode on `task` starts at (a fresh session's page). */
  startUrl(task: Task): string | Promise<string>;
  /**
   * Judge the episode after an action. `answer` is the agent's `stop [answer]` text when it stopped
   * (WebArena's string_match tasks read it). Return `null` while the episode goes on; a result when
   * it ended (WebShop: the done page; WebArena: the agent stopped).
   */
  judge(page: Page, task: Task, ended: { stopped: boolean; answer?: string }): Promise<SiteVerdict | null>;
  /**
   * A Playwright storage-state file (cookies, local storage) to load into the episode's browser
   * context before it opens `startUrl`: a signed-in session (WebArena's `.auth/<site>_state.json`).
   * @default none
   */
  storageState?(task: Task): string | undefined;
  /**
   * Whether the env lists `stop [answer]` among the actions (it accepts it either way). Added for
   * WebShop, where buying, not stopping, ends an episode. @default true
   */
  readonly stopAction?: boolean;
  /** Release what the site opened (a local server). */
  close?(): Promise<void>;
}

export interface SiteVerdict {
  reward: number;
  /** Why, for logs and the audit (e.g. which evaluator failed). */
  detail?: string;
}
