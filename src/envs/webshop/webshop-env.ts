import {
  checkAction,
  ClosedEnvironmentError,
  FREE_TEXT_SLOT,
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
import { loadCatalogue, splitRange, WEBSHOP_SPLITS, type Catalogue, type Goal, type Product, type WebShopSplit } from "./catalogue.ts";
import {
  BACK_TO_SEARCH,
  BUY_NOW,
  NEXT_PAGE,
  PREV_PAGE,
  SUB_PAGES,
  pageText,
  renderDonePage,
  renderItemPage,
  renderResultsPage,
  renderSearchPage,
  renderSubPage,
  type Page,
  type PageKind,
  type SubPage,
} from "./pages.ts";
import { getReward, type RewardInfo } from "./reward.ts";

export interface WebShopOptions {
  /** Data root (holding `webshop/`) or the webshop folder. Default: `$DREAMGYM_DATA`, else `../shared/data`. */
  dataDir?: string;
  /** Goals that `reset()` samples from. @default "train" */
  split?: WebShopSplit;
  /** Seed of the catalogue's price draws and goal price bounds. @default 42 (reproduces the reference) */
  seed?: number;
  /** Show the Attributes sub-page button (the reference's `show_attrs`). @default false */
  showAttributes?: boolean;
  /** Steps before an episode is truncated. @default 15 (ReAct's WebShop limit) */
  maxSteps?: number;
  /** Score goal options by value instead of the reference's (name, value) pairs. @default false */
  goalOptionValues?: boolean;
}

/** A WebShop task: a goal of the catalogue by index, or a goal object of its own (e.g. a generated one). */
export interface WebShopTask extends Task {
  goal_index?: number;
  goal?: Goal;
}

const SEARCH_RESULTS = 50;
const PAGE_SIZE = 10;
const ACTION = /^(.+)\[(.+)\]/;

/** `search[...]` / `click[...]` → [name, argument] as the reference's `parse_action` splits them. */
export function parseAction(action: string): [string, string | null] {
  const m = ACTION.exec(action);
  return m ? [m[1], m[2]] : [action, null];
}

export function webshopTask(catalogue: Catalogue, index: number, split?: WebShopSplit): WebShopTask {
  const goal = catalogue.goal(index);
  return { id: `webshop:${index}`, instruction: goal.instruction_text, goal_index: index, ...(split ? { split } : {}) };
}

/**
 * The products a search shows (up to 50), as the reference's `get_top_n_product_from_keywords`:
 * its special queries (`<r>` random, `<a>` attribute, `<c>` category, `<q>` product query), else
 * the text index. Shared by the text env and the WebShop website.
 */
export function searchProducts(c: Catalogue, keywords: string[], rng: Rng): Product[] {
  const head = keywords[0];
  const rest = keywords.slice(1).join(" ").trim();
  if (head === "<r>") return rng.sample(c.products, Math.min(SEARCH_RESULTS, c.products.length));
  if (head === "<a>") return c.products.filter((p) => c.attributeToAsins.get(rest)?.has(p.asin));
  if (head === "<c>") return c.products.filter((p) => p.category === (keywords[1] ?? "").trim());
  if (head === "<q>") return c.products.filter((p) => p.query === rest);
  return c.search.search(keywords.join(" "), SEARCH_RESULTS).map((h) => c.products[h.doc]);
}

/** The products of a results page (1-based), 10 a page. */
export function resultsPage(results: readonly Product[], pageNumber: number): Product[] {
  return results.slice((pageNumber - 1) * PAGE_SIZE, pageNumber * PAGE_SIZE);
}

/**
 * Rewards of purchases scored before, by goal, then product, price and options (the same numbers: the
 * reward is a function of these alone). A group's rollouts of a task often buy alike: half of a 20k-step
 * real-env run's 4,212 purchases repeat one, and a reward takes ~0.2 ms (fuzzy matching, title tags).
 * A goal's own object (`WebShopTask.goal`) may be changed in place between episodes: its rewards are
 * kept with its content, and forgotten when that differs.
 */
const purchaseRewards = new WeakMap<Goal, { content: string; byPurchase: Map<string, { product: Product; reward: number; info: RewardInfo }> }>();

function purchaseReward(product: Product, goal: Goal, price: number, options: Record<string, string>, goalOptionValues: boolean): [number, RewardInfo] {
  const content = JSON.stringify(goal);
  let kept = purchaseRewards.get(goal);
  if (kept?.content !== content) purchaseRewards.set(goal, (kept = { content, byPurchase: new Map() }));
  const key = `${product.asin}\u0000${price}\u0000${goalOptionValues}\u0000${JSON.stringify(options)}`;
  const hit = kept.byPurchase.get(key);
  if (hit?.product === product) return [hit.reward, { ...hit.info }];
  const [reward, info] = getReward(product, goal, price, options, { verbose: true, goalOptionValues });
  if (kept.byPurchase.size < 1024) kept.byPurchase.set(key, { product, reward, info: { ...info } });
  return [reward, info];
}

interface Session {
  goal: Goal;
  goalIndex: number | null;
  kind: PageKind;
  keywords: string[] | null;
  pageNumber: number;
  results: Product[];
  asin: string | null;
  options: Record<string, string>;
  page: Page;
  steps: number;
  done: boolean;
}

/** The WebShop text environment ("small" setting, text observations), in-process. */
export class WebShopEnv implements Env {
  readonly catalogue: Catalogue;
  readonly split: WebShopSplit;
  readonly maxSteps: number;
  private readonly showAttributes: boolean;
  private readonly goalOptionValues: boolean;
  private readonly splitIndexes: number[];
  private rng: Rng;
  private session: Session | null = null;
  private closed = false;

  constructor(opts: WebShopOptions = {}) {
    const split = opts.split ?? "train";
    if (!WEBSHOP_SPLITS.includes(split)) {
      throw new InvalidConfigError(`unknown WebShop split "${split}" (known: ${WEBSHOP_SPLITS.join(", ")})`);
    }
    const maxSteps = opts.maxSteps ?? 15;
    if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new InvalidConfigError(`maxSteps must be a positive integer, got ${maxSteps}`);
    this.catalogue = loadCatalogue({ dataDir: opts.dataDir, seed: opts.seed });
    this.split = split;
    this.maxSteps = maxSteps;
    this.showAttributes = opts.showAttributes ?? false;
    this.goalOptionValues = opts.goalOptionValues ?? false;
    this.splitIndexes = this.catalogue.splitIndexes(split);
    if (this.splitIndexes.length === 0) throw new InvalidConfigError(`WebShop split "${split}" has no goals`);
    this.rng = new Rng(opts.seed ?? 0);
  }

  /** The tasks of this env's split, in goal order. */
  tasks(): WebShopTask[] {
    return this.splitIndexes.map((i) => webshopTask(this.catalogue, i, this.split));
  }

  /** The goal of the running episode (what an oracle may know). */
  get goal(): Goal | null {
    return this.session?.goal ?? null;
  }

  /** The product whose page (or sub-page) is open, if any (what a scripted policy reading the page would see). */
  get product(): Product | null {
    const asin = this.session?.asin;
    return asin ? (this.catalogue.byAsin.get(asin) ?? null) : null;
  }

  private resolveTask(task: Task): { goal: Goal; goalIndex: number | null } {
    const t = task as WebShopTask;
    if (t.goal && typeof t.goal === "object") return { goal: t.goal, goalIndex: null };
    let index = typeof t.goal_index === "number" ? t.goal_index : NaN;
    if (Number.isNaN(index)) {
      const m = /^webshop:(\d+)$/.exec(t.id);
      if (m) index = Number(m[1]);
    }
    if (!Number.isInteger(index)) {
      throw new InvalidConfigError(`WebShop task "${t.id}" has neither goal_index nor goal (ids look like "webshop:<index>")`);
    }
    return { goal: this.catalogue.goal(index), goalIndex: index };
  }

  async reset(opts: ResetOptions = {}): Promise<ResetResult> {
    if (this.closed) throw new ClosedEnvironmentError();
    if (opts.seed !== undefined) this.rng = new Rng(opts.seed);
    const { goal, goalIndex } = opts.task
      ? this.resolveTask(opts.task)
      : (() => {
          const i = this.splitIndexes[this.rng.randbelow(this.splitIndexes.length)];
          return { goal: this.catalogue.goal(i), goalIndex: i };
        })();
    const page = renderSearchPage(goal.instruction_text);
    this.session = { goal, goalIndex, kind: "search", keywords: null, pageNumber: 1, results: [], asin: null, options: {}, page, steps: 0, done: false };
    const task: WebShopTask = goalIndex !== null ? webshopTask(this.catalogue, goalIndex, this.split) : { ...(opts.task as WebShopTask) };
    return { observation: pageText(page), info: { page: "search", task } };
  }

  availableActions(): string[] | undefined {
    const s = this.session;
    if (!s || s.done) return [];
    const actions: string[] = s.page.hasSearchBar ? [`search[${FREE_TEXT_SLOT}]`] : [];
    for (const label of s.page.clickables.keys()) if (label !== "search") actions.push(`click[${label}]`);
    return actions;
  }

  async step(action: string): Promise<StepResult> {
    if (this.closed) throw new ClosedEnvironmentError();
    const s = this.session;
    if (!s || s.done) throw new ResetNeededError();
    checkAction(action);
    s.steps++;
    const [name, rawArg] = parseAction(action);
    const arg = rawArg?.toLowerCase() ?? null;
    let reward = 0;
    let terminated = false;
    const info: StepInfo = {};
    if (name === "search" && arg) {
      this.search(s, arg.split(" "));
    } else if (name === "click" && arg !== null && arg !== "search" && s.page.clickables.has(arg)) {
      const purchase = this.click(s, arg);
      if (purchase) {
        reward = purchase.reward;
        terminated = true;
        info.purchased = { asin: purchase.asin, options: purchase.options, price: purchase.price };
        info.reward_info = purchase.info;
      }
    } else {
      info.invalid = true;
    }
    const truncated = !terminated && s.steps >= this.maxSteps;
    s.done = terminated || truncated;
    info.page = s.kind;
    return { observation: pageText(s.page), reward, terminated, truncated, info };
  }

  private search(s: Session, keywords: string[], pageNumber = 1): void {
    if (s.keywords === null || s.keywords.join(" ") !== keywords.join(" ") || keywords[0] === "<r>") {
      s.results = searchProducts(this.catalogue, keywords, this.rng);
    }
    s.keywords = keywords;
    s.pageNumber = pageNumber;
    s.asin = null;
    s.options = {};
    s.kind = "results";
    const shown = resultsPage(s.results, pageNumber);
    s.page = renderResultsPage(s.goal.instruction_text, pageNumber, s.results.length, shown);
  }

  private showItem(s: Session): void {
    s.kind = "item";
    s.page = renderItemPage(s.goal.instruction_text, this.catalogue.byAsin.get(s.asin!)!, this.showAttributes);
  }

  /** Carries out a listed click; returns the purchase when it was Buy Now. */
  private click(s: Session, label: string): { reward: number; info: RewardInfo; asin: string; options: Record<string, string>; price: number } | null {
    const target = s.page.clickables.get(label)!;
    const instruction = s.goal.instruction_text;
    if (label === BUY_NOW) {
      const asin = s.asin!;
      const product = this.catalogue.byAsin.get(asin)!;
      const price = this.catalogue.prices.get(asin)!;
      const [reward, info] = purchaseReward(product, s.goal, price, s.options, this.goalOptionValues);
      s.kind = "done";
      s.page = renderDonePage(asin, s.options, reward);
      return { reward, info, asin, options: { ...s.options }, price };
    }
    if (label === BACK_TO_SEARCH) {
      s.kind = "search";
      s.keywords = null;
      s.results = [];
      s.asin = null;
      s.options = {};
      s.page = renderSearchPage(instruction);
      return null;
    }
    if (label === NEXT_PAGE && s.kind === "results") {
      this.search(s, s.keywords!, s.pageNumber + 1);
      return null;
    }
    if (label === PREV_PAGE) {
      if (s.kind === "results") this.search(s, s.keywords!, s.pageNumber - 1);
      else if (s.kind === "item_sub") this.showItem(s);
      else if (s.kind === "item") this.search(s, s.keywords!, s.pageNumber);
      return null;
    }
    const sub = SUB_PAGES.find((p) => p.toLowerCase() === label);
    if (sub && target.kind === "button") {
      s.kind = "item_sub";
      s.page = renderSubPage(instruction, this.catalogue.byAsin.get(s.asin!)!, sub as SubPage);
      return null;
    }
    if (target.kind === "product") s.asin = target.asin;
    else if (target.kind === "option") s.options[target.name] = target.value;
    this.showItem(s);
    return null;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.session = null;
  }
}

export { splitRange };
