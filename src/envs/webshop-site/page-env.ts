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
import { fitsElement, listActions, parseBrowserAction, parseElements, type PageElement } from "../browser/index.ts";
import {
  getReward,
  loadCatalogue,
  resultsPage,
  searchProducts,
  SUB_PAGES,
  WEBSHOP_SPLITS,
  webshopGoalOf,
  webshopTask,
  type Catalogue,
  type Goal,
  type Product,
  type SubPage,
  type WebShopSplit,
} from "../webshop/index.ts";
import { webshopBrowserDoneState } from "./browser-support.ts";

/**
 * WebShop in the browser's page-state format, in-process (`createEnv("webshop-pages")`): the pages
 * the browser env reads from the website (`[3] link "B09QQP3356"`, `[18] radio "military green"
 * checked`), the same actions by element id (click, type, go_back), the same rewards — written
 * from the site's own page logic (`app.ts`, `html.ts`) instead of read from Chromium, so it costs
 * what the text env costs. A test plays the same goals in both and compares every state.
 *
 * What it is for: held-out episodes, evaluations and probes of browser-format policies and
 * experience models without a browser (a thousand episodes in seconds, not hours). Its
 * trajectories are of "webshop-browser" states (models and buffers carry over both ways); the
 * equal-wall-time experiment still collects its seed data in the browser, where it costs what it costs.
 */

/** A page of the site, as its URL says: where an episode is, and what the browser's history holds. */
type Loc =
  | { route: "search"; typed: string }
  | { route: "results"; keywords: string[]; page: number }
  // restored: the radio each group showed checked when the page was left by a click on it (the
  // browser restores a page's form state when it is gone back to), by its index in the group.
  | { route: "item"; asin: string; keywords: string[]; page: number; options: Record<string, string>; restored?: Record<string, number> }
  | { route: "sub"; asin: string; keywords: string[]; page: number; sub: SubPage; options: Record<string, string> }
  | { route: "done"; asin: string; options: Record<string, string>; reward: number };

/** What clicking an element does: go to a page, or submit the search form. */
type Effect = Loc | { submit: true };

interface Rendered {
  text: string;
  elements: PageElement[];
  effects: Map<number, Effect>;
  /** A radio's group and its index there. */
  radios: Map<number, { group: string; index: number }>;
}

const MAX_NAME = 200; // as page-state.ts
const squash = (s: string) => s.replace(/\s+/g, " ").trim();
const nameOf = (s: string) => {
  const n = squash(s);
  return n.length > MAX_NAME ? `${n.slice(0, MAX_NAME)}…` : n;
};

/** Writes a page as the browser env reads it (page-state.ts over html.ts): lines of text and elements. */
class PageWriter {
  readonly lines: string[] = [];
  readonly elements: PageElement[] = [];
  readonly effects = new Map<number, Effect>();
  readonly radios = new Map<number, { group: string; index: number }>();
  text(s: string | null | undefined): void {
    const t = squash(s ?? "");
    if (t !== "") this.lines.push(t);
  }
  element(role: string, name: string, effect: Effect | null, suffix = ""): void {
    const id = this.elements.length + 1;
    const n = nameOf(name);
    this.elements.push({ id, role, name: n });
    this.lines.push(`[${id}] ${role} ${JSON.stringify(n)}${suffix}`);
    if (effect) this.effects.set(id, effect);
  }
  done(): Rendered {
    return { text: this.lines.join("\n"), elements: this.elements, effects: this.effects, radios: this.radios };
  }
}

export interface WebShopPagesOptions {
  dataDir?: string;
  /** Goals `reset()` samples from. @default "test" (as the browser env) */
  split?: WebShopSplit;
  /** @default 15 (as the browser env) */
  maxSteps?: number;
  showAttributes?: boolean;
  goalOptionValues?: boolean;
  seed?: number;
}

export class WebShopPagesEnv implements Env {
  readonly catalogue: Catalogue;
  readonly split: WebShopSplit;
  readonly maxSteps: number;
  /** What the browser oracle reads the catalogue from (as on the browser env). */
  readonly site: { catalogue: Catalogue };
  private readonly showAttributes: boolean;
  private readonly goalOptionValues: boolean;
  private rng: Rng;
  /** The search's own draws (a "<r>" query), as the site's. */
  private readonly searchRng: Rng;
  private episode: { task: Task; goal: Goal; history: Loc[]; page: Rendered; steps: number; done: boolean } | null = null;
  private closed = false;

