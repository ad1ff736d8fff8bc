// One JSON POST to an OpenAI-compatible server over Node's own HTTP client, read whole: the chat
// model's and the server embedder's calls, a synthetic step's hot path. Through the `openai` client
// and `fetch` a call cost ~0.55 ms of this process's CPU, through this ~0.1 ms (64 calls in flight
// against a local server), most of the framework's budget per synthetic step. What fetch did for those calls, this does too: redirects (credentials
// kept to the first origin), compressed answers (as leniently), idle connections let go, a bound on
// the answer's size, a deadline for its headers, an abort signal.
import { Agent as HttpAgent, request as httpRequest, validateHeaderValue, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { kMaxLength } from "node:buffer";
import type { Socket } from "node:net";
import { brotliDecompressSync, constants, gunzipSync, inflateRawSync, inflateSync } from "node:zlib";
import { InvalidConfigError } from "./errors.ts";
import { timeoutAfterRead } from "./timeout.ts";
import { PACKAGE_VERSION } from "./package-root.ts";

/** An answer read whole. */
export interface PostAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** No connection, or one cut before the answer was read: the cause says why (its code, such as ECONNREFUSED). */
export class ConnectionError extends Error {}
/** No answer's headers within the timeout. */
export class HeadersTimeoutError extends Error {}
/** An answer larger than the bound. */
export class AnswerTooLargeError extends Error {}
/** More redirects than a browser follows: the server redirects in a loop. */
export class RedirectLoopError extends Error {}
/** Statuses worth another try (a timeout, a conflict, too many requests, the server's own trouble), as the `openai` client retried. */
export const retryableStatus = (s: number): boolean => s === 408 || s === 409 || s === 429 || s >= 500;

/** An answer with an error status: "<status> <the server's own message>", and its `retry-after` (for a backoff). */
export class HttpStatusError extends Error {
  readonly status: number;
  readonly retryAfter: string | undefined;
  constructor(answer: PostAnswer) {
    let said: unknown;
    try {
      const parsed = JSON.parse(answer.body) as { error?: { message?: unknown } | string; message?: unknown };
      said = typeof parsed.error === "object" ? (parsed.error?.message ?? JSON.stringify(parsed.error)) : (parsed.error ?? parsed.message);
    } catch {
      said = answer.body.trim().slice(0, 200);
    }
    super(`${answer.status} ${typeof said === "string" && said ? said : "status code (no body)"}`);
    this.status = answer.status;
    const retryAfter = answer.headers["retry-after"];
    this.retryAfter = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter;
  }
}

export interface PostOptions {
  headers: Record<string, string>;
  /** Ends the request (its reason is the error). */
  signal?: AbortSignal;
  /** No headers within this (redirects included) fails the request with `HeadersTimeoutError`. */
  headersTimeoutMs: number;
  /** The largest answer read, in bytes (after decompression). */
  maxBytes: number;
  /** Kept-alive connections (one pair per client: closing it closes them). */
  agents: Agents;
  /** Called when an answer's headers come (a redirect's too): the server is there. */
  onHeaders?: () => void;
}

/** The headers of a call to an OpenAI-compatible server, as the `openai` client sends them: the key, and the organization and project where set. */
export function openAIHeaders(apiKey: string | undefined): Record<string, string> {
  // Trimmed, as fetch and the client did (a key pasted with its newline); a value a header cannot carry is a config error, not a failed call.
  const key = (apiKey ?? process.env.OPENAI_API_KEY ?? "not-needed").trim();
  const org = process.env.OPENAI_ORG_ID?.trim();
  const project = process.env.OPENAI_PROJECT_ID?.trim();
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json",
    "user-agent": `dreamgym/${PACKAGE_VERSION}`,
    authorization: `Bearer ${key}`,
    ...(org ? { "openai-organization": org } : {}),
    ...(project ? { "openai-project": project } : {}),
  };
  for (const [name, value] of Object.entries(headers)) {
    try {
      validateHeaderValue(name, value);
    } catch {
      throw new InvalidConfigError(`the ${name === "authorization" ? "API key" : name} holds characters an HTTP header cannot carry`);
    }
  }
  return headers;
}

/** An idle connection is let go after this, as fetch does (a server or a NAT may have forgotten it, and a request on it would hang). */
const IDLE_MS = 4000;

