/**
 * Web page states (the browser env's element lines, `[16] button "Buy Now"`, actions by element id)
 * read as the bracketed text states the text features and experience models were written for
 * (`page: <kind>`, `instruction: …`, clickables in brackets by their names, `click[buy now]`).
 *
 * An id says nothing by itself (`click [7]` is a product on one page and a size on the next), so a
 * policy's features and a model's matching of actions need the element it names: its role, name,
 * the text around it. The view is built from the lines alone, for any site in this format:
 *
 * - a run of radios or checkboxes after a text line is an option group: `size: [small] [medium]`;
 *   a select is a group of its options;
 * - a link followed by text lines (until the next element) is an item: `[b09qqp3356] title | $9.99`;
 * - other clickables are buttons, a run of them on one line: `[back to search] [next >]`;
 * - a text box is a search: `type [1] [q]` reads `search[q]` (with more than one box, `type[name: q]`);
 * - the page's kind, from what it offers: `search` (a text box), `results` (items), `item` (option
 *   groups or a buy/add-to-cart button), else `page`.
 *
 * Names are lowercased; where two elements share a name the view's action names the last (as
 * WebShop's click[value] sets the last option group holding it).
 */
export interface WebView {
  /** The state as bracketed text. */
  text: string;
  kind: string;
  /** The labels of the checked choices (radios, checkboxes) and selected options: what was chosen on the page. */
  checked: string[];
  /** An action on the page in the view's words (`click [7]` → `click[b09qqp3356]`); other actions unchanged. */
  action(action: string): string;
}

interface El {
  id: number;
  role: string;
  name: string;
  options?: string[];
}

const ELEMENT_LINE = /^\[(\d+)\] ([a-z]+) ("(?:[^"\\]|\\.)*")(.*)$/;
const CHOICE = new Set(["radio", "checkbox"]);
const BUY = /\b(buy|add to cart|purchase|checkout|place order)\b/i;

function parseLine(line: string): El | null {
  const m = ELEMENT_LINE.exec(line);
  if (!m) return null;
  let name: string;
  try {
    name = JSON.parse(m[3]) as string;
  } catch {
    return null;
  }
  const el: El = { id: Number(m[1]), role: m[2], name };
  const opts = /^ options: (.*?)(?: selected "(?:[^"\\]|\\.)*")?$/.exec(m[4]);
  if (opts) el.options = [...opts[1].matchAll(/"(?:[^"\\]|\\.)*"/g)].map((q) => JSON.parse(q[0]) as string);
  return el;
}

// A label must not close its bracket early: "]" in a name reads as ")".
const label = (name: string) => name.toLowerCase().replace(/\s+/g, " ").replace(/\]/g, ")").trim();

/** Whether a state is in the element-line format (at least one element line). Cheap: no full parse. */
export function isWebState(state: string): boolean {
  return /(^|\n)\[\d+\] [a-z]+ "/.test(state);
}

const cache = new Map<string, WebView | null>();

/** The view of a web page state; null when the state lists no elements (not this format, or a page with nothing to do). */
export function webView(state: string): WebView | null {
  if (!isWebState(state)) return null;
  const hit = cache.get(state);
  if (hit !== undefined) return hit;
  const view = build(state);
  if (cache.size > 4096) cache.clear();
  cache.set(state, view);
  return view;
}