  constructor(o: WebShopPagesOptions = {}) {
    const split = o.split ?? "test";
    if (!WEBSHOP_SPLITS.includes(split)) throw new InvalidConfigError(`unknown WebShop split "${split}" (known: ${WEBSHOP_SPLITS.join(", ")})`);
    const maxSteps = o.maxSteps ?? 15;
    if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new InvalidConfigError(`maxSteps must be a positive integer, got ${maxSteps}`);
    this.catalogue = loadCatalogue({ dataDir: o.dataDir });
    this.site = { catalogue: this.catalogue };
    this.split = split;
    this.maxSteps = maxSteps;
    this.showAttributes = o.showAttributes ?? false;
    this.goalOptionValues = o.goalOptionValues ?? false;
    this.rng = new Rng(o.seed ?? 0);
    this.searchRng = new Rng(o.seed ?? 0);
  }

  tasks(): Task[] {
    return this.catalogue.splitIndexes(this.split).map((i) => webshopTask(this.catalogue, i, this.split));
  }

  /** The task of the running episode (what the oracle reads its goal from). */
  get task(): Task | null {
    return this.episode?.task ?? null;
  }

  async reset(opts: ResetOptions = {}): Promise<ResetResult> {
    if (this.closed) throw new ClosedEnvironmentError();
    if (opts.seed !== undefined) this.rng = new Rng(opts.seed);
    let task = opts.task;
    if (!task) {
      const tasks = this.tasks();
      task = tasks[this.rng.randbelow(tasks.length)];
    }
    const goal = webshopGoalOf(this.catalogue, task);
    if (!goal) throw new InvalidConfigError(`WebShop task "${task.id}" has neither goal_index nor goal (ids look like "webshop:<index>")`);
    const start: Loc = { route: "search", typed: "" };
    const page = this.render(goal, start);
    this.episode = { task, goal, history: [start], page, steps: 0, done: false };
    return { observation: page.text, info: { task } };
  }

  availableActions(): string[] | undefined {
    const e = this.episode;
    if (!e || e.done) return [];
    return listActions(e.page.elements, { stop: false });
  }

  async step(action: string): Promise<StepResult> {
    if (this.closed) throw new ClosedEnvironmentError();
    const e = this.episode;
    if (!e || e.done) throw new ResetNeededError();
    e.steps++;
    const parsed = parseBrowserAction(action);
    const info: StepInfo = {};
    let reward = 0;
    let terminated = false;
    const here = e.history.at(-1)!;
    let next: Loc | null = null;
    if (parsed === null || !fitsElement(parsed, e.page.elements) || (parsed.kind === "go_back" && e.history.length < 2) || parsed.kind === "stop") {
      info.invalid = true;
    } else if (parsed.kind === "go_back") {
      e.history.pop();
      next = e.history.at(-1)!;
    } else if (parsed.kind === "type") {
      // The search box: filled (the page keeps what was typed, also when it is gone back to), and with
      // Enter its form submits (a required field: not when empty).
      e.history[e.history.length - 1] = { route: "search", typed: parsed.text };
      next = (parsed.enter ? this.submit(parsed.text) : null) ?? e.history.at(-1)!;
    } else if (parsed.kind === "click") {
      const effect = e.page.effects.get(parsed.id);
      if (effect && "submit" in effect) next = here.route === "search" ? this.submit(here.typed) : null;
      else if (effect) next = effect;
    }
    if (next !== null) {
      if (next.route === "done") {
        const product = this.catalogue.byAsin.get(next.asin)!;
        next = {
          ...next,
          reward: getReward(product, e.goal, this.catalogue.prices.get(next.asin)!, next.options, { goalOptionValues: this.goalOptionValues }) as number,
        };
        reward = next.reward;
        terminated = true;
      }
      // A page of the same address is no new history entry (as the browser env counts them).
      if (parsed?.kind !== "go_back") {
        const top = e.history.at(-1)!;
        if (key(next) !== key(top)) {
          const radio = parsed?.kind === "click" ? e.page.radios.get(parsed.id) : undefined;
          if (radio && top.route === "item") e.history[e.history.length - 1] = { ...top, restored: { ...top.restored, [radio.group]: radio.index } };
          e.history.push(next);
        } else e.history[e.history.length - 1] = next;
      }
      e.page = this.render(e.goal, next);
    }
    const truncated = !terminated && e.steps >= this.maxSteps;
    e.done = terminated || truncated;
    return { observation: e.page.text, reward, terminated, truncated, info };
  }

