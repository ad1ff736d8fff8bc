import { bucket, FeatureBuilder, type HistoryStep, type PolicyFeatures, type SparseVector, type Task } from "../core/index.ts";
// Narrowly, not the rl's index (which loads the trainers and their schemas): the estimate thread
// loads this module, and a run's first estimates wait for it to be up.
import { contentTokens, featurize } from "../rl/features.ts";
import { webView } from "../rl/web-view.ts";
import { elementKind } from "./embedded-model.ts";

/**
 * Features of a transition (task, history, state, action) for the learned experience model. Every
 * feature relates the page to the instruction instead of naming either, so what is learned on the
 * seed tasks carries over to new instructions over the same catalogue (curriculum tasks):
 *
 * - the policy's own features of the action in its state (`featurize`, with this action the only
 *   candidate): label, option group, overlap of its line with the instruction, rank, price, repeats,
 *   steps, each conjoined with the page kind;
 * - on an item page, what a purchase there would be worth: how much of the instruction the title
 *   covers and how much of the title the instruction mentions, the price against the instruction's
 *   bound, and for the option groups on the page, how many the instruction names and whether the
 *   values clicked on this page (the history; the last click in a group counts, as the site keeps
 *   it) are the ones it names; the rank of the item on the results page it was opened from;
 * - on an item page, which product it is and which values are chosen (hashed, no meaning of their
 *   own): the site's reward has quirks no rule of thumb reads from the page (an option value it
 *   never matches, a product whose hidden attributes miss), and these let the model learn them
 *   from the purchases the data records;
 *
 * all conjoined with the page kind and the kind of element the action works on (`elementKind`:
 * search, option, item, or the button itself), so a feature read for "buy now" is not one read for
 * a click on an option.
 *
 * Web page states (element lines, actions by id) are read through their bracketed view (`webView`),
 * the history's pages and actions too, so every feature above reads the element an id names.
 */
export const TRANSITION_FEATURE_VERSION = "transition-features-v5";

/**
 * The instruction without the option values it asks for and its price bound: what the product
 * itself must be, normalised. The options are cut from the first " with " that leads to a "name:", so
 * a plain "with" clause just before them goes too ("find me loose fit women's tops with short sleeve
 * with color: …" → "find me loose fit women s tops"): a coarser request, broader support.
 */
export function requestOf(instruction: string): string {
  return phrase(instruction.replace(/,?\s*(?:and )?price (?:lower|less|cheaper) than .*$/i, "").replace(/ with [a-z][a-z ]{0,30}: .*$/i, "")).trim();
}

/**
 * Which purchases the real data saw earn the top reward: by product and request (`purchaseKey`), the
 * tasks that did. The site's reward reads attributes of the product that no page shows; a product
 * bought in full for this very request by another task is evidence of them that the page is not.
 */
export class PurchaseSupport {
  private readonly byKey = new Map<string, Set<string>>();

  constructor(entries: Iterable<readonly [string, readonly string[]]> = []) {
    for (const [key, tasks] of entries) for (const t of tasks) this.add(key, t);
  }

  add(key: string, task: string): void {
    const tasks = this.byKey.get(key) ?? new Set<string>();
    tasks.add(task);
    this.byKey.set(key, tasks);
  }

  /** Tasks other than `task` that bought this product for this request at the top reward. */
  others(key: string, task: string): number {
    const tasks = this.byKey.get(key);
    return tasks === undefined ? 0 : tasks.size - (tasks.has(task) ? 1 : 0);
  }

