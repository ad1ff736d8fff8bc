// Soak: `dreamgym serve` (a child process) while sessions are opened, stepped a few times and dropped
// in every way a trainer drops them, for 10 minutes; prints the server's RSS after warm-up and at the
// end, and the sessions still open once the idle timeout has passed (0 when nothing leaks). Hostile
// clients take their turns too: one that floods resets and never reads, and a web page's cross-origin
// requests (which must be refused).
// `npm run bench:soak [-- --minutes 10 --workers 8]`. Figures, never assertions.
import { parseArgs } from "node:util";
import type { Socket } from "node:net";
import { WebSocket } from "ws";
import { Rng } from "../src/core/index.ts";
import { chooseAction, HttpClient, rawInstruction, targetsOf, WsSession } from "./serve-clients.ts";
import { buildCli, startServe } from "./serve-process.ts";
import { median } from "./stats.ts";

const { values } = parseArgs({
  options: {
    minutes: { type: "string" },
    workers: { type: "string" },
    warmup: { type: "string" },
    pause: { type: "string" },
    "node-args": { type: "string" },
    only: { type: "string" },
  },
});
const minutes = Number(values.minutes ?? 10);
const workers = Number(values.workers ?? 8);
/** Milliseconds each worker waits between sessions: keeps abandoned sessions (alive until the reaper) well under --max-sessions. */
const pauseMs = Number(values.pause ?? 50);
/** RSS is compared from this point on: the catalogue's caches, JIT and heap have settled. */
const warmupS = Number(values.warmup ?? Math.min(60, 6 * minutes));
const IDLE_TIMEOUT_S = 5;
const HEARTBEAT_S = 1;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** How a session ends. */
const ENDINGS = [
  "ws-close-message",
  "ws-close-frame",
  "ws-abandoned",
  "ws-cut",
  "ws-half-open",
  "ws-flood",
  "agentgym-close",
  "agentgym-abandoned",
  "cross-origin",
] as const;
/** Reset messages a flooding client sends without reading a reply. */
const FLOOD = 20_000;
type Ending = (typeof ENDINGS)[number];
/** `--only ws-flood,ws-cut`: the workers take turns over these endings alone (to find which one grows the server). */
const endings: readonly Ending[] = values.only ? (values.only.split(",") as Ending[]) : ENDINGS;
for (const e of endings) if (!ENDINGS.includes(e)) throw new Error(`--only: unknown ending ${e} (known: ${ENDINGS.join(", ")})`);

buildCli();
const srv = await startServe(
  [
    "--env",
    "webshop",
    "--max-sessions",
    "300",
    "--max-steps",
    "15",
    "--idle-timeout",
    String(IDLE_TIMEOUT_S),
    "--ws-idle-timeout",
    String(IDLE_TIMEOUT_S),
    "--heartbeat",
    String(HEARTBEAT_S),
  ],
  {
    nodeArgs: values["node-args"]?.split(" ").filter(Boolean),
  },
);
srv.proc.stdout!.on("data", (d: Buffer) => process.env.SOAK_SERVER_STDOUT && process.stdout.write(d));
const http = new HttpClient(srv.url, 64);
const health = async () => (await http.ok("GET", "/health")) as { status: string; sessions: number; max_sessions: number };
console.log(
  `soak: ${minutes} min, ${workers} workers, server pid ${srv.pid} (--idle-timeout and --ws-idle-timeout ${IDLE_TIMEOUT_S} --heartbeat ${HEARTBEAT_S}), RSS compared from ${warmupS} s`,
);

const counts = Object.fromEntries(ENDINGS.map((e) => [e, 0])) as Record<Ending, number>;
let steps = 0;
let errors = 0;
const errorKinds = new Map<string, number>();
/** Client sockets left open on purpose (abandoned, half-open), destroyed once the server has dropped them. */
const leftOpen = new Set<WebSocket>();