/** A client's kept-alive connections, for http and https. */
export class Agents {
  // An agent's `timeout` ends only idle connections (a request on one has its own deadlines).
  readonly http = new HttpAgent({ keepAlive: true, timeout: IDLE_MS });
  readonly https = new HttpsAgent({ keepAlive: true, timeout: IDLE_MS });
  /** Ends the idle connections now, and each busy one once its call is done (calls in flight finish). */
  close(): void {
    for (const agent of [this.http, this.https]) {
      agent.keepSocketAlive = () => false;
      for (const sockets of Object.values(agent.freeSockets)) for (const s of (sockets ?? []) as Socket[]) s.destroy();
    }
  }
}

const REDIRECTS = 20; // as fetch
/** Headers that carry credentials: not sent on to another origin (as fetch). */
const CREDENTIALS = ["authorization", "cookie", "proxy-authorization"];

/** POSTs `body` (JSON text) to `url`; resolves with the answer of any status, following redirects. */
export function postJson(url: string, body: string, o: PostOptions): Promise<PostAnswer> {
  // Encoded once: its length and its bytes on the socket (and again after a 307/308) come from the one copy.
  return requestWhole(url, "POST", Buffer.from(body), o);
}

/** GETs `url`; resolves with the answer of any status, read whole, following redirects. */
export function getWhole(url: string, o: PostOptions): Promise<PostAnswer> {
  return requestWhole(url, "GET", undefined, o);
}

async function requestWhole(url: string, firstMethod: "GET" | "POST", body: Buffer | undefined, o: PostOptions): Promise<PostAnswer> {
  // Redirects' short bodies being read off: one the server has not sent whole when the chain ends (answered, failed,
  // aborted) would hold its busy connection, and the process with it, for good (closing the agents ends only idle ones).
  const readingOff: IncomingMessage[] = [];
  try {
    return await follow(url, firstMethod, body, o, readingOff);
  } finally {
    for (const res of readingOff) if (!res.complete) res.destroy();
  }
}

async function follow(url: string, firstMethod: string, body: Buffer | undefined, o: PostOptions, readingOff: IncomingMessage[]): Promise<PostAnswer> {
  let target = new URL(url);
  let method: string = firstMethod;
  let payload = body;
  let headers = o.headers;
  const headersBy = performance.now() + o.headersTimeoutMs; // one deadline for the whole chain of redirects
  for (let redirects = 0; ; redirects++) {
    const res = await send(target, method, payload, headers, headersBy, o);
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if (location && (status === 301 || status === 302 || status === 303 || status === 307 || status === 308)) {
      // A short body is read off (the connection stays for reuse); any other ends with its connection.
      if (Number(res.headers["content-length"] ?? Number.POSITIVE_INFINITY) <= 65_536) readingOff.push(res.resume());
      else res.destroy();
      if (redirects >= REDIRECTS) throw new RedirectLoopError("redirect count exceeded");
      const next = new URL(location, target);
      if (next.origin !== target.origin) headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !CREDENTIALS.includes(k.toLowerCase())));
      target = next;
      // As fetch: a 303, or a 301/302 after a POST, is followed with a GET.
      if (status === 303 || ((status === 301 || status === 302) && method === "POST")) {
        method = "GET";
        payload = undefined;
      }
      continue;
    }
    if (status >= 200 && status <= 299) return { status, headers: res.headers, body: await readBody(res, status, o) };
    // An error status stands even where its body cannot be read (cut, too large, badly compressed).
    let text: string;
    try {
      text = await readBody(res, status, o);
    } catch (e) {
      if (o.signal?.aborted) throw o.signal.reason;
      text = e instanceof AnswerTooLargeError ? "(a body too large to read)" : "";
    }
    return { status, headers: res.headers, body: text };
  }
}

/**
 * GETs `url` and resolves with its answer's status at the headers, the body let go: whether a server answers there
 * (any status). Over Node's HTTP client, as the calls it stands for: `fetch` refuses some ports outright (6000, 6665–6669,
 * 10080, …), where a server may well run.
 */
export async function statusAt(url: string, o: { headers: Record<string, string>; headersTimeoutMs: number; agents: Agents }): Promise<number> {
  const res = await send(new URL(url), "GET", undefined, o.headers, performance.now() + o.headersTimeoutMs, { ...o, maxBytes: 0 });
  // Its connection ended, as fetch's body.cancel() did: read off (resume), a body that never ends would hold the
  // socket, and the process with it, for good (closing the agents ends only the idle ones).
  res.destroy();
  return res.statusCode ?? 0;
}

