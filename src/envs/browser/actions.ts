import { FREE_TEXT_SLOT } from "../../core/index.ts";
import type { PageElement } from "./page-state.ts";

/**
 * The browser env's actions, by element id as the state lists them (WebArena's grammar, reduced):
 *
 *   click [id]                 a button, link, radio or checkbox
 *   type [id] [text]           replaces a text box's content, then presses Enter
 *   type [id] [text] [0]       … without pressing Enter
 *   select [id] [option]       picks an option of a select by its text
 *   go_back                    the browser's back button
 *   stop [answer]              ends the episode (sites that judge an answer, e.g. WebArena)
 */
export type BrowserAction =
  | { kind: "click"; id: number }
  | { kind: "type"; id: number; text: string; enter: boolean }
  | { kind: "select"; id: number; option: string }
  | { kind: "go_back" }
  | { kind: "stop"; answer: string };

const CLICKABLE = new Set(["button", "link", "radio", "checkbox", "tab", "menuitem", "option", "switch"]);

/** Parses an action; null when it is not of the grammar. Spaces around brackets are optional. */
export function parseBrowserAction(action: string): BrowserAction | null {
  const a = action.trim();
  if (/^go_back$/i.test(a)) return { kind: "go_back" };
  let m = /^click\s*\[(\d+)\]$/i.exec(a);
  if (m) return { kind: "click", id: Number(m[1]) };
  // The text is everything up to the last "]" (it may hold brackets itself), less a trailing [0]/[1] Enter flag.
  m = /^type\s*\[(\d+)\]\s*\[([\s\S]*)\]$/i.exec(a);
  if (m) {
    const flag = /^([\s\S]*)\]\s*\[([01])$/.exec(m[2]);
    return flag ? { kind: "type", id: Number(m[1]), text: flag[1], enter: flag[2] === "1" } : { kind: "type", id: Number(m[1]), text: m[2], enter: true };
  }
  m = /^select\s*\[(\d+)\]\s*\[([\s\S]*)\]$/i.exec(a);
  if (m) return { kind: "select", id: Number(m[1]), option: m[2] };
  m = /^stop\s*(?:\[([\s\S]*)\])?$/i.exec(a);
  if (m) return { kind: "stop", answer: m[1] ?? "" };
  return null;
}

/** Whether the action fits the element it names (clicking a text box or typing into a button does not). */
export function fitsElement(action: BrowserAction, elements: readonly PageElement[]): boolean {
  if (action.kind === "go_back" || action.kind === "stop") return true;
  const el = elements.find((e) => e.id === action.id);
  if (!el) return false;
  switch (action.kind) {
    case "click":
      return CLICKABLE.has(el.role);
    case "type":
      return el.role === "textbox";
    case "select":
      return el.role === "combobox" && (el.options === undefined || el.options.includes(action.option));
  }
}

/**
 * The actions a state offers, in element order: a click per clickable, a type per text box (its text
 * the free-text slot), a select per option of a select; then go_back, and stop when the site takes it.
 */
export function listActions(elements: readonly PageElement[], opts: { stop?: boolean } = {}): string[] {
  const out: string[] = [];
  for (const el of elements) {
    if (CLICKABLE.has(el.role)) out.push(`click [${el.id}]`);
    else if (el.role === "textbox") out.push(`type [${el.id}] [${FREE_TEXT_SLOT}]`);
    else if (el.role === "combobox") for (const o of el.options ?? []) out.push(`select [${el.id}] [${o}]`);
  }
  out.push("go_back");
  if (opts.stop) out.push(`stop [${FREE_TEXT_SLOT}]`);
  return out;
}
