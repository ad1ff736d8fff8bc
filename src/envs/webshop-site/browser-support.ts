import { ScriptedPolicy, type PolicyInput, type StateAbstraction, type Task } from "../../core/index.ts";
import { BrowserEnv, BrowserPool, parseElements, webAbstraction, type PageElement } from "../browser/index.ts";
import { resolveDataDir } from "../data-dir.ts";
import { getReward, pyFloat, webshopGoalOf, type Catalogue, type WebShopSplit } from "../webshop/index.ts";
import { WebShopSite, type WebShopSiteOptions } from "./webshop-site.ts";

/** WebShop pages as the browser env reads them (its page states), told apart by what they show. */
export type WebShopBrowserPage = "search" | "results" | "item" | "item_sub" | "done";

const DONE_HEAD = "Thank you for shopping with us!";
const PAGE_LINE = /^Page (\d+) \(Total results: (\d+)\)$/m;

export function webshopBrowserPage(state: string): WebShopBrowserPage {
  if (state.startsWith(DONE_HEAD)) return "done";
  const els = parseElements(state);
  if (els.some((e) => e.role === "textbox")) return "search";
  if (PAGE_LINE.test(state)) return "results";
  if (els.some((e) => e.role === "button" && e.name === "Buy Now")) return "item";
  return "item_sub";
}

const squash = (s: string) => s.replace(/\s+/g, " ").trim();

/** The search page a task starts on, as the browser env reads it. */
export function webshopBrowserStartState(task: Task): string {
  return ["WebShop", "Instruction:", squash(task.instruction), '[1] textbox "Search..."', '[2] button "Search"'].filter((l) => l !== "").join("\n");
}

/** The done page as the browser env reads it (the purchase details are hidden, the score shown). */
export function webshopBrowserDoneState(reward: number): string {
  return [DONE_HEAD, "Your code:", "None", "(Paste it in your MTurk interface.)", "Your score (min 0.0, max 1.0)", pyFloat(reward)].join("\n");
}

const SITE_PROFILE =
  "WebShop, an online shop, in a browser. Pages: search (a search box) → results (10 products a page: a link with the product's id, its title and price; Next >, < Prev, Back to Search) → item (option groups: a name, then one radio per value; the title, price, rating; Description, Features, Reviews buttons; Buy Now) → a sub-page (one section's text; < Prev) → done (after Buy Now: the score, 0..1, says how well the product and options match the instruction). Buying ends the episode.";

/**
 * A product a results page lists that no episode opened: its item page as far as its listing tells
 * (title, price), in the form of `like` (another item page): the same head and buttons, no option
 * groups (which values it offers is not known), ids counted again. Without it a model copies
 * another product's page, title and options, under this product's link.
 */
function unseenItemPage(state: string, action: string, like: string): string | undefined {
  const m = /^click\s*\[(\d+)\]$/i.exec(action.trim());
  if (!m || webshopBrowserPage(state) !== "results" || webshopBrowserPage(like) !== "item") return undefined;
  const lines = state.split("\n");
  const at = lines.findIndex((l) => l.startsWith(`[${m[1]}] link `));
  if (at < 0) return undefined;
  const listing: string[] = [];
  for (let i = at + 1; i < lines.length && parseElements(lines[i]).length === 0; i++) listing.push(lines[i]);
  if (listing.length < 2) return undefined;
  const likeLines = like.split("\n");
  const firstElement = likeLines.findIndex((l) => parseElements(l).length > 0);
  const rating = likeLines.findIndex((l) => l.startsWith("Rating: "));
  if (firstElement < 0 || rating < 0) return undefined;
  const head = lines.slice(
    0,
    lines.findIndex((l) => parseElements(l).length > 0),
  ); // this page's instruction
  const nav = likeLines
    .slice(firstElement)
    .filter((l) => /^\[\d+\] button "(Back to Search|< Prev)"$/.test(l))
    .map((l) => l.replace(/^\[\d+\] /, ""));
  const buttons = likeLines
    .slice(rating + 1)
    .filter((l) => parseElements(l).length > 0)
    .map((l) => l.replace(/^\[\d+\] /, ""));
  let id = 0;
  const number = (l: string) => `[${++id}] ${l}`;
  return [...head, ...nav.map(number), listing[0], `Price: ${listing[1]}`, "Rating: N.A.", ...buttons.map(number)].join("\n");
}

