import { existsSync } from "node:fs";
import { basename, join } from "node:path";
import type { Page } from "playwright-core";
import { InvalidConfigError, type Task } from "../../core/index.ts";
import type { BrowserSite, SiteVerdict } from "../browser/site.ts";
import { evaluateTask } from "./evaluate.ts";
import type { MagentoAdmin } from "./site-helpers.ts";
import type { AnswerJudge, MatchRules } from "./string-match.ts";
import { loadWebArenaTasks, missingSites, resolvePlaceholders, type SiteUrls, type WebArenaSplit, type WebArenaTask } from "./tasks.ts";

export interface WebArenaSiteOptions {
  /** The deployment: site name → base URL. */
  sites: SiteUrls;
  /** @default "lite" */
  split?: WebArenaSplit;
  dataDir?: string;
  /** Grades fuzzy_match answers and "N/A" reasons (an LLM). Tasks that need it fail to judge without it. */
  judge?: AnswerJudge;
  /** @default "vab" for lite (the harness Lite's annotations follow), "webarena" for all */
  rules?: MatchRules;
  /** Folder of WebArena's login states (`<site>_state.json`, made by its auto_login.py): loaded before each episode. */
  authDir?: string;
  /** The shop's admin account, for the evaluations that read Magento's REST API. */
  magentoAdmin?: MagentoAdmin;
}

/**
 * A WebArena deployment as a {@link BrowserSite}: its tasks, where each starts (placeholders
 * resolved; a task needing a site not given is refused, naming it), the signed-in session it starts
 * with, and its verdict when the agent stops: WebArena's evaluators on the final page and answer.
 */
export class WebArenaSite implements BrowserSite {
  readonly name = "webarena";
  readonly sites: SiteUrls;
  private readonly o: WebArenaSiteOptions & { split: WebArenaSplit };

  constructor(opts: WebArenaSiteOptions) {
    this.o = { split: "lite", ...opts };
    this.sites = opts.sites;
  }

  tasks(split?: string): Task[] {
    return loadWebArenaTasks(split ?? this.o.split, this.o.dataDir);
  }

  /** The task as WebArena's, or an error when it is not one of the task files'. */
  private webarenaTask(task: Task): WebArenaTask {
    if (typeof (task as Partial<WebArenaTask>).task_id !== "number" || !(task as Partial<WebArenaTask>).eval) {
      throw new InvalidConfigError(`${task.id} is not a WebArena task (a generated task has no evaluator; it can only run in the synthetic env)`);
    }
    return task as WebArenaTask;
  }

  startUrl(task: Task): string {
    const t = this.webarenaTask(task);
    const missing = missingSites(t, this.sites);
    if (missing.length > 0)
      throw new InvalidConfigError(
        `${t.id} needs the ${missing.join(" and ")} site${missing.length > 1 ? "s" : ""}: give ${missing.map((s) => `sites.${s}`).join(", ")} (or $${missing.map((s) => s.toUpperCase()).join(", $")})`,
      );
    return resolvePlaceholders(t.start_url, this.sites, t.id);
  }

  storageState(task: Task): string | undefined {
    const state = this.webarenaTask(task).storage_state;
    if (!state || !this.o.authDir) return undefined;
    const file = join(this.o.authDir, basename(state));
    if (!existsSync(file))
      throw new InvalidConfigError(
        `${task.id} starts signed in with ${basename(state)}, not found in ${this.o.authDir} (make it with WebArena's browser_env/auto_login.py)`,
      );
    return file;
  }

  /** Nothing until the agent stops; then WebArena's score of the final page and the stop answer. */
  async judge(page: Page, task: Task, ended: { stopped: boolean; answer?: string }): Promise<SiteVerdict | null> {
    if (!ended.stopped) return null;
    const r = await evaluateTask(this.webarenaTask(task), {
      page,
      answer: ended.answer ?? "",
      sites: this.sites,
      judge: this.o.judge,
      rules: this.o.rules,
      magentoAdmin: this.o.magentoAdmin,
    });
    return { reward: r.score, detail: r.parts.map((p) => p.detail).join("; ") };
  }
}
