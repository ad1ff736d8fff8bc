// Test support: a local HTTP server speaking the OpenAI chat-completions protocol, with injectable
// faults. Used by the tests of the LLM layer and of the models built on it; not part of the API.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type Fault = "429" | "500" | "400" | "timeout" | "cut" | "malformed" | "ok";

export interface Served {
  url: string;
  requests: Record<string, unknown>[];
  maxInFlight: number;
  close: () => Promise<void>;
}

/**
 * A local server speaking the OpenAI chat-completions protocol. `faults` are served first, one per
 * request; then `fault(n)` (n: the request's number, from 1) when given, so a test can make it fail
 * later or recover; else it answers with `reply(body)` (an array: one content per choice, for `n`; it may be async). With `hold`, a response waits while `hold()` is true
 * (and not all `total` requests arrived), so the test controls concurrency without timers.
 */
export async function chatServer(
  opts: {
    faults?: Fault[];
    fault?: (n: number) => Fault | undefined;
    reply?: (body: Record<string, unknown>) => string | string[] | Promise<string | string[]>;
    hold?: (pending: number) => boolean;
    total?: number;
  } = {},
): Promise<Served> {
  const faults = [...(opts.faults ?? [])];
  const requests: Record<string, unknown>[] = [];
  const pending: (() => void)[] = [];
  const hung: ServerResponse[] = [];
  let inFlight = 0;
  let arrived = 0;
  const served: Served = { url: "", requests, maxInFlight: 0, close: async () => {} };
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === "GET" && req.url?.endsWith("/models")) {
      // The model list, as OpenAI-compatible servers give it (a liveness probe; not counted as a request).
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end(JSON.stringify({ object: "list", data: [{ id: "fake", object: "model", owned_by: "test" }] }));
    }
    let raw = "";
    for await (const c of req) raw += c;
    const body = JSON.parse(raw) as Record<string, unknown>;
    requests.push(body);
    const fault = faults.shift() ?? opts.fault?.(requests.length) ?? "ok";
    if (fault === "timeout") return void hung.push(res); // never answers; the client times out
    if (fault === "cut") return void req.socket.destroy();
    if (fault === "429" || fault === "500" || fault === "400") {
      res.writeHead(Number(fault), { "content-type": "application/json", ...(fault === "429" ? { "retry-after": "0" } : {}) });
      return void res.end(JSON.stringify({ error: { message: `injected ${fault}`, type: "test" } }));
    }
    if (fault === "malformed") {
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end('{"id": "x", "choices": [ {"mess');
    }
    const n = Number(body.n ?? 1);
    const content = opts.reply ? await opts.reply(body) : `echo ${(body.messages as { content: string }[]).at(-1)!.content}`;
    const respond = () => {
      inFlight--;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: "cmpl-1",
          object: "chat.completion",
          created: 0,
          model: body.model,
          choices: Array.from({ length: n }, (_, index) => ({
            index,
            message: { role: "assistant", content: Array.isArray(content) ? content[index % content.length] : content },
            finish_reason: "stop",
          })),
          usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
        }),
      );
    };
    inFlight++;
    arrived++;
    served.maxInFlight = Math.max(served.maxInFlight, inFlight);
    if (!opts.hold) return respond();
    pending.push(respond);
    // Hold while the client could still send more; release one when it is blocked, all at the end.
    if (arrived === opts.total) for (const r of pending.splice(0)) r();
    else if (!opts.hold(pending.length)) pending.shift()!();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  served.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  served.close = () => {
    for (const r of hung) r.destroy();
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  };
  return served;
}
