import { Hono } from "hono";
import type { Context } from "hono";
import { bodyText } from "./body.ts";
import type { EnvHost, ObservationFormat } from "./env-host.ts";
import { ServeError, type ResetRequest, type Session, type SessionManager, type SessionView } from "./sessions.ts";

/**
 * The OpenEnv protocol (meta-pytorch/OpenEnv `env_server/http_server.py`, `types.py`,
 * `serialization.py`): its message and reply shapes, its validation errors in pydantic's shape, and
 * its HTTP routes. The WebSocket transport is in openenv-socket.ts.
 */

/** One pydantic-style validation error, as OpenEnv sends them (`e.errors()`). */
export interface FieldError {
  type: string;
  loc: (string | number)[];
  msg: string;
  input: unknown;
}

/** A request that failed validation: OpenEnv answers VALIDATION_ERROR with the field errors. */
export class ValidationFailed extends ServeError {
  constructor(
    readonly errors: FieldError[],
    message = "Invalid message",
    code: "VALIDATION_ERROR" | "INVALID_JSON" = "VALIDATION_ERROR",
  ) {
    super(code, message, 422);
  }
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const missing = (loc: (string | number)[], input: unknown): FieldError => ({ type: "missing", loc, msg: "Field required", input });
const extra = (loc: (string | number)[], input: unknown): FieldError => ({ type: "extra_forbidden", loc, msg: "Extra inputs are not permitted", input });
const notDict = (loc: (string | number)[], input: unknown): FieldError => ({ type: "dict_type", loc, msg: "Input should be a valid dictionary", input });

/** The reset fields dreamgym reads: OpenEnv's `seed` and `episode_id`, and its own `task_id`/`task_index`/`group_id`/`group_index`. */
export function parseReset(data: Record<string, unknown>, loc: string[] = []): ResetRequest {
  const errors: FieldError[] = [];
  const req: ResetRequest = {};
  const nonNegativeInt = (key: string) => {
    const v = data[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number" || !Number.isSafeInteger(v))
      errors.push({ type: "int_type", loc: [...loc, key], msg: "Input should be a valid integer", input: v });
    else if (v < 0) errors.push({ type: "greater_than_equal", loc: [...loc, key], msg: "Input should be greater than or equal to 0", input: v });
    else return v;
    return undefined;
  };
  const string = (key: string, max: number) => {
    const v = data[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string") errors.push({ type: "string_type", loc: [...loc, key], msg: "Input should be a valid string", input: v });
    else if (v.length > max) errors.push({ type: "string_too_long", loc: [...loc, key], msg: `String should have at most ${max} characters`, input: v });
    else return v;
    return undefined;
  };
  req.seed = nonNegativeInt("seed");
  req.episodeId = string("episode_id", 255);
  req.taskId = string("task_id", 1000);
  // The task routes' way (OpenEnv PR #726): a split and an index into it.
  req.taskIndex = nonNegativeInt("task_index") ?? nonNegativeInt("index");
  req.split = string("split", 255);
  // A dataset column passed through (TRL's reset kwargs): a string, or an integer such as a prompt's row.
  const group = data.group_id;
  if (typeof group === "number" && Number.isSafeInteger(group)) req.group = String(group);
  else if (group !== undefined && group !== null) req.group = string("group_id", 255);
  req.groupIndex = nonNegativeInt("group_index");
  if (errors.length) throw new ValidationFailed(errors);
  // Other keys are dropped, as OpenEnv drops reset kwargs the env's reset() does not take.
  return req;
}

/** The action dict (OpenEnv's Action model: `extra="forbid"`, base field `metadata`): `{ "action": "<command>" }`. */
export function parseAction(data: unknown): string {
  if (!isObject(data))
    throw new ValidationFailed([{ type: "model_type", loc: [], msg: "Input should be a valid dictionary or instance of DreamGymAction", input: data }]);
  const errors: FieldError[] = [];
  for (const [k, v] of Object.entries(data)) if (k !== "action" && k !== "metadata") errors.push(extra([k], v));
  if (!("action" in data)) errors.push(missing(["action"], data));
  else if (typeof data.action !== "string") errors.push({ type: "string_type", loc: ["action"], msg: "Input should be a valid string", input: data.action });
  if ("metadata" in data && !isObject(data.metadata)) errors.push(notDict(["metadata"], data.metadata));
  if (errors.length) throw new ValidationFailed(errors);
  return data.action as string;
}

/** The observation dict of dreamgym's envs (what OpenEnv puts in `data.observation`). */
export interface OpenEnvObservation {
  text: string;
  available_actions: string[] | null;
  instruction: string;
  task_id: string;
  step: number;
  terminated: boolean;
  truncated: boolean;
  invalid?: boolean;
  reasoning?: string;
  verified?: boolean;
  model_failed?: string;
  /** A served DreamGym run's step: where it was played ("synthetic", "real" in S2R's real phase, "eval" outside the run). */
  played_in?: "synthetic" | "real" | "eval";
}

/** `serialize_observation`: the observation without reward/done/metadata, and those two at the top. */
export function observationData(v: SessionView, synthetic: boolean): { observation: OpenEnvObservation; reward: number | null; done: boolean } {
  const observation: OpenEnvObservation = {
    text: v.observation,
    available_actions: v.availableActions ?? null,
    instruction: v.task.instruction,
    task_id: v.task.id,
    step: v.step,
    terminated: v.terminated,
    truncated: v.truncated,
  };
  if (v.info.invalid) observation.invalid = true;
  if (typeof v.info.reasoning === "string") observation.reasoning = v.info.reasoning;
  // A synthetic step's reward is the model's unless the real env's verifier confirmed it (hybrid).
  if (synthetic) observation.verified = v.info.verified === true;
  if (typeof v.info.model_failed === "string") observation.model_failed = v.info.model_failed;
  if (v.info.played_in === "synthetic" || v.info.played_in === "real" || v.info.played_in === "eval") observation.played_in = v.info.played_in;
  return { observation, reward: v.reward, done: v.done };
}

/** OpenEnv's State (`episode_id`, `step_count`) plus dreamgym's fields. `done` is true while a step would fail (no episode, or it ended). */
export function stateData(s: Session | null): { episode_id: string | null; step_count: number; task_id: string | null; total_reward: number; done: boolean } {
  return {
    episode_id: s?.episodeId ?? null,
    step_count: s?.stepCount ?? 0,
    task_id: s?.view?.task.id ?? null,
    total_reward: s?.totalReward ?? 0,
    done: s?.done ?? true,
  };
}

/** `GET /schema`: JSON schemas in pydantic's `model_json_schema()` form. */
export function schemas(synthetic: boolean) {
  const bool = (title: string, description: string) => ({ title, description, type: "boolean" });
  return {
    action: {
      title: "DreamGymAction",
      type: "object",
      additionalProperties: false,
      required: ["action"],
      description: "A text command for the env, e.g. search[red shoes] or click[buy now].",
      properties: {
        metadata: { title: "Metadata", description: "Additional metadata for the action (ignored)", type: "object", additionalProperties: true },
        action: { title: "Action", description: "The text command; an unlisted or malformed command is a no-op step with invalid: true", type: "string" },
      },
    },
    observation: {
      title: "DreamGymObservation",
      type: "object",
      additionalProperties: false,
      required: ["text", "available_actions", "instruction", "task_id", "step", "terminated", "truncated"],
      properties: {
        done: { title: "Done", description: "Whether the episode has terminated", type: "boolean", default: false },
        reward: {
          title: "Reward",
          description: "Reward signal from the last action",
          anyOf: [{ type: "boolean" }, { type: "integer" }, { type: "number" }, { type: "null" }],
          default: null,
        },
        metadata: { title: "Metadata", description: "Additional metadata for the observation (never sent)", type: "object", additionalProperties: true },
        text: { title: "Text", description: synthetic ? "The abstract state the experience model predicted" : "What the agent sees", type: "string" },
        available_actions: {
          title: "Available Actions",
          description: "The commands the env lists now (an entry may hold the slot <query> for free text), or null",
          anyOf: [{ type: "array", items: { type: "string" } }, { type: "null" }],
        },
        instruction: { title: "Instruction", description: "The task's instruction", type: "string" },
        task_id: { title: "Task Id", description: "The task's id (see GET /tasks)", type: "string" },
        step: { title: "Step", description: "Steps taken in the episode", type: "integer", minimum: 0 },
        terminated: bool("Terminated", "The episode reached a terminal state"),
        truncated: bool("Truncated", "The episode hit the step limit"),
        invalid: bool("Invalid", "The action could not be carried out (a no-op step); present only when true"),
        reasoning: { title: "Reasoning", description: "Synthetic mode: the experience model's reasoning about this step, when it gives one", type: "string" },
        verified: bool("Verified", "Synthetic mode: the reward was checked by the real env's verifier (--hybrid)"),
        model_failed: { title: "Model Failed", description: "Synthetic mode: the experience model failed this step (a no-op); why", type: "string" },
        played_in: {
          title: "Played In",
          description:
            "A served DreamGym run (--mode dreamgym): where the step was played, synthetic, real (S2R's real phase) or eval (a reset that named a task)",
          enum: ["synthetic", "real", "eval"],
          type: "string",
        },
      },
    },
    state: {
      title: "State",
      type: "object",
      additionalProperties: true,
      description: "Base class for environment state, with dreamgym's fields.",
      properties: {
        episode_id: {
          title: "Episode Id",
          description: "Unique identifier for the current episode",
          anyOf: [{ type: "string" }, { type: "null" }],
          default: null,
        },
        step_count: { title: "Step Count", description: "Number of steps taken in the current episode", type: "integer", minimum: 0, default: 0 },
        task_id: { title: "Task Id", description: "The current episode's task", anyOf: [{ type: "string" }, { type: "null" }], default: null },
        total_reward: { title: "Total Reward", description: "Sum of the episode's rewards", type: "number", default: 0 },
        done: { title: "Done", description: "No episode is running (none started, or it ended): reset before stepping", type: "boolean", default: true },
      },
    },
  };
}

/** The body of an HTTP error: FastAPI's `detail`, plus a code and a one-line message. */
export function errorBody(code: string, message: string, detail: unknown = message) {
  return { detail, code, message };
}

/** A JSON body, or `empty` when there is none; bad JSON is OpenEnv's (FastAPI's) 422. */
export async function jsonBody(c: Context, empty: unknown): Promise<unknown> {
  const text = await bodyText(c);
  if (text.trim() === "") return empty;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ValidationFailed(
      [{ type: "json_invalid", loc: ["body"], msg: "JSON decode error", input: {} }],
      `Invalid JSON: ${(e as Error).message}`,
      "INVALID_JSON",
    );
  }
}

export interface OpenEnvRouteOptions {
  format: ObservationFormat;
  version: string;
}

/** Whether sessions show abstract states or the env's own text. */
export function observationKind(host: EnvHost, format: ObservationFormat): "abstract" | "raw" {
  return host.mode !== "real" || (format === "abstract" && host.abstraction) ? "abstract" : "raw";
}

/**
 * OpenEnv's HTTP routes. As upstream, HTTP is stateless: each `/reset` builds a fresh env, resets it,
 * and closes it; `/step` and `/state` see a fresh env that was never reset. Episodes need `/ws`.
 */
export function openEnvRoutes(manager: SessionManager, o: OpenEnvRouteOptions): Hono {
  const host = manager.host;
  const synthetic = host.mode !== "real";
  const app = new Hono();

  // OpenEnv's body, plus the sessions open now (over every protocol) and the cap: what load balancers and soak runs read.
  app.get("/health", (c) => c.json({ status: "healthy", sessions: manager.size, max_sessions: manager.maxSessions }));

  app.get("/metadata", (c) =>
    c.json({
      name: host.name,
      description: host.description,
      readme_content: null,
      version: o.version,
      author: null,
      documentation_url: null,
      dreamgym: {
        env: host.name,
        mode: host.mode,
        split: host.split,
        observation: observationKind(host, o.format),
        rewards: { min: host.rewards.min, max: host.rewards.max, dense: host.rewards.dense },
        tasks: host.tasks.length,
        version: o.version,
        ...(host.experience ? { experience: host.experience } : {}),
        // A served run's plan: a trainer's groups must be `group` generations, and a batch `tasks_per_iteration` groups.
        ...(host.run
          ? {
              run: {
                group: host.run.group,
                tasks_per_iteration: host.run.tasksPerIteration,
                budget: host.run.budget,
                real_budget: host.run.realBudget,
                mode: host.run.mode,
              },
            }
          : {}),
      },
    }),
  );

  app.get("/schema", (c) => c.json(schemas(synthetic)));

  app.get("/tasks", (c) => {
    const errors: FieldError[] = [];
    const int = (key: string, dflt: number, max: number) => {
      const raw = c.req.query(key);
      if (raw === undefined) return dflt;
      const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
      if (!Number.isSafeInteger(n) || n > max)
        errors.push({ type: "int_range", loc: ["query", key], msg: `Input should be an integer from 0 to ${max}`, input: raw });
      return n;
    };
    const offset = int("offset", 0, Number.MAX_SAFE_INTEGER);
    const limit = int("limit", 1000, 10_000);
    if (errors.length) throw new ValidationFailed(errors, "Invalid query");
    return c.json({ split: host.split, total: host.tasks.length, tasks: host.tasks.slice(offset, offset + limit) });
  });

  app.post("/reset", async (c) => {
    const body = await jsonBody(c, {});
    if (!isObject(body)) throw new ValidationFailed([notDict(["body"], body)], "Invalid request");
    const req = parseReset(body, ["body"]);
    // Counts against --max-sessions while it lives (upstream's HTTP envs do not count): memory stays bounded.
    const session = manager.open(o.format);
    try {
      return c.json(observationData(await session.reset(req), synthetic));
    } finally {
      await session.close("HTTP /reset is stateless: its env is closed after the reply");
    }
  });

  app.post("/step", async (c) => {
    const body = await jsonBody(c, undefined);
    if (!isObject(body)) throw new ValidationFailed([body === undefined ? missing(["body"], null) : notDict(["body"], body)], "Invalid request");
    const errors: FieldError[] = [];
    if (!("action" in body)) errors.push(missing(["body", "action"], body));
    else if (!isObject(body.action)) errors.push(notDict(["body", "action"], body.action));
    if (body.timeout_s !== undefined && body.timeout_s !== null && !(typeof body.timeout_s === "number" && body.timeout_s > 0)) {
      errors.push({ type: "greater_than", loc: ["body", "timeout_s"], msg: "Input should be a number greater than 0", input: body.timeout_s });
    }
    if (body.request_id !== undefined && body.request_id !== null && !(typeof body.request_id === "string" && body.request_id.length <= 255)) {
      errors.push({
        type: "string_type",
        loc: ["body", "request_id"],
        msg: "Input should be a valid string of at most 255 characters",
        input: body.request_id,
      });
    }
    if (errors.length) throw new ValidationFailed(errors, "Invalid request");
    parseAction(body.action); // the action's own errors, relative to the action (as upstream)
    // Upstream steps a fresh env that was never reset; every dreamgym env refuses that, so no env is built to hear it.
    throw new ServeError("SESSION_ERROR", "HTTP /step is stateless in OpenEnv (a fresh env per request, never reset): play episodes over WS /ws", 409);
  });

  // A fresh env's state: HTTP keeps no session.
  app.get("/state", (c) => c.json(stateData(null)));

  app.get("/ws", (c) => c.json(errorBody("UPGRADE_REQUIRED", "WS /ws is a WebSocket endpoint: connect with a WebSocket client"), 426));

  return app;
}

/** A reply frame over WS. */
export type WsReply =
  | { type: "observation"; data: ReturnType<typeof observationData> }
  | { type: "state"; data: ReturnType<typeof stateData> }
  | { type: "error"; data: { message: string; code: string; errors?: FieldError[] } };

const errorReply = (code: string, message: string, errors?: FieldError[]): WsReply => ({
  type: "error",
  data: { message, code, ...(errors ? { errors } : {}) },
});

/** The keys each message type may have (OpenEnv's message models forbid others). */
const MESSAGE_KEYS = new Map<unknown, readonly string[]>([
  ["reset", ["type", "data"]],
  ["step", ["type", "data"]],
  ["state", ["type"]],
  ["close", ["type"]],
]);

/**
 * One WS message of a session: its reply, or "close". Never throws: every failure is an error reply
 * with OpenEnv's code, and the connection stays open.
 */
const MAX_DEPTH = 32;

/** Whether a parsed JSON value nests deeper than `max` (walked without recursion). */
function depthOver(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v !== "object" || v === null) continue;
    if (d > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, d + 1]);
  }
  return false;
}

