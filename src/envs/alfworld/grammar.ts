import { FactBase, solve, type QueryAtom } from "./facts.ts";

/**
 * TextWorld's twl2 grammar, as ALFWorld's games use it: one table of rules, each a list of
 * alternatives `{condition?, rhs}`; the first alternative whose condition has a solution is used.
 * An rhs mixes literal text, `#rule#`, `{expr}` and lists `[{item | query}]` (joined with
 * `list_separator` / `list_last_separator`, `list_empty` when there is none). No randomness.
 */
export interface Alternative {
  condition?: QueryAtom[];
  rhs: string;
}

export interface ActionText {
  template: string;
  feedback: string;
}

export interface Grammar {
  rules: Map<string, Alternative[]>;
  /** By lower-cased PDDL action name. */
  actions: Map<string, ActionText>;
}

/** `holdsany(a:agent) & not_opened(r:receptacle)` → atoms over variable names. */
export function parseQuery(text: string): QueryAtom[] {
  return text.split("&").map((part) => {
    const m = /^\s*([\w]+)\((.*)\)\s*$/.exec(part);
    if (!m) throw new Error(`bad grammar condition "${text}"`);
    return { pred: m[1].toLowerCase(), vars: m[2].split(",").map((v) => v.split(":")[0].trim()) };
  });
}

function tableOf(json: string, source: string): Map<string, Alternative[]> {
  let raw: Record<string, { condition?: string; rhs: string }[]>;
  try {
    raw = JSON.parse(json);
  } catch (e) {
    throw new Error(`${source}: a grammar table is not valid JSON (${(e as Error).message})`);
  }
  const out = new Map<string, Alternative[]>();
  for (const [name, alts] of Object.entries(raw)) {
    out.set(
      name,
      alts.map((a) => ({ rhs: a.rhs, ...(a.condition ? { condition: parseQuery(a.condition) } : {}) })),
    );
  }
  return out;
}

export function parseGrammar(text: string, source = "grammar"): Grammar {
  const rules = new Map<string, Alternative[]>();
  const actions = new Map<string, ActionText>();
  const top = /^grammar :: """([\s\S]*?)""";/m.exec(text);
  if (!top) throw new Error(`${source}: no top-level grammar table`);
  for (const [k, v] of tableOf(top[1], source)) rules.set(k, v);
  const blocks = text.matchAll(/^action (\w+) \{([\s\S]*?)^\}/gm);
  for (const [, name, body] of blocks) {
    const template = /template :: "((?:[^"\\]|\\.)*)";/.exec(body)?.[1];
    const feedback = /feedback :: "((?:[^"\\]|\\.)*)";/.exec(body)?.[1];
    if (template === undefined || feedback === undefined) throw new Error(`${source}: action ${name} lacks a template or feedback`);
    actions.set(name.toLowerCase(), { template, feedback });
    const extra = /grammar :: """([\s\S]*?)""";/.exec(body);
    if (extra) {
      // Lines starting with "#" are comments in action grammar blocks.
      const json = extra[1]
        .split("\n")
        .filter((l) => !l.trim().startsWith("#"))
        .join("\n");
      for (const [k, v] of tableOf(json, `${source} (action ${name})`)) rules.set(k, v);
    }
  }
  return { rules, actions };
}

/** What the text generator knows of an entity. */
export interface EntityNames {
  name(id: string): string;
}

type Part =
  | { kind: "text"; text: string }
  | { kind: "rule"; name: string }
  | { kind: "expr"; expr: string; query?: QueryAtom[] }
  | { kind: "list"; items: Part[] };

const parsed = new Map<string, Part[]>();

