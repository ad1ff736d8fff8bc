// `dreamgym serve` under load: real WebShop over OpenEnv WS /ws and over AgentGym HTTP, and synthetic
// sessions against the local latency LLM server. The server is the built CLI in a child process; the
// clients run here. Figures, never assertions.
// Alone: `npm run bench:server [-- --seconds 10 --sessions 256 --only ws|agentgym|synthetic --synthetic-sessions 192 --record --cpu-prof DIR]`.
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { Rng } from "../src/core/index.ts";
import type { Report } from "./buffer.ts";
import { chooseAction, HttpClient, rawInstruction, targetsOf, WsSession } from "./serve-clients.ts";
import { buildCli, startServe, type ServeProcess } from "./serve-process.ts";
import { quantile } from "./stats.ts";
import { seeded } from "./synthetic.ts";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const fmt = (x: number, d = 0) => x.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });

export interface ServerBenchOptions {
  /** Seconds measured per protocol, after `warmup` seconds. */
  seconds?: number;
  warmup?: number;
  sessions?: number;
  only?: "ws" | "agentgym" | "synthetic";
  /** Synthetic sessions at once. @default 3 × the LLM server's slots */
  syntheticSessions?: number;
  /** Synthetic sessions record each step into the buffer (`serve --record`). */
  record?: boolean;
  /** Writes the server's CPU profile (node --cpu-prof) into this folder. */
  cpuProf?: string;
}

interface Timing {
  warmup: number;
  seconds: number;
  /** Called as the window opens and closes (with its length in seconds). */
  onOpen?: () => Promise<void>;
  onClose?: (seconds: number) => Promise<void>;
}

/** What one timed window measured. */
interface Window {
  steps: number;
  resets: number;
  invalid: number;
  latencies: number[];
  seconds: number;
  serverCpu: number;
  clientCpu: number;
}

/**
 * Runs `sessions` loops of `episode(i, measuring)` for `warmup` s, then measures `seconds` s; each loop
 * records its steps through the `Window` it is handed while measuring.
 */
async function timed(
  srv: ServeProcess,
  o: Timing,
  sessions: number,
  episode: (i: number, window: () => Window | undefined, stopped: () => boolean) => Promise<void>,
): Promise<Window> {
  let stop = false;
  let window: Window | undefined;
  const loops = Array.from({ length: sessions }, async (_, i) => {
    while (!stop)
      await episode(
        i,
        () => window,
        () => stop,
      );
  });
  await sleep(1000 * o.warmup);
  await o.onOpen?.();
  const w: Window = { steps: 0, resets: 0, invalid: 0, latencies: [], seconds: 0, serverCpu: srv.cpuSeconds(), clientCpu: 0 };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  window = w;
  await sleep(1000 * o.seconds);
  window = undefined;
  await o.onClose?.((performance.now() - t0) / 1000);
  w.seconds = (performance.now() - t0) / 1000;
  w.serverCpu = srv.cpuSeconds() - w.serverCpu;
  const cpu = process.cpuUsage(cpu0);
  w.clientCpu = (cpu.user + cpu.system) / 1e6;
  stop = true;
  await Promise.all(loops);
  return w;
}

function describe(w: Window): string {
  const perStep = (1000 * w.serverCpu) / w.steps;
  return (
    `${fmt(w.steps / w.seconds)} steps/s, p50 / p99 ${quantile(w.latencies, 0.5).toFixed(2)} / ${quantile(w.latencies, 0.99).toFixed(2)} ms` +
    ` (+${fmt(w.resets / w.seconds)} resets/s; server CPU ${((100 * w.serverCpu) / w.seconds).toFixed(0)}%, ${(1000 * perStep).toFixed(0)} µs a step; client CPU ${((100 * w.clientCpu) / w.seconds).toFixed(0)}%; ${((100 * w.invalid) / Math.max(1, w.steps)).toFixed(1)}% invalid)`
  );
}

/** Sessions over OpenEnv's WS /ws, each playing episodes with the action mix. */
async function wsLoad(srv: ServeProcess, o: Timing, sessions: number): Promise<Window> {
  const clients = await Promise.all(Array.from({ length: sessions }, () => WsSession.open(srv.ws)));
  const rngs = clients.map((_, i) => new Rng(i));
  const episodes = clients.map((_, i) => i * 100_000);
  const w = await timed(srv, o, sessions, async (i, windowOf, stopped) => {
    const c = clients[i];
    let r = await c.reset(episodes[i]++);
    const instruction = r.data.observation.instruction;
    while (!r.data.done && !stopped()) {
      const { targets, searchBar } = targetsOf(r.data.observation.available_actions);
      const action = chooseAction(targets, searchBar, instruction, rngs[i]);
      const t = performance.now();
      r = await c.step(action);
      const w = windowOf();
      if (w) {
        w.latencies.push(performance.now() - t);
        w.steps++;
        if (r.data.observation.invalid) w.invalid++;
      }
    }
    const w = windowOf();
    if (w) w.resets++;
  });
  await Promise.all(clients.map((c) => (c.ws.close(), c.closed)));
  return w;
}

