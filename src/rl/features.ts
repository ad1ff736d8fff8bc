import { stemmer } from "stemmer";
import { bucket, FeatureBuilder, FREE_TEXT_SLOT, type FeaturizedStep, type PolicyFeatures } from "../core/index.ts";
import type { PolicyInput } from "./policy.ts";
import { webView, type WebView } from "./web-view.ts";

/**
 * Text features for the neural policy. A state is read as lines (DreamGym's abstract states: a
 * `page: <kind>` line, then elements one per line with clickables in brackets); raw text works too,
 * as one block. Each candidate action gets hashed features of (instruction, state, action):
 * its label and option group, how much of its line's text the instruction mentions, its rank by that
 * overlap among the page's items, its position, a price against the instruction's price bound, how
 * often it was taken already, and the steps used — each conjoined with the page kind.
 *
 * Free text: an action with the `<query>` slot expands into candidate queries made from the
 * instruction (see {@link queryCandidates}).
 *
 * Web page states (element lines, actions by id: the browser env) are read through their bracketed
 * view ({@link webView}): the same features, of the element each id names.
 */
export const FEATURE_VERSION = "text-features-v4";

const STOP = new Set(
  "a an the and or of for to in on with by at from is are be it its i im i'm me my you your we our this that these those as but not no can will would could should please need want looking find buy get also some any which who what".split(
    " ",
  ),
);

/**
 * Lowercased, stemmed content words. Kept per text (the last TOKENS_MAX texts): a run featurizes the
 * same instructions and page lines step after step, and stemming them was an eighth of a synthetic
 * step's CPU.
 */
export function contentTokens(text: string): readonly string[] {
  let out = tokenMemo.get(text);
  if (out) return out;
  const words: string[] = [];
  for (const w of text.toLowerCase().split(/[^a-z0-9.]+/)) {
    const t = w.replace(/^\.+|\.+$/g, "");
    if (t.length === 0 || STOP.has(t)) continue;
    words.push(stemmer(t));
  }
  if (tokenMemo.size >= TOKENS_MAX) tokenMemo.clear();
  tokenMemo.set(text, (out = Object.freeze(words)));
  return out;
}
const tokenMemo = new Map<string, readonly string[]>();
const TOKENS_MAX = 20_000;

const PRICE_BOUND = /(?:lower|less|cheaper) than \$?([\d,]+(?:\.\d+)?)/i;
const PRICE = /\$([\d,]+(?:\.\d+)?)/;

/**
 * Candidate queries for a free-text slot, from the instruction: (0) the whole instruction, (1) it
 * without a trailing price clause, (2) it without "with …" option clauses ("color: x, and size: y")
 * and the price, (3) its head: the text before the first "with"/"that"/comma.
 */
export function queryCandidates(instruction: string): string[] {
  const whole = instruction.trim();
  const noPrice = whole.replace(/,?\s*(?:and )?price (?:lower|less) than [\d.,]+ dollars\.?$/i, "").trim();
  const noOptions = noPrice.replace(/\s+with [a-z ]+: .*$/i, "").trim();
  const head = noOptions.split(/\s+(?:with|that|which)\s+|,/i)[0].trim();
  return [whole, noPrice, noOptions, head].map((q) => q.replace(/\s+/g, " "));
}

/** An item label: an id such as an ASIN (a mix of letters and digits, no spaces). */
export const idLike = (label: string) => /^(?=.*\d)(?=.*[a-z])[a-z0-9-]{6,}$/i.test(label);

interface ParsedAction {
  action: string;
  verb: string;
  label: string;
  /** The search variant, for a filled free-text slot. */
  variant?: number;
}

function parseAction(action: string): ParsedAction {
  const m = /^(\w+)\[(.*)\]$/s.exec(action.trim());
  return m ? { action, verb: m[1].toLowerCase(), label: m[2].toLowerCase() } : { action, verb: "text", label: action.toLowerCase() };
}

/** A step's features: the env's own (`own`, its `EnvSpec.features`) where they read the state, else a web page's or a bracketed text state's. */
export function featurize(input: PolicyInput, dim: number, own?: PolicyFeatures): FeaturizedStep {
  const mine = own?.featurize(input, dim);
  if (mine) return mine;
  const web = webView(input.observation);
  if (web) return featurizeWeb(input, web, dim);
  return featurizeText(textStep(input.task.instruction, input.observation, input.actions, input.history), dim);
}

/** A past action in the view's words, without its page (the history keeps actions only): ids stay unnamed. */
function historyAction(action: string): string {
  const t = action.trim();
  const typed = /^type\s*\[\d+\]\s*\[([\s\S]*)\]$/i.exec(t);
  if (typed) return `search[${typed[1].replace(/\]\s*\[[01]$/, "")}]`;
  if (/^click\s*\[\d+\]$/i.test(t)) return "click[<id>]";
  return t === "go_back" ? "click[go back]" : t;
}

