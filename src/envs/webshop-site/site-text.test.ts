import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { ScriptedPolicy } from "../../core/index.ts";
import { BrowserPool, type BrowserLease } from "../browser/index.ts";
import { RandomPolicy } from "../policies.ts";
import { OraclePolicy, WebShopEnv, webshopTask } from "../webshop/index.ts";
import { WebShopSite } from "./index.ts";

/**
 * The site's pages, converted to text as the reference's `convert_html_to_text(simple=True)` does
 * (BeautifulSoup's text nodes outside style/script/head/title/meta, whitespace-only strings
 * collapsed to "\n" or " " as bs4 does, "\n" dropped, the rest stripped and joined with " [SEP] "),
 * equal the text env's observations, page after page, over many goals. Chromium parses the HTML
 * (DOMParser: no rendering, so hidden blocks count, as for bs4); the test follows each page's own
 * forms, links and radios over HTTP, as a browser would.
 */

// Runs in the page: the text conversion of an HTML string, and where a label's clickable leads.
const CONVERT = `((html, label) => {
  const doc = new DOMParser().parseFromString(html, "text/html");
  const IGNORE = new Set(["STYLE", "SCRIPT", "HEAD", "TITLE", "META"]);
  const walker = doc.createTreeWalker(doc, NodeFilter.SHOW_TEXT);
  const texts = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const parent = n.parentNode;
    if (!parent || parent.nodeType !== 1 || IGNORE.has(parent.tagName)) continue;
    let t = n.nodeValue;
    const inPre = !!(parent.closest && parent.closest("pre, textarea"));
    if (!inPre && /^[ \\t\\n\\r\\f]*$/.test(t)) t = t.includes("\\n") ? "\\n" : " ";
    if (t !== "\\n") texts.push(t.trim());
  }
  let target = null;
  if (label !== null) {
    const lower = (s) => (s || "").toLowerCase();
    const button = [...doc.querySelectorAll(".btn")].find((b) => lower(b.textContent) === label);
    const link = [...doc.querySelectorAll(".product-link")].find((a) => lower(a.textContent) === label);
    const radio = [...doc.querySelectorAll('input[type="radio"]')].filter((r) => r.value === label).at(-1);
    if (button) target = { method: "POST", url: button.closest("form").getAttribute("action") };
    else if (link) target = { method: "GET", url: link.getAttribute("href") };
    else if (radio) target = { method: "GET", url: radio.dataset.url };
  }
  return { text: texts.join(" [SEP] "), target };
})`;

let pool: BrowserPool;
let lease: BrowserLease;
const sites: WebShopSite[] = [];

before(async () => {
  pool = new BrowserPool({ size: 1 });
  lease = await pool.acquire();
});
after(async () => {
  await lease?.release(true);
  await pool?.close();
  for (const s of sites) await s.close();
});

async function convert(html: string, label: string | null): Promise<{ text: string; target: { method: string; url: string } | null }> {
  return lease.page.evaluate(`${CONVERT}(${JSON.stringify(html)}, ${JSON.stringify(label)})`) as Promise<{
    text: string;
    target: { method: string; url: string } | null;
  }>;
}

/** GET or POST (a form) a page, following the site's redirect as a browser does. */
async function load(base: string, path: string, method: string, form?: Record<string, string>): Promise<{ html: string; path: string }> {
  const res = await fetch(new URL(path, base), { method, body: form ? new URLSearchParams(form) : undefined, redirect: "follow" });
  assert.equal(res.status, 200, `${method} ${path}: HTTP ${res.status}`);
  return { html: await res.text(), path: new URL(res.url).pathname };
}