function build(state: string): WebView | null {
  const lines = state.split("\n");
  const parsed = lines.map(parseLine);
  const byId = new Map<number, string>(); // id → the view's action for a click/select on it
  const textboxes = parsed.filter((e) => e?.role === "textbox").length;
  const boxName = new Map<number, string>();
  const checked: string[] = [];
  let instruction: string | undefined;
  const out: string[] = [];
  let buttons: string[] = [];
  let items = 0,
    groups = 0,
    buy = false,
    search = false;
  const flushButtons = () => {
    if (buttons.length > 0) out.push(buttons.join(" "));
    buttons = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const el = parsed[i];
    const line = lines[i];
    if (!el) {
      if (line === "Instruction:" && instruction === undefined && i + 1 < lines.length && !parsed[i + 1]) {
        instruction = lines[++i];
        continue;
      }
      // A text line followed by choices names their group.
      if (parsed[i + 1] && CHOICE.has(parsed[i + 1]!.role)) {
        flushButtons();
        const values: string[] = [];
        let j = i + 1;
        for (; j < lines.length && parsed[j] && CHOICE.has(parsed[j]!.role); j++) {
          values.push(`[${label(parsed[j]!.name)}]`);
          if (/ checked$/.test(lines[j])) checked.push(label(parsed[j]!.name));
          byId.set(parsed[j]!.id, `click[${label(parsed[j]!.name)}]`);
        }
        out.push(`${label(line).replace(/:$/, "")}: ${values.join(" ")}`);
        groups++;
        i = j - 1;
        continue;
      }
      if (line.trim() !== "") {
        flushButtons();
        out.push(line);
      }
      continue;
    }
    const name = label(el.name);
    if (el.role === "textbox") {
      flushButtons();
      search = true;
      boxName.set(el.id, name);
      out.push(`[${name || "text box"}]`);
      continue;
    }
    if (el.role === "combobox") {
      flushButtons();
      const opts = (el.options ?? []).map(label);
      out.push(`${name || "select"}: ${opts.map((o) => `[${o}]`).join(" ")}`);
      const sel = / selected ("(?:[^"\\]|\\.)*")$/.exec(lines[i]);
      if (sel) checked.push(label(JSON.parse(sel[1]) as string));
      groups++;
      continue;
    }
    byId.set(el.id, `click[${name}]`);
    if (CHOICE.has(el.role)) {
      // A choice with no group line before it.
      flushButtons();
      out.push(`options: [${name}]`);
      if (/ checked$/.test(line)) checked.push(name);
      groups++;
      continue;
    }
    // A link with text lines after it describes an item: its line holds them.
    const after: string[] = [];
    if (el.role === "link") for (let j = i + 1; j < lines.length && !parsed[j] && lines[j] !== ""; j++) after.push(lines[j]);
    if (after.length > 0) {
      flushButtons();
      out.push(`[${name}] ${after.join(" | ")}`);
      items++;
      i += after.length;
      continue;
    }
    if (BUY.test(el.name)) buy = true;
    buttons.push(`[${name}]`);
  }
  flushButtons();
  const kind = search ? "search" : items > 0 ? "results" : groups > 0 || buy ? "item" : "page";
  const head = [`page: ${kind}`, `instruction: ${instruction ?? ""}`];
  const action = (a: string): string => {
    const t = a.trim();
    let m = /^click\s*\[(\d+)\]$/i.exec(t);
    if (m) return byId.get(Number(m[1])) ?? `click[#${m[1]}]`;
    m = /^type\s*\[(\d+)\]\s*\[([\s\S]*)\]$/i.exec(t);
    if (m) {
      const text = m[2].replace(/\]\s*\[[01]$/, "");
      return textboxes <= 1 ? `search[${text}]` : `type[${boxName.get(Number(m[1])) ?? `#${m[1]}`}: ${text}]`;
    }
    m = /^select\s*\[(\d+)\]\s*\[([\s\S]*)\]$/i.exec(t);
    if (m) return `click[${label(m[2])}]`;
    return t === "go_back" ? "click[go back]" : t;
  };
  return { text: [...head, ...out].join("\n"), kind, checked, action };
}

/** An action in the view's words where its state is a web page, else as it is (text states). */
export function viewAction(state: string, action: string): string {
  return webView(state)?.action(action) ?? action;
}

/**
 * The page after clicking a radio or checkbox of a web page state, as a page that does nothing else
 * on such a click shows it: the radio checked and the others of its group (its run of radios)
 * unchecked; a checkbox toggled. Null when the action is no click on a choice of this state.
 */
export function clickChoice(state: string, action: string): string | null {
  const m = /^click\s*\[(\d+)\]$/i.exec(action.trim());
  if (!m) return null;
  const lines = state.split("\n");
  const parsed = lines.map(parseLine);
  const at = parsed.findIndex((e) => e?.id === Number(m[1]));
  const el = at >= 0 ? parsed[at]! : undefined;
  if (!el || !CHOICE.has(el.role)) return null;
  const mark = (i: number, on: boolean) => {
    const bare = lines[i].replace(/ checked$/, "");
    lines[i] = on ? `${bare} checked` : bare;
  };
  if (el.role === "checkbox") {
    mark(at, !/ checked$/.test(lines[at]));
    return lines.join("\n");
  }
  let start = at,
    end = at;
  while (start > 0 && parsed[start - 1]?.role === "radio") start--;
  while (end + 1 < lines.length && parsed[end + 1]?.role === "radio") end++;
  for (let i = start; i <= end; i++) mark(i, i === at);
  return lines.join("\n");
}
