import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { InvalidConfigError } from "../core/index.ts";
import { createServeApp, EnvHost, SessionManager, startServer, type ObservationFormat } from "../server/index.ts";
import { endpointOptions } from "./endpoint-options.ts";
import { parseIntOption } from "./options.ts";
import { serveRun, sharedSettings, type ServeOptions, type ServeRunOptions } from "./serve-run.ts";
import { untilStopSignal } from "./signals.ts";
import { cliConsole as console } from "./io.ts";

/** Addresses only this machine can reach: the only ones served without a token. */
const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1"]);
/** An option's name as typed: bufferCapacity → buffer-capacity. */
const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** The shortest bearer token accepted. */
export const MIN_TOKEN = 16;

/** The bearer token: `--token-file` first, else `$DREAMGYM_TOKEN`; required off loopback (`serve` and `view`). */
export function readToken(o: { tokenFile?: string; host: string }): string | undefined {
  let token: string | undefined;
  if (o.tokenFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(o.tokenFile, "utf8");
    } catch (e) {
      throw new InvalidConfigError(
        `cannot read --token-file ${o.tokenFile}: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message}`,
      );
    }
    token = text.trim();
    if (token === "") throw new InvalidConfigError(`--token-file ${o.tokenFile} is empty: put the token in it`);
  } else if (process.env.DREAMGYM_TOKEN !== undefined && process.env.DREAMGYM_TOKEN.trim() !== "") {
    token = process.env.DREAMGYM_TOKEN.trim();
  }
  if (token !== undefined && /\s/.test(token)) throw new InvalidConfigError("the token must not contain white space");
  // A short token can be guessed by anyone who can reach the port: at least as long as 96 random bits in base64.
  if (token !== undefined && token.length < MIN_TOKEN)
    throw new InvalidConfigError(`the token has ${token.length} characters; give at least ${MIN_TOKEN} (e.g. openssl rand -base64 24)`);
  if (token === undefined && !LOOPBACK.has(o.host)) {
    throw new InvalidConfigError(
      `serving on ${o.host} lets other machines in: give a bearer token (--token-file F, or the DREAMGYM_TOKEN environment variable), or bind 127.0.0.1`,
    );
  }
  return token;
}

