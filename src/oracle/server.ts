import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { OracleAnswer, OracleNoise } from "../core/index.ts";
import { envNames, plugPoint } from "../envs/index.ts";
import { parseEpisodeBlock } from "../experience/index.ts";
import { listenOn } from "../server/listen.ts";

export interface OracleServerOptions {
  noise: OracleNoise;
  /** An env with an oracle (its `EnvSpec.oracle`; see `oracleEnvs()`). @default "webshop" */
  env?: string;
  dataDir?: string;
  /** @default 0 (any free port) */
  port?: number;
  /** @default "127.0.0.1" */
  host?: string;
  /** Called with each answer (tests, counters). */
  onAnswer?: (a: OracleAnswer) => void;
}

/** What the server did so far (`GET /stats` too). */
export interface OracleServerStats {
  requests: number;
  /** Requests refused (no episode line, a task the oracle cannot play). */
  refused: number;
  /** Seconds spent answering: requests / busySeconds is what one core serves. */
  busySeconds: number;
  /** Answers whose reward or next state the noise changed. */
  rewardCorrupted: number;
  stateCorrupted: number;
  envSteps: number;
  cachedSteps: number;
}

export interface OracleServer {
  /** The OpenAI-compatible base URL, e.g. http://127.0.0.1:PORT/v1; the model name is `oracle`. */
  url: string;
  /** `--experience` for dreamgym: `${url}#oracle`. */
  experience: string;
  stats: OracleServerStats;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/** The envs whose entry has an oracle (`EnvSpec.oracle`). */
export function oracleEnvs(): string[] {
  return envNames().filter((name) => plugPoint(name, "oracle") !== undefined);
}

/**
 * A local OpenAI-compatible chat server whose "model" is the oracle: it reads the episode line of the
 * reasoning experience model's prompt (task id and actions), replays it in the real env, and answers
 * in the reasoning model's JSON (`reasoning`, `next_state`, `reward`, `terminated`), corrupted by
 * `noise`. `n` choices are the same answer n times. A body that is not a chat request, a request
 * without an episode line, or one for a task it cannot play, gets HTTP 400.
 */
export async function startOracleServer(opts: OracleServerOptions): Promise<OracleServer> {
  const env = opts.env ?? "webshop";
  const make = plugPoint(env, "oracle");
  if (!make) throw new Error(`the oracle model plays ${oracleEnvs().join(", ")} only, not "${env}"`);
  const oracle = make({ noise: opts.noise, dataDir: opts.dataDir });
  const stats: OracleServerStats = { requests: 0, refused: 0, busySeconds: 0, rewardCorrupted: 0, stateCorrupted: 0, envSteps: 0, cachedSteps: 0 };
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    try {
      if (req.method === "GET" && req.url?.endsWith("/models"))
        return send(res, 200, { object: "list", data: [{ id: "oracle", object: "model", owned_by: "dreamgym" }] });
      if (req.method === "GET" && req.url?.endsWith("/stats")) return send(res, 200, stats);
      if (req.method !== "POST" || !req.url?.endsWith("/chat/completions"))
        return send(res, 404, {
          error: {
            message: `not found: ${req.method} ${req.url} (routes: POST /v1/chat/completions, GET /v1/models, GET /v1/stats)`,
            type: "invalid_request_error",
          },
        });
      let raw = "";
      for await (const c of req) raw += c;
      const started = performance.now();
      stats.requests++;
      let body: { model?: string; n?: number; messages?: { role?: string; content?: unknown }[] };
      try {
        body = JSON.parse(raw);
      } catch {
        stats.refused++;
        return send(res, 400, { error: { message: "the body is not JSON", type: "invalid_request_error" } });
      }
      // Any JSON parses: a shape that is not a chat request is the client's mistake (400), not a crash (500).
      const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
      if (!isObject(body) || !Array.isArray(body.messages) || !body.messages.every(isObject)) {
        stats.refused++;
        return send(res, 400, {
          error: { message: "the body must be a JSON object whose messages is an array of {role, content} objects", type: "invalid_request_error" },
        });
      }
      const user = body.messages.find((m) => m.role === "user");
      const episode = typeof user?.content === "string" ? parseEpisodeBlock(user.content) : null;
      if (!episode) {
        stats.refused++;
        return send(res, 400, {
          error: {
            message: "no episode line in the first user message: the oracle answers the reasoning experience model's prompts only",
            type: "invalid_request_error",
          },
        });
      }
      let answer: OracleAnswer;
      try {
        answer = await oracle.answer(episode.task, episode.actions);
      } catch (e) {
        stats.refused++;
        return send(res, 400, { error: { message: (e as Error).message, type: "invalid_request_error" } });
      }
      stats.envSteps = oracle.stats.envSteps;
      stats.cachedSteps = oracle.stats.cachedSteps;
      if (answer.noise.reward) stats.rewardCorrupted++;
      if (answer.noise.state) stats.stateCorrupted++;
      opts.onAnswer?.(answer);
      const content = JSON.stringify({ reasoning: answer.reasoning, next_state: answer.next_state, reward: answer.reward, terminated: answer.terminated });
      const n = Math.max(1, Math.min(64, Number(body.n ?? 1) || 1));
      send(res, 200, {
        id: "oracle",
        object: "chat.completion",
        created: 0,
        model: body.model ?? "oracle",
        choices: Array.from({ length: n }, (_, index) => ({ index, message: { role: "assistant", content }, finish_reason: "stop" })),
        usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      });
      stats.busySeconds += (performance.now() - started) / 1000;
    } catch (e) {
      if (!res.headersSent) send(res, 500, { error: { message: (e as Error).message, type: "server_error" } });
    }
  });
  server.keepAliveTimeout = 60_000;
  const host = opts.host ?? "127.0.0.1";
  try {
    await listenOn(server, opts.port ?? 0, host);
  } catch (e) {
    oracle.close(); // its env, made for a server that never started
    throw e;
  }
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}/v1`;
  return {
    url,
    experience: `${url}#oracle`,
    stats,
    close: () => {
      oracle.close();
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
