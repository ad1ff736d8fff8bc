import { FREE_TEXT_SLOT, type StateAbstraction } from "../../core/index.ts";
import type { Catalogue, Product } from "./catalogue.ts";

/**
 * WebShop's abstract state: the page kind, the instruction, and the page's elements one per line,
 * clickables in brackets exactly as `click[...]` takes them. Derived from the text observation (the
 * catalogue tells option values from option names on item pages).
 *
 *   page: results
 *   instruction: Find me …
 *   [back to search] [next >]
 *   Page 1 (Total results: 50)
 *   [b07xtk3p89] Lunarable Oriental Storage Toy Bag … | $39.99
 */
const SEP = " [SEP] ";
const BUTTONS = new Set(["back to search", "< prev", "next >", "description", "features", "reviews", "attributes", "buy now"]);
const LONGEST_BUTTON = Math.max(...[...BUTTONS].map((b) => b.length));
const ASIN = /^[A-Z0-9]{10}$/;

const PROFILE = `WebShop, an online shop. A state is "page: <kind>" (search, results, item, item_sub, done), "instruction: <the task>", then the page's elements, one per line; clickables are in brackets.
Pages: search (a search box) → results (10 products a page: [asin] title | price; [next >], [< prev], [back to search]) → item (option groups "name: [value] [value]", title, price, rating, [description] [features] [reviews], [buy now]) → item_sub (one section's text, [< prev]) → done (after [buy now]: "score: <reward>").
Actions: search[<query>] on the search page; click[<label>] for a bracketed label on the page (e.g. click[b07xtk3p89], click[next >], click[black], click[buy now]). Anything else is invalid and changes nothing. Buying ends the episode; the reward (0..1) says how well the product and options match the instruction.`;

function lines(kind: string, instruction: string, body: string[]): string {
  return [`page: ${kind}`, `instruction: ${instruction}`, ...body].join("\n");
}

// The page kinds below have a function each, apart from `abstract`: V8 optimizes a function again
// whenever a string of another representation (one- or two-byte, sliced, joined) reaches code compiled
// without it, and one function holding every kind was the costliest to compile again.

function donePage(parts: string[]): string {
  const i = parts.indexOf("Your score (min 0.0, max 1.0)");
  const asin = parts[parts.indexOf("asin") + 1] ?? "";
  return lines("done", "", [`bought ${asin}`, `score: ${i >= 0 ? parts[i + 1] : "?"}`]);
}

function resultsPage(instruction: string, rest: string[], pageLine: number): string {
  // One pass; only short parts can be buttons, so long titles are never lowercased (the server's hot path).
  const nav: string[] = [];
  const items: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    if (i === pageLine) continue;
    const p = rest[i];
    const button = p.length <= LONGEST_BUTTON && BUTTONS.has(p.toLowerCase());
    if (button) nav.push(`[${p.toLowerCase()}]`);
    else if (i > pageLine) items.push(p);
  }
  const body = [nav.join(" "), rest[pageLine]];
  for (let i = 0; i + 2 < items.length + 1; i += 3) {
    if (!ASIN.test(items[i] ?? "")) break;
    body.push(`[${items[i].toLowerCase()}] ${items[i + 1] ?? ""} | ${items[i + 2] ?? ""}`);
  }
  return lines("results", instruction, body);
}

/** An item page; `product`: the catalogue's product of its title, whose option groups it shows. */
function itemPage(instruction: string, rest: string[], price: number, product: Product | undefined): string {
  const title = rest[price - 1];
  const middle = rest.slice(2, price - 1); // between "< Prev" and the title
  const body = ["[back to search] [< prev]"];
  if (product) {
    for (const [name, values] of Object.entries(product.options)) body.push(`${name}: ${values.map((v) => `[${v}]`).join(" ")}`);
  } else if (middle.length > 0) {
    body.push(`options: ${middle.map((v) => `[${v.toLowerCase()}]`).join(" ")}`);
  }
  const after = rest.slice(price + 2).filter((p) => BUTTONS.has(p.toLowerCase()));
  body.push(title, rest[price], rest[price + 1] ?? "", after.map((b) => `[${b.toLowerCase()}]`).join(" "));
  return lines("item", instruction, body);
}

