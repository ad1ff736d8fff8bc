import { pyFloat, pyJsonDumps, type Product, type SubPage } from "../webshop/index.ts";

/**
 * WebShop's pages as HTML, after the structure of the reference's templates (princeton-nlp/WebShop
 * `web_agent_site/templates`): the same forms, buttons (`.btn`), product links (`.product-link`),
 * option radios and ids, so that the reference's text conversion of a page gives the text env's
 * observation. Our own markup: no CDN stylesheets or jQuery (a page must load offline), a few lines
 * of CSS, and a small script for the option radios.
 *
 * Whitespace matters to that conversion (bs4 keeps a whitespace-only string without a newline as a
 * separate, empty text), so the markup puts no white space between tags: every text is its own node.
 */

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => ESCAPES[c]);
/** A text as its own node, or nothing when it is blank (the text env drops blank texts). */
const text = (s: string | null | undefined): string => (s == null || s.trim() === "" ? "" : esc(s));

const STYLE = `body{font-family:sans-serif;margin:2em auto;max-width:60em}form{display:inline-block;margin:.3em}
.btn{padding:.3em .8em;cursor:pointer}.purchase{font-size:1.2em;background:#f0c14b}.list-group-item{border-bottom:1px solid #ddd;padding:.5em 0}
.radio-toolbar label{margin-right:1em}.hidden-block{display:none}`;