export async function handleMessage(text: string, session: Session, synthetic: boolean): Promise<WsReply | "close"> {
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch (e) {
    return errorReply("INVALID_JSON", `Invalid JSON: ${(e as Error).message}`);
  }
  // Upstream ends the connection with SESSION_ERROR on JSON that is not an object (a crash in its loop); this is a validation error.
  if (!isObject(msg)) return errorReply("VALIDATION_ERROR", "Invalid message", [{ type: "model_type", loc: [], msg: "Input should be an object", input: msg }]);
  // No message of the protocol nests deep; a hostile one would overflow the stack of whatever walks it.
  if (depthOver(msg, MAX_DEPTH)) return errorReply("VALIDATION_ERROR", `Invalid message: nested deeper than ${MAX_DEPTH} levels`);
  const type = msg.type ?? "";
  const allowed = MESSAGE_KEYS.get(type);
  if (!allowed) {
    return errorReply("UNKNOWN_TYPE", `Unknown message type: ${typeof type === "string" ? type : JSON.stringify(type)}`);
  }
  try {
    const errors = Object.keys(msg)
      .filter((k) => !allowed.includes(k))
      .map((k) => extra([k], msg[k]));
    if (type === "step" && !("data" in msg)) errors.push(missing(["data"], msg));
    if ((type === "reset" || type === "step") && "data" in msg && !isObject(msg.data)) errors.push(notDict(["data"], msg.data));
    if (errors.length) throw new ValidationFailed(errors);
    switch (type) {
      case "reset":
        return {
          type: "observation",
          data: observationData(await session.reset(parseReset((msg.data as Record<string, unknown> | undefined) ?? {})), synthetic),
        };
      case "step":
        return { type: "observation", data: observationData(await session.step(parseAction(msg.data)), synthetic) };
      case "state":
        return { type: "state", data: stateData(session) };
      default:
        return "close";
    }
  } catch (e) {
    if (e instanceof ValidationFailed) return errorReply(e.code, e.message, e.errors);
    if (e instanceof ServeError) return errorReply(e.code ?? "EXECUTION_ERROR", e.message);
    return errorReply("EXECUTION_ERROR", e instanceof Error ? e.message : String(e));
  }
}