/** Sends one request; resolves at its answer's headers. */
function send(
  target: URL,
  method: string,
  payload: Buffer | undefined,
  given: Record<string, string>,
  headersBy: number,
  o: PostOptions,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    if (o.signal?.aborted) return reject(o.signal.reason);
    const https = target.protocol === "https:";
    const headers: Record<string, string | number> = { ...given, "accept-encoding": "gzip, deflate, br" };
    if (payload !== undefined) headers["content-length"] = payload.length;
    else delete headers["content-type"];
    const req = (https ? httpsRequest : httpRequest)(target, { method, headers, agent: https ? o.agents.https : o.agents.http });
    let settled = false;
    const fail = (e: unknown) => {
      if (settled) return;
      settled = true;
      cancelTimeout();
      o.signal?.removeEventListener("abort", onAbort);
      req.destroy();
      reject(e);
    };
    const onAbort = () => fail(o.signal?.reason);
    o.signal?.addEventListener("abort", onAbort, { once: true });
    // After the loop's next read of the sockets: an answer that came in time is taken, however late.
    const cancelTimeout = timeoutAfterRead(Math.max(0, headersBy - performance.now()), () => fail(new HeadersTimeoutError("Request timed out.")));
    req.on("error", (e) => fail(new ConnectionError("Connection error.", { cause: e })));
    req.on("response", (res) => {
      o.onHeaders?.();
      if (settled) return void res.resume();
      settled = true;
      cancelTimeout();
      o.signal?.removeEventListener("abort", onAbort);
      resolve(res);
    });
    req.end(payload);
  });
}

/** Decodes a body of the given codings (last applied first), as leniently as fetch: a truncated or empty compressed body gives what it holds, "deflate" may be raw deflate (told by its first byte). */
function decode(raw: Buffer, codings: string[], maxBytes: number): Buffer {
  const bound = Math.min(maxBytes, kMaxLength); // zlib takes no larger bound
  const sync = { finishFlush: constants.Z_SYNC_FLUSH, maxOutputLength: bound };
  let body = raw;
  for (const c of [...codings].reverse()) {
    if (body.length === 0) break;
    if (c === "gzip" || c === "x-gzip") body = gunzipSync(body, sync);
    else if (c === "deflate") body = (body[0] & 0x0f) === 8 ? inflateSync(body, sync) : inflateRawSync(body, sync);
    else if (c === "br") body = brotliDecompressSync(body, { finishFlush: constants.BROTLI_OPERATION_FLUSH, maxOutputLength: bound });
    // another coding: the body as it is (the parse then says so)
  }
  return body;
}

/**
 * The answer's body as text (a leading byte-order mark dropped), decompressed, failing past
 * `maxBytes` as it comes and after decompression (a declared length above it fails at once).
 */
function readBody(res: IncomingMessage, status: number, o: PostOptions): Promise<string> {
  const tooLarge = () => new AnswerTooLargeError(`the answer is larger than ${o.maxBytes} bytes (HTTP ${status})`);
  if (Number(res.headers["content-length"] ?? 0) > o.maxBytes) {
    res.destroy();
    return Promise.reject(tooLarge());
  }
  const codings =
    status === 204 || status === 304
      ? []
      : String(res.headers["content-encoding"] ?? "")
          .toLowerCase()
          .split(",")
          .map((c) => c.trim())
          .filter((c) => c && c !== "identity");
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let seen = 0;
    let settled = false;
    const done = (): boolean => {
      if (settled) return false;
      settled = true;
      o.signal?.removeEventListener("abort", onAbort);
      return true;
    };
    const fail = (e: unknown) => {
      if (!done()) return;
      res.destroy();
      reject(e);
    };
    const onAbort = () => fail(o.signal?.reason);
    if (o.signal?.aborted) return onAbort();
    o.signal?.addEventListener("abort", onAbort, { once: true });
    res.on("data", (c: Buffer) => {
      seen += c.length;
      if (seen > o.maxBytes) fail(tooLarge());
      else chunks.push(c);
    });
    res.on("end", () => {
      if (!done()) return;
      let body: Buffer;
      try {
        body = decode(Buffer.concat(chunks), codings, o.maxBytes);
      } catch (e) {
        return reject((e as { code?: string }).code === "ERR_BUFFER_TOO_LARGE" ? tooLarge() : new ConnectionError("Connection error.", { cause: e }));
      }
      const text = body.toString("utf8");
      resolve(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
    });
    res.on("error", (e) => fail(new ConnectionError("Connection error.", { cause: e })));
    // A connection cut in the middle of the body.
    res.on("close", () => {
      if (!res.complete) fail(new ConnectionError("Connection error.", { cause: new Error("the connection was cut before the whole answer came") }));
    });
  });
}
