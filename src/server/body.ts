import type { IncomingMessage } from "node:http";
import type { Context, MiddlewareHandler } from "hono";

/*
 * Request bodies read straight from Node's IncomingMessage, with a size limit. Hono's bodyLimit reads
 * `c.req.raw.body`, which makes @hono/node-server build a full WHATWG Request (undici Request,
 * AbortController, ReadableStream) for every request, GETs included; on the AgentGym routes that was
 * over a third of the server's CPU a step. Under another adapter (no `incoming`), Hono's own reader.
 */

/** Bodies read by `limitBody`, by request. */
const bodies = new WeakMap<object, string>();

const incomingOf = (c: Context): IncomingMessage | undefined => (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;

/** Reads the body (up to `maxSize` bytes) for later `bodyText(c)`; a larger body gets `onError` (and a closed connection). */
export function limitBody(maxSize: number, onError: (c: Context) => Response | Promise<Response>): MiddlewareHandler {
  return async (c, next) => {
    const incoming = incomingOf(c);
    if (!incoming) return next();
    const length = incoming.headers["content-length"];
    if (length === undefined && incoming.headers["transfer-encoding"] === undefined) return next(); // no body
    if (length !== undefined && Number(length) > maxSize) return tooLarge(c, incoming, onError);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of incoming as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxSize) return tooLarge(c, incoming, onError);
      chunks.push(chunk);
    }
    bodies.set(c.req.raw, chunks.length === 1 ? chunks[0].toString("utf8") : Buffer.concat(chunks, size).toString("utf8"));
    return next();
  };
}

function tooLarge(c: Context, incoming: IncomingMessage, onError: (c: Context) => Response | Promise<Response>) {
  // The unread rest of the body makes the connection unusable: tell the client not to reuse it.
  c.header("connection", "close");
  incoming.resume();
  return onError(c);
}

/** The request body as text: what `limitBody` read ("" when there was none), else Hono's reader. */
export function bodyText(c: Context): Promise<string> {
  const text = bodies.get(c.req.raw);
  if (text !== undefined) return Promise.resolve(text);
  return incomingOf(c) ? Promise.resolve("") : c.req.text();
}
