import { InvalidConfigError } from "../../core/index.ts";
import { callHelper, type HelperContext } from "./site-helpers.ts";
import { scoreContent, type AnswerJudge, type MatchRules } from "./string-match.ts";
import { resolvePlaceholders, type ProgramHtmlTarget } from "./tasks.ts";

/**
 * WebArena's program_html (HTMLContentEvaluator): for each target, go to its URL ("last": stay on the
 * final page; `func:…`: a helper computes it, `__last_url__` being the final page's URL), select
 * content with its locator (empty: the page's HTML; `document.…` JS run in the page, its value
 * printed as Python prints it, an exception reading as ""; `func:…`: a helper), and score it against
 * `required_contents`. The product over targets. Canonical rules unescape HTML entities first.
 * Navigation waits for the page's load event (WebArena slept 3 s).
 */
export async function programHtml(
  targets: readonly ProgramHtmlTarget[],
  ctx: HelperContext & { intent: string; rules?: MatchRules; judge?: AnswerJudge; taskId?: string },
): Promise<{ score: number; detail: string }> {
  const rules = ctx.rules ?? "webarena";
  let score = 1;
  const notes: string[] = [];
  for (const [i, target] of targets.entries()) {
    let url = target.url;
    if (url.startsWith("func:")) url = await callHelper(url.slice(5).replace(/__last_url__/g, ctx.page.url()), ctx);
    else if (url !== "last") url = resolvePlaceholders(url, ctx.sites, ctx.taskId);
    if (url !== "last") await ctx.page.goto(url);
    const selected = await locate(target, ctx, rules);
    // VAB: a locator that found nothing fails the task outright.
    if (selected === null) {
      notes.push(`target ${i + 1}: nothing selected`);
      score = 0;
      break;
    }
    const content = rules === "webarena" ? unescapeHtml(selected) : selected;
    const s = await scoreContent(content, target.required_contents, { intent: ctx.intent, rules, judge: ctx.judge });
    score *= s.score;
    notes.push(`target ${i + 1}: ${s.detail}`);
  }
  return { score, detail: `program_html ${score} (${notes.join("; ")})` };
}

async function locate(target: ProgramHtmlTarget, ctx: HelperContext, rules: MatchRules): Promise<string | null> {
  const locator = target.locator;
  if (locator.trim() === "") return ctx.page.content();
  if (locator.startsWith("document.") || locator.startsWith("[...document.")) {
    try {
      for (const prep of target.prep_actions ?? []) await ctx.page.evaluate(arrowCall(prep));
    } catch {
      // as WebArena: a failed preparation is ignored, the locator decides
    }
    try {
      return pyStr(await ctx.page.evaluate(arrowCall(locator)));
    } catch {
      return ""; // the page is not the one expected
    }
  }
  if (rules === "vab" && locator.startsWith("lambda:")) {
    try {
      const v = await ctx.page.evaluate(`(${locator.slice("lambda:".length)})()`);
      return v === null || v === undefined || v === "" || v === 0 || v === false ? null : pyStr(v);
    } catch {
      return null;
    }
  }
  if (locator.startsWith("func:")) return callHelper(locator.slice(5), ctx);
  throw new InvalidConfigError(`unknown program_html locator ${JSON.stringify(locator.slice(0, 60))}`);
}

/**
 * WebArena evaluates `() => <locator>` (Playwright for Python calls a function it is given); a string
 * here is evaluated as an expression, so the arrow is called in it.
 */
const arrowCall = (expression: string) => `(() => ${expression})()`;

/**
 * A page value as Python's `str()` prints what Playwright returns for it: None, True/False, integral
 * numbers without ".0", lists and dicts in repr form (so a locator's list of links matches as WebArena's did).
 */
export function pyStr(v: unknown): string {
  return typeof v === "string" ? v : pyRepr(v);
}

function pyRepr(v: unknown): string {
  if (v === null || v === undefined) return "None";
  if (typeof v === "boolean") return v ? "True" : "False";
  if (typeof v === "number") {
    if (Number.isNaN(v)) return "nan";
    if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
    return String(v);
  }
  if (typeof v === "string") {
    const q = v.includes("'") && !v.includes('"') ? '"' : "'";
    const body = v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t");
    return q + (q === "'" ? body.replace(/'/g, "\\'") : body) + q;
  }
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(", ")}]`;
  if (typeof v === "object")
    return `{${Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${pyRepr(k)}: ${pyRepr(x)}`)
      .join(", ")}}`;
  return String(v);
}

const NAMED: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: "\u00a0",
  copy: "©",
  reg: "®",
  trade: "™",
  hellip: "…",
  ndash: "–",
  mdash: "—",
  lsquo: "‘",
  rsquo: "’",
  ldquo: "“",
  rdquo: "”",
  euro: "€",
  pound: "£",
  yen: "¥",
  cent: "¢",
  deg: "°",
  times: "×",
  middot: "·",
  bull: "•",
};

/** HTML character references decoded (numeric ones, and the common named ones), as Python's html.unescape does for them. */
export function unescapeHtml(s: string): string {
  if (!s.includes("&")) return s;
  return s.replace(/&(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);?/g, (whole, ref: string) => {
    if (ref[0] === "#") {
      const code = ref[1] === "x" || ref[1] === "X" ? Number.parseInt(ref.slice(2), 16) : Number.parseInt(ref.slice(1), 10);
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : "\ufffd";
    }
    return NAMED[ref] ?? whole;
  });
}