/** A web page's features: those of its view, the candidates mapped back to the page's own actions. */
function featurizeWeb(input: PolicyInput, web: WebView, dim: number): FeaturizedStep {
  const back = new Map<string, string>();
  const slots: { view: string; action: string }[] = [];
  for (const a of input.actions ?? []) {
    const v = web.action(a);
    if (a.includes(FREE_TEXT_SLOT)) slots.push({ view: v, action: a });
    back.set(v, a); // two elements of one name: the last (see webView)
  }
  const step = featurizeText(textStep(input.task.instruction, web.text, [...back.keys()], input.history.map(historyAction)), dim, new Set(web.checked));
  const actions = step.actions.map((v) => {
    const direct = back.get(v);
    if (direct !== undefined) return direct;
    // A filled free-text slot: fill the page's own action the same way.
    for (const s of slots) {
      const [pre, post] = s.view.split(FREE_TEXT_SLOT);
      if (post !== undefined && v.startsWith(pre) && v.endsWith(post)) return s.action.split(FREE_TEXT_SLOT).join(v.slice(pre.length, v.length - post.length));
    }
    return v;
  });
  return { ...step, actions };
}

/**
 * What `featurizeText` reads of a step, always in this one shape: read off tasks and inputs of several
 * shapes (seed, generated, copied), the function was compiled again and again by V8 (10–13 times a run).
 */
interface TextStep {
  instruction: string;
  observation: string;
  actions: readonly string[];
  history: readonly string[];
}
const NO_ACTIONS: readonly string[] = [];
const textStep = (instruction: string, observation: string, actions: readonly string[] | undefined, history: readonly string[]): TextStep => ({
  instruction,
  observation,
  actions: actions ?? NO_ACTIONS,
  history,
});

