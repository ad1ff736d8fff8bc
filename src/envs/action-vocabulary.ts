import type { ActionSource } from "../core/index.ts";

export interface ActionVocabularyOptions {
  /** Candidates offered per state at most. @default 48 */
  max?: number;
}

// Words that join a command's parts ("put key in chest"); they need not appear in the state.
const GLUE = new Set(["a", "an", "the", "in", "on", "into", "onto", "from", "to", "with", "at", "of", "and", "up", "down"]);

const normalize = (a: string) => a.trim().toLowerCase().replace(/\s+/g, " ");
const words = (text: string) => new Set(text.toLowerCase().match(/[a-z0-9']+/g) ?? []);

/**
 * A command vocabulary learned from recorded actions, for envs whose states list no actions (parser
 * games): at a state it offers the argument-free commands (`look`, `inventory`), every recorded
 * command whose argument words all appear in the state or the task, and each recorded verb with each
 * recorded object that appears in the state (`take` × `gem` → `take gem`). Deterministic: the
 * same actions and state give the same list, in the same order.
 */
export function actionVocabulary(actions: Iterable<string>, opts: ActionVocabularyOptions = {}): ActionSource {
  const max = opts.max ?? 48;
  const bare = new Set<string>();
  const full = new Map<string, string[]>(); // command → its content words
  const verbs = new Set<string>();
  const objects = new Map<string, string[]>(); // object phrase → its content words
  for (const raw of actions) {
    const a = normalize(raw);
    if (a === "" || a.length > 80) continue;
    const [verb, ...rest] = a.split(" ");
    if (rest.length === 0) {
      bare.add(a);
      continue;
    }
    const content = rest.filter((w) => !GLUE.has(w));
    full.set(
      a,
      content.flatMap((w) => [...words(w)]),
    );
    // Single objects ("gem", "brass key"), not multi-part arguments ("key in chest").
    if (!rest.some((w) => GLUE.has(w)) && rest.length <= 3) {
      verbs.add(verb);
      objects.set(
        rest.join(" "),
        rest.flatMap((w) => [...words(w)]),
      );
    }
  }
  const sortedBare = [...bare].sort();
  const sortedFull = [...full.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const sortedVerbs = [...verbs].sort();
  const sortedObjects = [...objects.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return (observation, task) => {
    const seen = words(`${observation} ${task.instruction}`);
    const inState = words(observation);
    const out = new Set<string>(sortedBare);
    for (const [a, content] of sortedFull) if (content.every((w) => seen.has(w))) out.add(a);
    for (const [obj, content] of sortedObjects) {
      if (!content.every((w) => inState.has(w))) continue;
      for (const v of sortedVerbs) out.add(`${v} ${obj}`);
    }
    const list = [...out].slice(0, max);
    // Never nothing to pick from: fall back to the recorded commands themselves.
    return list.length > 0 ? list : sortedFull.slice(0, max).map(([a]) => a);
  };
}