async function walk(showAttributes: boolean, goals: number[], policyOf: (env: WebShopEnv, i: number) => ScriptedPolicy, seen: Map<string, number>) {
  const site = new WebShopSite({ showAttributes });
  sites.push(site);
  const base = await site.start();
  const env = new WebShopEnv({ split: "test", showAttributes });
  for (const [n, g] of goals.entries()) {
    const task = webshopTask(env.catalogue, g, "test");
    const policy = policyOf(env, n);
    policy.reset?.(task);
    let { observation, info } = await env.reset({ task });
    let page = await load(base, `/s${n}${showAttributes ? "a" : ""}_fixed_${g}`, "GET");
    for (let step = 0; step < 12; step++) {
      const action = await policy.choose({ observation, actions: env.availableActions(), task, info, history: [] });
      const [, name, arg] = /^(search|click)\[(.*)\]$/.exec(action) ?? [];
      const { text, target } = await convert(page.html, name === "click" ? arg.toLowerCase() : null);
      assert.equal(text, observation, `goal ${g}, step ${step}, ${page.path}`);
      seen.set(String(info.page), (seen.get(String(info.page)) ?? 0) + 1);
      if (info.page === "item_sub") seen.set(decodeURIComponent(page.path.split("/")[6]), (seen.get(decodeURIComponent(page.path.split("/")[6])) ?? 0) + 1);
      const r = await env.step(action);
      if (name === "search") page = await load(base, page.path, "POST", { search_query: arg });
      else {
        assert.ok(target, `goal ${g}: no clickable "${arg}" on ${page.path}`);
        page = await load(base, target.url, target.method);
      }
      ({ observation, info } = r);
      if (r.terminated || r.truncated) {
        const last = await convert(page.html, null);
        assert.equal(last.text, observation, `goal ${g}, last page ${page.path}`);
        seen.set(String(info.page), (seen.get(String(info.page)) ?? 0) + 1);
        if (r.terminated) assert.equal(site.session(new URL(page.path, base).href)?.reward, r.reward, "the site's reward is the text env's");
        break;
      }
    }
  }
}

test("each page's text, converted as the reference does, is the text env's observation", async () => {
  const seen = new Map<string, number>();
  // Random walks reach sub-pages, paging and odd purchases; oracle episodes reach rewarded done pages.
  await walk(
    true,
    Array.from({ length: 24 }, (_, i) => 7 * i),
    (_env, i) => new RandomPolicy(100 + i),
    seen,
  );
  await walk(
    false,
    Array.from({ length: 16 }, (_, i) => 3 + 11 * i),
    (env) => new OraclePolicy(env),
    seen,
  );
  await walk(
    false,
    Array.from({ length: 8 }, (_, i) => 5 + 13 * i),
    (_env, i) => new RandomPolicy(200 + i),
    seen,
  );
  const pages = [...seen.entries()].filter(([k]) => ["search", "results", "item", "item_sub", "done"].includes(k)).reduce((s, [, v]) => s + v, 0);
  for (const kind of ["search", "results", "item", "item_sub", "done", "Description", "Features", "Reviews", "Attributes"]) {
    assert.ok((seen.get(kind) ?? 0) > 0, `no ${kind} page was compared (${JSON.stringify([...seen])})`);
  }
  assert.ok(pages >= 200, `only ${pages} pages compared`);
});

test("bad URLs are a 404 page, not an error", async () => {
  const site = new WebShopSite();
  sites.push(site);
  const base = await site.start();
  for (const path of ["/item_page/x_fixed_1/NOPE/a/1/%7B%7D", "/search_results/x_fixed_1/a/0", "/done/x_fixed_1/B0743JKHBV/notjson", "/a/b/c"]) {
    const res = await fetch(new URL(path, base));
    assert.equal(res.status, 404, path);
    await res.text();
  }
  // A fixed goal that does not exist is not played as some other goal: 404, saying which indexes are.
  const last = site.catalogue.goals.length - 1;
  for (const path of ["/abc_fixed_999999", "/abc_fixed_-1", "/search_results/abc_fixed_-1/a/1", "/abc_fixed_"]) {
    const res = await fetch(new URL(path, base));
    assert.equal(res.status, 404, path);
    assert.match(await res.text(), new RegExp(`ends with a goal index from 0 to ${last} `), path);
  }
  const lastGoal = await fetch(new URL(`/abc_fixed_${last}`, base));
  assert.equal(lastGoal.status, 200);
  assert.ok((await lastGoal.text()).includes(site.catalogue.goal(last).instruction_text.split(" ").slice(0, 3).join(" ")));
  // What a 404 says of the URL is escaped.
  const res = await fetch(new URL("/item_page/x/%3Cb%3Ebold/a/1/%7B%7D", base));
  assert.equal(res.status, 404);
  assert.match(await res.text(), /no product &lt;b&gt;bold/);
});
