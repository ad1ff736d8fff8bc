import { existsSync, readFileSync } from "node:fs";
import { extname, join } from "node:path";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { Hono, type Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { DataError, InvalidConfigError, type StateAbstraction } from "../../core/index.ts";
import { ReplayBuffer, type EpisodeOrigin } from "../../buffer/index.ts";
import { retrieveDemos } from "../../experience/index.ts";
import { carriesToken } from "../app.ts";
import { CONTENT_TYPES, viewAssets, type ViewAssets } from "./assets.ts";
import { curriculumTree } from "./curriculum-tree.ts";
import { ownFile, RunStore } from "./run-store.ts";

export interface ViewAppOptions {
  /** The folder whose run folders (at any depth up to 4) the app lists. */
  runs: string;
  /** A replay buffer to browse and search besides the runs' own. */
  buffer?: string;
  /** When set, every route needs `Authorization: Bearer <token>` or the cookie that `/?token=<token>` sets. */
  token?: string;
  /** Where the UI's own files are. @default the package's ui/view */
  uiDir?: string;
}

export interface ViewApp {
  readonly app: Hono;
  /** No WebSockets here: an upgrade is refused. */
  readonly upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** Closes the buffers it opened. */
  close(): Promise<void>;
}

const COOKIE = "dreamgym_view_token";
const ORIGINS = new Set<EpisodeOrigin>(["offline", "real", "synthetic"]);

class NotFound extends Error {}

/** An abstraction that shows states as stored: the view retrieves as the model does, without building the env. */
const asStored = (env: string): StateAbstraction => ({ env, abstract: (s) => s, actions: () => undefined, isTerminal: () => false, profile: "" });

/**
 * `dreamgym view`'s app: a JSON API over run folders and replay buffers (read-only), and the single
 * page that shows it (Preact + htm + uPlot, as ES modules from node_modules, no build step).
 */
export function createViewApp(o: ViewAppOptions): ViewApp {
  const store = new RunStore(o.runs);
  const assets: ViewAssets = viewAssets(o.uiDir);
  const buffers = new Map<string, ReplayBuffer>();
  // The buffer given on the command line is opened now: a file that is not a buffer is an error at start.
  if (o.buffer) buffers.set(o.buffer, ReplayBuffer.open(o.buffer, { readonly: true }));
  const app = new Hono();

  app.use("*", async (c, next) => {
    if (o.token === undefined) return next();
    const given = c.req.query("token");
    if (c.req.method === "GET" && c.req.path === "/" && given !== undefined && carriesToken(`Bearer ${given}`, o.token)) {
      // A browser cannot send a header with a page load: the token from the link becomes a cookie for this site only.
      setCookie(c, COOKIE, given, { httpOnly: true, sameSite: "Strict", path: "/" });
      return c.redirect("/");
    }
    const cookie = getCookie(c, COOKIE);
    if (carriesToken(c.req.header("authorization"), o.token) || (cookie !== undefined && carriesToken(`Bearer ${cookie}`, o.token))) return next();
    return c.json({ error: "missing or wrong token: open /?token=<token> once, or send Authorization: Bearer <token>" }, 401, {
      "WWW-Authenticate": 'Bearer realm="dreamgym"',
    });
  });

  // ---- the page and its modules
  const index = () =>
    readFileSync(assets.files.get("/ui/index.html")!, "utf8").replace(
      "<!--IMPORTMAP-->",
      `<script type="importmap">${JSON.stringify({ imports: assets.importMap })}</script>`,
    );
  app.get("/", (c) => c.html(index()));
  app.get("/ui/*", (c) => serveFile(c, assets));
  app.get("/vendor/*", (c) => serveFile(c, assets));

  // ---- runs
  const runDir = (c: Context): string => {
    const id = c.req.query("run");
    if (!id) throw new InvalidConfigError("give ?run=<id> (an id from /api/runs)");
    const dir = store.dir(id);
    if (!dir) throw new NotFound(`no run ${id} under ${o.runs}`);
    return dir;
  };
  const runBuffer = (dir: string): ReplayBuffer => {
    const file = join(dir, "buffer.db");
    let b = buffers.get(file);
    if (!b) {
      if (existsSync(file) && !ownFile(dir, file)) throw new NotFound("this run's buffer.db leads out of its folder (a symlink): not served");
      try {
        b = ReplayBuffer.open(file, { readonly: true });
      } catch (e) {
        if (e instanceof DataError && /does not exist/.test(e.message))
          throw new NotFound("this run has no buffer.db (a real-mode run, or a --no-replay run without a seed buffer)");
        throw e;
      }
      buffers.set(file, b);
    }
    return b;
  };
  app.get("/api/info", (c) => c.json({ runs: o.runs, buffer: o.buffer ?? null }));
  app.get("/api/runs", (c) => c.json({ root: o.runs, runs: store.list() }));
  app.get("/api/run", (c) => {
    const dir = runDir(c);
    const id = c.req.query("run")!;
    return c.json({ info: store.info(id, dir), config: store.config(dir) });
  });
  app.get("/api/run/metrics", (c) => {
    const since = intParam(c, "since", 0);
    return c.json({ since, metrics: store.metrics(runDir(c), since) });
  });
  // The audit table whole (a line per audited iteration) and a page of its audited episodes' heads: a
  // long run audits tens of thousands (16 MB of JSON for 2,000 audit files, and as many table rows).
  app.get("/api/run/audit", (c) => {
    const offset = intParam(c, "offset", 0);
    const limit = intParam(c, "limit", AUDIT_PAGE);
    if (limit < 1 || limit > AUDIT_PAGE_MAX) throw new InvalidConfigError(`limit must be 1–${AUDIT_PAGE_MAX}, got ${limit}`);
    const { pairs, ...table } = store.audit(runDir(c));
    return c.json({ ...table, pairs: pairs.slice(offset, offset + limit), offset, pairsTotal: pairs.length });
  });
  app.get("/api/run/audit-pair", (c) => {
    const iteration = intParam(c, "iteration");
    const index = intParam(c, "index");
    const pair = store.auditPairsOf(runDir(c), iteration).find((p) => p.index === index);
    if (!pair) throw new NotFound(`no audited episode ${index} of iteration ${iteration}`);
    return c.json(pair);
  });
  app.get("/api/run/curriculum", (c) => {
    const dir = runDir(c);
    const runId = String(store.config(dir).runId);
    const generated = store.generatedTasks(dir);
    let rewards: { task: string; iteration: number; rewards: number[] }[] = [];
    let buffer: ReplayBuffer | undefined;
    try {
      buffer = runBuffer(dir);
      rewards = buffer
        .rewardsByTask(`neural@${runId}#`)
        .map((r) => ({ task: r.task, iteration: Number(r.policy.slice(r.policy.lastIndexOf("#") + 1)), rewards: r.rewards }));
    } catch (e) {
      if (!(e instanceof NotFound)) throw e;
    }
    const seedText = (id: string) => buffer?.instructionOf(id);
    return c.json(curriculumTree(generated, rewards, seedText));
  });

  // A buffer's envs, for the filter: its stats scan every row, so they are read once a minute at most.
  const envCache = new Map<ReplayBuffer, { at: number; envs: string[] }>();
  const envsOf = (buffer: ReplayBuffer): string[] => {
    const hit = envCache.get(buffer);
    if (hit && Date.now() - hit.at < 60_000) return hit.envs;
    const envs = [...new Set(buffer.stats().groups.map((g) => g.env))];
    envCache.set(buffer, { at: Date.now(), envs });
    return envs;
  };

  // ---- episodes: of the --buffer (src=buffer) or of a run's buffer (src=run, run=<id>)
  const source = (c: Context): { buffer: ReplayBuffer; runId?: string } => {
    const src = c.req.query("src") ?? "buffer";
    if (src === "buffer") {
      if (!o.buffer) throw new NotFound("no --buffer was given: choose a run's buffer");
      return { buffer: buffers.get(o.buffer)! };
    }
    if (src !== "run") throw new InvalidConfigError(`src must be buffer or run, got "${src}"`);
    const dir = runDir(c);
    return { buffer: runBuffer(dir), runId: String(store.config(dir).runId) };
  };
  app.get("/api/episodes", (c) => {
    const { buffer, runId } = source(c);
    const q = c.req.query();
    if (q.origin && !ORIGINS.has(q.origin as EpisodeOrigin)) throw new InvalidConfigError(`origin must be offline, real or synthetic, got "${q.origin}"`);
    if (q.success && q.success !== "true" && q.success !== "false") throw new InvalidConfigError(`success must be true or false, got "${q.success}"`);
    const page = buffer.episodes({
      env: q.env || undefined,
      origin: (q.origin || undefined) as EpisodeOrigin | undefined,
      task: q.task || undefined,
      success: q.success ? q.success === "true" : undefined,
      minReward: numParam(q.minReward, "minReward"),
      maxReward: numParam(q.maxReward, "maxReward"),
      // A run's own episodes only, when asked (its buffer also holds the seed it started from).
      policyPrefix: q.own === "true" && runId ? `neural@${runId}#` : undefined,
      after: q.after ? intParam(c, "after") : undefined,
      limit: q.limit ? intParam(c, "limit") : 50,
    });
    return c.json({ ...page, envs: envsOf(buffer) });
  });
  app.get("/api/episode", (c) => {
    const { buffer } = source(c);
    const found = buffer.episode(intParam(c, "id"));
    if (!found) throw new NotFound(`no episode ${c.req.query("id")}`);
    // A synthetic episode of this run that its on-policy audit replayed: where to find the pair.
    let replayed: { iteration: number; index: number } | null = null;
    const m = /^[^@]*@(.+)#(\d+)$/.exec(found.episode.policy ?? "");
    const runParam = c.req.query("run");
    const dir = runParam ? store.dir(runParam) : undefined;
    if (m && dir && String(store.config(dir).runId) === m[1]) {
      const actions = found.steps.map((s) => s.action).join("\n");
      const pair = store.auditPairsOf(dir, Number(m[2])).find(
        (p) =>
          p.task.id === found.episode.task.id &&
          p.synthetic.steps
            .map((s) => s.action)
            .join("\n")
            .startsWith(actions),
      );
      if (pair) replayed = { iteration: Number(m[2]), index: pair.index };
    }
    return c.json({ ...found, replayed });
  });

  // ---- search: the demos the experience model would retrieve for (state, action)
  app.get("/api/search", async (c) => {
    const { buffer } = source(c);
    const state = c.req.query("state") ?? "";
    const action = c.req.query("action") ?? "";
    if (state.trim() === "" && action.trim() === "") throw new InvalidConfigError("type a state, an action, or both");
    const envs = envsOf(buffer);
    const env = c.req.query("env") || envs[0];
    if (!env) return c.json({ env: null, demos: [] });
    const k = intParam(c, "k", 5);
    if (k < 1 || k > 50) throw new InvalidConfigError(`k must be from 1 to 50, got ${k}`);
    const demos = await retrieveDemos(buffer, asStored(env), { state, action }, { k, sameAction: true, realAnchor: true });
    return c.json({ env, envs, demos });
  });

  app.notFound((c) => c.json({ error: `no route ${c.req.method} ${c.req.path}` }, 404));
  app.onError((e, c) => {
    if (e instanceof NotFound) return c.json({ error: e.message }, 404);
    if (e instanceof InvalidConfigError) return c.json({ error: e.message }, 400);
    const message = e instanceof Error ? e.message.split("\n")[0] : String(e);
    return c.json({ error: `internal error: ${message}` }, 500);
  });

  let closing: Promise<void> | undefined;
  return {
    app,
    upgrade: (_req, socket) => socket.destroy(),
    close: () =>
      (closing ??= (async () => {
        for (const b of buffers.values()) b.close();
        buffers.clear();
      })()),
  };
}

function serveFile(c: Context, assets: ViewAssets) {
  const file = assets.files.get(c.req.path);
  if (!file) return c.json({ error: `no file ${c.req.path}` }, 404);
  return c.body(readFileSync(file), 200, { "Content-Type": CONTENT_TYPES[extname(file)] ?? "application/octet-stream", "Cache-Control": "no-cache" });
}

/** Audited episodes a page of `/api/run/audit` holds, by default and at most. */
const AUDIT_PAGE = 200;
const AUDIT_PAGE_MAX = 1000;

function intParam(c: Context, name: string, fallback?: number): number {
  const v = c.req.query(name);
  if (v === undefined || v === "") {
    if (fallback !== undefined) return fallback;
    throw new InvalidConfigError(`give ?${name}=<integer>`);
  }
  if (!/^\d+$/.test(v)) throw new InvalidConfigError(`${name} must be a non-negative integer, got "${v}"`);
  return Number(v);
}

function numParam(v: string | undefined, name: string): number | undefined {
  if (v === undefined || v === "") return undefined;
  const x = Number(v);
  if (!Number.isFinite(x)) throw new InvalidConfigError(`${name} must be a number, got "${v}"`);
  return x;
}
