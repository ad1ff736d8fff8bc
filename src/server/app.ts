import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { createAdaptorServer } from "@hono/node-server";
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { InvalidConfigError, PACKAGE_VERSION as version } from "../core/index.ts";
import type { ObservationFormat } from "./env-host.ts";
import { agentGymRoutes } from "./agentgym.ts";
import { limitBody } from "./body.ts";
import { foreignRequest, isLoopbackName } from "./guard.ts";
import { listenOn } from "./listen.ts";
import { errorBody, openEnvRoutes, ValidationFailed } from "./openenv.ts";
import { taskRoutes } from "./task-routes.ts";
import { OpenEnvSockets } from "./openenv-socket.ts";
import { ServeError, type SessionManager } from "./sessions.ts";

export interface ServeAppOptions {
  /** The sessions (and through them the env host) this app serves; the app owns them and closes them in `close()`. */
  manager: SessionManager;
  /** When set, every route but `GET /health` needs `Authorization: Bearer <token>` (or Basic with the token as password). */
  token?: string;
  /** Largest HTTP body and WS message, in bytes. @default 1 MiB */
  bodyLimit?: number;
  /** Seconds between WS pings; a socket that misses a pong is cut and its session closed. 0 = off. @default 20 */
  heartbeat?: number;
  /** What sessions show: abstract states (the default, what synthetic sessions show too) or the env's own text. */
  observation?: ObservationFormat;
}

/** One server's app: the Hono app for HTTP, the WebSocket side, and what `close()` shuts down. */
export interface ServeApp {
  readonly app: Hono;
  readonly manager: SessionManager;
  readonly sockets: OpenEnvSockets;
  /** The node server's `upgrade` listener (WS /ws). */
  readonly upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** Where AgentGym's routes are mounted, once they are. */
  readonly agentgymPrefix?: string;
  /** Closes every connection and session, then the env host. */
  close(): Promise<void>;
}

export const DEFAULT_BODY_LIMIT = 1024 * 1024;
/** Where AgentGym's routes are served. */
export const AGENTGYM_PREFIX = "/agentgym";

/** Whether an Authorization header carries `token` (Bearer, or Basic with it as password: what a ws://user:token@host URL sends). */
export function carriesToken(header: string | undefined, token: string): boolean {
  const m = /^\s*(bearer|basic)\s+(\S+)\s*$/i.exec(header ?? "");
  if (!m) return false;
  let given = m[2];
  if (m[1].toLowerCase() === "basic") {
    const pair = Buffer.from(given, "base64").toString("utf8");
    given = pair.slice(pair.indexOf(":") + 1);
  }
  // Digests have one length, so the comparison takes the same time whatever was sent.
  const digest = (s: string) => createHash("sha256").update(s).digest();
  return timingSafeEqual(digest(given), digest(token));
}

/**
 * The server's app: OpenEnv's routes and WS /ws over one SessionManager, behind a token (when set),
 * a body limit, and JSON errors (never a stack trace).
 */
