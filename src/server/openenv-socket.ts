import type { IncomingMessage } from "node:http";
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { createRequire } from "node:module";
import type { RawData, WebSocket, WebSocketServer } from "ws";
import type { ObservationFormat } from "./env-host.ts";
import { handleMessage } from "./openenv.ts";
import { ServeError, type Session, type SessionManager } from "./sessions.ts";

/*
 * OpenEnv's WS /ws on `ws` directly rather than through @hono/node-ws: that wrapper builds its own
 * WebSocketServer with no way to set maxPayload (an oversized frame must be refused, not buffered up
 * to ws's 100 MiB default), hides ping/pong (the heartbeat needs them), and answers a refused upgrade
 * with an empty body. Here the upgrade is checked (path, token) before any session exists.
 */

export interface OpenEnvSocketOptions {
  format: ObservationFormat;
  /** Largest message a client may send, in bytes; a larger one closes the connection with 1009. */
  maxMessageBytes: number;
  /** Seconds between pings; a socket that has not answered the previous ping by the next is cut. 0 = no heartbeat. */
  heartbeatSeconds: number;
  /** Whether the upgrade request carries the token (when one is configured). */
  authorized(req: IncomingMessage): boolean;
}

/** Messages queued on one connection before it stops reading (backpressure on a client that does not wait for replies). */
const MAX_PENDING = 64;
/**
 * Reply bytes one connection may have waiting to go out (past what the kernel's socket buffers took)
 * before it stops reading and stops answering: a client that sends and never reads would otherwise
 * have its replies pile up in the server's memory. Stopping to read is not enough: `ws` still parses
 * the chunk it has (up to 64 KiB, over a thousand small messages), so a message waits for its turn
 * to answer until the replies before it have gone out.
 */
export const MAX_UNSENT_BYTES = 1024 * 1024;
/** How long a closing handshake may take at shutdown before the socket is cut. */
const CLOSE_GRACE_MS = 2000;

/** A message's text, without copying a single buffer first. */
const rawText = (data: RawData): string => (Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)).toString("utf8");

/** A close reason fits in a control frame (123 bytes). */
const reasonText = (reason: string) =>
  Buffer.byteLength(reason) <= 123
    ? reason
    : `${Buffer.from(reason)
        .subarray(0, 119)
        .toString("utf8")
        .replace(/\ufffd$/, "")}...`;

/** The OpenEnv WebSocket side of a server: one session per connection, heartbeat, shutdown. */
export class OpenEnvSockets {
  private readonly wss: WebSocketServer;
  private readonly alive = new Map<WebSocket, boolean>();
  private readonly heartbeat: NodeJS.Timeout | undefined;
  private closing = false;

  constructor(
    private readonly manager: SessionManager,
    private readonly o: OpenEnvSocketOptions,
  ) {
    // `ws` is read when a server starts: every other command skips its load.
    this.wss = new (createRequire(import.meta.url)("ws") as typeof import("ws")).WebSocketServer({
      noServer: true,
      maxPayload: o.maxMessageBytes,
      perMessageDeflate: false,
      clientTracking: false,
    });
    if (o.heartbeatSeconds > 0) {
      this.heartbeat = setInterval(() => this.beat(), 1000 * o.heartbeatSeconds);
      this.heartbeat.unref();
    }
  }

  /** Open connections. */
  get size(): number {
    return this.alive.size;
  }

  /**
   * Over all connections: reply bytes not yet written out (a client that does not read is held at
   * `MAX_UNSENT_BYTES`), messages received, answered, and dropped unanswered (their connection had
   * gone when their turn came), and connections whose next answer waits for their replies to go out.
   */
  readonly stats = { unsentBytes: 0, received: 0, answered: 0, dropped: 0, stalled: 0 };

