import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { DataError, InvalidConfigError } from "../../core/index.ts";
import { FactBase, solve, type QueryAtom } from "./facts.ts";
import { parseGrammar, TextGenerator, type Grammar } from "./grammar.ts";
import { displayNames } from "./names.ts";
import {
  effectLists,
  forEachBinding,
  holds,
  objectsByType,
  parseDomain,
  parseProblem,
  type ActionSchema,
  type Bindings,
  type Domain,
  type Effect,
  type Formula,
  type Problem,
} from "./pddl.ts";

export const ALFWORLD_SPLITS = ["valid_unseen", "valid_seen", "valid_train"] as const;
export type AlfWorldSplit = (typeof ALFWORLD_SPLITS)[number];
export const TASK_TYPES = [
  "pick_and_place_simple",
  "look_at_obj_in_light",
  "pick_clean_then_place_in_recep",
  "pick_heat_then_place_in_recep",
  "pick_cool_then_place_in_recep",
  "pick_two_obj_and_place",
] as const;

export interface GameEntry {
  /** Path under the alfworld data folder, e.g. `games/valid_unseen/<task>/<trial>/game.tw-pddl`. */
  game: string;
  split: AlfWorldSplit;
  taskType: string;
  /** "Your task is to: …" */
  goal: string;
  /** ALFRED's task parameters (object_target, parent_target, toggle_target, …). */
  params: Record<string, string | boolean>;
}

/**
 * The games ALFWorld's loader keeps (`collect_game_files`): a traj_data.json beside the game, no
 * "movable" or "Sliced" in the path, one of the six task types, and `"solvable": true`.
 */
export function loaderKeeps(dir: string, game: { solvable?: unknown }, taskType: string): boolean {
  return (
    existsSync(join(dir, "traj_data.json")) && !/movable|Sliced/.test(dir) && (TASK_TYPES as readonly string[]).includes(taskType) && game.solvable === true
  );
}

const indexCache = new Map<string, GameEntry[]>();

/** The loader's games of every split, from the data pack's index.json (checked against the rule in a test). */
export function alfworldGames(root: string): GameEntry[] {
  const hit = indexCache.get(root);
  if (hit) return hit;
  const file = join(root, "index.json");
  if (!existsSync(file)) throw new DataError(`ALFWorld index ${file} is missing (the alfworld data pack lists its games there)`, { file });
  const index = JSON.parse(readFileSync(file, "utf8")) as {
    games: {
      game: string;
      split: AlfWorldSplit;
      task_type: string;
      goal: string;
      in_alfworld_loader_set: boolean;
      pddl_params: Record<string, string | boolean>;
    }[];
  };
  const games = index.games
    .filter((g) => g.in_alfworld_loader_set)
    .map((g) => ({ game: g.game, split: g.split, taskType: g.task_type, goal: g.goal, params: g.pddl_params }));
  indexCache.set(root, games);
  return games;
}

interface GroundAction {
  schema: ActionSchema;
  bindings: Bindings;
  command: string;
}

const domainCache = new Map<string, Domain>();

/** One game: its logic, grammar and names, and the rules to step its state. */
export class Game {
  readonly domain: Domain;
  readonly problem: Problem;
  readonly grammar: Grammar;
  readonly names: Map<string, string>;
  readonly byType: Map<string, string[]>;
  private readonly typeSets: Map<string, Set<string>>;
  readonly text: TextGenerator;
  /** Per action, one list of positive atoms per disjunct of its precondition: they bind its parameters by lookup. */
  private readonly joins = new Map<string, QueryAtom[][]>();
  /** Actions whose precondition is exactly their join (a conjunction of atoms): no re-check needed. */
  private readonly exactJoin = new Set<string>();
  /** Actions whose effects may cancel out (add and delete one predicate). */
  private readonly mayCancel = new Set<string>();
  /** Predicates no action changes: a command whose text reads only these is rendered once. */
  private readonly staticPreds: Set<string>;
  private readonly commandCache = new Map<string, string>();