  /** Sorted, for the model file (same support → same bytes). */
  entries(): [string, string[]][] {
    return [...this.byKey].map(([k, t]): [string, string[]] => [k, [...t].sort()]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }
}

/** The latest step that opened an item page from a results page (the item page's origin). */
const openingStep = (history: readonly HistoryStep[]) =>
  [...history].reverse().find((h) => pageKind(h.state) === "results" && pageKind(h.nextState) === "item");
const supportKey = (product: string, instruction: string) => `${product}\t${requestOf(instruction)}`;

/** On an item page: the product and the instruction's request, the key of `PurchaseSupport` (undefined elsewhere). */
export function purchaseKey(input: TransitionInput): string | undefined {
  const { task, history, state } = viewTransition(input);
  if (pageKind(state) !== "item") return undefined;
  const from = openingStep(history);
  const id = from ? clicked(from.action) : undefined;
  return id === undefined ? undefined : supportKey(id, task.instruction);
}

/** A transition over web page states in the view's words (each page's action named by its own page); others unchanged. */
export function viewTransition(input: TransitionInput): TransitionInput {
  const text = (s: string) => webView(s)?.text ?? s;
  const act = (s: string, a: string) => webView(s)?.action(a) ?? a;
  if (webView(input.state) === null) return input;
  return {
    task: input.task,
    state: text(input.state),
    action: act(input.state, input.action),
    history: input.history.map((h) => ({ ...h, state: text(h.state), action: act(h.state, h.action), nextState: text(h.nextState) })),
  };
}

export interface TransitionInput {
  task: Task;
  history: readonly HistoryStep[];
  state: string;
  action: string;
}

const PRICE_BOUND = /(?:lower|less|cheaper) than \$?([\d,]+(?:\.\d+)?)/i;
const OPTION_LINE = /^([^[\]:]{1,40}):\s*\[/;
const pageKind = (state: string) => /^page: (\S+)/.exec(state)?.[1] ?? "text";
const phrase = (s: string) =>
  ` ${s
    .toLowerCase()
    .replace(/[^a-z0-9.]+/g, " ")
    .trim()} `;
const labels = (line: string) => [...line.matchAll(/\[([^\]]+)\]/g)].map((m) => m[1].toLowerCase());
const clicked = (action: string) => /^click\[(.*)\]$/is.exec(action.trim())?.[1].toLowerCase();

/** The title of an item page: the line before its "Price:" line. */
function titleOf(lines: string[]): string | undefined {
  const i = lines.findIndex((l) => l.startsWith("Price: "));
  return i >= 1 ? lines[i - 1] : undefined;
}

function overlap(text: string, instr: Set<string>): { cover: number; frac: number; matched: number } {
  const toks = new Set(contentTokens(text));
  let matched = 0;
  for (const t of toks) if (instr.has(t)) matched++;
  return { cover: instr.size > 0 ? matched / instr.size : 0, frac: toks.size > 0 ? matched / toks.size : 0, matched };
}

/**
 * The option value chosen in each group of an item page (`state`), by the clicks on this very page
 * (earlier steps on the same item page and its sub-pages): the last click in a group counts, as the
 * site keeps it. Group names lower-cased.
 */
export function chosenOptions(history: readonly HistoryStep[], state: string): Map<string, string> {
  const lines = state.split("\n");
  const title = titleOf(lines);
  const groups = lines.map((l) => ({ name: OPTION_LINE.exec(l)?.[1].trim().toLowerCase(), values: labels(l) })).filter((g) => g.name !== undefined);
  const chosen = new Map<string, string>();
  for (let i = history.length - 1; i >= 0; i--) {
    const h = history[i];
    const hk = pageKind(h.state);
    if (hk === "item_sub") continue;
    if (hk !== "item" || titleOf(h.state.split("\n")) !== title) break;
    const v = clicked(h.action);
    const group = v === undefined ? undefined : groups.find((g) => g.values.includes(v));
    if (group && !chosen.has(group.name!)) chosen.set(group.name!, v!);
  }
  return chosen;
}

/**
 * The items a results page lists, each with how much of the instruction it covers. Kept per page and
 * instruction (at most LISTED_MAX pairs): every later step of an episode that opened an item from the
 * page reads it again, and so do the other rollouts of its task.
 */
function listedItems(page: string, instruction: string, instr: Set<string>): readonly { id: string; cover: number }[] {
  if (listedCount >= LISTED_MAX) {
    listed.clear();
    listedCount = 0;
  }
  let byInstruction = listed.get(page);
  if (!byInstruction) listed.set(page, (byInstruction = new Map()));
  let items = byInstruction.get(instruction);
  if (!items) {
    items = page
      .split("\n")
      .filter((l) => /^\[[a-z0-9]{10}\] /.test(l))
      .map((l) => ({ id: labels(l)[0], cover: overlap(l.replace(/\[[^\]]*\]/g, " "), instr).cover }));
    byInstruction.set(instruction, items);
    listedCount++;
  }
  return items;
}
const listed = new Map<string, Map<string, readonly { id: string; cover: number }[]>>();
let listedCount = 0;
const LISTED_MAX = 4096;

/**
 * With `support`, an item page also says how many other tasks bought its product for this request at
 * the top reward (none, one, more); `features`: the env's own policy features (its `EnvSpec.features`).
 */