  /** The node server's `upgrade` listener. */
  readonly upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on("error", () => socket.destroy());
    let path: string;
    try {
      path = new URL(req.url ?? "/", "http://localhost").pathname;
    } catch {
      path = "";
    }
    if (path !== "/ws") return refuse(socket, 404, "NOT_FOUND", `no WebSocket endpoint at ${req.url}: OpenEnv's is /ws`);
    if (this.closing) return refuse(socket, 503, "SHUTTING_DOWN", "the server is shutting down");
    if (!this.o.authorized(req))
      return refuse(socket, 401, "UNAUTHORIZED", "missing or wrong token: send Authorization: Bearer <token>", {
        "WWW-Authenticate": 'Bearer realm="dreamgym"',
      });
    this.wss.handleUpgrade(req, socket, head, (ws) => this.connect(ws));
  };

  /** Pings every socket; one that did not answer the previous ping is half-open: cut it (its session closes). */
  beat(): void {
    const silent: WebSocket[] = [];
    for (const [ws, alive] of this.alive) {
      // A paused socket (the server is behind on its messages) does not read pongs: busy, not dead.
      if (ws.isPaused) continue;
      if (!alive) {
        silent.push(ws);
        continue;
      }
      this.alive.set(ws, false);
      ws.ping();
    }
    // Cut after the loop's next read of the sockets: timers run before it, so a beat that comes late
    // (the process stalled past it) would otherwise cut a socket whose pong came during the stall.
    if (silent.length > 0)
      setImmediate(() => {
        for (const ws of silent) if (this.alive.get(ws) === false && !ws.isPaused) ws.terminate();
      });
  }

  private connect(ws: WebSocket): void {
    ws.on("error", () => {}); // a protocol error (e.g. an oversized frame: ws closes with 1009) ends the connection, not the server
    let session: Session;
    try {
      session = this.manager.open(this.o.format);
    } catch (e) {
      // As upstream: the socket is accepted, told why in one error frame, and closed (1000).
      const capacity = e instanceof ServeError && e.code === "CAPACITY_REACHED";
      const data = capacity
        ? { message: e.message, code: "CAPACITY_REACHED", active_sessions: this.manager.size, max_sessions: this.manager.maxSessions }
        : {
            message: `Environment factory '${this.manager.host.name}' failed to create instance: ${e instanceof Error ? e.message : String(e)}`,
            code: "FACTORY_ERROR",
            factory_name: this.manager.host.name,
          };
      ws.send(JSON.stringify({ type: "error", data }));
      ws.close(1000);
      return;
    }
    this.alive.set(ws, true);
    ws.on("pong", () => {
      if (this.alive.has(ws)) this.alive.set(ws, true);
    });
    // The session ends with the socket (a clean close, a cut, a terminated half-open socket) ...
    ws.on("close", () => {
      this.alive.delete(ws);
      void session.close("the connection closed");
    });
    session.connected = true;
    // Replies go out in message order (OpenEnv has no request ids): each message waits for the one before.
    let chain: Promise<void> = Promise.resolve();
    let pending = 0;
    /** Set while the next answer waits for the replies before it to go out. */
    let drained: (() => void) | undefined;
    const drain = () => {
      drained?.();
      drained = undefined;
    };
    ws.on("close", drain);
    // ... and the socket with the session (the idle reaper, shutdown), once the replies of the
    // messages already received are sent (a step in flight at shutdown still gets its answer).
    session.onClose = (reason) => {
      drain(); // a message held for a client that does not read waits no longer
      void chain.then(() => {
        if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(this.closing ? 1001 : 1000, reasonText(reason));
      });
    };
    const synthetic = this.manager.host.mode !== "real";
    // Reading stops while too many messages wait for an answer, or too many reply bytes wait to go out;
    // answering stops while the replies wait (a client that never reads gets no more work done for it).
    let unsent = 0;
    const mayRead = () => pending < MAX_PENDING && unsent < MAX_UNSENT_BYTES;
    const send = (text: string) => {
      const size = Buffer.byteLength(text);
      unsent += size;
      this.stats.unsentBytes += size;
      ws.send(text, () => {
        unsent -= size;
        this.stats.unsentBytes -= size;
        if (unsent < MAX_UNSENT_BYTES) drain();
        if (mayRead() && ws.isPaused) ws.resume();
      });
      if (!mayRead()) ws.pause();
    };
    const answer = async (text: string) => {
      if (unsent >= MAX_UNSENT_BYTES && ws.readyState === ws.OPEN && !session.closed) {
        this.stats.stalled++;
        await new Promise<void>((resolve) => (drained = resolve));
        this.stats.stalled--;
      }
      // No one can read the answer of a message whose connection has gone (a cut flood): it is not computed.
      const gone = ws.readyState !== ws.OPEN;
      const reply = gone ? undefined : await handleMessage(text, session, synthetic);
      if (gone) this.stats.dropped++;
      else this.stats.answered++;
      pending--;
      if (mayRead() && ws.isPaused) ws.resume();
      if (reply === "close") await session.close("closed by the client");
      else if (reply && ws.readyState === ws.OPEN) send(JSON.stringify(reply));
    };
    // handleMessage answers every failure; anything else is a bug: drop this connection, not the server.
    const answerOrDrop = (text: string) => answer(text).catch(() => ws.terminate());
    ws.on("message", (data: RawData) => {
      const text = rawText(data);
      this.stats.received++;
      // With nothing in flight (a client that waits for each reply) the message is answered at once, not chained.
      chain = pending++ === 0 ? answerOrDrop(text) : chain.then(() => answerOrDrop(text));
      if (!mayRead()) ws.pause();
    });
  }

  /** Refuses new connections and stops the heartbeat; sessions closed from now on close their sockets with 1001 (going away). */
  stopAccepting(): void {
    this.closing = true;
    clearInterval(this.heartbeat);
  }

  /** Closes every open connection (1001), cutting those that do not finish the closing handshake in time. */
  async close(): Promise<void> {
    this.stopAccepting();
    const sockets = [...this.alive.keys()];
    const closed = sockets.map((ws) => new Promise<void>((resolve) => (ws.readyState === ws.CLOSED ? resolve() : ws.once("close", () => resolve()))));
    for (const ws of sockets) ws.close(1001, "the server is shutting down");
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS)));
    await Promise.race([Promise.all(closed), grace]);
    clearTimeout(timer);
    for (const ws of sockets) ws.terminate();
    this.wss.close();
  }
}

/** Answers a refused upgrade over the raw socket with a JSON error body. */
function refuse(socket: Duplex, status: number, code: string, message: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify({ detail: message, code, message });
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}`,
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(body)}`,
    "Connection: close",
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.end(`${head.join("\r\n")}\r\n\r\n${body}`);
}