  constructor(
    readonly file: string,
    json: { pddl_domain?: unknown; pddl_problem?: unknown; grammar?: unknown },
  ) {
    for (const k of ["pddl_domain", "pddl_problem", "grammar"] as const) {
      if (typeof json[k] !== "string") throw new DataError(`${file}: "${k}" is missing or not a string`, { file });
    }
    try {
      const domainText = json.pddl_domain as string;
      this.domain = domainCache.get(domainText) ?? parseDomain(domainText, `${file} (pddl_domain)`);
      domainCache.set(domainText, this.domain);
      this.problem = parseProblem(json.pddl_problem as string, `${file} (pddl_problem)`);
      this.grammar = parseGrammar(json.grammar as string, `${file} (grammar)`);
    } catch (e) {
      throw DataError.isInstance(e) ? e : new DataError((e as Error).message, { file });
    }
    this.byType = objectsByType(this.domain, this.problem.objects);
    this.typeSets = new Map([...this.byType].map(([t, objs]) => [t, new Set(objs)]));
    this.names = displayNames(this.problem.init.flatMap((f) => f.split(" ").slice(1)));
    this.text = new TextGenerator(this.grammar, { name: (id) => this.names.get(id) ?? id });
    for (const [name, text] of this.grammar.actions) {
      for (const rule of text.feedback.matchAll(/#([^#]+)#/g)) {
        if (!this.grammar.rules.has(rule[1]))
          throw new DataError(`${file}: the grammar's action ${name} uses the rule "${rule[1]}", which it does not define`, { file });
      }
    }
    if (!this.problem.init.some((f) => f.startsWith("atlocation "))) throw new DataError(`${file}: the problem places no agent (no atLocation fact)`, { file });
    for (const a of this.domain.actions.values()) {
      const disjuncts = a.precondition.kind === "or" ? a.precondition.args : [a.precondition];
      this.joins.set(
        a.name,
        disjuncts.map((d) => joinAtoms(d, new Set(a.params.map((p) => p.name)))),
      );
      const p = a.precondition;
      if (p.kind === "atom" || (p.kind === "and" && p.args.every((x) => x.kind === "atom"))) this.exactJoin.add(a.name);
      const adds = new Set<string>();
      const dels = new Set<string>();
      const scan = (e: Effect) => {
        if (e.kind === "add") adds.add(e.pred);
        else if (e.kind === "del") dels.add(e.pred);
        else if (e.kind === "and") e.args.forEach(scan);
        else if (e.kind === "forall" || e.kind === "when") scan(e.body);
      };
      scan(a.effect);
      if ([...adds].some((x) => dels.has(x))) this.mayCancel.add(a.name);
    }
    const changed = new Set<string>();
    const walk = (e: Effect) => {
      if (e.kind === "add" || e.kind === "del") changed.add(e.pred);
      else if (e.kind === "and") e.args.forEach(walk);
      else if (e.kind === "forall" || e.kind === "when") walk(e.body);
    };
    for (const a of this.domain.actions.values()) walk(a.effect);
    this.staticPreds = new Set([...this.domain.predicates.keys()].filter((p) => !changed.has(p)));
  }

  static load(root: string, game: string): Game {
    const file = join(root, game);
    if (!existsSync(file)) throw new DataError(`ALFWorld game ${file} is missing`, { file });
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(file, "utf8"));
    } catch (e) {
      throw new DataError(`${file} is not valid JSON: ${(e as Error).message}`, { file });
    }
    if (!json || typeof json !== "object") throw new DataError(`${file} is not a JSON object`, { file });
    return new Game(game, json as Record<string, unknown>);
  }

  initialState(): FactBase {
    return new FactBase(this.problem.init);
  }

  won(state: FactBase): boolean {
    return this.holds(this.problem.goal, state, new Map());
  }

  /** Whether a goal other than the game's own holds (a task variant's). */
  satisfies(goal: Formula, state: FactBase): boolean {
    return this.holds(goal, state, new Map());
  }

  /** `holds`, with existential variables found by looking facts up instead of trying every object. */
  private holds(f: Formula, state: FactBase, b: Bindings): boolean {
    if (f.kind === "and") return f.args.every((a) => this.holds(a, state, b));
    if (f.kind !== "exists") return holds(f, state.facts, b, this.byType);
    // The quantified variables are fresh here, even if an outer binding has the same name.
    const outer = new Map(b);
    for (const v of f.vars) outer.delete(v.name);
    const atoms = joinAtoms(f.body, new Set([...outer.keys(), ...f.vars.map((v) => v.name)]));
    const vars = new Set(f.vars.map((v) => v.name));
    if (atoms.length === 0 || !atoms.some((a) => a.vars.some((v) => vars.has(v)))) return holds(f, state.facts, b, this.byType);
    let found = false;
    solve(
      state,
      atoms,
      outer,
      (nb) => {
        const free = f.vars.filter((v) => !nb.has(v.name));
        forEachBinding(free, nb, this.byType, (full) => {
          found = this.holds(f.body, state, full);
          return !found;
        });
        return !found;
      },
      false,
      isPddlVar,
      true,
    );
    return found;
  }

  /** The admissible commands, sorted, each with the first action that prints it. */
  admissible(state: FactBase): Map<string, GroundAction> {
    const out = new Map<string, GroundAction>();
    for (const schema of this.domain.actions.values()) {
      const text = this.grammar.actions.get(schema.name);
      if (!text) continue;
      const params = schema.params;
      const seen = new Set<string>();
      const consider = (b: Bindings) => {
        this.consider(schema, text.template, state, b, seen, out);
        return true;
      };
      for (const join of this.joins.get(schema.name)!)
        solve(
          state,
          join,
          EMPTY,
          (joined) => {
            // Keep the parameters only: lifted existential variables are re-checked by the precondition.
            const partial = new Map<string, string>();
            const free = [];
            for (const p of params) {
              const v = joined.get(p.name);
              if (v === undefined) free.push(p);
              else partial.set(p.name, v);
            }
            if (free.length === 0) consider(partial);
            else forEachBinding(free, partial, this.byType, consider);
          },
          false,
          isPddlVar,
          true,
        );
    }
    return new Map([...out.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
  }

  /** One candidate binding of an action: admissible if its precondition holds and it changes something. */
  private consider(schema: ActionSchema, template: string, state: FactBase, b: Bindings, seen: Set<string>, out: Map<string, GroundAction>): void {
    let key = schema.name;
    for (const p of schema.params) key += ` ${b.get(p.name)}`;
    if (seen.has(key)) return;
    seen.add(key);
    if (this.exactJoin.has(schema.name)) {
      // The join skipped the parameters' types: check them (cheap).
      for (const p of schema.params) if (!this.typeSets.get(p.type)?.has(b.get(p.name)!)) return;
    } else if (!this.holds(schema.precondition, state, b)) return;
    // An action that changes nothing (e.g. going to where the agent stands) is dropped, as the planner drops it.
    if (this.mayCancel.has(schema.name) && this.changesNothing(schema, state, b)) return;
    const command = this.command(template, state, b, key);
    if (!out.has(command)) out.set(command, { schema, bindings: new Map(b), command });
  }

  /** Whether an action's adds and deletes cancel out exactly (a plain list of them is compared without building facts). */
  private changesNothing(schema: ActionSchema, state: FactBase, b: Bindings): boolean {
    const e = schema.effect;
    const plain = e.kind === "and" && e.args.every((x) => x.kind === "add" || x.kind === "del" || x.kind === "none");
    if (!plain) {
      const { adds, dels } = effectLists(e, state.facts, b, this.byType);
      const net = adds.filter((a) => !dels.includes(a)).length + dels.filter((d) => !adds.includes(d)).length;
      return net === 0 && adds.length + dels.length > 0;
    }
    const lits = (e.args as Extract<Effect, { kind: "add" | "del" }>[]).filter((x) => x.kind !== ("none" as string));
    const arg = (t: string) => (t.startsWith("?") ? b.get(t) : t);
    const same = (x: Extract<Effect, { kind: "add" | "del" }>, y: Extract<Effect, { kind: "add" | "del" }>) =>
      x.pred === y.pred && x.args.length === y.args.length && x.args.every((t, i) => arg(t) === arg(y.args[i]));
    return lits.length > 0 && lits.every((x) => lits.some((y) => y.kind !== x.kind && same(x, y)));
  }

  /** Applies a ground action: the next state and the feedback text. */
  apply(state: FactBase, action: GroundAction): { state: FactBase; feedback: string } {
    const { adds, dels } = effectLists(action.schema.effect, state.facts, action.bindings, this.byType);
    const next = state.apply(adds, dels);
    const text = this.grammar.actions.get(action.schema.name)!;
    return { state: next, feedback: this.text.expand(text.feedback, next, varBindings(action.bindings)) };
  }

  intro(state: FactBase): string {
    return this.text.rule("intro", state, new Map());
  }

  /** The game's task sentence, "Your task is to: …". */
  task(): string {
    return this.text.rule("task", new FactBase([]), new Map());
  }

  /** A ground action's command text; cached when the template reads only facts no action changes. */
  private command(template: string, state: FactBase, b: Bindings, cacheKey: string): string {
    const hit = this.commandCache.get(cacheKey);
    if (hit !== undefined) return hit;
    const text = this.render(template, state, b);
    const preds = [...template.matchAll(/(\w+)\(/g)].map((m) => m[1].toLowerCase());
    if (preds.every((p) => this.staticPreds.has(p))) this.commandCache.set(cacheKey, text);
    return text;
  }

  private render(template: string, state: FactBase, b: Bindings): string {
    // `{x}` is an entity's name; anything else (the go-to list) is grammar text.
    const vars = varBindings(b);
    const simple = template.replace(/\{(\w+)\}/g, (_, v: string) => {
      const id = vars.get(v);
      if (id === undefined) throw new InvalidConfigError(`template "${template}": ${v} is not a parameter`);
      return this.names.get(id) ?? id;
    });
    return simple.includes("[") ? this.text.expand(simple, state, vars) : simple;
  }
}

/** Parameters "?lend" → grammar variables "lend". */
function varBindings(b: Bindings): Map<string, string> {
  return new Map([...b].map(([k, v]) => [k.replace(/^\?/, ""), v]));
}

const isPddlVar = (t: string) => t.startsWith("?");
const EMPTY: ReadonlyMap<string, string> = new Map();

/**
 * Positive atoms that must hold for a formula to hold — those of a top-level `and`, and of the
 * bodies of existentials in it (their variables become join variables) — used to find candidate
 * bindings by looking facts up; the full formula is checked on each candidate.
 */
function joinAtoms(f: Formula, taken: Set<string> = new Set()): QueryAtom[] {
  switch (f.kind) {
    case "atom":
      return [{ pred: f.pred, vars: f.args }];
    case "and":
      return f.args.flatMap((a) => joinAtoms(a, taken));
    case "exists": {
      // Lifted only when its variables are new: not bound outside, not lifted from a sibling already
      // (a join would force two quantifiers of one name to share a value).
      if (f.vars.some((v) => taken.has(v.name))) return [];
      for (const v of f.vars) taken.add(v.name);
      return joinAtoms(f.body, taken);
    }
    default:
      return [];
  }
}