function doc(title: string, body: string, script = ""): string {
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${esc(title)}</title><style>${STYLE}</style><link rel="icon" href="data:,"></head><body>${body}${script}</body></html>`;
}

/** A button in its own form, posting to `action` (the site answers with a redirect to the page: back and forward work). */
const formButton = (action: string, label: string, cls = "btn btn-primary"): string =>
  `<form method="post" action="${esc(action)}"><button type="submit" class="${cls}">${esc(label)}</button></form>`;

const instruction = (t: string): string => `<div id="instruction-text"><h4>Instruction:<br>${text(t)}</h4></div>`;

/** The URLs of a session's pages, as the reference's routes name them. */
export interface SiteUrls {
  index(sid: string): string;
  results(sid: string, keywords: readonly string[], page: number): string;
  item(sid: string, asin: string, keywords: readonly string[], page: number, options: Record<string, string>): string;
  subPage(sid: string, asin: string, keywords: readonly string[], page: number, sub: SubPage, options: Record<string, string>): string;
  done(sid: string, asin: string, options: Record<string, string>): string;
}

/** Paths: keywords joined by "+" (each URI-encoded), options as URI-encoded JSON. */
export const urls: SiteUrls = {
  index: (sid) => `/${encodeURIComponent(sid)}`,
  results: (sid, kw, page) => `/search_results/${encodeURIComponent(sid)}/${keywordsPath(kw)}/${page}`,
  item: (sid, asin, kw, page, o) =>
    `/item_page/${encodeURIComponent(sid)}/${encodeURIComponent(asin)}/${keywordsPath(kw)}/${page}/${encodeURIComponent(JSON.stringify(o))}`,
  subPage: (sid, asin, kw, page, sub, o) =>
    `/item_sub_page/${encodeURIComponent(sid)}/${encodeURIComponent(asin)}/${keywordsPath(kw)}/${page}/${sub}/${encodeURIComponent(JSON.stringify(o))}`,
  done: (sid, asin, o) => `/done/${encodeURIComponent(sid)}/${encodeURIComponent(asin)}/${encodeURIComponent(JSON.stringify(o))}`,
};

export function keywordsPath(keywords: readonly string[]): string {
  return keywords.map(encodeURIComponent).join("+");
}
/** A keywords path segment (already URI-decoded by the router, so "+" still separates). */
export function parseKeywords(segment: string): string[] {
  return segment.split("+").map((k) => decodeURIComponent(k));
}

export function searchPageHtml(sid: string, instructionText: string): string {
  return doc(
    "WebShop",
    `<div class="container"><div id="logo"><h2>WebShop</h2></div>${instruction(instructionText)}` +
      `<form role="form" id="form-buscar" method="post" action="${esc(urls.index(sid))}">` +
      `<input id="search_input" class="form-control" type="text" name="search_query" placeholder="Search..." required>` +
      `<button class="btn btn-success" type="submit">Search</button></form></div>`,
  );
}

export function resultsPageHtml(
  sid: string,
  instructionText: string,
  keywords: readonly string[],
  page: number,
  total: number,
  products: readonly Product[],
): string {
  let body =
    `<div class="container">${instruction(instructionText)}<div class="row">${formButton(urls.index(sid), "Back to Search", "btn btn-success")}</div>` +
    `<div class="row"><h3>Page ${page} (Total results: ${total})</h3>`;
  if (page > 1) body += formButton(urls.results(sid, keywords, page - 1), "< Prev");
  body += `${formButton(urls.results(sid, keywords, page + 1), "Next >")}</div><div class="row">`;
  for (const p of products) {
    body +=
      `<div class="list-group-item searched-product">` +
      `<h4 class="product-asin"><a class="product-link" href="${esc(urls.item(sid, p.asin, keywords, page, {}))}">${text(p.asin)}</a></h4>` +
      `<h4 class="product-title">${text(p.Title)}</h4><h5 class="product-price">${text(p.Price)}</h5></div>`;
  }
  return doc("WebShop", `${body}</div></div>`);
}

/** Radios navigate to their option's URL when clicked (the reference does it with jQuery). */
const RADIO_SCRIPT = `<script>for(const r of document.querySelectorAll("input[type=radio]"))r.addEventListener("click",()=>{location.href=r.dataset.url})</script>`;

export function itemPageHtml(
  sid: string,
  instructionText: string,
  p: Product,
  keywords: readonly string[],
  page: number,
  options: Record<string, string>,
  showAttributes: boolean,
): string {
  let body =
    `<div class="container">${instruction(instructionText)}<div class="row">${formButton(urls.index(sid), "Back to Search", "btn btn-success")}</div>` +
    `<div class="row">${formButton(urls.results(sid, keywords, page), "< Prev")}</div><div class="row"><div class="options">`;
  for (const [name, values] of Object.entries(p.options)) {
    body += `<div class="option-group"><h4>${text(name)}</h4><div class="radio-toolbar">`;
    values.forEach((value, i) => {
      const id = `radio_${name}${i}`;
      const url = urls.item(sid, p.asin, keywords, page, { ...options, [name]: value });
      // Checked as the reference's script checks them: any radio whose value is among the chosen ones.
      const checked = Object.values(options).includes(value) ? " checked" : "";
      body += `<input type="radio" id="${esc(id)}" name="${esc(name)}" value="${esc(value)}" data-url="${esc(url)}"${checked}><label for="${esc(id)}">${text(value)}</label>`;
    });
    body += `</div></div>`;
  }
  body += `</div><div class="details"><h2>${text(p.Title)}</h2><h4>Price: ${text(p.Price)}</h4><h4>Rating: ${text(p.Rating)}</h4><div class="row">`;
  const subs: SubPage[] = showAttributes ? ["Description", "Features", "Reviews", "Attributes"] : ["Description", "Features", "Reviews"];
  for (const sub of subs) body += formButton(urls.subPage(sid, p.asin, keywords, page, sub, options), sub);
  body += `</div></div><div class="buy">${formButton(urls.done(sid, p.asin, options), "Buy Now", "btn btn-lg purchase")}</div></div></div>`;
  return doc("WebShop", body, RADIO_SCRIPT);
}

export function subPageHtml(
  sid: string,
  instructionText: string,
  p: Product,
  keywords: readonly string[],
  page: number,
  sub: SubPage,
  options: Record<string, string>,
): string {
  let body =
    `<div class="container">${instruction(instructionText)}<div class="row">${formButton(urls.index(sid), "Back to Search", "btn btn-success")}</div>` +
    `<div class="row">${formButton(urls.item(sid, p.asin, keywords, page, options), "< Prev")}</div><div class="row card">`;
  switch (sub) {
    case "Description":
      body += `<p class="product-info">${text(p.Description)}</p>`;
      break;
    case "Features":
      body += `<ul>${p.BulletPoints.map((b) => `<li><p class="product-info">${text(b)}</p></li>`).join("")}</ul>`;
      break;
    case "Reviews":
      for (const r of p.Reviews) {
        body += `<div class="review"><h4>${text(`"${r.title ?? ""}"`)}</h4><p><span>${text(String(r.score))}</span></p><p class="content">${text(r.body)}</p></div>`;
      }
      break;
    case "Attributes":
      body +=
        `<ul>${p.Attributes.map((a) => `<li><p class="attribute">${text(a)}</p></li>`).join("")}</ul>` +
        `<h5 class="product-category">${text(p.category)}</h5><h5 class="product-query">${text(p.query)}</h5><h5 class="product-product_category">${text(p.product_category)}</h5>`;
      break;
  }
  return doc("WebShop", `${body}</div></div>`);
}

/**
 * The done page as the text env renders it: the purchase and target details the reference fills only
 * on its Flask site stay "None" or empty, in a hidden block (hidden from a browser's view, not from
 * the text conversion); the score is shown.
 */
export function donePageHtml(asin: string, options: Record<string, string>, reward: number): string {
  const pre = (v: string) => `<pre>${esc(v)}</pre>`;
  const body =
    `<div class="container"><div id="thankyou"><h1>Thank you for shopping with us!</h1></div><div id="stats">` +
    `<h3>Your code:</h3><p>${pre("None")}(Paste it in your MTurk interface.)</p>` +
    `<div class="hidden-block"><h2>Purchased</h2><h4 id="asin">asin${pre(asin)}</h4><h4 id="options">options${pre(pyJsonDumps(options))}</h4>` +
    `<h4 id="purchased_attrs">attrs${pre("None")}</h4><h4 id="purchased-category">category${pre("None")}</h4><h4 id="purchased-query">query${pre("None")}</h4>` +
    `<h4 id="purchased-pc">product category${pre("None")}</h4><h2>Target</h2><h4 id="goal-asin">asin</h4><h4 id="goal-options">options</h4>` +
    `<h4 id="goal-attrs">attrs</h4><h4 id="goal-price">price upper</h4><h4 id="goal-instruction-text">instuction text</h4><h4 id="goal-category">category</h4>` +
    `<h4 id="goal-pc">product category</h4><h4 id="goal-query">query</h4><h4>Goal<div id="goal">${pre("None")}</div></h4><h2>Reward</h2></div>` +
    `<h3 id="reward">Your score (min 0.0, max 1.0)${pre(pyFloat(reward))}</h3>` +
    `<h4 hidden>Reward Details<div id="reward_info">${pre("None")}</div></h4></div></div>`;
  return doc("WebShop", body);
}
