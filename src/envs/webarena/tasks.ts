import { join } from "node:path";
import { z } from "zod";
import { DataError, InvalidConfigError, readJsonFile, type Task } from "../../core/index.ts";
import { resolveDataDir } from "../data-dir.ts";

/** The sites of a WebArena deployment, as the task files name them, plus its homepage. */
export const SITE_NAMES = ["shopping", "shopping_admin", "reddit", "gitlab", "map", "wikipedia", "homepage"] as const;
export type SiteName = (typeof SITE_NAMES)[number];
/** A user's deployment: site name → base URL (e.g. `{ shopping: "http://10.0.0.5:7770" }`). */
export type SiteUrls = Partial<Record<SiteName, string>>;

/** The splits and their files in `<data>/webarena/`. */
export const SPLIT_FILES = { all: "test.raw.json", lite: "test_webarena_lite.raw.json" } as const;
export type WebArenaSplit = keyof typeof SPLIT_FILES;

// The task file's schema (fields as WebArena spells them). Unknown extra fields (notes) are dropped.
const contents = z.object({
  exact_match: z.string().optional(),
  // WebArena-Lite has one must_include that is a bare string, not a list.
  must_include: z.union([z.array(z.string()), z.string()]).optional(),
  // "N/A" marks a task that cannot be done (judged with ua_match against string_note).
  fuzzy_match: z.union([z.array(z.string()), z.string()]).optional(),
});
const programHtml = z.object({
  url: z.string().min(1),
  locator: z.string(),
  required_contents: contents.refine((c) => Object.values(c).some((v) => v !== undefined), "needs exact_match, must_include or fuzzy_match"),
  prep_actions: z.array(z.string()).optional(),
});
const evalSchema = z.object({
  eval_types: z.array(z.enum(["string_match", "url_match", "program_html"])).min(1),
  reference_answers: contents.nullable(),
  reference_url: z.string().nullable().optional(),
  url_note: z.string().optional(),
  program_html: z.array(programHtml),
  string_note: z.string().optional(),
  reference_answer_raw_annotation: z.string().optional(),
});
const taskSchema = z
  .object({
    task_id: z.number().int().min(0),
    sites: z.array(z.enum(SITE_NAMES)).min(1),
    intent: z.string().min(1),
    intent_template: z.string().optional(),
    intent_template_id: z.number().int().optional(),
    start_url: z.string().min(1),
    require_login: z.boolean().optional(),
    storage_state: z.string().nullable().optional(),
    eval: evalSchema,
    old_task_id: z.number().int().optional(),
  })
  .superRefine((t, ctx) => {
    // Each evaluator a task names needs its reference.
    const e = t.eval;
    if (e.eval_types.includes("string_match") && !e.reference_answers)
      ctx.addIssue({ code: "custom", path: ["eval", "reference_answers"], message: "string_match needs reference_answers" });
    if (e.eval_types.includes("url_match") && !e.reference_url)
      ctx.addIssue({ code: "custom", path: ["eval", "reference_url"], message: "url_match needs a reference_url" });
    if (e.eval_types.includes("program_html") && e.program_html.length === 0)
      ctx.addIssue({ code: "custom", path: ["eval", "program_html"], message: "program_html needs at least one target" });
  });
export type RawWebArenaTask = z.infer<typeof taskSchema>;
export type WebArenaEval = RawWebArenaTask["eval"];
export type RequiredContents = z.infer<typeof contents>;
export type ProgramHtmlTarget = z.infer<typeof programHtml>;

/** A WebArena task as our `Task`: id `webarena:<task_id>`, the intent as the instruction, WebArena's fields kept (URLs with placeholders). */
export interface WebArenaTask extends Task {
  task_id: number;
  split: WebArenaSplit;
  sites: SiteName[];
  start_url: string;
  storage_state: string | null;
  intent_template_id?: number;
  eval: WebArenaEval;
}

/**
 * Reads and checks a WebArena task file (a JSON list of tasks). A malformed task is one DataError
 * naming the file, the task's index and id, and the field (`[12] (task_id 12) eval.reference_url: …`).
 */
export function parseTaskFile(file: string, split: WebArenaSplit): WebArenaTask[] {
  const raw = readJsonFile(file);
  if (!Array.isArray(raw)) throw new DataError("a WebArena task file is a JSON list of tasks", { file });
  const seen = new Set<number>();
  return raw.map((item, i) => {
    const r = taskSchema.safeParse(item);
    const id = typeof (item as { task_id?: unknown })?.task_id === "number" ? ` (task_id ${(item as { task_id: number }).task_id})` : "";
    if (!r.success) {
      const issue = r.error.issues[0];
      throw new DataError(`task [${i}]${id} ${issue.path.join(".") || "(task)"}: ${issue.message}`, { file });
    }
    const t = r.data;
    if (seen.has(t.task_id)) throw new DataError(`task [${i}] task_id: ${t.task_id} is not unique`, { file });
    seen.add(t.task_id);
    return {
      id: `webarena:${t.task_id}`,
      instruction: t.intent,
      task_id: t.task_id,
      split,
      sites: t.sites,
      start_url: t.start_url,
      storage_state: t.storage_state ?? null,
      ...(t.intent_template_id !== undefined ? { intent_template_id: t.intent_template_id } : {}),
      eval: t.eval,
    };
  });
}

