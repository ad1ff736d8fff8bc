import { Hono } from "hono";
import type { Context } from "hono";
import type { EnvHost } from "./env-host.ts";
import { isObject, jsonBody, ValidationFailed, type FieldError } from "./openenv.ts";
import { ServeError } from "./sessions.ts";

/** The split types of the Open Reward Standard; any other split name is a validation split. */
const splitType = (split: string) => (split === "train" || split === "validation" || split === "test" ? split : "validation");

/**
 * OpenEnv's task routes (PR #726, the Open Reward Standard's): the served env's name, its split and
 * its tasks, for clients that list tasks before they reset (`{"split", "index"}` in a reset's data
 * picks one). A server serves one env and one split; the bodies are JSON, as upstream.
 */
export function taskRoutes(host: EnvHost): Hono {
  const app = new Hono();
  app.get("/list_environments", (c) => c.json([host.name]));
  // Upstream matches the env's name whatever its case; the routes here answer for the name as served and in lower case.
  const names = [...new Set([host.name, host.name.toLowerCase()])];
  /** The request's body: an object whose `split` is the served one, and `keys` besides (others are refused, as upstream's `extra="forbid"`). */
  const bodyOf = async (c: Context, keys: string[]) => {
    const body = await jsonBody(c, undefined);
    if (!isObject(body))
      throw new ValidationFailed([{ type: "dict_type", loc: ["body"], msg: "Input should be a valid dictionary", input: body ?? null }], "Invalid request");
    const errors: FieldError[] = [];
    for (const [k, v] of Object.entries(body))
      if (k !== "split" && !keys.includes(k)) errors.push({ type: "extra_forbidden", loc: ["body", k], msg: "Extra inputs are not permitted", input: v });
    if (typeof body.split !== "string")
      errors.push({ type: "string_type", loc: ["body", "split"], msg: "Input should be a valid string", input: body.split ?? null });
    for (const k of keys) {
      const v = body[k];
      if (v !== undefined && v !== null && !(typeof v === "number" && Number.isSafeInteger(v)))
        errors.push({ type: "int_type", loc: ["body", k], msg: "Input should be a valid integer", input: v });
    }
    if (errors.length) throw new ValidationFailed(errors, "Invalid request");
    if (body.split !== host.split)
      throw new ServeError("VALIDATION_ERROR", `split '${body.split}' is not served here: this server serves ${host.name} split ${host.split}`, 400);
    return body as { split: string } & Record<string, number | null | undefined>;
  };
  for (const name of names) {
    app.get(`/${name}/splits`, (c) => c.json([{ name: host.split, type: splitType(host.split) }]));
    app.post(`/${name}/tasks`, async (c) => {
      await bodyOf(c, []);
      return c.json({ tasks: host.tasks, env_name: host.name });
    });
    app.post(`/${name}/num_tasks`, async (c) => {
      await bodyOf(c, []);
      return c.json({ num_tasks: host.tasks.length });
    });
    app.post(`/${name}/task`, async (c) => {
      const { index } = await bodyOf(c, ["index"]);
      // Python's indexing, negatives from the end, as upstream's list lookup.
      const i = typeof index === "number" && index < 0 ? host.tasks.length + index : index;
      if (typeof i !== "number" || i < 0 || i >= host.tasks.length) throw new ServeError("VALIDATION_ERROR", "Invalid task index", 400);
      return c.json({ task: host.tasks[i] });
    });
    app.post(`/${name}/task_range`, async (c) => {
      const { start, stop } = await bodyOf(c, ["start", "stop"]);
      // A Python slice: missing bounds are the ends, negative ones count from the end.
      const n = host.tasks.length;
      const at = (x: number | null | undefined, dflt: number) => (x === undefined || x === null ? dflt : x < 0 ? Math.max(0, n + x) : Math.min(n, x));
      return c.json({ tasks: host.tasks.slice(at(start, 0), at(stop, n)) });
    });
  }
  return app;
}
