import { Hono, type Context } from "hono";
import { Rng } from "../../core/index.ts";
import { resultsPage, searchProducts, SUB_PAGES, getReward, type Catalogue, type Goal, type SubPage } from "../webshop/index.ts";
import { donePageHtml, esc, itemPageHtml, parseKeywords, resultsPageHtml, searchPageHtml, subPageHtml, urls } from "./html.ts";

/** What the site remembers of a session: its goal and, once bought, the reward. The page state is in the URL. */
export interface SiteSession {
  goal: Goal;
  goalIndex: number | null;
  reward?: number;
}

export interface WebShopAppOptions {
  catalogue: Catalogue;
  /** Goal indexes a session without a fixed goal draws from. */
  goalIndexes: readonly number[];
  showAttributes: boolean;
  goalOptionValues: boolean;
  seed: number;
}

/** Sessions kept at most; the oldest are forgotten first (a session is a goal and a reward). */
const MAX_SESSIONS = 100_000;

/**
 * WebShop's Flask routes (`web_agent_site/app.py`) over Hono: `/{session}` (search), then
 * `/search_results/{session}/{keywords}/{page}`, `/item_page/{session}/{asin}/{keywords}/{page}/{options}`,
 * `/item_sub_page/…/{sub_page}/{options}` and `/done/{session}/{asin}/{options}`. As in the
 * reference, a session id holding `fixed` ends with its goal index (`abc_fixed_12`); any other id
 * draws a goal. A POST (a page's form buttons) is answered with a redirect to the same page by GET
 * (the search form's to its results), so the browser's history holds plain pages.
 */
export function webshopApp(o: WebShopAppOptions): { app: Hono; sessions: Map<string, SiteSession> } {
  const { catalogue } = o;
  const sessions = new Map<string, SiteSession>();
  const rng = new Rng(o.seed);

  /** The session of `sid`, or why there is none (a fixed goal that does not exist: a 404, not some other goal). */
  const session = (sid: string): SiteSession | string => {
    let s = sessions.get(sid);
    if (s) return s;
    let index: number;
    if (sid.includes("fixed")) {
      const last = sid.split("_").at(-1)!;
      index = /^\d+$/.test(last) ? Number(last) : Number.NaN;
      if (!(index < catalogue.goals.length))
        return `no goal "${last}": a session id holding "fixed" ends with a goal index from 0 to ${catalogue.goals.length - 1} (abc_fixed_12 plays goal 12)`;
    } else index = o.goalIndexes[rng.randbelow(o.goalIndexes.length)];
    s = { goal: catalogue.goal(index), goalIndex: index };
    remember(sid, s);
    return s;
  };
  const remember = (sid: string, s: SiteSession) => {
    if (sessions.size >= MAX_SESSIONS) sessions.delete(sessions.keys().next().value!);
    sessions.set(sid, s);
  };

  const app = new Hono();
  const html = (c: Context, body: string, status: 200 | 400 | 404 = 200) => c.html(body, status);
  // What is said comes from the URL: escaped, so a crafted link puts no markup in the page.
  const notFound = (c: Context, what: string) => html(c, `<!DOCTYPE html><html><body><h1>Not found</h1><p>${esc(what)}</p></body></html>`, 404);

  app.all("*", async (c) => {
    // Segments are decoded here, not by the router: a "+" between keywords must stay apart from an encoded one.
    const raw = new URL(c.req.url).pathname.split("/").slice(1);
    let parts: string[];
    try {
      const keywordsAt = raw[0] === "search_results" ? 2 : raw[0] === "item_page" || raw[0] === "item_sub_page" ? 3 : -1;
      parts = raw.map((p, i) => (i === keywordsAt ? p : decodeURIComponent(p)));
    } catch {
      return html(c, "<!DOCTYPE html><html><body><h1>Bad request</h1><p>malformed URL</p></body></html>", 400);
    }
    const post = c.req.method === "POST";
    const [route] = parts;
    if (parts.length === 1 && route === "") return c.redirect(urls.index("abc")); // the reference's home
    if (parts.length === 1) {
      const sid = route;
      const s = session(sid);
      if (typeof s === "string") return notFound(c, s);
      if (post) {
        const form = await c.req.parseBody();
        const query = form.search_query;
        if (typeof query === "string") return c.redirect(urls.results(sid, query.toLowerCase().split(" "), 1), 303);
        return c.redirect(urls.index(sid), 303);
      }
      return html(c, searchPageHtml(sid, s.goal.instruction_text));
    }
    if (post) return c.redirect(c.req.url, 303);

    const options = (text: string): Record<string, string> | null => {
      try {
        const v = JSON.parse(text) as unknown;
        if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
        return Object.values(v).every((x) => typeof x === "string") ? (v as Record<string, string>) : null;
      } catch {
        return null;
      }
    };
    const pageOf = (text: string) => (/^\d+$/.test(text) && Number(text) >= 1 ? Number(text) : null);

    if (route === "search_results" && parts.length === 4) {
      const [, sid, kw, p] = parts;
      const page = pageOf(p);
      if (page === null) return notFound(c, `bad page number "${p}"`);
      const s = session(sid);
      if (typeof s === "string") return notFound(c, s);
      const keywords = parseKeywords(kw);
      const results = searchProducts(catalogue, keywords, rng);
      return html(c, resultsPageHtml(sid, s.goal.instruction_text, keywords, page, results.length, resultsPage(results, page)));
    }
    if ((route === "item_page" && parts.length === 6) || (route === "item_sub_page" && parts.length === 7)) {
      const [, sid, asin, kw, p] = parts;
      const product = catalogue.byAsin.get(asin);
      const page = pageOf(p);
      const opts = options(parts.at(-1)!);
      if (!product) return notFound(c, `no product ${asin}`);
      if (page === null || opts === null) return notFound(c, "bad page number or options");
      const s = session(sid);
      if (typeof s === "string") return notFound(c, s);
      const keywords = parseKeywords(kw);
      if (route === "item_page") return html(c, itemPageHtml(sid, s.goal.instruction_text, product, keywords, page, opts, o.showAttributes));
      const sub = SUB_PAGES.find((x) => x === parts[5]) as SubPage | undefined;
      if (!sub) return notFound(c, `no sub-page ${parts[5]}`);
      return html(c, subPageHtml(sid, s.goal.instruction_text, product, keywords, page, sub, opts));
    }
    if (route === "done" && parts.length === 4) {
      const [, sid, asin, o2] = parts;
      const product = catalogue.byAsin.get(asin);
      const opts = options(o2);
      if (!product) return notFound(c, `no product ${asin}`);
      if (opts === null) return notFound(c, "bad options");
      const s = session(sid);
      if (typeof s === "string") return notFound(c, s);
      const price = catalogue.prices.get(asin)!;
      const reward = getReward(product, s.goal, price, opts, { goalOptionValues: o.goalOptionValues }) as number;
      s.reward = reward;
      return html(c, donePageHtml(asin, opts, reward));
    }
    return notFound(c, `no page ${c.req.path}`);
  });
  return { app, sessions };
}