/** Splits an rhs into parts (memoised: the same few strings are rendered over and over). */
function parseRhs(rhs: string): Part[] {
  const hit = parsed.get(rhs);
  if (hit) return hit;
  const parts: Part[] = [];
  let i = 0;
  let text = "";
  const flush = () => {
    if (text) parts.push({ kind: "text", text });
    text = "";
  };
  const readBraced = (): Part => {
    // At "{": up to the matching "}" (an item may hold a #rule#, which holds no braces).
    const end = rhs.indexOf("}", i);
    const inner = rhs.slice(i + 1, end);
    i = end + 1;
    const bar = inner.indexOf("|");
    const expr = (bar >= 0 ? inner.slice(0, bar) : inner).trim();
    return bar >= 0 ? { kind: "expr", expr, query: parseQuery(inner.slice(bar + 1)) } : { kind: "expr", expr };
  };
  while (i < rhs.length) {
    const c = rhs[i];
    if (c === "#") {
      const end = rhs.indexOf("#", i + 1);
      flush();
      parts.push({ kind: "rule", name: rhs.slice(i + 1, end) });
      i = end + 1;
    } else if (c === "{") {
      flush();
      parts.push(readBraced());
    } else if (c === "[") {
      flush();
      i++;
      const items: Part[] = [];
      while (i < rhs.length && rhs[i] !== "]") {
        if (rhs[i] === "{") items.push(readBraced());
        else i++;
      }
      i++;
      parts.push({ kind: "list", items });
    } else {
      text += c;
      i++;
    }
  }
  flush();
  parsed.set(rhs, parts);
  return parts;
}

/** Expands text of the grammar against a state with variable bindings (variable → entity id). */
export class TextGenerator {
  constructor(
    private readonly grammar: Grammar,
    private readonly names: EntityNames,
  ) {}

  expand(rhs: string, facts: FactBase, bindings: ReadonlyMap<string, string>): string {
    return parseRhs(rhs)
      .map((p) => this.part(p, facts, bindings))
      .join("");
  }

  rule(name: string, facts: FactBase, bindings: ReadonlyMap<string, string>): string {
    const alts = this.grammar.rules.get(name);
    if (!alts) throw new Error(`grammar has no rule "${name}"`);
    for (const alt of alts) {
      if (alt.condition) {
        let found = false;
        solve(facts, alt.condition, bindings, () => {
          found = true;
          return false;
        });
        if (!found) continue;
      }
      return this.expand(alt.rhs, facts, bindings);
    }
    return "";
  }

  private part(p: Part, facts: FactBase, b: ReadonlyMap<string, string>): string {
    switch (p.kind) {
      case "text":
        return p.text;
      case "rule":
        return this.rule(p.name, facts, b);
      case "expr":
        return p.query ? this.items([p], facts, b).join("") : this.value(p.expr, facts, b);
      case "list": {
        const items = this.items(p.items, facts, b);
        if (items.length === 0) return this.rule("list_empty", facts, b);
        if (items.length === 1) return items[0];
        const sep = this.rule("list_separator", facts, b);
        const last = this.rule("list_last_separator", facts, b);
        return items.slice(0, -1).join(sep) + last + items[items.length - 1];
      }
    }
  }

  private items(parts: Part[], facts: FactBase, b: ReadonlyMap<string, string>): string[] {
    const out: string[] = [];
    for (const p of parts) {
      if (p.kind !== "expr") continue;
      if (!p.query) {
        out.push(this.value(p.expr, facts, b));
        continue;
      }
      solve(facts, p.query, b, (nb) => {
        out.push(this.value(p.expr, facts, nb));
      });
    }
    return out;
  }

  /** `x.name`, `x.indefinite`, `x.name or x.id`, `x.indefinite + ' ' + x.name`, or `#rule#`. */
  private value(expr: string, facts: FactBase, b: ReadonlyMap<string, string>): string {
    if (expr.startsWith("#") && expr.endsWith("#")) return this.rule(expr.slice(1, -1), facts, b);
    return expr
      .split("+")
      .map((term) => {
        const t = term.trim();
        const quoted = /^'(.*)'$/.exec(t);
        if (quoted) return quoted[1];
        const [v, field] = t.split(" or ")[0].split(".");
        const id = b.get(v);
        if (id === undefined) throw new Error(`grammar expression "${expr}": ${v} is not bound`);
        if (field === "indefinite") return "a";
        if (field === "id") return id;
        return this.names.name(id);
      })
      .join("");
  }
}