export function registerServe(program: Command): void {
  endpointOptions(
    program
      .command("serve")
      .description("serve an env, real or synthetic, to external trainers over OpenEnv (WS /ws, HTTP); runs until SIGTERM/SIGINT")
      .requiredOption("--env <name>", "environment (a built-in or registered name)")
      .option(
        "--mode <mode>",
        "real (the env itself), synthetic (its synthetic version over an experience model), or dreamgym / s2r (a DreamGym session server: the whole loop but the policy update, kept in --run) (default: real, or synthetic with --experience)",
      )
      .option("--run <dir>", "dreamgym/s2r: the run folder (a new run, or the one it holds, resumed)")
      .option("--budget <n>", "dreamgym/s2r: synthetic steps the run plans for", parseIntOption("budget", 1))
      .option("--real-budget <n>", "s2r: real steps after the synthetic budget", parseIntOption("real-budget"))
      .option("--group <n>", "dreamgym/s2r: episodes per group, the trainer's generations per prompt (GRPO's G)", parseIntOption("group", 2))
      .option("--tasks-per-iter <n>", "dreamgym/s2r: groups per iteration (the curriculum updates after each)", parseIntOption("tasks-per-iter", 1))
      .option("--seed <n>", "dreamgym/s2r: the run's seed (task draws, env seeds, audit)", parseIntOption("seed"))
      .option("--set <key=value>", "dreamgym/s2r: set any training config key (repeatable)", (v: string, acc: string[]) => [...acc, v], [] as string[])
      .option(
        "--experience <model>",
        "synthetic mode: default (the embedded model), learned:<file> (dreamgym model train), or a chat model (http://host/v1#model, openai:model) (default: default)",
      )
      .option("--buffer <file>", "synthetic mode: the replay buffer that grounds the experience model")
      .option("--hybrid", "synthetic mode: terminal rewards from the real env's verifier")
      .option("--record", "synthetic mode: record each session's transitions into the buffer")
      .option(
        "--buffer-capacity <n>",
        "with --record: recorded transitions the buffer keeps besides its imported seed, the oldest episodes going first; each step searches the whole buffer (default: no bound)",
        parseIntOption("buffer-capacity", 1),
      )
      .option("--split <split>", "task split sessions draw from (default: the env's evaluation split in real mode, its training split in synthetic mode)")
      .option("--data <dir>", "data folder")
      .option("--max-steps <n>", "steps before truncation", parseIntOption("max-steps", 1))
      .option(
        "--observation <format>",
        "what sessions see: abstract (states as the synthetic env shows them) or raw (the env's own text; real mode)",
        "abstract",
      )
      .option("--port <n>", "port (0: any free port, printed)", parseIntOption("port", 0, 65_535), 8000)
      .option("--host <address>", "address to bind; any but 127.0.0.1, localhost or ::1 needs a token", "127.0.0.1")
      .option(
        "--max-sessions <n>",
        "sessions open at once, over every protocol; past it a new one gets CAPACITY_REACHED",
        parseIntOption("max-sessions", 1, 100_000),
        256,
      )
      .option(
        "--idle-timeout <seconds>",
        "close a session without a connection (AgentGym's) unused this long (0: never)",
        parseIntOption("idle-timeout", 0, 604_800),
        300,
      )
      .option(
        "--ws-idle-timeout <seconds>",
        "close a WebSocket session unused this long, though its connection is alive (0: never; it ends with its connection)",
        parseIntOption("ws-idle-timeout", 0, 604_800),
        0,
      )
      .option(
        "--heartbeat <seconds>",
        "ping WebSocket clients this often; one that misses a pong is cut and its session closed (0: off)",
        parseIntOption("heartbeat", 0, 3600),
        20,
      )
      .option("--token-file <file>", "require Authorization: Bearer <the file's token> on every route but /health (else $DREAMGYM_TOKEN, if set)")
      .option("--concurrency <n>", "synthetic mode, chat model: LLM requests at once, shared by every session", parseIntOption("concurrency", 1), 16)
      .option("--cache <file>", "synthetic mode, chat model: its response cache (SQLite)"),
  ).action(async (o: ServeOptions, cmd: Command) => {
    const mode = o.mode ?? (o.experience !== undefined ? "synthetic" : "real");
    if (mode !== "real" && mode !== "synthetic" && mode !== "dreamgym" && mode !== "s2r")
      throw new InvalidConfigError(`--mode must be real, synthetic, dreamgym or s2r, got "${o.mode}"`);
    if (mode === "dreamgym" || mode === "s2r") {
      if (o.bufferCapacity !== undefined)
        throw new InvalidConfigError(`--buffer-capacity is not for --mode ${mode}: the run keeps its own buffer, bounded by --set bufferCapacity=<n>`);
      const notHere = (["record", "split"] as const).filter((k) => o[k] !== undefined);
      if (notHere.length)
        throw new InvalidConfigError(`--${kebab(notHere[0])} is not for --mode ${mode}: the run keeps its own buffer and plays its own tasks`);
      if (o.observation !== "abstract") throw new InvalidConfigError(`--mode ${mode} serves abstract states (what the run's synthetic env shows)`);
      // A resume checks the env the user gave against the run's own (not a default, were there one).
      const given = { env: cmd.getOptionValueSource("env") === "cli" ? o.env : undefined, mode: cmd.getOptionValueSource("mode") === "cli" ? mode : undefined };
      return serveRun({ ...o, mode } as ServeRunOptions, readToken(o), given);
    }
    const runOnly = (["run", "budget", "realBudget", "group", "tasksPerIter", "seed"] as const).filter((k) => o[k] !== undefined);
    if (runOnly.length || o.set.length)
      throw new InvalidConfigError(`--${runOnly.length ? kebab(runOnly[0]) : "set"} is for a DreamGym session server: add --mode dreamgym`);
    if (o.observation !== "abstract" && o.observation !== "raw") throw new InvalidConfigError(`--observation must be abstract or raw, got "${o.observation}"`);
    if (mode === "real") {
      const synthOnly = (["experience", "buffer", "hybrid", "record", "bufferCapacity", "cache"] as const).filter((k) => o[k] !== undefined);
      if (synthOnly.length) throw new InvalidConfigError(`--${kebab(synthOnly[0])} is for synthetic mode: add --mode synthetic`);
    } else if (o.observation === "raw") {
      throw new InvalidConfigError("--observation raw is for real mode: synthetic sessions show abstract states");
    } else if (o.bufferCapacity !== undefined && !o.record) {
      throw new InvalidConfigError("--buffer-capacity bounds what --record adds to the buffer: add --record");
    }
    const token = readToken(o);

    const host = await EnvHost.open({
      env: o.env,
      mode,
      experience: o.experience,
      buffer: o.buffer,
      hybrid: o.hybrid,
      record: o.record,
      bufferCapacity: o.bufferCapacity,
      split: o.split,
      ...sharedSettings(o),
    });
    const manager = new SessionManager(host, { maxSessions: o.maxSessions, idleTimeout: o.idleTimeout, connectedIdleTimeout: o.wsIdleTimeout });
    const app = createServeApp({ manager, token, heartbeat: o.heartbeat, observation: o.observation as ObservationFormat });
    let server;
    try {
      server = await startServer({ app, port: o.port, host: o.host });
    } catch (e) {
      await app.close();
      throw e;
    }
    const ws = server.url.replace(/^http/, "ws");
    const agentgym = app.agentgymPrefix ? `  AgentGym: ${server.url}${app.agentgymPrefix}` : "";
    console.log(`serving ${o.env} (${mode}, split ${host.split}, ${host.tasks.length} tasks) on ${server.url}  OpenEnv: ${ws}/ws${agentgym}`);
    // Runs until a signal; a second one while shutting down stops at once.
    const signal = await untilStopSignal();
    const open = manager.size;
    await server.close();
    console.error(`${signal}: stopped (${open} open session${open === 1 ? "" : "s"} closed; ${manager.stats.opened} served)`);
  });
}
