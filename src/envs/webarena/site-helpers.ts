import { ApiCallError, InvalidConfigError } from "../../core/index.ts";
import type { SiteUrls } from "./tasks.ts";

/** What program_html needs of a page: a subset of playwright-core's `Page`. */
export interface EvalPage {
  url(): string;
  goto(url: string): Promise<unknown>;
  evaluate(expression: string): Promise<unknown>;
  content(): Promise<string>;
}

/** The shop's admin account, for the evaluators that read Magento's REST API (latest order, latest review). */
export interface MagentoAdmin {
  username: string;
  password: string;
}

export interface HelperContext {
  sites: SiteUrls;
  page: EvalPage;
  magentoAdmin?: MagentoAdmin;
}

/**
 * WebArena's evaluation helpers (helper_functions.py) that task files call as `func:name(args)`, by
 * name. Arguments are string literals and `__page__` (the page); `__last_url__` is replaced by the
 * caller before.
 */
export async function callHelper(call: string, ctx: HelperContext): Promise<string> {
  const m = /^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$/s.exec(call);
  if (!m) throw new InvalidConfigError(`cannot read the evaluation helper call ${JSON.stringify(call)}`);
  const [, name, argText] = m;
  const args: (string | EvalPage)[] = [];
  const argRe = /\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|(__page__))\s*(?:,|$)/gy;
  let a: RegExpExecArray | null;
  while (argRe.lastIndex < argText.length && (a = argRe.exec(argText)) !== null) args.push(a[3] ? ctx.page : (a[1] ?? a[2]).replace(/\\(.)/g, "$1"));
  if (argRe.lastIndex < argText.trim().length && argText.trim() !== "") throw new InvalidConfigError(`cannot read the arguments of ${JSON.stringify(call)}`);
  const str = (i: number) => {
    if (typeof args[i] !== "string") throw new InvalidConfigError(`${name}: argument ${i + 1} must be a string`);
    return args[i] as string;
  };
  switch (name) {
    case "reddit_get_post_url":
      return redditPostUrl(str(0), ctx.sites.reddit);
    case "gitlab_get_project_memeber_role":
      return gitlabMemberRole(ctx.page, str(1));
    case "shopping_get_latest_order_url":
      return shoppingLatestOrderUrl(ctx);
    case "shopping_get_sku_latest_review_author":
      return (await latestReview(ctx, str(0)))?.nickname ?? "";
    case "shopping_get_sku_latest_review_rating": {
      const r = await latestReview(ctx, str(0));
      return r ? String(r.ratings?.[0]?.percent ?? "") : "";
    }
    default:
      throw new InvalidConfigError(`unknown WebArena evaluation helper "${name}"`);
  }
}

/**
 * A reddit (Postmill) post or comment URL → the post's URL `<reddit>/f/<forum>/<id>/`; anything else
 * as it is. `base` is the reddit site's URL: a deployment served under a path prefix works too
 * (WebArena's helper assumes the site at the host's root, which is the same when there is no prefix).
 */
export function redditPostUrl(url: string, base?: string): string {
  const m = /^([A-Za-z][\w+.-]*):\/\/([^/?#]*)([^?#]*)/.exec(url);
  if (!m) return url;
  const root = base && url.startsWith(`${base}/`) ? base : `${m[1]}://${m[2]}`;
  const parts = url
    .slice(root.length)
    .replace(/[?#].*$/, "")
    .split("/");
  if (parts.length < 4 || parts[1] !== "f") return url;
  return `${root}/f/${parts[2]}/${parts[3]}/`;
}

/** A member's max role on a GitLab project-members page (the table's Account and Max role columns); "" when absent. */
async function gitlabMemberRole(page: EvalPage, account: string): Promise<string> {
  try {
    const role = await page.evaluate(`(() => {
      const accounts = [...document.querySelectorAll("td[data-label='Account'] span.gl-avatar-labeled-sublabel")];
      const i = accounts.findIndex((e) => e.outerText === ${JSON.stringify(`@${account}`)});
      return document.querySelectorAll("td.col-max-role span")[i].outerText;
    })()`);
    return typeof role === "string" ? role : "";
  } catch {
    return "";
  }
}

async function magentoToken(ctx: HelperContext): Promise<string> {
  if (!ctx.magentoAdmin)
    throw new InvalidConfigError(
      "this task's evaluation reads the shop's REST API: give the webarena env magentoAdmin {username, password} (the shop's admin account)",
    );
  const url = `${shoppingBase(ctx)}/rest/default/V1/integration/admin/token`;
  const body = await getJson(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(ctx.magentoAdmin) });
  if (typeof body !== "string") throw new ApiCallError("the shop's admin token request did not return a token", { url, isRetryable: false });
  return body;
}

function shoppingBase(ctx: HelperContext): string {
  const base = ctx.sites.shopping;
  if (!base) throw new InvalidConfigError("this task's evaluation needs the shopping site: give its URL (sites.shopping, or $SHOPPING)");
  return base;
}

async function shoppingLatestOrderUrl(ctx: HelperContext): Promise<string> {
  const token = await magentoToken(ctx);
  const q = "searchCriteria[sortOrders][0][field]=created_at&searchCriteria[sortOrders][0][direction]=DESC&searchCriteria[pageSize]=1";
  const url = `${shoppingBase(ctx)}/rest/V1/orders?${q.replace(/\[/g, "%5B").replace(/\]/g, "%5D")}`;
  const body = (await getJson(url, { headers: { authorization: `Bearer ${token}` } })) as { items?: { increment_id?: string | number }[] };
  const id = body.items?.[0]?.increment_id;
  if (id === undefined) throw new ApiCallError("the shop has no orders", { url, isRetryable: false });
  return `${shoppingBase(ctx)}/sales/order/view/order_id/${Number.parseInt(String(id), 10)}/`;
}

async function latestReview(ctx: HelperContext, sku: string): Promise<{ nickname?: string; ratings?: { percent?: number | string }[] } | undefined> {
  const token = await magentoToken(ctx);
  const url = `${shoppingBase(ctx)}/rest/V1/products/${encodeURIComponent(sku)}/reviews`;
  const list = (await getJson(url, { headers: { authorization: `Bearer ${token}` } })) as { nickname?: string; ratings?: { percent?: number }[] }[];
  return Array.isArray(list) ? list.at(-1) : undefined;
}

/** A JSON request to a site; a site that does not answer, or answers an error, is an error naming the URL. */
async function getJson(url: string, init: RequestInit = {}): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  } catch (e) {
    throw new ApiCallError(`the site does not answer: ${(e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : (e as Error).message}`, {
      url,
      cause: e,
    });
  }
  if (!res.ok) throw new ApiCallError("the site answered an error", { url, status: res.status });
  try {
    return await res.json();
  } catch (e) {
    throw new ApiCallError("the site's answer is not JSON", { url, status: res.status, isRetryable: false, cause: e });
  }
}
