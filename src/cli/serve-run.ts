import { existsSync } from "node:fs";
import { join } from "node:path";
import { InvalidConfigError, readJsonFile } from "../core/index.ts";
import { createServeApp, EnvHost, SessionManager, startServer, type RunningServer } from "../server/index.ts";
import { ServedRun, type TrainConfigInput, type TrainSummary } from "../train/index.ts";
import { DEFAULT_MAX_FAILURES, DEFAULT_REQUEST_TIMEOUT_S } from "./endpoint-options.ts";
import { cliConsole as console } from "./io.ts";
import { untilStopSignal } from "./signals.ts";
import { applySet } from "./train-command.ts";

/** The serve command's options. */
export interface ServeOptions {
  env: string;
  mode?: string;
  experience?: string;
  buffer?: string;
  hybrid?: boolean;
  record?: boolean;
  bufferCapacity?: number;
  split?: string;
  data?: string;
  maxSteps?: number;
  port: number;
  host: string;
  maxSessions: number;
  idleTimeout: number;
  wsIdleTimeout: number;
  heartbeat: number;
  tokenFile?: string;
  observation: string;
  concurrency: number;
  cache?: string;
  requestTimeout?: number;
  maxFailures?: number;
  run?: string;
  budget?: number;
  realBudget?: number;
  group?: number;
  tasksPerIter?: number;
  seed?: number;
  set: string[];
}

/** What `serve --mode dreamgym|s2r` reads of them. */
export type ServeRunOptions = ServeOptions & { mode: "dreamgym" | "s2r" };

/** The settings every mode of `serve` passes on as given: data folder, step limit, and the LLM endpoint's limits. */
export function sharedSettings(o: ServeOptions) {
  return {
    dataDir: o.data,
    maxSteps: o.maxSteps,
    concurrency: o.concurrency,
    cache: o.cache,
    requestTimeout: o.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_S,
    maxFailures: o.maxFailures ?? DEFAULT_MAX_FAILURES,
  };
}

/** The options that shape a new run: a resume keeps its own. */
const RUN_OPTIONS = ["experience", "buffer", "hybrid", "budget", "realBudget", "group", "tasksPerIter", "seed"] as const;

/**
 * `dreamgym serve --mode dreamgym --run DIR`: a DreamGym session server. It starts the run in DIR
 * (or resumes the one DIR holds), serves its sessions until SIGTERM/SIGINT, and keeps serving
 * evaluation resets once the run has spent its budget.
 */
export async function serveRun(o: ServeRunOptions, token: string | undefined, given: { env?: string; mode?: string } = {}): Promise<void> {
  if (o.run === undefined)
    throw new InvalidConfigError(`--mode ${o.mode} needs a run folder (--run DIR): the run is kept there, and a restarted server resumes it`);
  const resume = existsSync(join(o.run, "config.json"));
  let input: TrainConfigInput | undefined;
  let env = o.env;
  if (resume) {
    const shaping = RUN_OPTIONS.filter((k) => o[k] !== undefined);
    if (shaping.length > 0 || o.set.length > 0)
      throw new InvalidConfigError(
        `${o.run} holds a run: the server resumes it with its own config; drop ${shaping.length > 0 ? `--${shaping[0].replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}` : "--set"}`,
      );
    // --env and --mode are required to get here, so they cannot be dropped: one that is not the run's own
    // would serve the run under another name (a train run's folder is refused by ServedRun.run).
    const stored = readJsonFile<{ env?: unknown; mode?: unknown; served?: unknown } | null>(join(o.run, "config.json"));
    if (stored?.served === true && typeof stored.env === "string") {
      env = stored.env;
      if ((given.env !== undefined && given.env !== stored.env) || (given.mode !== undefined && given.mode !== stored.mode))
        throw new InvalidConfigError(
          `${o.run} holds a run of ${stored.env} in --mode ${String(stored.mode)}: the server resumes it with its own config; give --env ${stored.env} --mode ${String(stored.mode)}`,
        );
    }
  } else {
    input = {
      env: o.env,
      mode: o.mode,
      experience: o.experience,
      buffer: o.buffer,
      hybrid: o.hybrid,
      budget: o.budget,
      realBudget: o.realBudget,
      rolloutsPerTask: o.group,
      tasksPerIteration: o.tasksPerIter,
      seed: o.seed,
      ...sharedSettings(o),
    };
    for (const k of Object.keys(input) as (keyof TrainConfigInput)[]) if (input[k] === undefined) delete input[k];
    for (const s of o.set) applySet(input as Record<string, unknown>, s);
  }

  let served: ServedRun | undefined;
  let server: RunningServer | undefined;
  let serving!: () => void;
  const up = new Promise<void>((resolve) => (serving = resolve));
  const finished = ServedRun.run(o.run, input, async (run) => {
    served = run;
    const manager = new SessionManager(EnvHost.served(run), { maxSessions: o.maxSessions, idleTimeout: o.idleTimeout, connectedIdleTimeout: o.wsIdleTimeout });
    const app = createServeApp({ manager, token, heartbeat: o.heartbeat, observation: "abstract" });
    try {
      server = await startServer({ app, port: o.port, host: o.host });
    } catch (e) {
      await app.close();
      throw e;
    }
    const i = run.info;
    console.log(
      `serving a ${i.mode} run of ${env} from ${i.dir} (${resume ? "resumed; " : ""}groups of ${i.group}, ${i.tasksPerIteration} per iteration) on ${server.url}  OpenEnv: ${server.url.replace(/^http/, "ws")}/ws`,
    );
    serving();
  });
  // A start that fails (a bad option, a missing buffer) fails here, before any signal handler is set.
  await Promise.race([up, finished]);
  const stop = untilStopSignal();
  let outcome: { summary: TrainSummary | undefined } | { signal: NodeJS.Signals };
  try {
    outcome = await Promise.race([finished.then((summary) => ({ summary })), stop.then((signal) => ({ signal }))]);
  } catch (e) {
    await server?.close();
    throw e;
  }
  if ("summary" in outcome && outcome.summary) {
    const s = outcome.summary;
    console.log(
      `run complete: ${s.iterations} iterations, ${s.syntheticInteractions.toLocaleString("en-US")} synthetic and ${s.realInteractions.toLocaleString("en-US")} real steps played by the trainer, ${s.auditInteractions} audit steps; still serving evaluation resets (a reset naming a task) until SIGTERM`,
    );
    await stop;
  }
  served?.stop();
  await server?.close();
  await finished.catch(() => {});
  console.error(`stopped; the run is in ${o.run} (dreamgym serve --mode ${o.mode} --run ${o.run} resumes it)`);
}
