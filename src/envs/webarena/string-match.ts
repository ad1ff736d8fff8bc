/**
 * WebArena's string matching (evaluation_harness/evaluators.py, StringEvaluator), in the two rule
 * sets that exist: `webarena` (the canonical harness, web-arena-x/webarena) and `vab` (the harness
 * WebArena-Lite was annotated for, THUDM/VisualAgentBench's VAB-WebArena-Lite), which differ in
 * whitespace stripping, when a reference is matched as a whole token, `|OR|` alternatives, and how
 * fuzzy references are judged. Used for the agent's answer (string_match) and for page contents
 * (program_html).
 */
import { InvalidConfigError } from "../../core/index.ts";
import type { RequiredContents } from "./tasks.ts";

export type MatchRules = "webarena" | "vab";

/** An LLM grader (fuzzy_match and the "N/A" reason check); see llm-judge.ts. */
export interface AnswerJudge {
  /** 1 when the answer is semantically the reference answer to the question, else 0. */
  fuzzy(pred: string, reference: string, question: string): Promise<number>;
  /** 1 when the reported reason a task is unachievable is the actual one, else 0. */
  unachievable(pred: string, reference: string, question: string): Promise<number>;
}

/** Lower case, without one pair of surrounding quotes (and, in the canonical rules, surrounding whitespace). */
export function cleanAnswer(answer: string, rules: MatchRules = "webarena"): string {
  let a = rules === "webarena" ? answer.trim() : answer;
  if (a.length >= 2 && ((a.startsWith("'") && a.endsWith("'")) || (a.startsWith('"') && a.endsWith('"')))) a = a.slice(1, -1);
  else if (a === "'" || a === '"') a = ""; // Python's a[1:-1] of one quote
  return a.toLowerCase();
}

export function exactMatch(ref: string, pred: string, rules: MatchRules = "webarena"): number {
  return cleanAnswer(pred, rules) === cleanAnswer(ref, rules) ? 1 : 0;
}

/**
 * Whether the reference is in the prediction. A reference that is one word is matched as a whole
 * token (so "0" is not found in "10"): canonical rules only for a one-character reference when
 * `tokenize` is asked for (a must_include list of one); VAB's for any one-token reference.
 */
export function mustInclude(ref: string, pred: string, opts: { rules?: MatchRules; tokenize?: boolean } = {}): number {
  const rules = opts.rules ?? "webarena";
  const r = cleanAnswer(ref, rules);
  const p = cleanAnswer(pred, rules);
  const asToken = rules === "vab" ? wordTokenize(r).length === 1 : opts.tokenize === true && r.length === 1 && wordTokenize(r).length === 1;
  if (asToken) return wordTokenize(p).includes(r) ? 1 : 0;
  return p.includes(r) ? 1 : 0;
}

/**
 * An approximation of NLTK's `word_tokenize` (Treebank rules) for what the matcher needs: words
 * split from punctuation, brackets, quotes and clitics; commas and colons inside numbers kept
 * ("1,000" is one token); a period split off at the end of a word.
 */
