import { Hono, type Context } from "hono";
import type { Task } from "../core/index.ts";
import { plugPoint, type AgentGymSupport } from "../envs/index.ts";
import { bodyText, limitBody } from "./body.ts";
import { ServeError, type Session, type SessionManager, type SessionView } from "./sessions.ts";

/**
 * AgentGym's HTTP env protocol (WooooDyy/AgentGym's `agentenv-*` servers, as their env clients call
 * them), as a Hono sub-app the server mounts under `/agentgym`. Its two dialects: "id" (`{"id": n}`,
 * a reset names a game, `{"error": ...}`) and "env_idx" (bare ints, `[obs, null]`), which every env
 * speaks unless its entry's `agentGym` plug point says otherwise; the env's entry also gives what its
 * upstream server does its own way (which task a reset's number names, its texts). Sessions come from
 * the shared SessionManager (capacity counts both protocols), with the env's own text as
 * observations. docs/serving-agentgym.md lists the routes and where we differ from upstream.
 */

/** Largest request body accepted (an AgentGym body is an id and one action). */
const MAX_BODY = 1 << 20;

/** A number Python's server would send as a float: FastAPI writes `0.0`, not `0`. */
class PyFloat {
  constructor(readonly value: number) {}
}

/** Python's `repr(float)`: shortest digits, exponent form below 1e-4 and from 1e16, exponent of 2+ digits. */
export function pyFloatRepr(x: number): string {
  if (!Number.isFinite(x)) return "null";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, e] = Math.abs(x).toExponential().split("e");
  const exp = Number(e);
  const digits = mantissa.replace(".", "");
  const sign = x < 0 ? "-" : "";
  if (exp < -4 || exp >= 16) return `${sign}${mantissa}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  if (exp < 0) return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
  const whole = digits.padEnd(exp + 1, "0");
  return `${sign}${whole.slice(0, exp + 1)}.${whole.slice(exp + 1) || "0"}`;
}

/** JSON as FastAPI writes it (compact, UTF-8), with PyFloat numbers in Python's float form. */
export function pyJson(v: unknown): string {
  if (v instanceof PyFloat) return pyFloatRepr(v.value);
  if (Array.isArray(v)) return `[${v.map(pyJson).join(",")}]`;
  if (v !== null && typeof v === "object") {
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}:${pyJson(x)}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

function reply(c: Context, v: unknown, status = 200): Response {
  return c.body(pyJson(v), status as 200, { "content-type": "application/json" });
}

/** AgentGym's error body (`{"error": message}`, as its servers answer), plus our code, with a real status. */
function fail(c: Context, e: unknown): Response {
  const err = e instanceof ServeError ? e : new ServeError("EXECUTION_ERROR", e instanceof Error ? e.message : String(e), 500);
  return c.json({ error: err.message, code: err.code }, err.status as 400);
}

const invalid = (message: string) => new ServeError("VALIDATION_ERROR", message, 422);

async function jsonBody(c: Context): Promise<Record<string, unknown>> {
  const text = await bodyText(c);
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new ServeError("INVALID_JSON", `the request body is not valid JSON${text.trim() === "" ? " (it is empty)" : ""}`, 400);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw invalid("the request body must be a JSON object");
  return v as Record<string, unknown>;
}

/** An int as pydantic reads one: an integral number or a string of digits. */
function toInt(v: unknown): number | undefined {
  if (typeof v === "number" && Number.isSafeInteger(v)) return v;
  if (typeof v === "string" && /^\s*[+-]?\d{1,15}\s*$/.test(v)) return Number(v);
  return undefined;
}

function intField(o: Record<string, unknown>, name: string): number {
  if (o[name] === undefined || o[name] === null) throw invalid(`field "${name}" is required (an integer)`);
  const n = toInt(o[name]);
  if (n === undefined) throw invalid(`field "${name}" must be an integer, got ${JSON.stringify(o[name])}`);
  return n;
}

function optionalIntField(o: Record<string, unknown>, name: string): number | undefined {
  return o[name] === undefined || o[name] === null ? undefined : intField(o, name);
}

function stringField(o: Record<string, unknown>, name: string): string {
  if (typeof o[name] !== "string") throw invalid(`field "${name}" is required (a string)${o[name] === undefined ? "" : `, got ${JSON.stringify(o[name])}`}`);
  return o[name] as string;
}

function queryInt(c: Context, name: string): number {
  const raw = c.req.query(name);
  if (raw === undefined) throw invalid(`query parameter "${name}" is required (an integer)`);
  const n = toInt(raw);
  if (n === undefined) throw invalid(`query parameter "${name}" must be an integer, got ${JSON.stringify(raw)}`);
  return n;
}

/** One env opened through AgentGym's routes. */
interface AgentGymEnv {
  session: Session;
  /** The id dialect: what the last reset asked for (its `/detail` shows them). */
  game?: number;
  worldType?: string;
}

export function agentGymRoutes(manager: SessionManager): Hono {
  const host = manager.host;
  const own: AgentGymSupport = plugPoint(host.name, "agentGym") ?? {};
  const idDialect = own.dialect === "id";
  const idName = idDialect ? "id" : "env_idx";
  const envs = new Map<number, AgentGymEnv>();
  const app = new Hono();

  app.use(
    "*",
    limitBody(MAX_BODY, (c) => fail(c, new ServeError("PAYLOAD_TOO_LARGE", `the request body is larger than ${MAX_BODY} bytes`, 413))),
  );
  app.onError((e, c) => fail(c, e));

  /** Wraps a handler: every failure becomes one error body, never a stack. */
  const handle = (fn: (c: Context) => Promise<Response> | Response) => async (c: Context) => {
    try {
      return await fn(c);
    } catch (e) {
      return fail(c, e);
    }
  };

  /** This protocol's env `index`, or SESSION_ERROR 404 (another protocol's sessions are not reachable here). */
  const lookup = (index: number): AgentGymEnv => {
    const env = envs.get(index);
    if (env && !env.session.closed) return env;
    let why = `no AgentGym env ${index} on this server`;
    try {
      manager.get(index);
    } catch (e) {
      if (e instanceof ServeError) why = e.message;
    }
    throw new ServeError("SESSION_ERROR", idDialect ? `The id ${index} is not valid: ${why}.` : `env_idx ${index} is not valid: ${why}`, 404);
  };

  /** The session's view, read after any call in flight on it. */
  const currentView = async (env: AgentGymEnv, index: number): Promise<SessionView> => {
    const view = await env.session.run(() => env.session.view);
    if (!view) throw new ServeError("SESSION_ERROR", `env ${index} has no episode yet: reset first`, 409);
    return view;
  };

  const create = (): number => {
    const session = manager.open("raw");
    envs.set(session.index, { session });
    session.onClose = () => envs.delete(session.index);
    return session.index;
  };

  const close = async (c: Context) => {
    const index = intField(await jsonBody(c), idName);
    const env = envs.get(index);
    if (!env) return reply(c, false); // as AgentGym's servers that have /close answer an unknown id
    await env.session.close("closed by the client");
    return reply(c, true);
  };

  /** The task a reset's number names: the env's own reading (a RangeError is the client's mistake), else a task of the served split. */
  const taskOf = (n: number, field: string): Task => {
    if (own.task) {
      try {
        return own.task(n, host);
      } catch (e) {
        if (e instanceof RangeError) throw invalid(e.message);
        throw e;
      }
    }
    if (n < 0 || n >= host.tasks.length) throw invalid(`${field} ${n} is out of range: ${host.name} split ${host.split} has tasks 0..${host.tasks.length - 1}`);
    return host.tasks[n];
  };
  /** An observation as the upstream server writes it (right after a reset the reward is still null). */
  const observationOf = (v: SessionView) => (own.observation ? own.observation(v.observation, v.reward === null) : v.observation);

  app.get("/list_envs", (c) =>
    reply(
      c,
      [...envs.keys()].sort((a, b) => a - b),
    ),
  );
  app.post("/close", handle(close));
  app.get("/", (c) => reply(c, own.greeting ?? "ok"));

  if (idDialect) {
    app.post(
      "/create",
      handle((c) => reply(c, { id: create() })),
    );

    app.post(
      "/reset",
      handle(async (c) => {
        const o = await jsonBody(c);
        const index = intField(o, "id");
        const game = intField(o, "game");
        const worldType = stringField(o, "world_type");
        if (!["Text", "Embody", "Hybrid"].includes(worldType)) throw invalid('world_type must be one of "Text", "Embody" and "Hybrid"');
        const env = lookup(index);
        const task = taskOf(game, "game");
        const v = await env.session.reset({ task });
        env.game = game;
        env.worldType = worldType;
        return reply(c, { id: index, observation: observationOf(v), available_actions: v.availableActions ?? [], task_type: own.taskType?.(v.task) ?? "" });
      }),
    );

    app.post(
      "/step",
      handle(async (c) => {
        const o = await jsonBody(c);
        const index = intField(o, "id");
        const action = stringField(o, "action");
        const env = lookup(index);
        const v = await env.session.step(action).catch((e) => {
          if (e instanceof ServeError && e.status === 409 && env.session.view?.done) {
            throw new ServeError("SESSION_ERROR", `The task with environment ${index} has finished: reset to start another.`, 409);
          }
          throw e;
        });
        return reply(c, { observation: observationOf(v), reward: new PyFloat(v.reward ?? 0), available_actions: v.availableActions ?? [], done: v.done });
      }),
    );

    app.get(
      "/observation",
      handle(async (c) => {
        const index = queryInt(c, "id");
        return reply(c, observationOf(await currentView(lookup(index), index)));
      }),
    );

    app.get(
      "/available_actions",
      handle(async (c) => {
        const index = queryInt(c, "id");
        return reply(c, (await currentView(lookup(index), index)).availableActions ?? []);
      }),
    );

    app.get(
      "/detail",
      handle(async (c) => {
        const index = queryInt(c, "id");
        const env = lookup(index);
        const v = await env.session.run(() => env.session.view);
        if (!v) return reply(c, { done: false, reward: 0, deleted: false });
        return reply(c, {
          world_type: env.worldType,
          game: env.game,
          observation: observationOf(v),
          available_actions: v.availableActions ?? [],
          done: v.done,
          reward: v.reward === null ? 0 : new PyFloat(v.reward),
          deleted: false,
        });
      }),
    );
    return app;
  }

  // The env_idx dialect.
  app.post(
    "/create",
    handle((c) => reply(c, create())),
  );

  app.post(
    "/reset",
    handle(async (c) => {
      const o = await jsonBody(c);
      const index = intField(o, "env_idx");
      const sessionId = optionalIntField(o, "session_id");
      const env = lookup(index);
      const v = await env.session.reset(sessionId === undefined ? {} : { task: taskOf(sessionId, "session_id") });
      return reply(c, [observationOf(v), null]);
    }),
  );

  app.post(
    "/step",
    handle(async (c) => {
      const o = await jsonBody(c);
      const index = intField(o, "env_idx");
      const action = stringField(o, "action");
      const v = await lookup(index).session.step(action);
      return reply(c, { state: observationOf(v), reward: new PyFloat(v.reward ?? 0), done: v.done, info: null });
    }),
  );

  app.get(
    "/observation",
    handle(async (c) => {
      const index = queryInt(c, "env_idx");
      return reply(c, observationOf(await currentView(lookup(index), index)));
    }),
  );

  app.get(
    "/available_actions",
    handle(async (c) => {
      const index = queryInt(c, "env_idx");
      return reply(c, clickablesOf((await currentView(lookup(index), index)).availableActions ?? []));
    }),
  );

  app.get(
    "/instruction_text",
    handle(async (c) => {
      const index = queryInt(c, "env_idx");
      const v = await currentView(lookup(index), index);
      return reply(c, own.instructionText ? own.instructionText(v) : `Instruction:${v.task.instruction}`);
    }),
  );
  return app;
}

/**
 * The env_idx dialect's `get_available_actions` from our action list: `search[...]` is the search bar
 * (and its Search button, the page's one clickable then), `click[x]` a clickable; an env with other
 * commands lists them as they are.
 */
export function clickablesOf(actions: readonly string[]): { has_search_bar: boolean; clickables: string[] } {
  const hasSearchBar = actions.some((a) => a.startsWith("search["));
  const clickables = hasSearchBar ? ["search"] : [];
  for (const a of actions) {
    if (a.startsWith("search[")) continue;
    const m = /^click\[(.*)\]$/s.exec(a);
    clickables.push(m ? m[1] : a);
  }
  return { has_search_bar: hasSearchBar, clickables };
}
