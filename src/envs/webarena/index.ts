/**
 * WebArena and WebArena-Lite: the task files, WebArena's evaluators (string_match, url_match,
 * program_html) ported, `WebArenaSite` (a BrowserSite for a user's deployment), the env the registry
 * builds, the cold-start profile (the web meta-representation and a profile of each site), and the
 * importer of WebArena's published execution traces (render_<id>.html).
 */
export {
  loadWebArenaTasks,
  parseTaskFile,
  resolvePlaceholders,
  placeholderSites,
  missingSites,
  checkSites,
  sitesFromEnvironment,
  envVarOf,
  SITE_NAMES,
  SPLIT_FILES,
} from "./tasks.ts";
export type { WebArenaTask, WebArenaEval, WebArenaSplit, SiteName, SiteUrls, RawWebArenaTask, ProgramHtmlTarget, RequiredContents } from "./tasks.ts";
export { cleanAnswer, exactMatch, mustInclude, wordTokenize, scoreAnswer, scoreContent, FuzzyJudgeMissing } from "./string-match.ts";
export type { AnswerJudge, MatchRules } from "./string-match.ts";
export { LlmAnswerJudge, JudgeReplyError } from "./llm-judge.ts";
export { urlMatch, parseUrl } from "./url-match.ts";
export { programHtml, pyStr, unescapeHtml } from "./program-html.ts";
export { callHelper, redditPostUrl } from "./site-helpers.ts";
export type { EvalPage, MagentoAdmin, HelperContext } from "./site-helpers.ts";
export { evaluateTask } from "./evaluate.ts";
export type { EvaluateContext, EvaluationResult } from "./evaluate.ts";
export { parseStopAction, actionKind } from "./actions.ts";
export { WebArenaSite } from "./site.ts";
export type { WebArenaSiteOptions } from "./site.ts";
export { WebArenaEnv, useBrowserEnv } from "./webarena-env.ts";
export type { WebArenaEnvOptions, BrowserEnvFactory } from "./webarena-env.ts";
export { webarenaAbstraction, webarenaStartState, webarenaProfile, siteProfileOf, SITE_PROFILES, WEBARENA_FORMAT } from "./profile.ts";
export type { SiteProfile } from "./profile.ts";
export { importWebArenaResults, parseRenderHtml, parseResultLog, normalizeAction, placeholderUrl, treeToState } from "./trace-import.ts";
export type { TraceImportOptions, TraceImportReport, RenderedStep } from "./trace-import.ts";
