/**
 * A PDDL reader and evaluator for ALFWorld's domain and problems: typed objects, predicates,
 * actions whose preconditions use and/or/not/=/exists/forall/imply and whose effects use
 * and/not/forall/when (numeric `increase` of action costs is read and ignored). Facts are strings
 * "pred arg1 arg2" in a Set.
 */

export type SExpr = string | SExpr[];

/**
 * Tokenises and parses PDDL text into nested lists, lower-cased, `;` comments dropped — as Fast
 * Downward reads it. A comma stays part of its token, so ALFWorld's `(?l - location, ?r - receptacle)`
 * gives ?l the type "location," that no object has, exactly as in the reference (where that
 * disjunct of examineObject therefore never holds).
 */
export function parseSExpr(text: string, source = "PDDL"): SExpr[] {
  const tokens = text
    .replace(/;[^\n]*/g, " ")
    .replace(/\(/g, " ( ")
    .replace(/\)/g, " ) ")
    .split(/\s+/)
    .filter(Boolean);
  let i = 0;
  const read = (): SExpr => {
    const t = tokens[i++];
    if (t === "(") {
      const list: SExpr[] = [];
      while (tokens[i] !== ")") {
        if (i >= tokens.length) throw new Error(`${source}: unbalanced parentheses (a list is never closed)`);
        list.push(read());
      }
      i++;
      return list;
    }
    if (t === ")") throw new Error(`${source}: unexpected ")" at token ${i}`);
    return t.toLowerCase();
  };
  const out: SExpr[] = [];
  while (i < tokens.length) out.push(read());
  return out;
}

export interface TypedVar {
  name: string;
  type: string;
}

export type Formula =
  | { kind: "true" }
  | { kind: "atom"; pred: string; args: string[] }
  | { kind: "eq"; a: string; b: string }
  | { kind: "not"; arg: Formula }
  | { kind: "and" | "or"; args: Formula[] }
  | { kind: "imply"; if: Formula; then: Formula }
  | { kind: "exists" | "forall"; vars: TypedVar[]; body: Formula };

export type Effect =
  | { kind: "add" | "del"; pred: string; args: string[] }
  | { kind: "and"; args: Effect[] }
  | { kind: "forall"; vars: TypedVar[]; body: Effect }
  | { kind: "when"; cond: Formula; body: Effect }
  | { kind: "none" };

export interface ActionSchema {
  name: string;
  params: TypedVar[];
  precondition: Formula;
  effect: Effect;
}

export interface Domain {
  name: string;
  types: Map<string, string>; // type → parent
  predicates: Map<string, TypedVar[]>;
  actions: Map<string, ActionSchema>;
}

export interface Problem {
  name: string;
  objects: TypedVar[];
  init: string[];
  goal: Formula;
}

const isList = (x: SExpr): x is SExpr[] => Array.isArray(x);
const str = (x: SExpr, what: string): string => {
  if (isList(x)) throw new Error(`expected ${what}, got a list`);
  return x;
};

/** `?a ?b - type ?c - other` → typed variables (untyped ones are "object"). */
function typedList(items: SExpr[]): TypedVar[] {
  const out: TypedVar[] = [];
  let pending: string[] = [];
  for (let i = 0; i < items.length; i++) {
    const t = str(items[i], "a name");
    if (t === "-") {
      const type = str(items[++i], "a type");
      for (const n of pending) out.push({ name: n, type });
      pending = [];
    } else pending.push(t);
  }
  for (const n of pending) out.push({ name: n, type: "object" });
  return out;
}