export const webshopBrowserAbstraction: StateAbstraction = {
  ...webAbstraction({ env: "webshop-browser", stop: false, site: SITE_PROFILE, isTerminal: (s) => s.startsWith(DONE_HEAD) }),
  unseenPage: unseenItemPage,
};

/** The item page's title, price and chosen options (group → value), read from its state. */
function readItem(state: string): { title: string | null; options: Record<string, string> } {
  const lines = state.split("\n");
  const priceAt = lines.findIndex((l) => l.startsWith("Price: "));
  const title = priceAt >= 1 ? lines[priceAt - 1] : null;
  const options: Record<string, string> = {};
  let group: string | null = null;
  for (const line of lines.slice(0, Math.max(0, priceAt - 1))) {
    const [el] = parseElements(line);
    if (!el) group = line;
    else if (el.role === "radio" && group !== null && / checked$/.test(line)) options[group] = el.name;
  }
  return { title, options };
}

/**
 * Hybrid mode for the browser WebShop: a click on Buy Now of an item page is scored by WebShop's
 * reward of the product titled on the page with the options its radios show checked; the next
 * state is the done page as the browser shows it.
 */
export function webshopBrowserVerifier(catalogue: Catalogue) {
  const byTitle = new Map(catalogue.products.map((p) => [squash(p.Title), p] as const));
  return (task: Task, _history: readonly { state: string; action: string }[], state: string, action: string) => {
    const m = /^click \[(\d+)\]$/.exec(action.trim());
    if (!m || webshopBrowserPage(state) !== "item") return null;
    const el = parseElements(state).find((e) => e.id === Number(m[1]));
    if (!el || el.role !== "button" || el.name !== "Buy Now") return null;
    const goal = webshopGoalOf(catalogue, task);
    const { title, options } = readItem(state);
    const product = title ? byTitle.get(title) : undefined;
    if (!goal || !product) return null;
    const reward = getReward(product, goal, catalogue.prices.get(product.asin) ?? 100, options);
    return { reward, terminated: true, nextState: webshopBrowserDoneState(reward) };
  };
}

const byName = (els: PageElement[], role: string, name: string) => els.find((e) => e.role === role && e.name === name);
const PRICE_CLAUSE = /, and price lower than [\d.]+ dollars$/;

/** The text env's rule baseline in the browser: search the instruction, open the first result, buy. */
export class BrowserRulePolicy extends ScriptedPolicy {
  readonly name = "rule";
  choose({ observation, actions, task }: PolicyInput): string {
    const els = parseElements(observation);
    switch (webshopBrowserPage(observation)) {
      case "search": {
        const box = els.find((e) => e.role === "textbox");
        return box ? `type [${box.id}] [${task.instruction}]` : "go_back";
      }
      case "results": {
        const first = els.find((e) => e.role === "link");
        const back = byName(els, "button", "Back to Search");
        return first ? `click [${first.id}]` : back ? `click [${back.id}]` : "go_back";
      }
      default: {
        const buy = byName(els, "button", "Buy Now");
        return buy ? `click [${buy.id}]` : (actions?.[0] ?? "go_back");
      }
    }
  }
}

/**
 * The text env's oracle in the browser (same choices, so the same rewards): searches the
 * instruction (then the product's name), pages to the goal product, picks the goal's options, buys.
 */
export class BrowserOraclePolicy extends ScriptedPolicy {
  readonly name = "oracle";
  private attempt = 0;
  private chosen = new Set<string>();
  /** Any env that shows WebShop's pages and says its task: the browser env, or the in-process pages env. */
  constructor(private readonly env: { site: { catalogue: Catalogue }; task: Task | null }) {
    super();
  }

