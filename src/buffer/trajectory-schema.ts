import { createHash } from "node:crypto";
import type { TrajectoryRules, Trajectory, Transition } from "../core/index.ts";

/**
 * Checks a parsed JSONL value against the trajectory format (docs/data-formats.md); throws saying which field is
 * wrong. With `rules`, the env must be a known one and rewards in its range.
 */
export function parseTrajectory(value: unknown, rules?: TrajectoryRules, corrected?: (message: string) => void): Trajectory {
  const fail = (what: string): never => {
    throw new Error(`not a trajectory: ${what}`);
  };
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail("expected a JSON object");
  const v = value as Record<string, unknown>;
  if (typeof v.env !== "string" || v.env === "") fail('"env" must be a non-empty string');
  const task = v.task as Record<string, unknown> | undefined;
  if (typeof task !== "object" || task === null) fail('"task" must be an object');
  if (typeof task!.id !== "string") fail('"task.id" must be a string');
  if (typeof task!.instruction !== "string") fail('"task.instruction" must be a string');
  if (rules && !rules.envs.includes(v.env as string)) fail(`unknown env ${JSON.stringify(v.env).slice(0, 80)} (known: ${rules.envs.join(", ")})`);
  const spec = rules?.rewards(v.env as string);
  const [lo, hi] = spec ? [spec.min, spec.max] : [-Infinity, Infinity];
  const inRange = (r: number) => r >= lo && r <= hi;
  if (!Array.isArray(v.steps)) fail('"steps" must be an array');
  const steps = v.steps as unknown[];
  if (steps.length === 0) fail('"steps" is empty (a trajectory has at least one step)');
  steps.forEach((s, i) => {
    const st = s as Record<string, unknown>;
    if (typeof st !== "object" || st === null) fail(`steps[${i}] must be an object`);
    for (const k of ["observation", "action", "next_observation"]) if (typeof st[k] !== "string") fail(`steps[${i}].${k} must be a string`);
    if (typeof st.reward !== "number" || !Number.isFinite(st.reward)) fail(`steps[${i}].reward must be a finite number`);
    if (!inRange(st.reward as number)) fail(`steps[${i}].reward ${st.reward} is outside ${v.env}'s reward range [${lo}, ${hi}]`);
    for (const k of ["terminated", "truncated"]) if (typeof st[k] !== "boolean") fail(`steps[${i}].${k} must be a boolean`);
    if (st.reasoning !== undefined && typeof st.reasoning !== "string") fail(`steps[${i}].reasoning must be a string`);
    if (st.info !== undefined && (typeof st.info !== "object" || st.info === null)) fail(`steps[${i}].info must be an object`);
  });
  const notes: string[] = []; // said once the whole line is known good
  const sum = steps.reduce((a: number, s) => a + ((s as Transition).reward ?? 0), 0);
  let total = v.total_reward ?? sum;
  if (typeof total !== "number" || !Number.isFinite(total)) fail('"total_reward" must be a finite number');
  // Outcome rewards: the total is one step's reward; dense rewards add up over the steps.
  const [tlo, thi] = spec?.dense ? [Math.min(0, lo * steps.length), Math.max(0, hi * steps.length)] : [lo, hi];
  if (!((total as number) >= tlo && (total as number) <= thi))
    fail(`"total_reward" ${total} is outside ${v.env}'s range for ${steps.length} steps [${tlo}, ${thi}]`);
  // Within range, for a known env the steps are still the record: a total that disagrees with them is recomputed, and said.
  if (rules && Math.abs((total as number) - sum) > 1e-9 * Math.max(1, Math.abs(sum))) {
    notes.push(`"total_reward" ${total} disagrees with its steps' rewards (sum ${sum}): recomputed as ${sum}`);
    total = sum;
  }
  if (v.success !== undefined && typeof v.success !== "boolean") fail('"success" must be a boolean');
  const source = v.source ?? "real";
  if (source !== "real" && source !== "synthetic") fail('"source" must be "real" or "synthetic"');
  if (v.policy !== undefined && v.policy !== null && typeof v.policy !== "string") fail('"policy" must be a string');
  // For a known env success is its rule on the total, whatever the file says (a file's "success": true
  // on all-zero rewards would count as a demonstration); a disagreement is said.
  let success = (v.success as boolean | undefined) ?? (rules ? rules.success(v.env as string, total as number) : (total as number) >= 1);
  if (rules && success !== rules.success(v.env as string, total as number)) {
    success = !success;
    notes.push(`"success" ${!success} disagrees with ${v.env}'s rule on the total reward ${total}: ${success}`);
  }
  const created = v.created_at ?? new Date(0).toISOString();
  if (typeof created !== "string") fail('"created_at" must be a string');
  for (const n of notes) corrected?.(n);
  return wellFormed({
    env: v.env as string,
    task: task as Trajectory["task"],
    steps: steps as Transition[],
    total_reward: total as number,
    success,
    source: source as Trajectory["source"],
    ...(typeof v.policy === "string" ? { policy: v.policy } : {}),
    created_at: created as string,
  });
}