/** Features of a bracketed text state; `chosen`: option labels the page shows as chosen (a web page's checked radios). */
function featurizeText(input: TextStep, dim: number, chosen?: ReadonlySet<string>): FeaturizedStep {
  const instruction = input.instruction;
  const instrTokens = new Set(contentTokens(instruction));
  const instrLower = ` ${instruction.toLowerCase().replace(/[^a-z0-9.]+/g, " ")} `;
  const bound = PRICE_BOUND.exec(instruction);
  const priceBound = bound ? Number(bound[1].replace(/,/g, "")) : undefined;

  const lines = input.observation.split("\n");
  const kindLine = /^page: (\S+)/.exec(lines[0] ?? "");
  const kind = kindLine ? kindLine[1] : "text";
  const step = input.history.length;
  const stepBucket = Math.min(step, 12);

  // Expand the listed actions (a free-text slot into query candidates).
  const parsed: ParsedAction[] = [];
  for (const a of input.actions) {
    if (a.includes(FREE_TEXT_SLOT)) {
      const seen = new Set<string>();
      queryCandidates(instruction).forEach((q, variant) => {
        const filled = a.split(FREE_TEXT_SLOT).join(q);
        if (seen.has(filled)) return;
        seen.add(filled);
        parsed.push({ ...parseAction(filled), variant });
      });
    } else parsed.push(parseAction(a));
  }
  // A listed action twice (or equal to a filled query) would split its probability mass.
  const unique = new Set<string>();
  for (let i = 0; i < parsed.length; i++) {
    if (unique.has(parsed[i].action)) parsed.splice(i--, 1);
    else unique.add(parsed[i].action);
  }

  const searches = input.history.filter((a) => a.startsWith("search[")).length;
  const prev = input.history.length > 0 ? parseAction(input.history[input.history.length - 1]) : undefined;
  // A search's words are the task's own: a feature of them would let the scorer learn each training
  // task by heart (its tanh layer can turn "this query" into "this item rank"), which no other task
  // shares. A candidate search is named by its query variant instead, as an item by "<id>"; the
  // previous search (read back from the history, which keeps no variant) by "<query>".
  const searchLabel = (p: ParsedAction) => `<query${p.variant ?? ""}>`;
  const prevLabel = prev
    ? prev.verb === "search"
      ? `search:${searchLabel(prev)}`
      : idLike(prev.label)
        ? `${prev.verb}:<id>`
        : `${prev.verb}:${prev.label}`
    : "none";
  const taken = new Map<string, number>();
  for (const a of input.history) taken.set(a.toLowerCase(), (taken.get(a.toLowerCase()) ?? 0) + 1);
  // (Filled one by one: spreading a Set here and an array there made V8 recompile this function.)
  const takenLabels = new Set<string>();
  for (const a of input.history) takenLabels.add(parseAction(a).label);
  if (chosen) for (const label of chosen) takenLabels.add(label);

  // Per candidate: the line it sits on, its overlap with the instruction. The page's lines are
  // lowercased once, and what a line tells once, for all its candidates (a results page has ~17 of
  // them: lowercasing line after line for each was a tenth of a step's CPU).
  let lowerLines: string[] | undefined;
  const lineFacts = new Map<number, { group: string | undefined; lineText: string; labels: string[] | undefined }>();
  const factsOf = (lineIndex: number) => {
    let f = lineFacts.get(lineIndex);
    if (!f) {
      const line = lineIndex >= 0 ? lines[lineIndex] : "";
      const group = /^([^[\]:]{1,40}):\s*\[/.exec(line)?.[1].trim().toLowerCase();
      const labels = group === undefined ? undefined : [...line.toLowerCase().matchAll(/\[([^\]]+)\]/g)].map((m) => m[1]);
      lineFacts.set(lineIndex, (f = { group, lineText: line.replace(/\[[^\]]*\]/g, " "), labels }));
    }
    return f;
  };
  const info = parsed.map((p, position) => {
    let lineIndex = -1;
    if (p.verb === "click") {
      lowerLines ??= lines.map((l) => l.toLowerCase());
      const tag = `[${p.label}]`;
      lineIndex = lowerLines.findIndex((l) => l.includes(tag));
    }
    const { group, lineText, labels } = factsOf(lineIndex);
    const contextText = group ? p.label : `${idLike(p.label) ? "" : p.label} ${lineText}`;
    const context = new Set(p.verb === "search" ? contentTokens(p.label) : contentTokens(contextText));
    let matched = 0;
    for (const t of context) if (instrTokens.has(t)) matched++;
    const frac = context.size > 0 ? matched / context.size : 0;
    const cover = instrTokens.size > 0 ? matched / instrTokens.size : 0;
    const price = PRICE.exec(lineText);
    const siblingTaken = labels !== undefined && labels.some((l) => l !== p.label && takenLabels.has(l));
    return { p, position, lineIndex, group, frac, cover, matched, price: price ? Number(price[1].replace(/,/g, "")) : undefined, siblingTaken };
  });

  // Rank of each item (id-labelled candidate) by instruction coverage among the page's items.
  // An item has an id-like label and is not an option value ("3x-large" on a "size: [...]" line).
  const isItem = (c: (typeof info)[number]) => !c.group && idLike(c.p.label);
  const items = info.filter(isItem).sort((a, b) => b.cover - a.cover || a.position - b.position);
  const rank = new Map(items.map((c, r) => [c, r]));

  const candidates = info.map((c) => {
    const b = new FeatureBuilder(dim);
    const { p } = c;
    const k = `${kind}|${p.verb}`;
    b.named`bias|${k}`;
    const item = isItem(c);
    const label = item ? "<id>" : p.verb === "search" ? searchLabel(p) : p.label;
    if (p.label.length <= 40) b.named`label|${k}|${label}`;
    b.named`label-steps|${k}|${label}|${bucket(step, [1, 3, 6, 9])}`;
    b.named`prev|${k}|${prevLabel}|${label}`;
    if (c.group) b.named`group|${k}|${c.group}`;
    b.add(`overlap|${k}`, c.frac);
    b.add(`cover|${k}`, c.cover);
    b.named`overlap-bucket|${k}|${bucket(c.frac, [0, 0.2, 0.4, 0.6, 0.8, 0.99])}`;
    b.named`matched|${k}|${Math.min(c.matched, 6)}`;
    if (p.verb === "click" && !item && p.label.length > 0 && instrLower.includes(` ${p.label.replace(/[^a-z0-9.]+/g, " ").trim()} `)) {
      b.named`phrase|${k}|${c.group ? "option" : "other"}`;
    }
    if (item) {
      const r = rank.get(c) ?? 9;
      b.named`rank|${k}|${Math.min(r, 4)}`;
      b.named`rank-overlap|${k}|${Math.min(r, 2)}|${bucket(c.cover, [0.1, 0.3, 0.5, 0.7])}`;
    }
    if (c.price !== undefined && priceBound !== undefined) b.named`price|${k}|${c.price <= priceBound ? "ok" : "over"}`;
    if (c.siblingTaken) b.named`group-chosen|${k}`;
    // A choice the page shows checked was clicked before, whatever the history calls it.
    const times = Math.max(taken.get(p.action.toLowerCase()) ?? 0, p.verb === "click" && chosen?.has(p.label) ? 1 : 0);
    b.named`repeat|${k}|${Math.min(times, 3)}`;
    if (p.variant !== undefined) b.named`query|${k}|${p.variant}|${Math.min(searches, 2)}`;
    return b.build();
  });

  const s = new FeatureBuilder(dim);
  s.named`state|${kind}`;
  s.named`state-steps|${kind}|${stepBucket}`;
  s.named`state-searches|${kind}|${Math.min(searches, 3)}`;
  const best = items.length > 0 ? items[0].cover : info.reduce((m, c) => Math.max(m, c.cover), 0);
  s.named`state-best|${kind}|${bucket(best, [0.1, 0.3, 0.5, 0.7, 0.9])}`;
  s.named`state-options|${kind}|${Math.min(info.filter((c) => c.group && takenLabels.has(c.p.label)).length, 4)}`;
  return { actions: parsed.map((p) => p.action), candidates, state: s.build() };
}