export function transitionFeatures(input: TransitionInput, dim: number, support?: PurchaseSupport, features?: PolicyFeatures): SparseVector {
  const { task, history, state, action } = viewTransition(input);
  const policy = featurize({ task, observation: state, actions: [action], history: history.map((h) => h.action) }, dim, features);
  const b = new FeatureBuilder(dim);
  const kind = pageKind(state);
  const ek = elementKind(state, action) ?? "text";
  const k = `${kind}|${ek}`;
  b.named`t-bias|${k}`;
  b.named`t-steps|${k}|${bucket(history.length, [0, 2, 4, 7, 10])}`;
  const instruction = task.instruction;
  const instr = new Set(contentTokens(instruction));
  const lines = state.split("\n");
  if (kind === "item") {
    const title = titleOf(lines);
    if (title !== undefined) {
      const o = overlap(title, instr);
      b.add(`t-title-cover|${k}`, o.cover);
      b.add(`t-title-frac|${k}`, o.frac);
      b.named`t-title-cover-b|${k}|${bucket(o.cover, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])}`;
      b.named`t-title-frac-b|${k}|${bucket(o.frac, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])}`;
    }
    const bound = PRICE_BOUND.exec(instruction);
    const price = /\$([\d,]+(?:\.\d+)?)/.exec(lines.find((l) => l.startsWith("Price: ")) ?? "");
    if (bound && price) b.named`t-price|${k}|${Number(price[1].replace(/,/g, "")) <= Number(bound[1].replace(/,/g, "")) ? "ok" : "over"}`;
    else b.named`t-price|${k}|${bound ? "no-price" : "no-bound"}`;
    const chosen = chosenOptions(history, state);
    const instrPhrase = phrase(instruction);
    const named = (v: string) => instrPhrase.includes(phrase(v));
    let groups = 0,
      mentioned = 0,
      chosenRight = 0,
      chosenWrong = 0,
      unchosen = 0,
      chosenFree = 0;
    for (const line of lines) {
      const g = OPTION_LINE.exec(line);
      if (!g) continue;
      groups++;
      const values = labels(line);
      const picked = chosen.get(g[1].trim().toLowerCase());
      const wanted = values.some(named);
      if (wanted) mentioned++;
      if (picked === undefined) {
        if (wanted) unchosen++;
      } else if (!wanted) chosenFree++;
      else if (named(picked)) chosenRight++;
      else chosenWrong++;
    }
    // The "name: value" options the instruction asks for ("… with color: black, and size: large").
    const askedPairs = new Map<string, string>();
    const tail = / with ([a-z][a-z ]{0,30}: .*)$/i.exec(instruction.replace(/,?\s*(?:and )?price (?:lower|less|cheaper) than .*$/i, ""))?.[1] ?? "";
    for (const part of tail.split(/, and (?=[a-z][a-z ]{0,30}: )/i)) {
      const m = /^([a-z][a-z ]{0,30}): (.+)$/i.exec(part.trim());
      if (m) askedPairs.set(m[1].toLowerCase(), m[2].toLowerCase().trim());
    }
    const asked = askedPairs.size;
    // Of the groups it names, those whose last click is exactly the value asked for.
    let exact = 0;
    for (const line of lines) {
      const g = OPTION_LINE.exec(line);
      const want = g ? askedPairs.get(g[1].trim().toLowerCase()) : undefined;
      if (want !== undefined && chosen.get(g![1].trim().toLowerCase()) === want) exact++;
    }
    b.add(`t-opt-exact|${k}|${asked === 0 ? "none" : exact >= asked ? "all" : `missing-${Math.min(asked - exact, 3)}`}`);
    b.named`t-groups|${k}|${Math.min(groups, 4)}|${Math.min(mentioned, 4)}`;
    b.named`t-asked|${k}|${Math.min(asked, 4)}|${Math.min(mentioned, 4)}`;
    b.named`t-opt|${k}|${Math.min(chosenRight, 3)}|${Math.min(chosenWrong, 3)}|${Math.min(unchosen, 3)}`;
    b.named`t-opt-free|${k}|${Math.min(chosenFree, 3)}`;
    const need = Math.max(asked, mentioned);
    b.add(`t-opt-share|${k}`, need > 0 ? chosenRight / need : 1);
    b.named`t-opt-all|${k}|${need === 0 ? "none" : chosenRight >= need ? "all" : chosenRight > 0 ? "some" : "no"}`;
    // Where the item stood on the results page it was opened from (by the instruction's overlap).
    const from = openingStep(history);
    const id = from ? clicked(from.action) : undefined;
    if (id !== undefined) {
      b.named`t-product|${k}|${id}`;
      if (support) {
        const n = support.others(supportKey(id, instruction), task.id);
        b.named`t-support|${k}|${Math.min(n, 2)}`;
      }
      for (const picked of chosen.values()) {
        b.named`t-chosen|${k}|${picked}`;
        b.named`t-chosen|${k}|${id}|${picked}`;
      }
    }
    if (from) {
      const items = listedItems(from.state, instruction, instr);
      const mine = items.find((it) => it.id === id);
      if (mine) {
        const rank = items.filter((it) => it.cover > mine.cover).length;
        b.named`t-from-rank|${k}|${Math.min(rank, 4)}`;
      }
    }
  }
  // The policy's features of this action, and of the state.
  const merged = new FeatureBuilder(dim);
  merged.addVector(b.build());
  if (policy.candidates[0]) merged.addVector(policy.candidates[0]);
  merged.addVector(policy.state);
  return merged.build();
}
