import { Hono, type Context } from "hono";
import type { Task } from "../core/index.ts";
import { resolveDataDir } from "../envs/index.ts";
import { alfworldGames, alfworldTask, parseAlfState } from "../envs/alfworld/index.ts";
import { loadCatalogue, webshopTask, type Catalogue } from "../envs/webshop/index.ts";
import { AGENTGYM_ALFWORLD_FIRST, AGENTGYM_ALFWORLD_GAMES, AGENTGYM_ALFWORLD_VALID_TRAIN } from "./agentgym-alfworld-games.ts";
import { bodyText, limitBody } from "./body.ts";
import { ServeError, type Session, type SessionManager, type SessionView } from "./sessions.ts";

/**
 * AgentGym's HTTP env protocol (WooooDyy/AgentGym's `agentenv-webshop` and `agentenv-alfworld`
 * servers, as `WebshopEnvClient` and `AlfWorldEnvClient` call them), as a Hono sub-app the server
 * mounts under `/agentgym`. An `alfworld` host speaks the ALFWorld server's dialect (`id`, `{id}`,
 * `{"error": ...}`); every other env speaks the WebShop server's (`env_idx`, bare ints, `[obs, null]`).
 * Sessions come from the shared SessionManager (capacity counts both protocols), with the env's own
 * text as observations. docs/serving-agentgym.md lists the routes and where we differ from upstream.
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
    return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${pyJson(x)}`).join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

function reply(c: Context, v: unknown, status = 200): Response {
  return c.body(pyJson(v), status as 200, { "content-type": "application/json" });
}

/** AgentGym's error body (`{"error": message}`, as its ALFWorld and other servers answer), plus our code, with a real status. */
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
  /** ALFWorld: what the last reset asked for (its `/detail` shows them). */
  game?: number;
  worldType?: string;
}

/** The ALFWorld server's text: the first observation without TextWorld's banner paragraph, joined by one newline. */
function withoutBanner(observation: string): string {
  return observation.split("\n\n").slice(1).join("\n");
}

/** The ALFWorld server drops the "You arrive at loc N. " that TextWorld puts before a go-to's feedback. */
function withoutArrival(observation: string): string {
  return observation.startsWith("You arrive at loc ") ? observation.slice(observation.indexOf(". ") + 2) : observation;
}

export function agentGymRoutes(manager: SessionManager): Hono {
  const host = manager.host;
  const alfworld = host.name === "alfworld";
  const idName = alfworld ? "id" : "env_idx";
  const envs = new Map<number, AgentGymEnv>();
  const app = new Hono();

  app.use("*", limitBody(MAX_BODY, (c) => fail(c, new ServeError("PAYLOAD_TOO_LARGE", `the request body is larger than ${MAX_BODY} bytes`, 413))));
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
    throw new ServeError("SESSION_ERROR", alfworld ? `The id ${index} is not valid: ${why}.` : `env_idx ${index} is not valid: ${why}`, 404);
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

  app.get("/list_envs", (c) => reply(c, [...envs.keys()].sort((a, b) => a - b)));
  app.post("/close", handle(close));

  if (alfworld) {
    const tasks = alfworldTasks(host.dataDir);
    const taskType = (t: Task) => String((t as { game?: unknown }).game ?? t.id).split("/").slice(-3, -1).join("/");
    const observationOf = (v: SessionView) => {
      // A synthetic session's abstract state: its observation as the server would show it (the task line after the room at reset).
      const abs = parseAlfState(v.observation);
      if (abs) return v.reward === null ? `${abs.observation}\nYour task is to: ${abs.task}.` : abs.observation;
      return v.reward === null ? withoutBanner(v.observation) : withoutArrival(v.observation);
    };

    app.get("/", (c) => reply(c, "This is environment AlfWorld."));
    app.post("/create", handle((c) => reply(c, { id: create() })));

    app.post("/reset", handle(async (c) => {
      const o = await jsonBody(c);
      const index = intField(o, "id");
      const game = intField(o, "game");
      const worldType = stringField(o, "world_type");
      if (!["Text", "Embody", "Hybrid"].includes(worldType)) throw invalid('world_type must be one of "Text", "Embody" and "Hybrid"');
      const env = lookup(index);
      const task = tasks.byGame(game, (id) => {
        const i = host.indexOf(id);
        return i === undefined ? undefined : host.tasks[i];
      });
      const v = await env.session.reset({ task });
      env.game = game;
      env.worldType = worldType;
      return reply(c, { id: index, observation: observationOf(v), available_actions: v.availableActions ?? [], task_type: taskType(v.task) });
    }));

    app.post("/step", handle(async (c) => {
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
    }));

    app.get("/observation", handle(async (c) => {
      const index = queryInt(c, "id");
      return reply(c, observationOf(await currentView(lookup(index), index)));
    }));

    app.get("/available_actions", handle(async (c) => {
      const index = queryInt(c, "id");
      return reply(c, (await currentView(lookup(index), index)).availableActions ?? []);
    }));

    app.get("/detail", handle(async (c) => {
      const index = queryInt(c, "id");
      const env = lookup(index);
      const v = await env.session.run(() => env.session.view);
      if (!v) return reply(c, { done: false, reward: 0, deleted: false });
      return reply(c, {
        world_type: env.worldType, game: env.game, observation: observationOf(v), available_actions: v.availableActions ?? [],
        done: v.done, reward: v.reward === null ? 0 : new PyFloat(v.reward), deleted: false,
      });
    }));
    return app;
  }

  // The WebShop server's dialect, for webshop and any other env.
  const taskOf = webshopTaskLookup(manager);

  app.get("/", (c) => reply(c, "ok"));
  app.post("/create", handle((c) => reply(c, create())));

  app.post("/reset", handle(async (c) => {
    const o = await jsonBody(c);
    const index = intField(o, "env_idx");
    const sessionId = optionalIntField(o, "session_id");
    const env = lookup(index);
    const v = await env.session.reset(sessionId === undefined ? {} : { task: taskOf(sessionId) });
    return reply(c, [v.observation, null]);
  }));

  app.post("/step", handle(async (c) => {
    const o = await jsonBody(c);
    const index = intField(o, "env_idx");
    const action = stringField(o, "action");
    const v = await lookup(index).session.step(action);
    return reply(c, { state: v.observation, reward: new PyFloat(v.reward ?? 0), done: v.done, info: null });
  }));

  app.get("/observation", handle(async (c) => {
    const index = queryInt(c, "env_idx");
    return reply(c, (await currentView(lookup(index), index)).observation);
  }));

  app.get("/available_actions", handle(async (c) => {
    const index = queryInt(c, "env_idx");
    return reply(c, clickablesOf((await currentView(lookup(index), index)).availableActions ?? []));
  }));

  app.get("/instruction_text", handle(async (c) => {
    const index = queryInt(c, "env_idx");
    const v = await currentView(lookup(index), index);
    // WebShop's search page writes "Instruction: <br>", its other pages "Instruction:<br>".
    const searchPage = v.info.page === undefined ? v.observation.startsWith("WebShop [SEP]") : v.info.page === "search";
    return reply(c, `Instruction:${searchPage ? " " : ""}${v.task.instruction}`);
  }));
  return app;
}