const cache = new Map<string, WebArenaTask[]>();

/** The tasks of a split (`all`: 812, `lite`: 165) from the data folder; parsed once per file. */
export function loadWebArenaTasks(split: string, dataDir?: string): WebArenaTask[] {
  if (!(split in SPLIT_FILES)) throw new InvalidConfigError(`unknown webarena split "${split}" (known: ${Object.keys(SPLIT_FILES).join(", ")})`);
  const name = SPLIT_FILES[split as WebArenaSplit];
  const file = join(resolveDataDir({ dataDir, subdir: "webarena", files: [name] }), name);
  let tasks = cache.get(file);
  if (!tasks) cache.set(file, (tasks = parseTaskFile(file, split as WebArenaSplit)));
  return tasks;
}

/** Placeholder in the task files → site. */
const PLACEHOLDERS: [string, SiteName][] = [
  // SHOPPING_ADMIN before SHOPPING: the one is not a prefix of the other's placeholder, but keep the longer first anyway.
  ["__SHOPPING_ADMIN__", "shopping_admin"],
  ["__SHOPPING__", "shopping"],
  ["__REDDIT__", "reddit"],
  ["__GITLAB__", "gitlab"],
  ["__MAP__", "map"],
  ["__WIKIPEDIA__", "wikipedia"],
  ["__HOMEPAGE__", "homepage"],
];

/** The sites a text's placeholders name. */
export function placeholderSites(text: string): SiteName[] {
  return PLACEHOLDERS.filter(([p]) => text.includes(p)).map(([, s]) => s);
}

/**
 * Replaces the `__SITE__` placeholders of a URL (or any text) with the deployment's URLs. A placeholder
 * whose site the user did not give is refused, naming the site (and the task, when given).
 */
export function resolvePlaceholders(text: string, sites: SiteUrls, taskId?: string): string {
  let out = text;
  for (const [p, site] of PLACEHOLDERS) {
    if (!out.includes(p)) continue;
    const url = sites[site];
    if (!url)
      throw new InvalidConfigError(`${taskId ? `${taskId} needs` : "this needs"} the ${site} site: give its URL (sites.${site}, or $${envVarOf(site)})`);
    out = out.split(p).join(url.replace(/\/+$/, ""));
  }
  return out;
}

/** The sites a task needs (its `sites`, and any its URLs name) that the user did not give. */
export function missingSites(task: WebArenaTask, sites: SiteUrls): SiteName[] {
  const needed = new Set<SiteName>([...task.sites, ...placeholderSites(JSON.stringify([task.start_url, task.eval]))]);
  return [...needed].filter((s) => !sites[s]);
}

/** WebArena's own environment variable of a site (`SHOPPING`, `SHOPPING_ADMIN`, …), so an existing WebArena setup works as it is. */
export function envVarOf(site: SiteName): string {
  return site.toUpperCase();
}

/** Checks a sites map: known names, http(s) URLs. */
export function checkSites(sites: unknown): SiteUrls {
  if (sites === undefined) return {};
  if (typeof sites !== "object" || sites === null || Array.isArray(sites))
    throw new InvalidConfigError('webarena sites: an object of site name → URL, e.g. {"shopping": "http://host:7770"}');
  const out: SiteUrls = {};
  for (const [k, v] of Object.entries(sites)) {
    if (!(SITE_NAMES as readonly string[]).includes(k)) throw new InvalidConfigError(`webarena sites: unknown site "${k}" (known: ${SITE_NAMES.join(", ")})`);
    if (typeof v !== "string" || !/^https?:\/\/[^/\s]+/i.test(v))
      throw new InvalidConfigError(`webarena sites.${k}: ${JSON.stringify(v)} is not an http(s) URL`);
    out[k as SiteName] = v.replace(/\/+$/, "");
  }
  return out;
}

/**
 * The sites WebArena's own environment variables give (SHOPPING, SHOPPING_ADMIN, REDDIT, GITLAB, MAP,
 * WIKIPEDIA, HOMEPAGE), so a shell set up for WebArena works as it is. A set variable that is not an
 * http(s) URL is an error naming it.
 */
export function sitesFromEnvironment(env: NodeJS.ProcessEnv = process.env): SiteUrls {
  const out: SiteUrls = {};
  for (const s of SITE_NAMES) {
    const v = env[envVarOf(s)];
    if (!v) continue;
    if (!/^https?:\/\/[^/\s]+/i.test(v)) throw new InvalidConfigError(`$${envVarOf(s)} is ${JSON.stringify(v)}, not an http(s) URL of the ${s} site`);
    out[s] = v.replace(/\/+$/, "");
  }
  return out;
}