export function parseFormula(x: SExpr): Formula {
  if (!isList(x)) throw new Error(`expected a formula, got "${x}"`);
  if (x.length === 0) return { kind: "true" };
  const head = str(x[0], "a formula head");
  switch (head) {
    case "and":
    case "or":
      return { kind: head, args: x.slice(1).map(parseFormula) };
    case "not":
      return { kind: "not", arg: parseFormula(x[1]) };
    case "imply":
      return { kind: "imply", if: parseFormula(x[1]), then: parseFormula(x[2]) };
    case "exists":
    case "forall":
      return { kind: head, vars: typedList(x[1] as SExpr[]), body: parseFormula(x[2]) };
    case "=":
      return { kind: "eq", a: str(x[1], "a term"), b: str(x[2], "a term") };
    default:
      return { kind: "atom", pred: head, args: x.slice(1).map((a) => str(a, "a term")) };
  }
}

export function parseEffect(x: SExpr): Effect {
  if (!isList(x)) throw new Error(`expected an effect, got "${x}"`);
  if (x.length === 0) return { kind: "none" };
  const head = str(x[0], "an effect head");
  switch (head) {
    case "and":
      return { kind: "and", args: x.slice(1).map(parseEffect) };
    case "not": {
      const a = x[1] as SExpr[];
      return { kind: "del", pred: str(a[0], "a predicate"), args: a.slice(1).map((t) => str(t, "a term")) };
    }
    case "forall":
      return { kind: "forall", vars: typedList(x[1] as SExpr[]), body: parseEffect(x[2]) };
    case "when":
      return { kind: "when", cond: parseFormula(x[1]), body: parseEffect(x[2]) };
    case "increase":
    case "decrease":
    case "assign":
      return { kind: "none" }; // action costs: not part of the text game
    default:
      return { kind: "add", pred: head, args: x.slice(1).map((t) => str(t, "a term")) };
  }
}

function section(def: SExpr[], key: string): SExpr[] | undefined {
  return def.find((s): s is SExpr[] => isList(s) && s[0] === key);
}

export function parseDomain(text: string, source = "domain"): Domain {
  const [def] = parseSExpr(text, source);
  if (!isList(def) || def[0] !== "define") throw new Error(`${source}: not a PDDL (define ...) form`);
  const name = (def[1] as SExpr[])[1] as string;
  // Only an explicit "- parent" makes a subtype: ALFWorld's "object" is a type of its own, not the root.
  const types = new Map<string, string>();
  const typeItems = section(def, ":types")?.slice(1) ?? [];
  const explicit = typeItems.some((t) => t === "-");
  for (const t of typedList(typeItems)) if (explicit && t.type !== "object") types.set(t.name, t.type);
  const predicates = new Map<string, TypedVar[]>();
  for (const p of section(def, ":predicates")?.slice(1) ?? []) {
    const list = p as SExpr[];
    predicates.set(str(list[0], "a predicate"), typedList(list.slice(1)));
  }
  const actions = new Map<string, ActionSchema>();
  for (const s of def) {
    if (!isList(s) || s[0] !== ":action") continue;
    const actionName = str(s[1], "an action name");
    const field = (k: string) => {
      const i = s.indexOf(k);
      return i >= 0 ? s[i + 1] : undefined;
    };
    try {
      actions.set(actionName, {
        name: actionName,
        params: typedList((field(":parameters") as SExpr[]) ?? []),
        precondition: field(":precondition") !== undefined ? parseFormula(field(":precondition")!) : { kind: "true" },
        effect: field(":effect") !== undefined ? parseEffect(field(":effect")!) : { kind: "none" },
      });
    } catch (e) {
      throw new Error(`${source}: action ${actionName}: ${(e as Error).message}`);
    }
  }
  return { name, types, predicates, actions };
}

export function parseProblem(text: string, source = "problem"): Problem {
  const [def] = parseSExpr(text, source);
  if (!isList(def) || def[0] !== "define") throw new Error(`${source}: not a PDDL (define ...) form`);
  const name = (def[1] as SExpr[])[1] as string;
  const objects = typedList(section(def, ":objects")?.slice(1) ?? []);
  const init = (section(def, ":init")?.slice(1) ?? [])
    .filter((f) => isList(f) && f[0] !== "=") // numeric fluents (distances) are not facts
    .map((f) => (f as SExpr[]).map((t) => str(t, "a term")).join(" "));
  const goalExpr = section(def, ":goal");
  if (!goalExpr) throw new Error(`${source}: no :goal`);
  return { name, objects, init, goal: parseFormula(goalExpr[1]) };
}