/** Sessions over AgentGym's HTTP routes (keep-alive): create, reset, then per step GET /available_actions and POST /step. */
async function agentGymLoad(srv: ServeProcess, o: Timing, sessions: number): Promise<Window & { actionLatencies: number[] }> {
  const http = new HttpClient(srv.url);
  const ids: number[] = [];
  for (let i = 0; i < sessions; i++) ids.push(await http.ok("POST", "/agentgym/create"));
  const rngs = ids.map((_, i) => new Rng(i));
  const episodes = ids.map((_, i) => i * 7);
  const actionLatencies: number[] = [];
  const w = await timed(srv, o, sessions, async (i, windowOf, stopped) => {
    const env_idx = ids[i];
    const [page] = (await http.ok("POST", "/agentgym/reset", { env_idx, session_id: episodes[i]++ % 500 })) as [string, null];
    const instruction = rawInstruction(page);
    let done = false;
    while (!done && !stopped()) {
      let t = performance.now();
      const { has_search_bar, clickables } = (await http.ok("GET", `/agentgym/available_actions?env_idx=${env_idx}`)) as {
        has_search_bar: boolean;
        clickables: string[];
      };
      if (windowOf()) actionLatencies.push(performance.now() - t);
      const action = chooseAction(clickables, has_search_bar, instruction, rngs[i]);
      t = performance.now();
      const r = (await http.ok("POST", "/agentgym/step", { env_idx, action })) as { state: string; done: boolean };
      done = r.done;
      const w = windowOf();
      if (w) {
        w.latencies.push(performance.now() - t);
        w.steps++;
      }
    }
    const w = windowOf();
    if (w) w.resets++;
  });
  for (const env_idx of ids) await http.ok("POST", "/agentgym/close", { env_idx });
  http.close();
  return { ...w, actionLatencies };
}

/** Starts the latency LLM server; resolves with its port and a reader of its answered-request count. */
async function llmServer(latency: number, cap: number) {
  const proc = spawn(process.execPath, [join(import.meta.dirname, "llm-server.mjs"), String(latency), String(cap)], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve) => proc.stdout.once("data", (d: Buffer) => resolve(JSON.parse(d.toString()).port)));
  const http = new HttpClient(`http://127.0.0.1:${port}`, 4);
  return {
    port,
    served: async () => ((await http.ok("GET", "/stats")) as { served: number }).served,
    stop: () => {
      http.close();
      proc.kill("SIGTERM");
    },
  };
}

export async function benchServer(report: Report, opts: ServerBenchOptions = {}): Promise<void> {
  const o = { warmup: opts.warmup ?? 3, seconds: opts.seconds ?? 10 };
  const sessions = opts.sessions ?? 256;
  buildCli();
  const nodeArgs = opts.cpuProf ? ["--cpu-prof", "--cpu-prof-dir", opts.cpuProf] : [];
  const real = ["--env", "webshop", "--max-sessions", "300", "--max-steps", "15"];

  if (!opts.only || opts.only === "ws") {
    const srv = await startServe(real, { nodeArgs });
    try {
      const w = await wsLoad(srv, o, sessions);
      report(`server: WebShop over OpenEnv WS, ${sessions} sessions`, describe(w));
      report("server: RSS after the WS load", `${srv.rssMB().toFixed(0)} MB`);
    } finally {
      await srv.stop();
    }
  }

  if (!opts.only || opts.only === "agentgym") {
    const srv = await startServe(real, { nodeArgs });
    try {
      const w = await agentGymLoad(srv, o, sessions);
      report(`server: WebShop over AgentGym HTTP, ${sessions} sessions`, describe(w));
      report(
        "server: AgentGym GET /available_actions p50 / p99",
        `${quantile(w.actionLatencies, 0.5).toFixed(2)} / ${quantile(w.actionLatencies, 0.99).toFixed(2)} ms (one before each step, so ${fmt((2 * w.steps) / w.seconds)} requests/s)`,
      );
    } finally {
      await srv.stop();
    }
  }

  if (!opts.only || opts.only === "synthetic") {
    const latency = 200;
    const cap = 64;
    const { buffer } = await seeded(300);
    const bufferPath = buffer.path;
    buffer.close();
    const llm = await llmServer(latency, cap);
    const srv = await startServe(
      [
        "--env",
        "webshop",
        "--mode",
        "synthetic",
        "--experience",
        `http://127.0.0.1:${llm.port}/v1#bench`,
        "--buffer",
        bufferPath,
        "--concurrency",
        String(cap),
        "--max-sessions",
        "300",
        "--max-steps",
        "15",
        ...(opts.record ? ["--record"] : []),
      ],
      { nodeArgs },
    );
    try {
      // More sessions than the LLM server's slots, so its queue stays full while sessions do their own work.
      const synSessions = opts.syntheticSessions ?? 3 * cap;
      let served0 = 0;
      const capacity = cap / (latency / 1000);
      const w = await wsLoad(
        srv,
        {
          ...o,
          onOpen: async () => void (served0 = await llm.served()),
          onClose: async (seconds) => {
            const served = (await llm.served()) - served0;
            report(
              `server: synthetic, LLM server ${latency} ms × ${cap} slots, ${synSessions} sessions${opts.record ? ", recording" : ""}`,
              `${fmt(served / seconds)} LLM requests/s = ${((100 * served) / seconds / capacity).toFixed(1)}% of its ${capacity} req/s`,
            );
          },
        },
        synSessions,
      );
      report("server: synthetic steps", describe(w));
    } finally {
      await srv.stop();
      llm.stop();
      rmSync(dirname(bufferPath), { recursive: true, force: true });
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      seconds: { type: "string" },
      warmup: { type: "string" },
      sessions: { type: "string" },
      only: { type: "string" },
      "synthetic-sessions": { type: "string" },
      "cpu-prof": { type: "string" },
      record: { type: "boolean" },
    },
  });
  await benchServer((n, v) => console.log(`${n.padEnd(44)} ${v}`), {
    seconds: values.seconds ? Number(values.seconds) : undefined,
    warmup: values.warmup ? Number(values.warmup) : undefined,
    sessions: values.sessions ? Number(values.sessions) : undefined,
    only: values.only as ServerBenchOptions["only"],
    syntheticSessions: values["synthetic-sessions"] ? Number(values["synthetic-sessions"]) : undefined,
    cpuProf: values["cpu-prof"],
    record: values.record,
  });
}