export function createServeApp(o: ServeAppOptions): ServeApp {
  const { manager, token } = o;
  const limit = o.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const format = o.observation ?? "abstract";
  const app = new Hono();

  app.use("*", async (c, next) => {
    if (token === undefined || (c.req.method === "GET" && c.req.path === "/health")) return next();
    if (!carriesToken(c.req.header("authorization"), token)) {
      return c.json(errorBody("UNAUTHORIZED", "missing or wrong token: send Authorization: Bearer <token>"), 401, {
        "WWW-Authenticate": 'Bearer realm="dreamgym"',
      });
    }
    return next();
  });
  const openEnvLimit = limitBody(limit, (c) =>
    c.json(errorBody("PAYLOAD_TOO_LARGE", `the request body is larger than the server's limit of ${limit} bytes`), 413),
  );
  // AgentGym's routes limit bodies themselves, answering in their own error shape.
  app.use("*", (c, next) => (c.req.path.startsWith(`${AGENTGYM_PREFIX}/`) ? next() : openEnvLimit(c, next)));

  app.route("/", openEnvRoutes(manager, { format, version }));
  app.route("/", taskRoutes(manager.host));
  // AgentGym's clients join their base URL and a route with a "/", so a prefix works: http://host:port/agentgym.
  app.route(AGENTGYM_PREFIX, agentGymRoutes(manager));

  app.notFound((c) => c.json(errorBody("NOT_FOUND", `no route ${c.req.method} ${c.req.path}`, "Not Found"), 404));
  app.onError((e, c) => {
    if (e instanceof ValidationFailed) return c.json(errorBody(e.code, e.message, e.errors), 422);
    if (e instanceof ServeError) return c.json(errorBody(e.code, e.message), e.status as ContentfulStatusCode);
    if (e instanceof HTTPException) return c.json(errorBody("HTTP_ERROR", e.message || `HTTP ${e.status}`), e.status);
    // Not a client's fault: the message only (one line), never the stack.
    const message = e instanceof Error ? e.message.split("\n")[0] : String(e);
    return c.json(errorBody("EXECUTION_ERROR", `internal error: ${message}`), 500);
  });

  const sockets = new OpenEnvSockets(manager, {
    format,
    maxMessageBytes: limit,
    heartbeatSeconds: o.heartbeat ?? 20,
    authorized: (req) => token === undefined || carriesToken(req.headers.authorization, token),
  });

  let closing: Promise<void> | undefined;
  return {
    app,
    manager,
    sockets,
    upgrade: sockets.upgrade,
    agentgymPrefix: AGENTGYM_PREFIX,
    close: () =>
      (closing ??= (async () => {
        sockets.stopAccepting();
        await manager.close("the server is shutting down"); // each session closes its socket (1001) after its call in flight
        await sockets.close();
        await manager.host.close();
      })()),
  };
}

export interface RunningServer {
  /** `http://host:port`, with the port the OS gave when 0 was asked. */
  readonly url: string;
  readonly port: number;
  readonly server: Server;
  /** Graceful shutdown: stop accepting, finish requests in flight, close sockets and sessions, then the env host. */
  close(): Promise<void>;
}

/** Listens on host:port with keep-alive (the env server's app, or the view's); a port in use or a bad address is a one-line error. */
export async function startServer(o: { app: Pick<ServeApp, "app" | "upgrade" | "close">; port: number; host: string }): Promise<RunningServer> {
  // Web pages stay out (guard.ts): checked before any route, and before any WebSocket handshake.
  const loopbackOnly = isLoopbackName(o.host.toLowerCase());
  const fetch = (req: Request, ...rest: unknown[]) => {
    const body = req.headers.has("transfer-encoding") || Number(req.headers.get("content-length") ?? 0) > 0;
    const refused = foreignRequest(req.headers, req.method, loopbackOnly, body);
    if (refused) return Response.json(errorBody(refused.status === 403 ? "FORBIDDEN" : "UNSUPPORTED_MEDIA_TYPE", refused.message), { status: refused.status });
    return o.app.app.fetch(req, ...(rest as []));
  };
  const server = createAdaptorServer({ fetch }) as Server;
  server.keepAliveTimeout = 60_000; // trainers reuse connections between steps
  server.headersTimeout = 65_000;
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const refused = foreignRequest(req.headers, "GET", loopbackOnly, false);
    if (!refused) return o.app.upgrade(req, socket, head);
    const text = JSON.stringify(errorBody("FORBIDDEN", refused.message));
    socket.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`);
  });
  await listenOn(server, o.port, o.host);
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : o.port;
  const host = o.host.includes(":") ? `[${o.host}]` : o.host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    server,
    close: () =>
      (closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        await o.app.close();
        // Requests in flight have their answer now (or an error, their session closed): let it go out, then cut what remains.
        server.closeIdleConnections();
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([stopped, new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000)))]);
        clearTimeout(timer);
        server.closeAllConnections();
        await stopped;
      })()),
  };
}