/** Objects by type, counting subtypes (`Domain.types` maps a type to its parent). */
export function objectsByType(domain: Domain, objects: readonly TypedVar[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const o of objects) {
    const seen = new Set<string>();
    for (let t: string | undefined = o.type; t !== undefined && !seen.has(t); t = domain.types.get(t)) {
      seen.add(t);
      const list = out.get(t) ?? [];
      list.push(o.name);
      out.set(t, list);
    }
  }
  return out;
}

export type Bindings = ReadonlyMap<string, string>;

const ground = (args: readonly string[], b: Bindings) => args.map((a) => (a.startsWith("?") ? (b.get(a) ?? a) : a));

/** Evaluates a formula in a state (a set of facts) under variable bindings. */
export function holds(f: Formula, facts: ReadonlySet<string>, b: Bindings, byType: ReadonlyMap<string, string[]>): boolean {
  switch (f.kind) {
    case "true":
      return true;
    case "atom":
      return facts.has([f.pred, ...ground(f.args, b)].join(" "));
    case "eq": {
      const [x, y] = ground([f.a, f.b], b);
      return x === y;
    }
    case "not":
      return !holds(f.arg, facts, b, byType);
    case "and":
      return f.args.every((a) => holds(a, facts, b, byType));
    case "or":
      return f.args.some((a) => holds(a, facts, b, byType));
    case "imply":
      return !holds(f.if, facts, b, byType) || holds(f.then, facts, b, byType);
    case "exists":
    case "forall": {
      const want = f.kind === "exists";
      let found = !want;
      forEachBinding(f.vars, b, byType, (nb) => {
        if (holds(f.body, facts, nb, byType) === want) {
          found = want;
          return false;
        }
        return true;
      });
      return found;
    }
  }
}

/** Calls `fn` with each extension of `b` over `vars` (by type) until it returns false. */
export function forEachBinding(vars: readonly TypedVar[], b: Bindings, byType: ReadonlyMap<string, string[]>, fn: (b: Bindings) => boolean): boolean {
  if (vars.length === 0) return fn(b);
  const [v, ...rest] = vars;
  for (const o of byType.get(v.type) ?? []) {
    const nb = new Map(b);
    nb.set(v.name, o);
    if (!forEachBinding(rest, nb, byType, fn)) return false;
  }
  return true;
}

/**
 * The facts an effect adds and deletes; conditions (`when`) are evaluated in the state before the
 * action.
 */
export function effectLists(e: Effect, facts: ReadonlySet<string>, b: Bindings, byType: ReadonlyMap<string, string[]>): { adds: string[]; dels: string[] } {
  const adds: string[] = [];
  const dels: string[] = [];
  const collect = (x: Effect, bb: Bindings) => {
    switch (x.kind) {
      case "add":
        adds.push([x.pred, ...ground(x.args, bb)].join(" "));
        break;
      case "del":
        dels.push([x.pred, ...ground(x.args, bb)].join(" "));
        break;
      case "and":
        for (const a of x.args) collect(a, bb);
        break;
      case "forall":
        forEachBinding(x.vars, bb, byType, (nb) => {
          collect(x.body, nb);
          return true;
        });
        break;
      case "when":
        if (holds(x.cond, facts, bb, byType)) collect(x.body, bb);
        break;
      case "none":
        break;
    }
  };
  collect(e, b);
  return { adds, dels };
}

/** Applies an effect (deletes before adds, PDDL semantics); returns the new state. */
export function applyEffect(e: Effect, facts: ReadonlySet<string>, b: Bindings, byType: ReadonlyMap<string, string[]>): Set<string> {
  const { adds, dels } = effectLists(e, facts, b, byType);
  const next = new Set(facts);
  for (const d of dels) next.delete(d);
  for (const a of adds) next.add(a);
  return next;
}
