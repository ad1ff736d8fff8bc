import { Agents, getWhole, HeadersTimeoutError, timeoutAfterRead, type PostAnswer, type RewardSpec, type Task } from "../core/index.ts";
import { httpBase, RemoteEnvError, unauthorized } from "./remote-env.ts";

/** What an env server serves: the `dreamgym` block of its `GET /metadata`, and its tasks (`GET /tasks`). */
export interface RemoteEnvInfo {
  /** The server's base URL for HTTP (no trailing `/`). */
  url: string;
  /** The served env's registry name (what trajectories are labelled with). */
  env: string;
  /** dreamgym: a served DreamGym run (its resets name groups; the server picks their tasks). */
  mode: "real" | "synthetic" | "dreamgym";
  split: string;
  /** Whether observations are abstract states (an env with a state abstraction) or the env's own text. */
  observation: "abstract" | "raw";
  rewards: RewardSpec;
  description: string;
  version: string;
  tasks: Task[];
}

export interface RemoteInfoOptions {
  /** Bearer token. @default $DREAMGYM_TOKEN */
  token?: string;
  /** Seconds per HTTP request. @default 60 */
  timeout?: number;
}

/** Tasks asked per `GET /tasks` page (the server's maximum). */
const PAGE = 10_000;

/** Reads what an env server (`dreamgym serve`) serves: its env, split, mode, rewards and all its tasks. */
export async function remoteEnvInfo(url: string, opts: RemoteInfoOptions = {}): Promise<RemoteEnvInfo> {
  const base = httpBase(url);
  const token = opts.token ?? (process.env.DREAMGYM_TOKEN || undefined);
  const get = (path: string) => getJson(base, path, token, 1000 * (opts.timeout ?? 60));
  const meta = (await get("/metadata")) as { description?: unknown; dreamgym?: Record<string, unknown> };
  const d = meta?.dreamgym;
  if (typeof d !== "object" || d === null || typeof d.env !== "string" || typeof d.split !== "string") {
    throw new RemoteEnvError(
      base,
      "its /metadata has no dreamgym block (env, split): is it a dreamgym env server? (an OpenEnv server of another framework cannot be used as --env)",
    );
  }
  const r = (d.rewards ?? {}) as Partial<RewardSpec>;
  const rewards: RewardSpec = { min: num(r.min, 0), max: num(r.max, 1), dense: r.dense === true };
  const tasks: Task[] = [];
  for (;;) {
    const page = (await get(`/tasks?offset=${tasks.length}&limit=${PAGE}`)) as { total?: unknown; tasks?: unknown };
    if (!Array.isArray(page?.tasks) || typeof page.total !== "number") throw new RemoteEnvError(base, "its /tasks reply has no tasks list and total");
    for (const t of page.tasks as Task[]) {
      if (typeof t?.id !== "string" || typeof t.instruction !== "string")
        throw new RemoteEnvError(base, "its /tasks lists a task without an id and instruction");
      tasks.push(t);
    }
    if (tasks.length >= page.total || page.tasks.length === 0) break;
  }
  return {
    url: base,
    env: d.env,
    split: d.split,
    rewards,
    tasks,
    mode: d.mode === "synthetic" || d.mode === "dreamgym" ? d.mode : "real",
    observation: d.observation === "raw" ? "raw" : "abstract",
    description: typeof meta.description === "string" ? meta.description : `${d.env} served at ${base}`,
    version: typeof d.version === "string" ? d.version : "",
  };
}

const num = (v: unknown, dflt: number) => (typeof v === "number" && Number.isFinite(v) ? v : dflt);

async function getJson(base: string, path: string, token: string | undefined, timeoutMs: number): Promise<unknown> {
  const what = `GET ${path.split("?")[0]}`;
  // Over Node's HTTP client, as the env's other calls: fetch refuses ports browsers block (6000, 6665–6669, …).
  const agents = new Agents();
  const abort = new AbortController();
  // The whole answer within the timeout (its headers have their own), judged after the loop's next read of the
  // socket, as those are: a process stalled past it takes an answer that came in time.
  const cancelDeadline = timeoutAfterRead(timeoutMs, () => abort.abort(new HeadersTimeoutError("no whole answer in time")));
  let answer: PostAnswer;
  try {
    answer = await getWhole(`${base}${path}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      headersTimeoutMs: timeoutMs,
      maxBytes: 256 * 1024 * 1024,
      agents,
      signal: abort.signal,
    });
  } catch (e) {
    const cause = (e as { cause?: NodeJS.ErrnoException }).cause;
    const why =
      e instanceof HeadersTimeoutError
        ? `no answer within ${timeoutMs / 1000} s`
        : cause?.code === "ECONNREFUSED"
          ? "connection refused (is the server running? dreamgym serve --env <name> --port <port>)"
          : cause?.code === "ENOTFOUND"
            ? "unknown host"
            : (cause?.message ?? (e as Error).message);
    throw new RemoteEnvError(base, `${what}: ${why}`);
  } finally {
    cancelDeadline();
    agents.close();
  }
  if (answer.status === 401) throw new RemoteEnvError(base, `${what}: ${unauthorized(token)}`);
  if (answer.status < 200 || answer.status > 299)
    throw new RemoteEnvError(base, `${what}: HTTP ${answer.status}${answer.body ? ` ${answer.body.slice(0, 200).replace(/\s+/g, " ")}` : ""}`);
  try {
    return JSON.parse(answer.body);
  } catch {
    throw new RemoteEnvError(base, `${what}: the reply is not JSON`);
  }
}