/**
 * WebShop's `get_available_actions` from our action list: `search[...]` is the search bar (and its
 * Search button, the page's one clickable then), `click[x]` a clickable; an env with other commands
 * lists them as they are.
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

/**
 * WebShop's `session_id`: the goal index in the reference's shuffled goal list, which our catalogue
 * keeps (`webshop:<index>`), over every split; another env's: the index of a task in the host's split.
 */
function webshopTaskLookup(manager: SessionManager): (sessionId: number) => Task {
  const host = manager.host;
  let catalogue: Catalogue | undefined;
  return (k) => {
    if (host.name !== "webshop") {
      if (k < 0 || k >= host.tasks.length) throw invalid(`session_id ${k} is out of range: ${host.name} split ${host.split} has tasks 0..${host.tasks.length - 1}`);
      return host.tasks[k];
    }
    catalogue ??= loadCatalogue({ dataDir: host.dataDir });
    if (k < 0 || k >= catalogue.goals.length) throw invalid(`session_id ${k} is out of range: WebShop has goals 0..${catalogue.goals.length - 1}`);
    const own = host.indexOf(`webshop:${k}`);
    return own === undefined ? webshopTask(catalogue, k) : host.tasks[own];
  };
}

/** AgentGym's ALFWorld game indexes → our games (2420..2619 are the pack's valid_train split). */
function alfworldTasks(dataDir: string | undefined) {
  let root: string | undefined;
  return {
    byGame(game: number, hostTask: (id: string) => Task | undefined): Task {
      if (game < -AGENTGYM_ALFWORLD_GAMES || game >= AGENTGYM_ALFWORLD_GAMES) {
        throw invalid(`game ${game} is out of range: AgentGym's ALFWorld games are 0..${AGENTGYM_ALFWORLD_GAMES - 1}`);
      }
      const k = game < 0 ? game + AGENTGYM_ALFWORLD_GAMES : game; // the upstream list takes Python's negative indexes
      if (k < AGENTGYM_ALFWORLD_FIRST) {
        throw invalid(`game ${game} is one of ALFWorld's train split (AgentGym's games 0..${AGENTGYM_ALFWORLD_FIRST - 1}), which the data pack does not hold; games ${AGENTGYM_ALFWORLD_FIRST}..${AGENTGYM_ALFWORLD_GAMES - 1} are served`);
      }
      const name = AGENTGYM_ALFWORLD_VALID_TRAIN[k - AGENTGYM_ALFWORLD_FIRST];
      const own = hostTask(`alfworld:valid_train/${name}`);
      if (own) return own;
      root ??= resolveDataDir({ dataDir, subdir: "alfworld", files: ["index.json", "games"] });
      const path = `games/valid_train/${name}/game.tw-pddl`;
      const entry = alfworldGames(root).find((g) => g.game === path);
      if (!entry) throw invalid(`game ${game} (${name}) is not in the ALFWorld data pack at ${root}`);
      return alfworldTask(entry);
    },
  };
}