  override reset(): void {
    this.attempt = 0;
    this.chosen.clear();
  }

  choose({ observation, task }: PolicyInput): string {
    const goal = webshopGoalOf(this.env.site.catalogue, this.env.task ?? task);
    if (!goal) throw new Error("oracle: the task has no WebShop goal");
    const els = parseElements(observation);
    const button = (name: string) => byName(els, "button", name);
    switch (webshopBrowserPage(observation)) {
      case "search": {
        const box = els.find((e) => e.role === "textbox")!;
        const query = this.attempt === 0 ? goal.instruction_text.replace(PRICE_CLAUSE, "") : goal.name.toLowerCase();
        this.attempt++;
        return `type [${box.id}] [${query}]`;
      }
      case "results": {
        const link = els.find((e) => e.role === "link" && e.name.toLowerCase() === goal.asin.toLowerCase());
        if (link) return `click [${link.id}]`;
        const m = PAGE_LINE.exec(observation);
        if (m && Number(m[1]) * 10 < Number(m[2])) return `click [${button("Next >")!.id}]`;
        return `click [${button("Back to Search")!.id}]`;
      }
      case "item": {
        const values = Array.isArray(goal.goal_options) ? goal.goal_options : Object.values(goal.goal_options);
        for (const v of values) {
          // The text env's click[v] sets the last option group holding v: so does the last radio named v.
          const radio = els.filter((e) => e.role === "radio" && e.name === v).at(-1);
          if (this.chosen.has(v) || !radio) continue;
          this.chosen.add(v);
          return `click [${radio.id}]`;
        }
        return `click [${button("Buy Now")!.id}]`;
      }
      default:
        return `click [${button("< Prev")?.id ?? 0}]`;
    }
  }
}

export interface WebShopBrowserOptions extends WebShopSiteOptions {
  /** Goals `reset()` samples from. @default "test" */
  split?: WebShopSplit;
  maxSteps?: number;
  /** Browser contexts shared by every env of these options in this process. @default 4 */
  contexts?: number;
  /** @default `$DREAMGYM_CHROMIUM`, else /usr/bin/chromium */
  executablePath?: string;
  /** @default 15000 */
  actionTimeoutMs?: number;
  seed?: number;
}

/** One site and one pool per option set, shared by the envs that use them, closed with the last. */
const shared = new Map<string, { site: WebShopSite; pool: BrowserPool; refs: number }>();

/**
 * `createEnv("webshop-browser")`: WebShop served in-process on a loopback port, played in Chromium.
 * Envs made with the same options share one site and one pool of `contexts` browser contexts
 * (one Chromium process); both start on the first `reset()` and stop when the last env closes.
 */
export function createWebShopBrowserEnv(o: WebShopBrowserOptions = {}): BrowserEnv & { site: WebShopSite } {
  const contexts = o.contexts ?? 4;
  const key = JSON.stringify([
    resolveDataDir({ dataDir: o.dataDir }),
    o.showAttributes ?? false,
    o.goalOptionValues ?? false,
    contexts,
    o.executablePath ?? null,
  ]);
  let entry = shared.get(key);
  if (!entry) {
    // The site's catalogue seed stays the text env's default: the seed option seeds task sampling.
    entry = {
      site: new WebShopSite({ dataDir: o.dataDir, showAttributes: o.showAttributes, goalOptionValues: o.goalOptionValues }),
      pool: new BrowserPool({ size: contexts, executablePath: o.executablePath }),
      refs: 0,
    };
    shared.set(key, entry);
  }
  const e = entry;
  e.refs++;
  return new BrowserEnv({
    site: e.site,
    pool: e.pool,
    split: o.split ?? "test",
    maxSteps: o.maxSteps,
    actionTimeoutMs: o.actionTimeoutMs,
    seed: o.seed,
    onClose: async () => {
      if (--e.refs > 0) return;
      if (shared.get(key) === e) shared.delete(key);
      await e.pool.close();
      await e.site.close();
    },
  }) as BrowserEnv & { site: WebShopSite };
}