  /** The search form's submission: the results of the query, lowercased and split on spaces (as the site). */
  private submit(query: string): Loc | null {
    return query === "" ? null : { route: "results", keywords: query.toLowerCase().split(" "), page: 1 };
  }

  private render(goal: Goal, loc: Loc): Rendered {
    const w = new PageWriter();
    const instruction = () => {
      w.text("Instruction:");
      w.text(goal.instruction_text);
    };
    const toSearch: Loc = { route: "search", typed: "" };
    switch (loc.route) {
      case "search": {
        w.text("WebShop");
        instruction();
        w.element("textbox", "Search...", null, loc.typed ? ` value=${JSON.stringify(squash(loc.typed))}` : "");
        w.element("button", "Search", { submit: true });
        break;
      }
      case "results": {
        const results = searchProducts(this.catalogue, loc.keywords, this.searchRng);
        instruction();
        w.element("button", "Back to Search", toSearch);
        w.text(`Page ${loc.page} (Total results: ${results.length})`);
        if (loc.page > 1) w.element("button", "< Prev", { ...loc, page: loc.page - 1 });
        w.element("button", "Next >", { ...loc, page: loc.page + 1 });
        for (const p of resultsPage(results, loc.page)) {
          w.element("link", p.asin, { route: "item", asin: p.asin, keywords: loc.keywords, page: loc.page, options: {} });
          w.text(p.Title);
          w.text(p.Price);
        }
        break;
      }
      case "item": {
        const p = this.catalogue.byAsin.get(loc.asin)!;
        instruction();
        w.element("button", "Back to Search", toSearch);
        w.element("button", "< Prev", { route: "results", keywords: loc.keywords, page: loc.page });
        // html.ts marks every radio whose value is among the chosen ones; of one group (one name) the
        // browser keeps the last so marked checked.
        const chosen = Object.values(loc.options);
        for (const [name, values] of Object.entries(p.options)) {
          w.text(name);
          const checked = loc.restored?.[name] ?? values.findLastIndex((v) => chosen.includes(v));
          values.forEach((value, index) => {
            const { restored: _r, ...here } = loc;
            w.element("radio", value, { ...here, options: { ...loc.options, [name]: value } }, index === checked ? " checked" : "");
            w.radios.set(w.elements.length, { group: name, index });
          });
        }
        w.text(p.Title);
        w.text(`Price: ${p.Price ?? ""}`);
        w.text(`Rating: ${p.Rating ?? ""}`);
        const subs: SubPage[] = this.showAttributes ? [...SUB_PAGES] : SUB_PAGES.filter((s) => s !== "Attributes");
        for (const sub of subs) w.element("button", sub, { route: "sub", asin: loc.asin, keywords: loc.keywords, page: loc.page, sub, options: loc.options });
        w.element("button", "Buy Now", { route: "done", asin: loc.asin, options: loc.options, reward: 0 });
        break;
      }
      case "sub": {
        const p = this.catalogue.byAsin.get(loc.asin)!;
        instruction();
        w.element("button", "Back to Search", toSearch);
        w.element("button", "< Prev", { route: "item", asin: loc.asin, keywords: loc.keywords, page: loc.page, options: loc.options });
        subPageText(w, p, loc.sub);
        break;
      }
      case "done":
        return { text: webshopBrowserDoneState(loc.reward), elements: [], effects: new Map(), radios: new Map() };
    }
    return w.done();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.episode = null;
  }
}

/** A sub-page's section, line by line as the browser reads html.ts's markup. */
function subPageText(w: PageWriter, p: Product, sub: SubPage): void {
  switch (sub) {
    case "Description":
      w.text(p.Description);
      break;
    case "Features":
      for (const b of p.BulletPoints) w.text(b);
      break;
    case "Reviews":
      for (const r of p.Reviews) {
        w.text(`"${r.title ?? ""}"`);
        w.text(String(r.score));
        w.text(r.body);
      }
      break;
    case "Attributes":
      for (const a of p.Attributes) w.text(a);
      w.text(p.category);
      w.text(p.query);
      w.text(p.product_category);
      break;
  }
}

/** A page's address: two locations of one address are one page of the history. */
function key(loc: Loc): string {
  if (loc.route === "search") return "search";
  if (loc.route === "done") return `done ${loc.asin} ${JSON.stringify(loc.options)}`;
  if (loc.route === "item") return JSON.stringify({ ...loc, restored: undefined });
  return JSON.stringify(loc);
}