async function playWs(rng: Rng, ending: Ending): Promise<void> {
  const s = await WsSession.open(srv.ws);
  let r = await s.reset(Math.floor(rng.random() * 1e9));
  const instruction = r.data.observation.instruction;
  const n = 1 + Math.floor(rng.random() * 6);
  for (let i = 0; i < n && !r.data.done; i++) {
    const { targets, searchBar } = targetsOf(r.data.observation.available_actions);
    r = await s.step(chooseAction(targets, searchBar, instruction, rng));
    steps++;
  }
  const socket = (s.ws as unknown as { _socket: Socket })._socket;
  switch (ending) {
    case "ws-close-message": // OpenEnv's clean close: the server closes the session, then the socket
      s.ws.send(JSON.stringify({ type: "close" }));
      await s.closed;
      break;
    case "ws-close-frame": // the socket closed without a close message
      s.ws.close();
      await s.closed;
      break;
    case "ws-abandoned": // left open and idle: the idle reaper (--ws-idle-timeout) closes the session and the socket
      leftOpen.add(s.ws);
      void s.closed.then(() => leftOpen.delete(s.ws));
      break;
    case "ws-cut": // the TCP connection destroyed, no close frame
      socket.destroy();
      break;
    case "ws-flood": // thousands of resets, no reply read: the server must stop reading, not queue them all
      socket.pause();
      for (let i = 0; i < FLOOD; i++) s.ws.send(JSON.stringify({ type: "reset", data: { seed: i } }));
      await sleep(1000);
      socket.destroy();
      break;
    case "ws-half-open": // the client stops reading (no pongs, no FIN): only the heartbeat can tell
      socket.pause();
      leftOpen.add(s.ws);
      // Long after the heartbeat has cut it on the server's side, free the client's end too.
      setTimeout(() => (socket.destroy(), leftOpen.delete(s.ws)), 4000 * HEARTBEAT_S + 2000).unref();
      break;
  }
}

/** A web page's requests to the loopback server: a WebSocket from another origin, a text/plain POST. Both must be refused. */
async function crossOrigin(): Promise<void> {
  const status = await new Promise<number>((resolve, reject) => {
    const ws = new WebSocket(srv.ws, { headers: { Origin: "http://evil.example" } });
    ws.once("unexpected-response", (_req, res) => (res.resume(), resolve(res.statusCode ?? 0)));
    ws.once("open", () => (ws.terminate(), resolve(101)));
    ws.once("error", reject);
  });
  if (status !== 403) throw new Error(`a cross-origin WebSocket got ${status}, not 403`);
  const post = await fetch(`${srv.url}/agentgym/close`, {
    method: "POST",
    headers: { "content-type": "text/plain", origin: "http://evil.example" },
    body: '{"env_idx":0}',
  });
  await post.text();
  if (post.status < 400) throw new Error(`a cross-origin text/plain POST got ${post.status}`);
}

async function playAgentGym(rng: Rng, ending: Ending): Promise<void> {
  const env_idx = (await http.ok("POST", "/agentgym/create")) as number;
  const [page] = (await http.ok("POST", "/agentgym/reset", { env_idx, session_id: Math.floor(rng.random() * 500) })) as [string, null];
  const instruction = rawInstruction(page);
  const n = 1 + Math.floor(rng.random() * 6);
  for (let i = 0; i < n; i++) {
    const { has_search_bar, clickables } = (await http.ok("GET", `/agentgym/available_actions?env_idx=${env_idx}`)) as {
      has_search_bar: boolean;
      clickables: string[];
    };
    const r = (await http.ok("POST", "/agentgym/step", { env_idx, action: chooseAction(clickables, has_search_bar, instruction, rng) })) as { done: boolean };
    steps++;
    if (r.done) break;
  }
  if (ending === "agentgym-close") await http.ok("POST", "/agentgym/close", { env_idx });
  // agentgym-abandoned: no /close (AgentGym's servers have none): the idle reaper frees it
}

let stop = false;
const loops = Array.from({ length: workers }, async (_, w) => {
  const rng = new Rng(w);
  for (let k = w; !stop; k++) {
    const ending = endings[k % endings.length];
    try {
      await (ending === "cross-origin" ? crossOrigin() : ending.startsWith("ws-") ? playWs(rng, ending) : playAgentGym(rng, ending));
      counts[ending]++;
      await sleep(pauseMs);
    } catch (e) {
      errors++;
      const kind = (e as Error).message.replace(/\d+/g, "N").slice(0, 80);
      errorKinds.set(kind, (errorKinds.get(kind) ?? 0) + 1);
      await sleep(100); // e.g. CAPACITY_REACHED while abandoned sessions wait for the reaper
    }
  }
});