export function webshopAbstraction(catalogue: Catalogue): StateAbstraction {
  const byTitle = new Map<string, Product>();
  for (const p of catalogue.products) if (!byTitle.has(p.Title.trim())) byTitle.set(p.Title.trim(), p);

  const abstract = (observation: string): string => {
    if (observation.startsWith("page: ")) return observation; // already abstract
    const parts = observation.split(SEP).map((p) => p.trim());
    if (parts[0] === "Thank you for shopping with us!") return donePage(parts);
    if (parts[0] === "WebShop" && parts[1] === "Instruction:") return lines("search", parts[2] ?? "", ["[search box]"]);
    if (parts[0] !== "Instruction:") return lines("unknown", "", [observation]);
    const instruction = parts[1] ?? "";
    const rest = parts.slice(2);
    const pageLine = rest.findIndex((p) => /^Page \d+ \(Total results: \d+\)$/.test(p));
    if (pageLine >= 0) return resultsPage(instruction, rest, pageLine);
    const price = rest.findIndex((p) => p.startsWith("Price: "));
    if (price >= 1 && rest.includes("Buy Now")) return itemPage(instruction, rest, price, byTitle.get(rest[price - 1]));
    return lines("item_sub", instruction, ["[back to search] [< prev]", ...rest.slice(2)]);
  };

  /** `click[x]` for each `[x]` in the line (x non-empty, without "]"), in order. */
  const bracketed = (line: string): string[] => {
    const out: string[] = [];
    for (let open = line.indexOf("["); open >= 0; open = line.indexOf("[", open + 1)) {
      const close = line.indexOf("]", open + 1);
      if (close < 0) break;
      const label = line.slice(open + 1, close);
      // As /\[([^\]]+)\]/g: a "[" inside a label belongs to it; an empty label matches nothing.
      if (label.length > 0) {
        out.push(`click[${label}]`);
        open = close;
      }
    }
    return out;
  };
  const buttonLine = (line: string) => /^\[[^\]]+\](?: \[[^\]]+\])*$/.test(line.trim());

  const actions = (state: string): string[] | undefined => {
    const [head, , ...body] = state.split("\n");
    const kind = head?.slice("page: ".length);
    switch (kind) {
      case "search":
        return [`search[${FREE_TEXT_SLOT}]`];
      case "done":
        return [];
      case "results": {
        const out = bracketed(body[0] ?? "");
        for (const line of body.slice(2)) {
          const asin = /^\[([a-z0-9]{10})\] /.exec(line);
          if (asin) out.push(`click[${asin[1]}]`);
        }
        return out;
      }
      case "item": {
        const out = bracketed(body[0] ?? "");
        for (const line of body.slice(1)) if (/^[^[\n]+: \[/.test(line)) out.push(...bracketed(line.slice(line.indexOf(": [") + 2)));
        const last = body.at(-1) ?? "";
        if (buttonLine(last)) out.push(...bracketed(last));
        return [...new Set(out)];
      }
      case "item_sub":
        return bracketed(body[0] ?? "");
      default:
        return undefined;
    }
  };

  // A product no episode opened: its page as far as its results line tells (title, price), in the
  // form of another product's page, with no option groups (which values it offers is not known).
  const unseenPage = (state: string, action: string, like: string): string | undefined => {
    const asin = /^click\[([a-z0-9]{10})\]$/i.exec(action.trim())?.[1].toLowerCase();
    const [kind, instruction] = state.split("\n");
    const likeLines = like.split("\n");
    if (asin === undefined || kind !== "page: results" || likeLines[0] !== "page: item") return undefined;
    const listed = state.split("\n").find((l) => l.startsWith(`[${asin}] `));
    const m = listed && /^\[[a-z0-9]{10}\] (.*) \| ([^|]*)$/.exec(listed);
    if (!m) return undefined;
    return [likeLines[0], instruction, likeLines[2], m[1], `Price: ${m[2]}`, "Rating: N.A.", likeLines.at(-1)!].join("\n");
  };

  return {
    env: "webshop",
    abstract,
    actions,
    unseenPage,
    // A state is one of the page kinds (each lists its actions); prose or an unknown kind is not.
    isState: (state) => actions(state) !== undefined,
    isTerminal: (state) => state.startsWith("page: done"),
    profile: PROFILE,
  };
}
