/**
 * A game state as TextWorld's PDDL env keeps it: positive facts, plus `not_<pred>` facts for those
 * an action deleted (the grammar can ask for them). Indexed by predicate, each predicate's argument
 * tuples kept in ascending order, which is the order TextWorld's lists come out in.
 */
export class FactBase {
  private readonly set: Set<string>;
  private readonly byPred: Map<string, string[][]>;
  private readonly byArg: Map<string, Map<string, string[][]>>;

  constructor(facts: Iterable<string>, shared?: { set: Set<string>; byPred: Map<string, string[][]>; byArg: Map<string, Map<string, string[][]>> }) {
    if (shared) {
      ({ set: this.set, byPred: this.byPred, byArg: this.byArg } = shared);
      return;
    }
    this.set = new Set(facts);
    this.byPred = new Map();
    this.byArg = new Map();
    for (const f of this.set) {
      const [pred, ...args] = f.split(" ");
      let list = this.byPred.get(pred);
      if (!list) this.byPred.set(pred, (list = []));
      list.push(args);
    }
    for (const list of this.byPred.values()) list.sort(compareTuples);
  }

  has(fact: string): boolean {
    return this.set.has(fact);
  }

  /** Argument tuples of a predicate, ascending. */
  tuples(pred: string): readonly string[][] {
    return this.byPred.get(pred) ?? [];
  }

  /** Argument tuples of a predicate whose argument `pos` is `value`, ascending (indexed on first use). */
  tuplesWith(pred: string, pos: number, value: string): readonly string[][] {
    const key = `${pred}/${pos}`;
    let index = this.byArg.get(key);
    if (!index) {
      index = new Map();
      for (const t of this.tuples(pred)) {
        const v = t[pos];
        if (v === undefined) continue;
        let list = index.get(v);
        if (!list) index.set(v, (list = []));
        list.push(t);
      }
      this.byArg.set(key, index);
    }
    return index.get(value) ?? [];
  }

  /** The positive facts (for the PDDL evaluator). */
  get facts(): ReadonlySet<string> {
    return this.set;
  }

  /**
   * Deletes then adds (PDDL order); a delete leaves a `not_` fact, an add clears it. The new base
   * shares every predicate's list and index that did not change (a step changes a handful).
   */
  apply(adds: readonly string[], dels: readonly string[]): FactBase {
    const set = new Set(this.set);
    const changes: [string, boolean][] = [];
    for (const d of dels) {
      if (set.delete(d)) changes.push([d, false]);
      if (!set.has(`not_${d}`)) {
        set.add(`not_${d}`);
        changes.push([`not_${d}`, true]);
      }
    }
    for (const a of adds) {
      if (set.delete(`not_${a}`)) changes.push([`not_${a}`, false]);
      if (!set.has(a)) {
        set.add(a);
        changes.push([a, true]);
      }
    }
    const byPred = new Map(this.byPred);
    const byArg = new Map(this.byArg);
    const copied = new Set<string>();
    for (const [fact, added] of changes) {
      const [pred, ...args] = fact.split(" ");
      if (!copied.has(pred)) {
        copied.add(pred);
        byPred.set(pred, [...(byPred.get(pred) ?? [])]);
        for (const key of byArg.keys()) if (key.startsWith(`${pred}/`)) byArg.delete(key);
      }
      const list = byPred.get(pred)!;
      let lo = 0;
      let hi = list.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (compareTuples(list[mid], args) < 0) lo = mid + 1;
        else hi = mid;
      }
      if (added) list.splice(lo, 0, args);
      else if (lo < list.length && compareTuples(list[lo], args) === 0) list.splice(lo, 1);
    }
    return new FactBase([], { set, byPred, byArg });
  }
}

function compareTuples(a: string[], b: string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return a.length - b.length;
}

export interface QueryAtom {
  pred: string;
  vars: string[];
}

/**
 * All solutions of a conjunctive query (atoms over variables), extending `bound`: conjunct by
 * conjunct, left to right, facts in ascending order; two different variables never take the same
 * entity (TextWorld's rule; `injective = false` for grounding PDDL actions, where they may). Calls
 * `fn` per solution until it returns false.
 */
export function solve(
  facts: FactBase,
  atoms: readonly QueryAtom[],
  bound: ReadonlyMap<string, string>,
  fn: (b: Map<string, string>) => boolean | void,
  injective = true,
  isVar: (term: string) => boolean = () => true,
  reorder = false,
): boolean {
  // Candidates of an atom: looked up by its first argument already known, if any.
  const candidatesOf = (atom: QueryAtom, b: Map<string, string>): readonly string[][] => {
    for (let k = 0; k < atom.vars.length; k++) {
      const v = atom.vars[k];
      const known = isVar(v) ? b.get(v) : v;
      if (known !== undefined) return facts.tuplesWith(atom.pred, k, known);
    }
    return facts.tuples(atom.pred);
  };
  const remaining = [...atoms];
  const step = (i: number, b: Map<string, string>): boolean => {
    if (i === atoms.length) return fn(b) !== false;
    // In order (text lists come out in conjunct order), or the atom with the fewest candidates next.
    let pick = i;
    let candidates = candidatesOf(remaining[i], b);
    if (reorder) {
      for (let j = i + 1; j < remaining.length && candidates.length > 1; j++) {
        const c = candidatesOf(remaining[j], b);
        if (c.length < candidates.length) {
          pick = j;
          candidates = c;
        }
      }
      [remaining[i], remaining[pick]] = [remaining[pick], remaining[i]];
    }
    const atom = remaining[i];
    try {
      for (const args of candidates) {
        if (args.length !== atom.vars.length) continue;
        let ok = true;
        const added: string[] = [];
        for (let k = 0; k < args.length && ok; k++) {
          const v = atom.vars[k];
          if (!isVar(v)) {
            ok = v === args[k];
            continue;
          }
          const have = b.get(v);
          if (have !== undefined) ok = have === args[k];
          else {
            if (injective) for (const [other, value] of b) if (other !== v && value === args[k]) ok = false;
            if (ok) {
              b.set(v, args[k]);
              added.push(v);
            }
          }
        }
        if (ok && !step(i + 1, b)) return false;
        for (const v of added) b.delete(v);
      }
      return true;
    } finally {
      if (pick !== i) [remaining[i], remaining[pick]] = [remaining[pick], remaining[i]];
    }
  };
  return step(0, new Map(bound));
}
