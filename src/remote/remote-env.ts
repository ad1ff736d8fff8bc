import { createRequire } from "node:module";
import type WebSocket from "ws";
import {
  ClosedEnvironmentError,
  DreamGymError,
  ResetNeededError,
  timeoutAfterRead,
  type Action,
  type Env,
  type ResetOptions,
  type ResetResult,
  type StepInfo,
  type StepResult,
  type Task,
} from "../core/index.ts";

/** Something went wrong between us and an env server: its URL, and the server's error code when it sent one. */
export class RemoteEnvError extends DreamGymError {
  readonly url: string;
  /** The server's code (OpenEnv's: CAPACITY_REACHED, EXECUTION_ERROR, ...), when the server answered with an error. */
  readonly serverCode?: string;
  constructor(url: string, message: string, serverCode?: string) {
    super(`env server ${url}: ${message}`, "REMOTE_ENV_ERROR");
    this.url = url;
    this.serverCode = serverCode;
  }
}

export interface RemoteEnvOptions {
  /** Seconds to connect, and for each reply. A late reply fails the call and drops the connection. @default 60 */
  timeout?: number;
  /** Bearer token, sent on the WebSocket upgrade. @default $DREAMGYM_TOKEN */
  token?: string;
  /** The server's tasks (e.g. from `remoteEnvInfo`): `info.task` of a reset is the full task of the id the server names. */
  tasks?: readonly Task[];
}

/** Whether `url` names an env server (ws://, wss://, http://, https://) rather than a registered env. */
export function isEnvServerUrl(url: string): boolean {
  return /^(wss?|https?):\/\/./i.test(url);
}

