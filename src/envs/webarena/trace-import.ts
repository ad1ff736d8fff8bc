import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { DataError, type Trajectory, type Transition } from "../../core/index.ts";
import { unescapeHtml } from "./program-html.ts";
import { loadWebArenaTasks, type SiteName, type SiteUrls, type WebArenaSplit } from "./tasks.ts";

/**
 * Importer of WebArena's published execution traces (web-arena-x/webarena resources/README.md: the
 * v1/v2 result folders), as its `run.py` writes them: one `render_<task_id>.html` per task
 * (browser_env/helper_functions.py, RenderHelper: per step an `<h3 class='url'>`, the accessibility
 * tree observation in `<div class='state_obv'><pre>`, the agent's raw prediction in
 * `raw_parsed_prediction`, and the parsed action in `parsed_action`, e.g. `click [1254] where [1254]
 * is link 'My Account'`), and a log whose `[Result] (PASS|FAIL) config_files/<id>.json` lines give
 * each task's outcome (`merged_log.txt`, as scripts/html2json.py reads it; `merge_log.txt` in the
 * README). Only the id-based accessibility-tree action set is read (the published runs use it).
 */

export interface TraceImportOptions {
  /** The task file the traces were run on. @default "all" */
  split?: WebArenaSplit;
  dataDir?: string;
  /** The traced deployment's site URLs (turned into placeholders). @default recognised by WebArena's ports (7770 shop, 7780 admin, 9999 forum, 8023 GitLab, 3000 map, 8888 Wikipedia, 4399 homepage) */
  sites?: SiteUrls;
  /** Written as the trajectories' policy (e.g. the model the traces came from). @default "webarena-trace" */
  policy?: string;
}

export interface TraceImportReport {
  trajectories: Trajectory[];
  /** Render files not imported, and why (no outcome in the log, an unknown task, no steps). */
  skipped: { file: string; reason: string }[];
}

export interface RenderedStep {
  url: string;
  /** The accessibility tree as the agent saw it. */
  observation: string;
  /** The agent's raw output (its reasoning and action). */
  prediction: string;
  /** The action as WebArena printed it (`click [12] where [12] is …`). */
  parsedAction: string;
}

/** The steps of one render file (entities decoded as a browser would). A file with no step is an error. */
export function parseRenderHtml(html: string, file = "render.html"): { taskId?: number; steps: RenderedStep[] } {
  const config = /<pre>([\s\S]*?)<\/pre>\s*<h2>New Page<\/h2>/.exec(html)?.[1] ?? "";
  const idLine = /^task_id: (\d+)$/m.exec(config);
  const blocks = html.split("<h2>New Page</h2>").slice(1);
  const steps = blocks.map((b, i) => {
    const url = /<h3 class='url'><a href=[^>]*>URL: ([\s\S]*?)<\/a><\/h3>/.exec(b)?.[1];
    const obs = /<div class='state_obv'><pre>([\s\S]*?)<\/pre><div>/.exec(b)?.[1];
    const parsed = /<div class='parsed_action'[^>]*><pre>([\s\S]*?)<\/pre><\/div>/.exec(b)?.[1];
    const raw = /<div class='raw_parsed_prediction'[^>]*><pre>([\s\S]*?)<\/pre><\/div>/.exec(b)?.[1] ?? "";
    if (url === undefined || obs === undefined) throw new DataError(`step ${i + 1} has no URL or observation: not a WebArena render file`, { file });
    if (parsed === undefined) throw new DataError(`step ${i + 1} has no parsed_action: only the id-based accessibility-tree action set is read`, { file });
    return { url: unescapeHtml(url.trim()), observation: unescapeHtml(obs), prediction: unescapeHtml(raw), parsedAction: unescapeHtml(parsed).trim() };
  });
  return { ...(idLine ? { taskId: Number(idLine[1]) } : {}), steps };
}

/** Task outcomes from a run log: task id → passed. */
export function parseResultLog(text: string): Map<number, boolean> {
  const out = new Map<number, boolean>();
  for (const m of text.matchAll(/\[Result\] \((PASS|FAIL)\) \S*?(\d+)\.json/g)) out.set(Number(m[2]), m[1] === "PASS");
  return out;
}

/** `click [12] where [12] is link 'X'` → `click [12]`; `stop [answer]` and the rest as written. */
export function normalizeAction(parsed: string): string {
  if (parsed.startsWith("stop")) return parsed;
  const where = parsed.search(/ where \[\d+\] is /);
  return (where >= 0 ? parsed.slice(0, where) : parsed).trim();
}

const PORTS: Record<string, SiteName> = {
  "7770": "shopping",
  "7780": "shopping_admin",
  "9999": "reddit",
  "8023": "gitlab",
  "3000": "map",
  "8888": "wikipedia",
  "4399": "homepage",
};

