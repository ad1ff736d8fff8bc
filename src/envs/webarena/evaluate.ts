import { programHtml } from "./program-html.ts";
import type { EvalPage, MagentoAdmin } from "./site-helpers.ts";
import { scoreAnswer, type AnswerJudge, type MatchRules } from "./string-match.ts";
import { resolvePlaceholders, type SiteUrls, type WebArenaTask } from "./tasks.ts";
import { urlMatch } from "./url-match.ts";

export interface EvaluateContext {
  /** The final page (url_match reads its URL; program_html navigates and reads it). */
  page: EvalPage;
  /** The agent's `stop [answer]` text ("" when it stopped without one or was cut off). */
  answer: string;
  sites: SiteUrls;
  /** Grades fuzzy_match and "N/A" reasons. */
  judge?: AnswerJudge;
  /** @default "webarena" for split all, "vab" for lite */
  rules?: MatchRules;
  magentoAdmin?: MagentoAdmin;
}

export interface EvaluationResult {
  /** The product of the evaluators' scores (WebArena's EvaluatorComb): 1 only when each passed. */
  score: number;
  parts: { type: string; score: number; detail: string }[];
}

/**
 * Runs a task's evaluators in the order its `eval_types` lists them and multiplies their scores.
 * url_match reads the final URL before program_html navigates away from it.
 */
export async function evaluateTask(task: WebArenaTask, ctx: EvaluateContext): Promise<EvaluationResult> {
  const rules = ctx.rules ?? (task.split === "lite" ? "vab" : "webarena");
  // Placeholders anywhere in the eval config (URLs, and contents such as "__GITLAB__/convexegg/chatgpt")
  // become the deployment's URLs, as WebArena's generate_test_data.py rewrites the whole file.
  const e = resolveDeep(task.eval, ctx.sites, task.id);
  const parts: EvaluationResult["parts"] = [];
  let score = 1;
  for (const type of e.eval_types) {
    let r: { score: number; detail: string };
    if (type === "string_match") {
      r = await scoreAnswer(ctx.answer, e.reference_answers!, { intent: task.instruction, stringNote: e.string_note, rules, judge: ctx.judge });
      r.detail = `string_match ${r.score} (${r.detail})`;
    } else if (type === "url_match") {
      r = urlMatch(ctx.page.url(), e.reference_url!, e.url_note, rules);
    } else {
      r = await programHtml(e.program_html, {
        page: ctx.page,
        sites: ctx.sites,
        magentoAdmin: ctx.magentoAdmin,
        intent: task.instruction,
        rules,
        judge: ctx.judge,
        taskId: task.id,
      });
    }
    parts.push({ type, ...r });
    score *= r.score;
  }
  return { score, parts };
}

function resolveDeep<T>(value: T, sites: SiteUrls, taskId: string): T {
  if (typeof value === "string") return (value.includes("__") ? resolvePlaceholders(value, sites, taskId) : value) as T;
  if (Array.isArray(value)) return value.map((v) => resolveDeep(v, sites, taskId)) as T;
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveDeep(v, sites, taskId)])) as T;
  return value;
}