export function wordTokenize(text: string): string[] {
  let t = ` ${text} `;
  t = t.replace(/\.\.\./g, " ... ");
  t = t.replace(/([:,])(?!\d)/g, " $1 ").replace(/(?<!\d)([:,])/g, " $1 ");
  t = t.replace(/[;@#$%&?!]/g, " $& ");
  t = t.replace(/([^.\s])\.(?=[\])}>"']*\s)/g, "$1 . ");
  t = t.replace(/[\][(){}<>]/g, " $& ");
  t = t.replace(/--/g, " -- ");
  t = t.replace(/"/g, ' " ');
  t = t.replace(/([^'\s])('[sSmMdD]|'ll|'LL|'re|'RE|'ve|'VE|n't|N'T)(?=\s)/g, "$1 $2");
  t = t.replace(/([^'\s])'(?=\s)/g, "$1 ' ");
  return t.split(/\s+/).filter((s) => s !== "");
}

/** A list field that may be written as one string (a WebArena-Lite quirk). */
const asList = (v: string | string[]): string[] => (Array.isArray(v) ? v : [v]);

/** Alternatives written `a |OR| b`. */
const alternatives = (v: string): string[] => v.split(" |OR| ");

/**
 * Scores an answer against `reference_answers` (string_match): the product over the approaches the
 * task lists. `intent` is the question a fuzzy judge is shown; `stringNote` the reason an "N/A"
 * task cannot be done.
 */
export async function scoreAnswer(
  answer: string,
  ref: RequiredContents,
  ctx: { intent: string; stringNote?: string; rules?: MatchRules; judge?: AnswerJudge },
): Promise<{ score: number; detail: string }> {
  const rules = ctx.rules ?? "webarena";
  const pred = cleanAnswer(answer, rules);
  let score = 1;
  const notes: string[] = [];
  if (ref.exact_match !== undefined) {
    const s = exactMatch(ref.exact_match, pred, rules);
    score *= s;
    notes.push(`exact_match ${s}`);
  }
  if (ref.must_include !== undefined) {
    const list = asList(ref.must_include);
    for (const must of list) {
      const s =
        rules === "vab"
          ? alternatives(must).some((v) => mustInclude(v, pred, { rules }) === 1)
            ? 1
            : 0
          : mustInclude(must, pred, { rules, tokenize: list.length === 1 });
      score *= s;
      if (s === 0) notes.push(`must_include missing ${JSON.stringify(must)}`);
    }
    if (score === 1) notes.push("must_include 1");
  }
  if (ref.fuzzy_match !== undefined) {
    const judge = needJudge(ctx.judge);
    if (ref.fuzzy_match === "N/A") {
      // An unachievable task: "N/A" itself, else a reason that is the actual one.
      if (exactMatch("N/A", pred, rules) === 1 && score === 1) notes.push("N/A exact");
      else {
        score = await judge.unachievable(pred, ctx.stringNote ?? "", ctx.intent);
        notes.push(`ua_match ${score}`);
      }
    } else if (rules === "vab") {
      const s = await judge.fuzzy(pred, asList(ref.fuzzy_match).join(", "), ctx.intent);
      score *= s;
      notes.push(`fuzzy_match ${s}`);
    } else {
      for (const reference of asList(ref.fuzzy_match)) {
        const s = await judge.fuzzy(pred, reference, ctx.intent);
        score *= s;
        notes.push(`fuzzy_match ${s}`);
      }
    }
  }
  return { score, detail: notes.join(", ") };
}

/**
 * Scores a located page content against `required_contents` (program_html): exact_match,
 * must_include (each entry's `|OR|` alternatives: any), or fuzzy_match (VAB: the references joined,
 * judged against the task's intent).
 */
export async function scoreContent(
  selected: string,
  req: RequiredContents,
  ctx: { intent: string; rules?: MatchRules; judge?: AnswerJudge },
): Promise<{ score: number; detail: string }> {
  const rules = ctx.rules ?? "webarena";
  if (req.exact_match !== undefined) {
    const s = exactMatch(req.exact_match, selected, rules);
    return { score: s, detail: `exact_match ${s}` };
  }
  if (req.must_include !== undefined) {
    let score = 1;
    const missing: string[] = [];
    for (const content of asList(req.must_include)) {
      const ok = alternatives(content).some((v) => mustInclude(v, selected, { rules, tokenize: false }) === 1);
      if (!ok) missing.push(content);
      score *= ok ? 1 : 0;
    }
    return { score, detail: missing.length ? `must_include missing ${missing.map((m) => JSON.stringify(m)).join(", ")}` : "must_include 1" };
  }
  const s = await needJudge(ctx.judge).fuzzy(selected, asList(req.fuzzy_match!).join(", "), ctx.intent);
  return { score: s, detail: `fuzzy_match ${s}` };
}

function needJudge(judge: AnswerJudge | undefined): AnswerJudge {
  if (!judge) throw new FuzzyJudgeMissing();
  return judge;
}

/** A fuzzy_match needs a chat model to grade it and none was given. */
export class FuzzyJudgeMissing extends InvalidConfigError {
  constructor() {
    super(
      'this task\'s evaluation has a fuzzy_match, judged by a chat model: give the webarena env a judge model (judge: "http://host/v1#model" or a ChatModel; from the CLI: $DREAMGYM_WEBARENA_JUDGE)',
    );
  }
}