/** A deployment URL with its site written as the placeholder (`__SHOPPING__/…`). */
export function placeholderUrl(url: string, sites?: SiteUrls): string {
  if (sites) {
    const bases = Object.entries(sites)
      .filter(([, u]) => u)
      .sort((a, b) => b[1]!.length - a[1]!.length);
    for (const [site, base] of bases)
      if (url === base || url.startsWith(`${base}/`) || url.startsWith(`${base}?`)) return `__${site.toUpperCase()}__${url.slice(base!.length)}`;
    return url;
  }
  const m = /^(https?:\/\/[^/:?#]+):(\d+)(.*)$/.exec(url);
  const site = m ? PORTS[m[2]] : undefined;
  if (!m || !site) return url;
  // WebArena's admin URL is the shop's host on 7780 with /admin.
  const rest = site === "shopping_admin" && /^\/admin(\/|$|\?)/.test(m[3]) ? m[3].slice(6) : m[3];
  return `__${site.toUpperCase()}__${rest}`;
}

const INTERACTIVE = new Set([
  "link",
  "button",
  "checkbox",
  "radio",
  "tab",
  "menuitem",
  "option",
  "combobox",
  "textbox",
  "searchbox",
  "spinbutton",
  "switch",
  "slider",
  "menuitemcheckbox",
  "menuitemradio",
  "treeitem",
]);
const NODE = /^\s*\[(\d+)\] (\S+) (?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")/;
/** A Python repr's escapes undone (quotes, backslash, \\n and \\t as spaces, \\xNN, \\uNNNN). */
const pyUnescape = (s: string) =>
  s.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[nt'"\\])/g, (_, e: string) =>
    e === "n" || e === "t" ? " " : e.length > 1 ? String.fromCodePoint(Number.parseInt(e.slice(1), 16)) : e,
  );

/**
 * WebArena's accessibility-tree text as our web meta-representation: `url:`, `title:` (the current
 * tab's), then one element a line — interactive ones (and any id an action of the episode names)
 * as `[id] role "name"`, other named nodes as `role "name"`; properties, unnamed nodes and text that
 * repeats its parent's name are dropped.
 */
export function treeToState(url: string, tree: string, keepIds: ReadonlySet<string> = new Set()): string {
  const lines = tree.split("\n");
  const title = /^Tab \d+ \(current\): (.*)$/m.exec(tree)?.[1] ?? /\] RootWebArea '((?:[^'\\]|\\.)*)'/.exec(tree)?.[1] ?? "";
  const out = [`url: ${url}`, `title: ${pyUnescape(title).trim()}`];
  let previous = "";
  for (const line of lines) {
    const m = NODE.exec(line);
    if (!m) continue;
    const [, id, role] = m;
    const name = pyUnescape(m[3] ?? m[4] ?? "")
      .replace(/\s+/g, " ")
      .trim();
    if (role === "RootWebArea") continue;
    const keep = INTERACTIVE.has(role) || keepIds.has(id);
    if (!keep && (name === "" || name === previous)) continue;
    const text = JSON.stringify(name);
    out.push(keep ? `[${id}] ${role} ${text}` : `${role === "StaticText" ? "text" : role} ${text}`);
    previous = name;
  }
  return out.join("\n");
}

/**
 * Reads a WebArena result folder: each `render_<id>.html` with a known outcome becomes a real
 * trajectory of the `webarena` env — the task from the task file, states in the web
 * meta-representation, WebArena's id-based actions, reward 1 at the last step when the log says
 * PASS. A render file the log has no result for, or whose task is not in the task file, is skipped
 * and reported.
 */
export function importWebArenaResults(folder: string, opts: TraceImportOptions = {}): TraceImportReport {
  if (!existsSync(folder) || !statSync(folder).isDirectory())
    throw new DataError("not a folder: give a WebArena result folder (render_<id>.html files and merged_log.txt)", { file: folder });
  const log = ["merged_log.txt", "merge_log.txt"].map((f) => join(folder, f)).find((f) => existsSync(f));
  if (!log) throw new DataError("no merged_log.txt (or merge_log.txt) with the [Result] lines: the outcomes are unknown", { file: folder });
  const results = parseResultLog(readFileSync(log, "utf8"));
  const tasks = new Map(loadWebArenaTasks(opts.split ?? "all", opts.dataDir).map((t) => [t.task_id, t]));
  const report: TraceImportReport = { trajectories: [], skipped: [] };
  const files = readdirSync(folder)
    .filter((f) => /^render_\d+\.html$/.test(f))
    .sort((a, b) => Number(a.match(/\d+/)![0]) - Number(b.match(/\d+/)![0]));
  if (files.length === 0)
    throw new DataError("no render_<id>.html trace: give a WebArena result folder (render_<id>.html files and merged_log.txt)", { file: folder });
  for (const name of files) {
    const file = join(folder, name);
    const id = Number(name.match(/\d+/)![0]);
    const task = tasks.get(id);
    const passed = results.get(id);
    if (!task) {
      report.skipped.push({ file, reason: `task ${id} is not in the ${opts.split ?? "all"} task file` });
      continue;
    }
    if (passed === undefined) {
      report.skipped.push({ file, reason: `no [Result] line for task ${id} in ${log}` });
      continue;
    }
    const { steps } = parseRenderHtml(readFileSync(file, "utf8"), file);
    if (steps.length === 0) {
      report.skipped.push({ file, reason: "no steps" });
      continue;
    }
    const actions = steps.map((s) => normalizeAction(s.parsedAction));
    const ids = new Set(actions.flatMap((a) => [...a.matchAll(/^\w+ \[(\d+)\]/g)].map((m) => m[1])));
    const states = steps.map((s) => treeToState(placeholderUrl(s.url, opts.sites), s.observation, ids));
    const last = steps.length - 1;
    const stopped = actions[last].startsWith("stop");
    const transitions: Transition[] = steps.map((s, i) => ({
      observation: states[i],
      action: actions[i],
      reward: i === last && passed ? 1 : 0,
      // A stop leaves the page as it was.
      next_observation: states[Math.min(i + 1, last)],
      terminated: i === last && stopped,
      truncated: i === last && !stopped,
      ...(s.prediction ? { info: { prediction: s.prediction } } : {}),
    }));
    report.trajectories.push({
      env: "webarena",
      task: { ...task },
      steps: transitions,
      total_reward: passed ? 1 : 0,
      success: passed,
      source: "real",
      policy: opts.policy ?? "webarena-trace",
      created_at: new Date(statSync(file).mtimeMs).toISOString(),
    });
  }
  return report;
}