const t0 = performance.now();
const elapsed = () => (performance.now() - t0) / 1000;
const samples: { t: number; rss: number; sessions: number }[] = [];
let warm: { t: number; rss: number } | undefined;
let lastPrint = -Infinity;
while (elapsed() < 60 * minutes) {
  await sleep(5000);
  const sample = { t: elapsed(), rss: srv.rssMB(), sessions: (await health()).sessions };
  samples.push(sample);
  if (!warm && sample.t >= warmupS) warm = sample;
  if (sample.t - lastPrint >= 30) {
    lastPrint = sample.t;
    const ended = Object.values(counts).reduce((a, b) => a + b, 0);
    console.log(
      `${sample.t.toFixed(0).padStart(5)} s  RSS ${sample.rss.toFixed(1)} MB  live sessions ${sample.sessions}  sessions ended ${ended}  steps ${steps}  errors ${errors}`,
    );
  }
}
stop = true;
await Promise.all(loops);
const atStop = { rss: srv.rssMB(), sessions: (await health()).sessions };
// Abandoned and half-open sessions go after the idle timeout or two heartbeats; the reaper looks every idle/4 s.
await sleep(1000 * (IDLE_TIMEOUT_S + 2 * HEARTBEAT_S + 3));
const end = { rss: srv.rssMB(), sessions: (await health()).sessions };

const after = samples.filter((s) => s.t >= (warm?.t ?? 0));
const maxAfter = Math.max(...after.map((s) => s.rss));
// One sample lands anywhere in a GC cycle (V8's old generation fills with garbage up to a few times the
// live heap before a full GC): the median of a minute's samples tells a trend from that swing.
const firstMinute = after.filter((s) => s.t < (warm?.t ?? 0) + 60).map((s) => s.rss);
const lastMinute = after.filter((s) => s.t >= samples[samples.length - 1].t - 60).map((s) => s.rss);
// Per minute after warm-up: the median (the band's middle) and the lowest sample (near a full GC: what is retained).
const perMinute: { minute: number; median: number; low: number }[] = [];
for (let m = 0; after.some((s) => s.t >= (warm?.t ?? 0) + 60 * m); m++) {
  const xs = after.filter((s) => s.t >= (warm?.t ?? 0) + 60 * m && s.t < (warm?.t ?? 0) + 60 * (m + 1)).map((s) => s.rss);
  if (xs.length > 0) perMinute.push({ minute: m + 1, median: median(xs), low: Math.min(...xs) });
}
const total = Object.values(counts).reduce((a, b) => a + b, 0);
console.log(
  `\nsessions ended: ${total} (${ENDINGS.map((e) => `${e} ${counts[e]}`).join(", ")}); steps ${steps}; client errors ${errors}${errorKinds.size ? ` (${[...errorKinds].map(([k, n]) => `${n}× ${k}`).join("; ")})` : ""}`,
);
console.log(
  `RSS: ${warm?.rss.toFixed(1)} MB at ${warm?.t.toFixed(0)} s (after warm-up), ${atStop.rss.toFixed(1)} MB at the end (${elapsed().toFixed(0)} s), max after warm-up ${maxAfter.toFixed(1)} MB; growth ${warm ? ((100 * (atStop.rss - warm.rss)) / warm.rss).toFixed(1) : "?"}%`,
);
console.log(
  `RSS median of the first minute after warm-up → the last minute: ${median(firstMinute).toFixed(1)} → ${median(lastMinute).toFixed(1)} MB (${((100 * (median(lastMinute) - median(firstMinute))) / median(firstMinute)).toFixed(1)}%)`,
);
console.log(`RSS per minute after warm-up (median / lowest, MB): ${perMinute.map((p) => `${p.median.toFixed(0)}/${p.low.toFixed(0)}`).join("  ")}`);
if (perMinute.length >= 4) {
  // Two minutes at each end: a GC cycle of this heap takes about a minute, so one minute's median still swings.
  const firstTwo = after.filter((s) => s.t < (warm?.t ?? 0) + 120).map((s) => s.rss);
  const lastTwo = after.filter((s) => s.t >= samples[samples.length - 1].t - 120).map((s) => s.rss);
  const [a, b] = [median(firstTwo), median(lastTwo)];
  console.log(`RSS median of the first two minutes after warm-up → the last two: ${a.toFixed(1)} → ${b.toFixed(1)} MB (${((100 * (b - a)) / a).toFixed(1)}%)`);
}
console.log(
  `live sessions: ${atStop.sessions} when the clients stopped, ${end.sessions} after the idle timeout (${IDLE_TIMEOUT_S} s) and heartbeats; client sockets still open: ${leftOpen.size}`,
);
for (const ws of leftOpen) ws.terminate();
http.close();
await srv.stop();
