import type { Product } from "./catalogue.ts";
import { pyFloat } from "./catalogue.ts";

/**
 * WebShop's pages in the text observation mode: the visible texts of each HTML template, stripped
 * and joined with " [SEP] ", and the clickables the reference collects from the same page
 * (buttons and product links lower-cased, option radios by value).
 */

export type PageKind = "search" | "results" | "item" | "item_sub" | "done";
export type SubPage = "Description" | "Features" | "Reviews" | "Attributes";
export const SUB_PAGES: readonly SubPage[] = ["Description", "Features", "Reviews", "Attributes"];

export const BUY_NOW = "buy now";
export const NEXT_PAGE = "next >";
export const PREV_PAGE = "< prev";
export const BACK_TO_SEARCH = "back to search";

/** What a click on a clickable does. */
export type Clickable = { kind: "button"; label: string } | { kind: "product"; asin: string } | { kind: "option"; name: string; value: string };

export interface Page {
  texts: string[];
  /** Lower-cased label → clickable, in the order the reference collects them. */
  clickables: Map<string, Clickable>;
  hasSearchBar: boolean;
}

function page(texts: (string | null | undefined)[], clickables: [string, Clickable][] = [], hasSearchBar = false): Page {
  const kept: string[] = [];
  for (const t of texts) {
    const s = (t ?? "").trim();
    if (s !== "") kept.push(s);
  }
  return { texts: kept, clickables: new Map(clickables), hasSearchBar };
}

const button = (label: string): [string, Clickable] => [label.toLowerCase(), { kind: "button", label }];

export function renderSearchPage(instruction: string): Page {
  // The Search button is a clickable the reference refuses to click; search[...] is the way in.
  return page(["WebShop", "Instruction:", instruction, "Search"], [button("Search")], true);
}

export function renderResultsPage(instruction: string, pageNumber: number, total: number, products: Product[]): Page {
  const texts = ["Instruction:", instruction, "Back to Search", `Page ${pageNumber} (Total results: ${total})`];
  const clickables = [button("Back to Search")];
  if (pageNumber > 1) {
    texts.push("< Prev");
    clickables.push(button("< Prev"));
  }
  texts.push("Next >");
  clickables.push(button("Next >"));
  for (const p of products) {
    texts.push(p.asin, p.Title, p.Price);
    clickables.push([p.asin.toLowerCase(), { kind: "product", asin: p.asin }]);
  }
  return page(texts, clickables);
}

export function renderItemPage(instruction: string, p: Product, showAttributes: boolean): Page {
  const texts = ["Instruction:", instruction, "Back to Search", "< Prev"];
  const options: [string, Clickable][] = [];
  for (const [name, values] of Object.entries(p.options)) {
    texts.push(name);
    for (const value of values) {
      texts.push(value);
      options.push([value, { kind: "option", name, value }]);
    }
  }
  texts.push(p.Title, `Price: ${p.Price}`, `Rating: ${p.Rating}`, "Description", "Features", "Reviews");
  const buttons = [button("Back to Search"), button("< Prev"), button("Description"), button("Features"), button("Reviews")];
  if (showAttributes) {
    texts.push("Attributes");
    buttons.push(button("Attributes"));
  }
  texts.push("Buy Now");
  buttons.push(button("Buy Now"));
  return page(texts, [...buttons, ...options]);
}

export function renderSubPage(instruction: string, p: Product, sub: SubPage): Page {
  const texts = ["Instruction:", instruction, "Back to Search", "< Prev"];
  switch (sub) {
    case "Description":
      texts.push(p.Description);
      break;
    case "Features":
      texts.push(...p.BulletPoints);
      break;
    case "Reviews":
      for (const r of p.Reviews) texts.push(`"${r.title ?? ""}"`, String(r.score), r.body);
      break;
    case "Attributes":
      texts.push(...p.Attributes, p.category, p.query, p.product_category);
      break;
  }
  return page(texts, [button("Back to Search"), button("< Prev")]);
}

/** The done page as the text env renders it (the hidden debug block is visible text too). */
export function renderDonePage(asin: string, options: Record<string, string>, reward: number): Page {
  return page([
    "Thank you for shopping with us!",
    "Your code:",
    "None",
    "(Paste it in your MTurk interface.)",
    "Purchased",
    "asin",
    asin,
    "options",
    pyJsonDumps(options),
    "attrs",
    "None",
    "category",
    "None",
    "query",
    "None",
    "product category",
    "None",
    "Target",
    "asin",
    "options",
    "attrs",
    "price upper",
    "instuction text",
    "category",
    "product category",
    "query",
    "Goal",
    "None",
    "Reward",
    "Your score (min 0.0, max 1.0)",
    pyFloat(reward),
    "Reward Details",
    "None",
  ]);
}

/** Flask's `tojson` of a str → str dict: sorted keys, ", " and ": " separators, ASCII and HTML-safe escapes. */
export function pyJsonDumps(obj: Record<string, string>): string {
  const esc = (s: string) => JSON.stringify(s).replace(/[\u007f-\uffff<>&']/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  const keys = Object.keys(obj).sort();
  return `{${keys.map((k) => `${esc(k)}: ${esc(obj[k])}`).join(", ")}}`;
}

export function pageText(p: Page): string {
  return p.texts.join(" [SEP] ");
}