/** The server's base URL for HTTP: ws → http, wss → https, no trailing `/` (nor `/ws`). */
export function httpBase(url: string): string {
  const u = baseOf(url);
  return u.replace(/^ws(s?):\/\//i, "http$1://");
}

/**
 * The 401 reason, for the upgrade and the HTTP routes alike. Clients (`env eval`, `collect`, `train`, the
 * library) take the token only from `DREAMGYM_TOKEN` or the `token` option: `--token-file` is the server's.
 */
export function unauthorized(token: string | undefined): string {
  return `401 unauthorized: the server ${token ? "refused the token" : "wants a token"} (set DREAMGYM_TOKEN to the server's token)`;
}

/** The server's WebSocket endpoint, as OpenEnv's client makes it: http → ws, https → wss, then `/ws`. */
export function wsEndpoint(url: string): string {
  return `${baseOf(url).replace(/^http(s?):\/\//i, "ws$1://")}/ws`;
}

function baseOf(url: string): string {
  if (!isEnvServerUrl(url)) throw new RemoteEnvError(url, "not an env server URL: give ws://, wss://, http:// or https://host:port");
  // A URL given as the endpoint itself (…/ws) means the same server.
  return url.trim().replace(/\/+$/, "").replace(/\/ws$/, "");
}

/** The observation dict of dreamgym's OpenEnv server (docs/serving.md). */
interface WireObservation {
  text?: unknown;
  available_actions?: unknown;
  instruction?: unknown;
  task_id?: unknown;
  terminated?: unknown;
  truncated?: unknown;
  invalid?: unknown;
  reasoning?: unknown;
  verified?: unknown;
  model_failed?: unknown;
  played_in?: unknown;
}

interface Pending {
  what: string;
  resolve(data: Record<string, unknown>): void;
  reject(e: Error): void;
  /** Cancels its timeout. */
  cancel(): void;
}

/**
 * An env served by an OpenEnv-protocol server (`dreamgym serve`), over its `/ws` endpoint: one
 * connection is one server-side session. It connects on the first reset (or in `connect`); a reset
 * after the connection dropped (e.g. the server reaped the idle session) opens a new one, while a
 * step cannot (its episode lived in the dropped session) and fails. Every failure is a
 * RemoteEnvError naming the URL; nothing waits longer than the timeout.
 */
export class RemoteEnv implements Env {
  readonly url: string;
  private readonly timeoutMs: number;
  private readonly token?: string;
  private readonly tasks = new Map<string, Task>();
  private ws: WebSocket | null = null;
  private pending: Pending | null = null;
  /** Why the connection is unusable (set when it drops), until a reset reconnects. */
  private broken: string | null = null;
  /** We dropped the connection (a late reply, a bad frame): the server is not trusted with a retry. */
  private gaveUp = false;
  /** An error the server sent when nothing was asked (e.g. CAPACITY_REACHED right after the upgrade). */
  private unsolicited: { message: string; code?: string } | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private actions: string[] | undefined;
  private episode: "none" | "running" | "done" = "none";
  private closed = false;

  constructor(url: string, opts: RemoteEnvOptions = {}) {
    this.url = wsEndpoint(url);
    this.timeoutMs = 1000 * (opts.timeout ?? 60);
    this.token = opts.token ?? (process.env.DREAMGYM_TOKEN || undefined);
    for (const t of opts.tasks ?? []) this.tasks.set(t.id, t);
  }

  /** A RemoteEnv already connected (so a dead server fails here, not at the first reset). */
  static async connect(url: string, opts: RemoteEnvOptions = {}): Promise<RemoteEnv> {
    const env = new RemoteEnv(url, opts);
    await env.serial(() => env.open());
    return env;
  }

  reset(opts: ResetOptions = {}): Promise<ResetResult> {
    return this.serial(async () => {
      if (this.closed) throw new ClosedEnvironmentError();
      const fresh = !this.ws || this.broken !== null;
      if (fresh) await this.open();
      const data: Record<string, unknown> = {};
      if (opts.seed !== undefined) data.seed = opts.seed;
      if (opts.task) data.task_id = opts.task.id;
      if (opts.group !== undefined) data.group_id = opts.group.id;
      if (opts.group?.index !== undefined) data.group_index = opts.group.index;
      this.episode = "none";
      const message = { type: "reset", data };
      // A reset starts afresh, so one that meets a connection the server has just closed (an idle
      // session reaped, a server restarted) may safely try again on a new one.
      const reply = await this.request("reset", message).catch(async (e) => {
        if (fresh || this.gaveUp || (e as RemoteEnvError).serverCode !== undefined) throw e;
        await this.open();
        return this.request("reset", message);
      });
      const obs = observationOf(reply, this.url);
      this.actions = actionsOf(obs);
      this.episode = "running";
      const id = typeof obs.task_id === "string" ? obs.task_id : (opts.task?.id ?? "unknown");
      const task = opts.task ?? this.tasks.get(id) ?? { id, instruction: typeof obs.instruction === "string" ? obs.instruction : "" };
      return { observation: String(obs.text ?? ""), info: { task } };
    });
  }

  step(action: Action): Promise<StepResult> {
    return this.serial(async () => {
      if (this.closed) throw new ClosedEnvironmentError();
      if (this.episode !== "running") throw new ResetNeededError();
      if (this.broken) throw new RemoteEnvError(this.url, `${this.broken}; the episode is lost (reset starts a new one)`);
      const reply = await this.request("step", { type: "step", data: { action } });
      const obs = observationOf(reply, this.url);
      this.actions = actionsOf(obs);
      const terminated = obs.terminated === true;
      const truncated = obs.truncated === true;
      if (terminated || truncated || reply.done === true) this.episode = "done";
      const info: StepInfo = {};
      if (obs.invalid === true) info.invalid = true;
      if (typeof obs.reasoning === "string") info.reasoning = obs.reasoning;
      if (obs.verified === true) info.verified = true;
      if (typeof obs.model_failed === "string") info.model_failed = obs.model_failed;
      if (obs.played_in === "synthetic" || obs.played_in === "real" || obs.played_in === "eval") info.played_in = obs.played_in;
      const reward = typeof reply.reward === "number" ? reply.reward : Number(reply.reward ?? 0);
      if (!Number.isFinite(reward)) throw new RemoteEnvError(this.url, `step reply has no numeric reward (${JSON.stringify(reply.reward)})`);
      return { observation: String(obs.text ?? ""), reward, terminated, truncated: truncated || (reply.done === true && !terminated), info };
    });
  }

  availableActions(): string[] | undefined {
    return this.actions;
  }

  /** Tells the server (so it frees the session at once) and closes the socket. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue.catch(() => {});
    const ws = this.ws;
    this.ws = null;
    if (!ws || ws.readyState === ws.CLOSED) return;
    const gone = new Promise<void>((resolve) => ws.once("close", () => resolve()));
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ type: "close" }), () => {});
    ws.close(1000);
    // A server that never completes the closing handshake does not hold us up.
    const timer = setTimeout(() => ws.terminate(), Math.min(this.timeoutMs, 5000));
    await gone;
    clearTimeout(timer);
  }

  /** Calls run one at a time (the Env contract has one caller; this keeps a stray overlap from mixing replies). */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn);
    this.queue = next.catch(() => {});
    return next;
  }

  private open(): Promise<void> {
    this.drop();
    this.broken = null;
    this.gaveUp = false;
    this.unsolicited = null;
    return new Promise<void>((resolve, reject) => {
      // `ws` is read at the first connection: every other command skips its load.
      const ws = new (createRequire(import.meta.url)("ws") as typeof WebSocket)(this.url, {
        headers: this.token ? { authorization: `Bearer ${this.token}` } : undefined,
        maxPayload: 100 * 1024 * 1024,
        // Frames uncompressed (dreamgym's server sends them so; uvicorn's compresses where offered): a
        // compressed reply is inflated on the thread pool, a message only a turn of the loop after the
        // read, later than the request timeout waits for a reply that came in time (a stalled process).
        perMessageDeflate: false,
      });
      this.ws = ws;
      let opened = false;
      // Not ws's handshakeTimeout (a socket timer, run before the loop reads the socket): this acts
      // after that read, so a process stalled past it takes an acceptance that came in time.
      const cancelTimeout = timeoutAfterRead(this.timeoutMs, () => {
        if (opened || this.ws !== ws) return;
        reject(new RemoteEnvError(this.url, "cannot connect: Opening handshake has timed out"));
        ws.terminate();
      });
      ws.on("open", () => {
        opened = true;
        cancelTimeout();
        resolve();
      });
      ws.on("unexpected-response", (_req, res) => {
        const why =
          res.statusCode === 401 ? unauthorized(this.token) : `HTTP ${res.statusCode} instead of a WebSocket upgrade (is it a dreamgym/OpenEnv env server?)`;
        res.resume();
        ws.terminate();
        if (!opened) reject(new RemoteEnvError(this.url, `cannot connect: ${why}`));
      });
      ws.on("error", (e: NodeJS.ErrnoException) => {
        if (!opened) reject(new RemoteEnvError(this.url, `cannot connect: ${connectError(e)}`));
        else this.fail(`connection error: ${e.message}`);
      });
      ws.on("close", (code: number, reason: Buffer) => {
        cancelTimeout();
        if (this.ws !== ws) return;
        const why = this.unsolicited
          ? `${this.unsolicited.message}${this.unsolicited.code ? ` (${this.unsolicited.code})` : ""}`
          : `the server closed the connection (code ${code}${reason.length ? `, ${reason.toString()}` : ""})`;
        if (!opened) reject(new RemoteEnvError(this.url, `cannot connect: ${why}`, this.unsolicited?.code));
        this.fail(why, this.unsolicited?.code);
      });
      ws.on("message", (raw: WebSocket.RawData) => this.receive(raw.toString()));
    });
  }

  /** Closes the current socket without ceremony (it is being replaced or it broke). */
  private drop(): void {
    const ws = this.ws;
    this.ws = null;
    if (ws && ws.readyState !== ws.CLOSED) ws.terminate();
  }

  private request(what: string, message: object): Promise<Record<string, unknown>> {
    const ws = this.ws;
    if (!ws || ws.readyState !== ws.OPEN || this.broken) {
      const u = this.unsolicited;
      const why = this.broken ?? (u ? `${u.message}${u.code ? ` (${u.code})` : ""}` : "the server is closing the connection");
      return Promise.reject(new RemoteEnvError(this.url, `${what} failed: ${why}`, u?.code));
    }
    return new Promise((resolve, reject) => {
      // After the loop's next read of the socket: a reply that came in time is taken, however late.
      const cancel = timeoutAfterRead(this.timeoutMs, () => {
        if (this.pending?.cancel !== cancel) return; // answered
        // A late reply would answer the next request: the connection is given up.
        this.gaveUp = true;
        this.fail(`no reply to ${what} within ${this.timeoutMs / 1000} s`);
        this.drop();
      });
      this.pending = { what, resolve, reject, cancel };
      ws.send(JSON.stringify(message), (e) => {
        if (e) this.fail(`cannot send ${what}: ${e.message}`);
      });
    });
  }

  private receive(text: string): void {
    let msg: { type?: unknown; data?: unknown };
    try {
      msg = JSON.parse(text) as typeof msg;
    } catch {
      this.gaveUp = true;
      this.fail("the server sent a frame that is not JSON");
      this.drop();
      return;
    }
    const data = (typeof msg?.data === "object" && msg.data !== null ? msg.data : {}) as Record<string, unknown>;
    const p = this.pending;
    if (msg?.type === "error") {
      const message = typeof data.message === "string" ? data.message : "unspecified error";
      const code = typeof data.code === "string" ? data.code : undefined;
      if (!p) {
        this.unsolicited = { message, code };
        return;
      }
      this.settle();
      p.reject(new RemoteEnvError(this.url, `${p.what} failed: ${message}${code ? ` (${code})` : ""}`, code));
      return;
    }
    if (!p) return; // nothing asked: not ours to interpret
    this.settle();
    if (msg?.type !== "observation") {
      p.reject(new RemoteEnvError(this.url, `${p.what}: expected an observation reply, got ${JSON.stringify(String(msg?.type))}`));
      return;
    }
    p.resolve(data);
  }

  private settle(): void {
    this.pending?.cancel();
    this.pending = null;
  }

  /** The connection is unusable: the call in flight fails, later steps fail, a reset reconnects. */
  private fail(why: string, code?: string): void {
    this.broken ??= why;
    const p = this.pending;
    this.settle();
    p?.reject(new RemoteEnvError(this.url, `${p.what} failed: ${why}`, code));
  }
}

function connectError(e: NodeJS.ErrnoException): string {
  if (e.code === "ECONNREFUSED") return "connection refused (is the server running? dreamgym serve --env <name> --port <port>)";
  if (e.code === "ENOTFOUND") return "unknown host";
  return e.message || e.code || "unknown error";
}

function observationOf(reply: Record<string, unknown>, url: string): WireObservation {
  const obs = reply.observation;
  if (typeof obs !== "object" || obs === null || typeof (obs as WireObservation).text !== "string") {
    throw new RemoteEnvError(url, "the reply has no observation text (is it a dreamgym env server? an OpenEnv server of another env sends other fields)");
  }
  return obs as WireObservation;
}

function actionsOf(obs: WireObservation): string[] | undefined {
  const a = obs.available_actions;
  return Array.isArray(a) && a.every((x) => typeof x === "string") ? [...a] : undefined;
}
