import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { ApiCallError } from "../core/index.ts";
import { probeEndpoint } from "./model-spec.ts";

/** An HTTP server on `port` (0: any) answering each request with `answer`, or null where the port is taken. */
async function listen(port: number, answer: Parameters<typeof createServer>[1]): Promise<Server | null> {
  const server = createServer(answer);
  return new Promise((resolve) => {
    server.once("error", () => resolve(null));
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}
const urlOf = (s: Server) => `http://127.0.0.1:${(s.address() as { port: number }).port}/v1#m`;
async function close(s: Server): Promise<void> {
  s.closeAllConnections();
  await new Promise((resolve) => s.close(resolve));
}

test("the probe takes any HTTP answer, and names a dead port or a silent server", async () => {
  const notFound = (await listen(0, (_req, res) => res.writeHead(404).end("no /models here")))!;
  const silent = (await listen(0, () => {}))!;
  const dead = (await listen(0, () => {}))!;
  const deadUrl = urlOf(dead);
  await close(dead);
  try {
    await probeEndpoint(urlOf(notFound), 2000);
    await assert.rejects(probeEndpoint(deadUrl, 2000), (e: unknown) => e instanceof ApiCallError && /does not answer: ECONNREFUSED;/.test(e.message));
    await assert.rejects(
      probeEndpoint(urlOf(silent), 200),
      (e: unknown) => e instanceof ApiCallError && /does not answer: no answer within 0.2 s;/.test(e.message),
    );
  } finally {
    await close(notFound);
    await close(silent);
  }
});

test("a server on a port fetch refuses (6000, 6665–6669, 10080) answers the probe, as it does the chat calls", async (t) => {
  let server: Server | null = null;
  for (const port of [6000, 6665, 6666, 6667, 6668, 6669, 10080]) if ((server = await listen(port, (_req, res) => res.end("{}")))) break;
  if (!server) return t.skip("every port fetch refuses is taken here");
  try {
    await probeEndpoint(urlOf(server), 2000);
  } finally {
    await close(server);
  }
});

test("an answer that came in time counts when the process stalls past the timeout before reading it", async () => {
  const server = (await listen(0, (_req, res) => {
    res.end("{}");
    // Answered; then the process stalls (a collector's pause, a loaded machine) past the probe's timeout
    // (which leaves room for this process to reach the server's answer first on a loaded machine).
    const until = performance.now() + 800;
    while (performance.now() < until);
  }))!;
  try {
    await probeEndpoint(urlOf(server), 600);
  } finally {
    await close(server);
  }
});

test("the probe lets go of an answer whose body never ends (its connection closed, so the process can exit)", async () => {
  let closed!: Promise<void>;
  const server = (await listen(0, (req, res) => {
    closed = new Promise((resolve) => req.socket.once("close", () => resolve()));
    res.writeHead(200, { "content-type": "application/json" });
    res.write("{"); // and never more
  }))!;
  try {
    await probeEndpoint(urlOf(server), 2000);
    let timer: NodeJS.Timeout | undefined;
    const held = new Promise<string>((resolve) => (timer = setTimeout(() => resolve("held"), 2000)));
    assert.equal(await Promise.race([closed.then(() => "closed"), held]), "closed");
    clearTimeout(timer);
  } finally {
    await close(server);
  }
});

test("the probe sends the key as the calls do: trimmed (a key pasted with its newline)", async () => {
  let authorization: string | undefined;
  const server = (await listen(0, (req, res) => {
    authorization = req.headers.authorization;
    res.end("{}");
  }))!;
  const saved = process.env.OPENAI_API_KEY;
  process.env.OPENAI_API_KEY = "sk-test\n";
  try {
    await probeEndpoint(urlOf(server), 2000);
    assert.equal(authorization, "Bearer sk-test");
  } finally {
    if (saved === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = saved;
    await close(server);
  }
});
