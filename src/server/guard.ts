import type { IncomingHttpHeaders } from "node:http";

/**
 * What keeps web pages out of a server on this machine. A page the user visits can send requests to
 * 127.0.0.1 (simple POSTs with a text/plain body, WebSocket handshakes: the browser does not ask
 * first), and through DNS rebinding can even read the answers under a name of its own. So:
 * - bound to loopback, a request must name a loopback host (`Host`: localhost, 127.x.x.x, [::1]);
 * - a request a page sent (`Origin`) must come from the server's own origin;
 * - a body must be JSON (`content-type: application/json`), which a page cannot send unasked.
 * Trainers, `curl` and SDK clients send no `Origin` and a loopback `Host`: nothing changes for them.
 */
export function foreignRequest(
  headers: Headers | IncomingHttpHeaders,
  method: string,
  loopbackOnly: boolean,
  body: boolean,
): { status: 403 | 415; message: string } | undefined {
  const get = (name: string): string | undefined => {
    const v = headers instanceof Headers ? headers.get(name) : headers[name];
    return Array.isArray(v) ? v[0] : (v ?? undefined);
  };
  const host = (get("host") ?? "").toLowerCase();
  if (loopbackOnly && !isLoopbackName(hostname(host))) {
    return {
      status: 403,
      message: `Host "${host.slice(0, 100)}" is not this loopback server's name (localhost, 127.0.0.1 or [::1]): refused, as a page behind a rebound DNS name would be`,
    };
  }
  const origin = get("origin");
  if (origin !== undefined && !sameOrigin(origin, host)) {
    return {
      status: 403,
      message: `a request from the web page at ${origin.slice(0, 100)} is refused: this server answers its own clients (no Origin header), not pages`,
    };
  }
  const type = (get("content-type") ?? "").toLowerCase();
  if (body && method !== "GET" && method !== "HEAD" && !/^application\/([\w.+-]+\+)?json\s*(;|$)/.test(type)) {
    return { status: 415, message: `the request body must be JSON (content-type: application/json), not ${type === "" ? "untyped" : type.slice(0, 60)}` };
  }
  return undefined;
}

/** Whether a bind address is loopback only. */
export function isLoopbackName(name: string): boolean {
  return name === "localhost" || name.endsWith(".localhost") || /^127(\.\d{1,3}){3}$/.test(name) || name === "::1" || name === "[::1]";
}

/** A Host header's name, without its port. */
function hostname(host: string): string {
  if (host.startsWith("[")) return host.slice(0, host.indexOf("]") + 1);
  return host.split(":")[0];
}

function sameOrigin(origin: string, host: string): boolean {
  try {
    const u = new URL(origin);
    return (u.protocol === "http:" || u.protocol === "https:") && u.host.toLowerCase() === host;
  } catch {
    return false; // "null" (a sandboxed page, a file) or garbage
  }
}
