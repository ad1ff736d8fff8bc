// One JSON POST to an OpenAI-compatible server over Node's own HTTP client, read whole. The chat
// model's hot path: through the `openai` client and `fetch` a call cost ~0.55 ms of this process's
// CPU, through this ~0.1 ms (64 calls in flight against a local server), most of the framework's
// budget per synthetic step. What fetch did for those calls, this does too: redirects, compressed
// answers, a bound on the answer's size, a deadline for its headers, an abort signal.
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";

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

export interface PostOptions {
  headers: Record<string, string>;
  /** Ends the request (its reason is the error). */
  signal: AbortSignal;
  /** No headers within this fails the request with `HeadersTimeoutError`. */
  headersTimeoutMs: number;
  /** The largest answer read, in bytes (after decompression). */
  maxBytes: number;
  /** Kept-alive connections (one pair per client: closing it closes them). */
  agents: Agents;
}

/** A client's kept-alive connections, for http and https. */
export class Agents {
  readonly http = new HttpAgent({ keepAlive: true });
  readonly https = new HttpsAgent({ keepAlive: true });
  close(): void {
    this.http.destroy();
    this.https.destroy();
  }
}

const REDIRECTS = 20; // as fetch

/** POSTs `body` (JSON text) to `url`; resolves with the answer of any status, following redirects. */
export async function postJson(url: string, body: string, o: PostOptions): Promise<PostAnswer> {
  let target = new URL(url);
  let method = "POST";
  let payload: string | undefined = body;
  for (let redirects = 0; ; redirects++) {
    const res = await send(target, method, payload, o);
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if (location && (status === 301 || status === 302 || status === 303 || status === 307 || status === 308)) {
      res.resume();
      if (redirects >= REDIRECTS) throw new RedirectLoopError("redirect count exceeded");
      target = new URL(location, target);
      // As fetch: a 303, or a 301/302 after a POST, is followed with a GET.
      if (status === 303 || ((status === 301 || status === 302) && method === "POST")) {
        method = "GET";
        payload = undefined;
      }
      continue;
    }
    return { status, headers: res.headers, body: await readBody(res, status, o) };
  }
}

/** Sends one request; resolves at its answer's headers. */
function send(target: URL, method: string, payload: string | undefined, o: PostOptions): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    if (o.signal.aborted) return reject(o.signal.reason);
    const https = target.protocol === "https:";
    const headers: Record<string, string | number> = { ...o.headers, "accept-encoding": "gzip, deflate, br" };
    if (payload !== undefined) headers["content-length"] = Buffer.byteLength(payload);
    else delete headers["content-type"];
    const req = (https ? httpsRequest : httpRequest)(target, { method, headers, agent: https ? o.agents.https : o.agents.http });
    let settled = false;
    const fail = (e: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      o.signal.removeEventListener("abort", onAbort);
      req.destroy();
      reject(e);
    };
    const onAbort = () => fail(o.signal.reason);
    o.signal.addEventListener("abort", onAbort, { once: true });
    const timer = setTimeout(() => fail(new HeadersTimeoutError("Request timed out.")), o.headersTimeoutMs);
    req.on("error", (e) => fail(new ConnectionError("Connection error.", { cause: e })));
    req.on("response", (res) => {
      if (settled) return void res.resume();
      settled = true;
      clearTimeout(timer);
      o.signal.removeEventListener("abort", onAbort);
      resolve(res);
    });
    req.end(payload);
  });
}

/** The answer's body as text, decompressed, failing past `maxBytes` (a declared length above it fails at once). */
function readBody(res: IncomingMessage, status: number, o: PostOptions): Promise<string> {
  const tooLarge = () => new AnswerTooLargeError(`the answer is larger than ${o.maxBytes} bytes (HTTP ${status})`);
  if (Number(res.headers["content-length"] ?? 0) > o.maxBytes) {
    res.destroy();
    return Promise.reject(tooLarge());
  }
  const encoding = String(res.headers["content-encoding"] ?? "identity").toLowerCase();
  const decoder =
    encoding === "gzip" || encoding === "x-gzip"
      ? createGunzip()
      : encoding === "deflate"
        ? createInflate()
        : encoding === "br"
          ? createBrotliDecompress()
          : null;
  const stream: Readable = decoder ? res.pipe(decoder) : res;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let seen = 0;
    let settled = false;
    const fail = (e: unknown) => {
      if (settled) return;
      settled = true;
      o.signal.removeEventListener("abort", onAbort);
      res.destroy();
      decoder?.destroy();
      reject(e);
    };
    const onAbort = () => fail(o.signal.reason);
    if (o.signal.aborted) return onAbort();
    o.signal.addEventListener("abort", onAbort, { once: true });
    stream.on("data", (c: Buffer) => {
      seen += c.length;
      if (seen > o.maxBytes) fail(tooLarge());
      else chunks.push(c);
    });
    stream.on("end", () => {
      if (settled) return;
      settled = true;
      o.signal.removeEventListener("abort", onAbort);
      resolve(Buffer.concat(chunks).toString("utf8"));
    });
    stream.on("error", (e) => fail(new ConnectionError("Connection error.", { cause: e })));
    if (decoder) res.on("error", (e) => fail(new ConnectionError("Connection error.", { cause: e })));
    // A connection cut in the middle of the body.
    res.on("close", () => {
      if (!res.complete) fail(new ConnectionError("Connection error.", { cause: new Error("the connection was cut before the whole answer came") }));
    });
  });
}