/**
 * Lone surrogates (not text: JSON can carry them, UTF-8 cannot) as U+FFFD, as the buffer stores
 * them: the content id then matches what is stored, so an export and re-import adds no duplicate.
 */
function wellFormed<T>(value: T): T {
  if (typeof value === "string") return (SURROGATE.test(value) ? value.replace(LONE_SURROGATE, "\ufffd") : value) as T;
  // Arrays and objects are copied only when something in them changes (almost never): as before, then.
  if (Array.isArray(value)) {
    for (const x of value) if (wellFormed(x) !== x) return value.map(wellFormed) as T;
    return value;
  }
  if (typeof value === "object" && value !== null) {
    const o = value as Record<string, unknown>;
    for (const k of Object.keys(o)) if (wellFormed(o[k]) !== o[k]) return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, wellFormed(x)])) as T;
    return value;
  }
  return value;
}
const SURROGATE = /[\ud800-\udfff]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * A trajectory's content id: SHA-256 of its content without `created_at`, so re-importing a file,
 * or the same episode recorded twice, does not duplicate experience.
 */
export function trajectoryContentId(t: Trajectory): string {
  // The JSON of [env, task, source, policy, total_reward, success, [[observation, action, reward,
  // next_observation, terminated, truncated, reasoning, info], …]], written out piece by piece so that
  // a page is escaped once: a step's observation is mostly the step before's next observation (an
  // import thread spent a fifth of its time here). For data as JSON gives it and the project makes it,
  // the text one stringify of the array gives, to the byte; a toJSON that reads its key would be told
  // another key here.
  let json = `[${toJson(t.env)},${toJson(t.task)},${toJson(t.source)},${toJson(t.policy ?? null)},${toJson(t.total_reward)},${toJson(t.success)},[`;
  let lastPage: unknown;
  let lastPageJson = "";
  for (let i = 0; i < t.steps.length; i++) {
    if (i > 0) json += ",";
    if (!(i in t.steps)) {
      json += "null"; // a hole, as map keeps it and stringify writes it
      continue;
    }
    const s = t.steps[i];
    const page = s.observation; // each field read once, as a stringify of the step reads it
    const nextPage = s.next_observation;
    const observation = typeof page === "string" && page === lastPage ? lastPageJson : toJson(page);
    const next = nextPage === page && typeof page === "string" ? observation : toJson(nextPage);
    lastPage = nextPage;
    lastPageJson = next;
    json += `[${observation},${toJson(s.action)},${toJson(s.reward)},${next},${toJson(s.terminated)},${toJson(s.truncated)},${toJson(s.reasoning ?? null)},${toJson(s.info ?? null)}]`;
  }
  return createHash("sha256").update(`${json}]]`).digest("hex");
}
/** A value's JSON as an array element: what JSON.stringify leaves out (undefined, a function) is null there. */
const toJson = (v: unknown): string => JSON.stringify(v) ?? "null";
