import {
  ClosedEnvironmentError,
  InvalidConfigError,
  ResetNeededError,
  Rng,
  type Env,
  type ResetOptions,
  type ResetResult,
  type StepResult,
} from "../../core/index.ts";
import { createChatModel, type ChatModel } from "../../llm/index.ts";
import type { BrowserSite } from "../browser/site.ts";
import { LlmAnswerJudge } from "./llm-judge.ts";
import { WebArenaSite } from "./site.ts";
import type { MagentoAdmin } from "./site-helpers.ts";
import type { MatchRules } from "./string-match.ts";
import { checkSites, loadWebArenaTasks, missingSites, sitesFromEnvironment, SITE_NAMES, type SiteUrls, type WebArenaTask } from "./tasks.ts";

/**
 * Builds the browser env that plays a site: BrowserEnv (Playwright + Chromium) once it is wired in
 * with {@link useBrowserEnv}. Options are the env's common ones (split, maxSteps) and `contexts`.
 */
export type BrowserEnvFactory = (site: BrowserSite, options: { split: string; maxSteps?: number; contexts?: number }) => Env;

// Set once at startup by whoever has a BrowserEnv (the package's own wiring, or a user's).
const KEY = Symbol.for("dreamgym.webarena.browserEnv");
const slot = globalThis as { [KEY]?: BrowserEnvFactory };

/** Makes `createEnv("webarena")` play its sites in this browser env (undefined: unwire). */
export function useBrowserEnv(factory: BrowserEnvFactory | undefined): void {
  slot[KEY] = factory;
}

export interface WebArenaEnvOptions {
  /** The deployment: site name → base URL. @default from WebArena's variables $SHOPPING, $SHOPPING_ADMIN, $REDDIT, $GITLAB, $MAP, $WIKIPEDIA, $HOMEPAGE */
  sites?: SiteUrls;
  /** `lite` (165 tasks) or `all` (812). @default "lite" */
  split?: string;
  dataDir?: string;
  maxSteps?: number;
  /** The fuzzy_match grader: a chat model or its spec (`http://host/v1#model`, `openai:gpt-4o`). @default $DREAMGYM_WEBARENA_JUDGE */
  judge?: string | ChatModel;
  rules?: MatchRules;
  /** Folder of WebArena's login states (`.auth/`). @default $DREAMGYM_WEBARENA_AUTH */
  authDir?: string;
  magentoAdmin?: MagentoAdmin;
  /** Browser contexts at once. */
  contexts?: number;
}

/**
 * WebArena(-Lite) as an `Env`: its tasks are there at once (for the synthetic env and the
 * curriculum); playing them needs a deployment and the browser env, both looked for at the first
 * `reset()`, which fails with one line saying what is missing. Tasks are sampled here, so a task
 * needing a site not given is refused by name before a browser opens.
 */
export class WebArenaEnv implements Env {
  readonly site: WebArenaSite;
  readonly split: string;
  private readonly taskList: WebArenaTask[];
  private readonly opts: WebArenaEnvOptions;
  private inner: Env | undefined;
  private judgeModel: ChatModel | undefined;
  /** The judge was built here from a spec (so it is closed here). */
  private ownsJudge = false;
  private rng = new Rng(0);
  private closed = false;

  constructor(opts: WebArenaEnvOptions = {}) {
    this.opts = opts;
    this.split = opts.split ?? "lite";
    this.taskList = loadWebArenaTasks(this.split, opts.dataDir);
    const sites = opts.sites !== undefined ? checkSites(opts.sites) : sitesFromEnvironment();
    const judgeSpec = opts.judge ?? process.env.DREAMGYM_WEBARENA_JUDGE;
    if (typeof judgeSpec === "string" && judgeSpec !== "") {
      this.judgeModel = createChatModel(judgeSpec);
      this.ownsJudge = true;
    } else if (typeof judgeSpec === "object") this.judgeModel = judgeSpec;
    this.site = new WebArenaSite({
      sites,
      split: this.split as "lite" | "all",
      dataDir: opts.dataDir,
      rules: opts.rules,
      magentoAdmin: opts.magentoAdmin,
      authDir: opts.authDir ?? process.env.DREAMGYM_WEBARENA_AUTH,
      judge: this.judgeModel ? new LlmAnswerJudge(this.judgeModel) : undefined,
    });
  }

  tasks(): WebArenaTask[] {
    return this.taskList;
  }

  /** Why episodes cannot be played here (no browser env wired, no site given), or undefined when they can. */
  unavailable(): string | undefined {
    if (!slot[KEY])
      return "webarena: the browser env (BrowserEnv: Playwright + Chromium) is not available in this build, so WebArena's sites cannot be played; the tasks and the synthetic env work";
    if (Object.keys(this.site.sites).length === 0)
      return `webarena: no site of a deployment given (sites: {shopping: URL, …}, or $${SITE_NAMES.map((s) => s.toUpperCase()).join(", $")})`;
    return undefined;
  }

  async reset(opts: ResetOptions = {}): Promise<ResetResult> {
    if (this.closed) throw new ClosedEnvironmentError();
    const why = this.unavailable();
    if (why) throw new InvalidConfigError(why);
    if (opts.seed !== undefined) this.rng = new Rng(opts.seed);
    const task = opts.task ?? this.taskList[this.rng.randbelow(this.taskList.length)];
    const wa = task as Partial<WebArenaTask>;
    if (wa.sites) {
      const missing = missingSites(wa as WebArenaTask, this.site.sites);
      if (missing.length > 0)
        throw new InvalidConfigError(
          `${task.id} needs the ${missing.join(" and ")} site (not given): give sites.${missing[0]} (or $${missing[0].toUpperCase()})`,
        );
    }
    this.inner ??= slot[KEY]!(this.site, { split: this.split, maxSteps: this.opts.maxSteps, contexts: this.opts.contexts });
    return this.inner.reset({ ...opts, task });
  }

  step(action: string): Promise<StepResult> {
    if (this.closed) throw new ClosedEnvironmentError();
    if (!this.inner) throw new ResetNeededError();
    return this.inner.step(action);
  }

  availableActions(): string[] | undefined {
    return this.inner?.availableActions();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.inner?.close();
    if (this.ownsJudge) await this.judgeModel?.close?.();
  }
}
