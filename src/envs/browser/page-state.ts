import type { Page } from "playwright-core";

/**
 * A page as the browser env shows it: the web meta-representation of DreamGym, a compact text of
 * the page in reading order where each element the agent can act on has an id, a role and its text,
 * and the rest of the visible text stays as context lines:
 *
 *   Instruction:
 *   i need a long clip-in hair extension …
 *   [1] button "Back to Search"
 *   Page 1 (Total results: 50)
 *   [2] button "Next >"
 *   [3] link "B09QQLDJ93"
 *   Hair Extensions, Clip in …
 *   $8.99
 *
 * Element lines: `[id] role "name"`, then `checked` (radios, checkboxes), `value="…"` (a filled
 * text box) or `options: "a" | "b"` and `selected "a"` (a select). Ids count from 1 in document
 * order on each page, so the same page always reads the same: a synthetic env can write states of
 * this format and a policy's actions (`click [3]`) mean the same in both.
 */
export interface PageElement {
  id: number;
  role: string;
  name: string;
  options?: string[];
}

export interface PageState {
  /** The state text (lines as above). */
  text: string;
  elements: PageElement[];
}

/** The attribute that marks an element with its id, for actions to find it. */
export const ID_ATTRIBUTE = "data-dg-id";

/** Longest element name kept (a link around a whole card would repeat the card). */
const MAX_NAME = 200;

// Plain JavaScript run in the page (a string, so no compiler helper leaks into it).
const EXTRACT = `(({ attr, maxName }) => {
  const lines = [];
  const elements = [];
  let current = "";
  const squash = (s) => s.replace(/\\s+/g, " ").trim();
  const flush = () => { const t = squash(current); if (t) lines.push(t); current = ""; };
  for (const el of document.querySelectorAll("[" + attr + "]")) el.removeAttribute(attr);
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "TITLE", "META", "LINK", "SVG", "CANVAS", "IFRAME"]);
  const TEXT_INPUTS = new Set(["", "text", "search", "email", "password", "number", "url", "tel"]);
  const ROLES = new Set(["button", "link", "tab", "menuitem", "option", "checkbox", "radio", "textbox", "combobox", "searchbox", "switch"]);
  const roleOf = (el) => {
    const aria = (el.getAttribute("role") || "").toLowerCase();
    const tag = el.tagName;
    if (tag === "A" && el.hasAttribute("href")) return "link";
    if (tag === "BUTTON") return "button";
    if (tag === "SELECT") return "combobox";
    if (tag === "TEXTAREA") return "textbox";
    if (tag === "INPUT") {
      const type = (el.getAttribute("type") || "").toLowerCase();
      if (type === "hidden") return null;
      if (type === "submit" || type === "button" || type === "reset" || type === "image") return "button";
      if (type === "radio" || type === "checkbox") return type;
      if (TEXT_INPUTS.has(type)) return "textbox";
      return null;
    }
    if (ROLES.has(aria)) return aria === "searchbox" ? "textbox" : aria;
    return null;
  };
  const nameOf = (el, role) => {
    let name = el.getAttribute("aria-label") || "";
    if (!name && el.labels && el.labels.length) name = Array.from(el.labels).map((l) => l.textContent || "").join(" ");
    if (!name && role === "textbox") name = el.getAttribute("placeholder") || el.getAttribute("title") || "";
    if (!name && el.tagName === "INPUT") name = el.value || el.getAttribute("alt") || "";
    if (!name && el.tagName !== "SELECT") name = el.innerText || el.textContent || "";
    if (!name) name = el.getAttribute("title") || "";
    name = squash(name);
    return name.length > maxName ? name.slice(0, maxName) + "…" : name;
  };
  const visible = (el) => (el.checkVisibility ? el.checkVisibility({ checkVisibilityCSS: true }) : true);
  // Labels name their controls (which list them), so their text is not repeated as page text.
  const labelled = new Set();
  for (const c of document.querySelectorAll("input, select, textarea")) if (c.labels) for (const l of c.labels) labelled.add(l);
  const BLOCK = /^(block|flex|grid|list-item|table|table-row|table-cell|table-caption|flow-root)/;
  const walk = (node) => {
    if (node.nodeType === 3) { current += node.nodeValue; return; }
    if (node.nodeType !== 1) return;
    const el = node;
    if (SKIP.has(el.tagName)) return;
    if (el.tagName === "BR") { flush(); return; }
    const style = getComputedStyle(el);
    if (style.display === "none") return;
    if (el.tagName === "LABEL" && labelled.has(el)) return;
    const role = roleOf(el);
    if (role && visible(el) && !el.disabled) {
      flush();
      const id = elements.length + 1;
      el.setAttribute(attr, String(id));
      const name = nameOf(el, role);
      let line = "[" + id + "] " + role + " " + JSON.stringify(name);
      const element = { id, role, name };
      if ((role === "radio" || role === "checkbox") && el.checked) line += " checked";
      if (role === "textbox" && el.value) line += " value=" + JSON.stringify(squash(el.value));
      if (el.tagName === "SELECT") {
        const options = Array.from(el.options).map((o) => squash(o.textContent || ""));
        element.options = options;
        line += " options: " + options.map((o) => JSON.stringify(o)).join(" | ");
        const chosen = el.selectedOptions && el.selectedOptions[0];
        if (chosen) line += " selected " + JSON.stringify(squash(chosen.textContent || ""));
      }
      lines.push(line);
      elements.push(element);
      return;
    }
    if (style.visibility === "hidden" && !el.children.length) return;
    const block = BLOCK.test(style.display);
    if (block) flush();
    for (const child of el.childNodes) walk(child);
    if (block) flush();
  };
  if (document.body) walk(document.body);
  flush();
  return { lines, elements };
})`;

/** Reads the page's state (and marks its elements with their ids for the actions that follow). */
export async function readPageState(page: Page): Promise<PageState> {
  const { lines, elements } = (await page.evaluate(`${EXTRACT}(${JSON.stringify({ attr: ID_ATTRIBUTE, maxName: MAX_NAME })})`)) as {
    lines: string[];
    elements: PageElement[];
  };
  return { text: lines.join("\n"), elements };
}

const ELEMENT_LINE = /^\[(\d+)\] ([a-z]+) ("(?:[^"\\]|\\.)*")(.*)$/;

/** The elements a state text lists (what the synthetic side reads, without a page). */
export function parseElements(state: string): PageElement[] {
  const out: PageElement[] = [];
  for (const line of state.split("\n")) {
    const m = ELEMENT_LINE.exec(line);
    if (!m) continue;
    let name: string;
    try {
      name = JSON.parse(m[3]) as string;
    } catch {
      continue;
    }
    const el: PageElement = { id: Number(m[1]), role: m[2], name };
    const opts = /^ options: (.*?)(?: selected "(?:[^"\\]|\\.)*")?$/.exec(m[4]);
    if (opts) el.options = [...opts[1].matchAll(/"(?:[^"\\]|\\.)*"/g)].map((q) => JSON.parse(q[0]) as string);
    out.push(el);
  }
  return out;
}
