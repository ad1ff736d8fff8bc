import { DreamGymError, ResetNeededError, type Env, type StepInfo, type Task } from "../core/index.ts";
import type { EnvHost, ObservationFormat } from "./env-host.ts";

/** OpenEnv's error codes (and the AgentGym side maps onto them). */
export type ServeErrorCode =
  | "INVALID_JSON"
  | "UNKNOWN_TYPE"
  | "VALIDATION_ERROR"
  | "EXECUTION_ERROR"
  | "CAPACITY_REACHED"
  | "SESSION_ERROR"
  | "UNAUTHORIZED"
  | "PAYLOAD_TOO_LARGE";

/** An error a client caused or must hear about: a code, a message, and the HTTP status it maps to. */
export class ServeError extends DreamGymError {
  readonly status: number;
  constructor(code: ServeErrorCode, message: string, status = 400) {
    super(message, code);
    this.status = status;
  }
}

/** What a session shows after reset or step. */
export interface SessionView {
  /** The observation text (an abstract state, or the env's own text; see ObservationFormat). */
  observation: string;
  /** Null after reset. */
  reward: number | null;
  done: boolean;
  terminated: boolean;
  truncated: boolean;
  /** Steps taken in the episode so far (0 after reset). */
  step: number;
  /** The actions the env lists now, if it lists any. */
  availableActions?: string[];
  task: Task;
  info: StepInfo;
}

export interface ResetRequest {
  seed?: number;
  /** The task's position in the host's task list. */
  taskIndex?: number;
  /** A task id of the host's split. */
  taskId?: string;
  /** A task given whole, e.g. one of another split (AgentGym numbers tasks across the env's whole catalogue). */
  task?: Task;
  episodeId?: string;
  /** The split `taskIndex` indexes (the task routes' `split`): it must be the served one. */
  split?: string;
  /** The episode's group (GRPO's G rollouts of one prompt): a DreamGym session server gives a group's episodes one task. */
  group?: string;
  /** The group's position among the batch's groups (`EpisodeGroup.index`). */
  groupIndex?: number;
}

/** One client's env: calls run one at a time, in order; different sessions run in parallel. */
export class Session {
  readonly id: string;
  /** A number never given to another session of this server (AgentGym's env index). */
  readonly index: number;
  episodeId: string | null = null;
  stepCount = 0;
  totalReward = 0;
  view: SessionView | null = null;
  lastActive = Date.now();
  closed = false;
  /** Why the session closed, once it has. */
  closeReason = "";
  /** Told once, when the session closes for any reason (the protocol side drops its socket). */
  onClose?: (reason: string) => void;
  /**
   * Held by a live connection (a WebSocket that answers pings): such a session ends with its
   * connection, and the idle reaper leaves it alone unless `connectedIdleTimeout` is set. A trainer
   * keeps its sockets across optimizer steps and evaluations, and OpenEnv's clients never reconnect.
   */
  connected = false;
  private busy = 0;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly host: EnvHost,
    private readonly env: Env,
    index: number,
    private readonly release: (s: Session) => void,
  ) {
    this.index = index;
    this.id = `s${index}`;
  }

  get isBusy(): boolean {
    return this.busy > 0;
  }

  get done(): boolean {
    return this.view?.done ?? true;
  }

  /** Runs `fn` after every call queued before it: two calls on one session never interleave. */
  run<T>(fn: () => Promise<T> | T): Promise<T> {
    if (this.closed) return Promise.reject(new ServeError("SESSION_ERROR", `session ${this.id} is closed (${this.closeReason})`, 404));
    this.busy++;
    this.lastActive = Date.now();
    const next = this.queue.then(async () => {
      if (this.closed) throw new ServeError("SESSION_ERROR", `session ${this.id} is closed (${this.closeReason})`, 404);
      return fn();
    });
    const settle = () => {
      this.busy--;
      this.lastActive = Date.now();
    };
    this.queue = next.then(settle, settle);
    return next;
  }

  reset(req: ResetRequest = {}): Promise<SessionView> {
    return this.run(async () => {
      const task = this.pickTask(req);
      const r = await this.env
        .reset({
          seed: req.seed,
          task,
          ...(req.group !== undefined ? { group: { id: req.group, ...(req.groupIndex !== undefined ? { index: req.groupIndex } : {}) } } : {}),
        })
        .catch((e) => {
          throw executionError("reset", e);
        });
      this.episodeId = req.episodeId ?? `${this.id}-${Date.now().toString(36)}`;
      this.stepCount = 0;
      this.totalReward = 0;
      const t = (r.info.task as Task | undefined) ?? task;
      if (!t) throw new ServeError("EXECUTION_ERROR", `${this.host.name} reset gave no task`, 500);
      this.view = {
        observation: r.observation,
        reward: null,
        done: false,
        terminated: false,
        truncated: false,
        step: 0,
        availableActions: this.env.availableActions(),
        task: t,
        info: r.info,
      };
      return this.view;
    });
  }

  step(action: string): Promise<SessionView> {
    return this.run(async () => {
      if (!this.view) throw new ServeError("SESSION_ERROR", "no episode has started in this session: reset first", 409);
      if (this.view.done) throw new ServeError("SESSION_ERROR", `the episode ended after ${this.stepCount} steps: reset to start another`, 409);
      const r = await this.env.step(action).catch((e) => {
        throw e instanceof ResetNeededError ? new ServeError("SESSION_ERROR", e.message, 409) : executionError("step", e);
      });
      this.stepCount++;
      this.totalReward += r.reward;
      const done = r.terminated || r.truncated;
      this.view = {
        ...this.view,
        observation: r.observation,
        reward: r.reward,
        done,
        terminated: r.terminated,
        truncated: r.truncated,
        step: this.stepCount,
        availableActions: this.env.availableActions(),
        info: r.info,
      };
      return this.view;
    });
  }

  /** Closes the env (after any call in flight) and frees the session's place. */
  async close(reason = "closed by the client"): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closeReason = reason;
    this.onClose?.(reason);
    await this.queue;
    await this.env.close().catch(() => {});
    // The place frees once the env is closed, so no more than maxSessions envs are ever alive.
    this.release(this);
  }

  private pickTask(req: ResetRequest): Task | undefined {
    if (req.task) return req.task;
    const tasks = this.host.tasks;
    if (req.split !== undefined && req.split !== this.host.split)
      throw new ServeError("VALIDATION_ERROR", `split ${req.split} is not served here: this server serves ${this.host.name} split ${this.host.split}`);
    if (req.taskId !== undefined) {
      const i = this.host.indexOf(req.taskId);
      if (i === undefined) throw new ServeError("VALIDATION_ERROR", `unknown task id "${req.taskId}" in ${this.host.name} split ${this.host.split}`);
      return tasks[i];
    }
    if (req.taskIndex !== undefined) {
      if (!Number.isInteger(req.taskIndex) || req.taskIndex < 0 || req.taskIndex >= tasks.length) {
        throw new ServeError(
          "VALIDATION_ERROR",
          `task index ${req.taskIndex} is out of range: ${this.host.name} split ${this.host.split} has tasks 0..${tasks.length - 1}`,
        );
      }
      return tasks[req.taskIndex];
    }
    return undefined; // the env samples one from its seed
  }
}

function executionError(what: string, e: unknown): ServeError {
  if (e instanceof ServeError) return e;
  // The env refused the call as the client made it (a served run's full group, or one that has ended).
  if (e instanceof DreamGymError && e.code === "SESSION_ERROR") return new ServeError("SESSION_ERROR", e.message, 409);
  const message = e instanceof Error ? e.message : String(e);
  return new ServeError("EXECUTION_ERROR", `${what} failed: ${message}`, 500);
}

export interface SessionManagerOptions {
  /** Sessions open at once, over every protocol. @default 256 */
  maxSessions?: number;
  /** Seconds a session without a connection (AgentGym's HTTP envs) may sit unused before it is closed; 0 never. @default 300 */
  idleTimeout?: number;
  /** The same for a session held by a live WebSocket (which ends with its connection anyway); 0 never. @default 0 */
  connectedIdleTimeout?: number;
}

/** The sessions of one server, over one env host: capacity, lookup, the idle reaper. */
export class SessionManager {
  readonly maxSessions: number;
  readonly idleTimeoutMs: number;
  readonly connectedIdleTimeoutMs: number;
  readonly stats = { opened: 0, closed: 0, reaped: 0 };
  private readonly live = new Map<number, Session>();
  /** Recently closed sessions, so a late call hears why (bounded). */
  private readonly gone = new Map<number, string>();
  private nextIndex = 0;
  private reaper: NodeJS.Timeout | undefined;
  private closing = false;

  constructor(
    readonly host: EnvHost,
    opts: SessionManagerOptions = {},
  ) {
    this.maxSessions = opts.maxSessions ?? 256;
    this.idleTimeoutMs = 1000 * (opts.idleTimeout ?? 300);
    this.connectedIdleTimeoutMs = 1000 * (opts.connectedIdleTimeout ?? 0);
    const shortest = Math.min(...[this.idleTimeoutMs, this.connectedIdleTimeoutMs].filter((t) => t > 0));
    if (Number.isFinite(shortest)) {
      this.reaper = setInterval(() => void this.reapIdle(), Math.min(5000, Math.max(50, shortest / 4)));
      this.reaper.unref();
    }
  }

  get size(): number {
    return this.live.size;
  }

  /** A new session, or CAPACITY_REACHED when `maxSessions` are open. */
  open(format: ObservationFormat = "abstract"): Session {
    if (this.closing) throw new ServeError("SESSION_ERROR", "the server is shutting down", 503);
    if (this.live.size >= this.maxSessions) {
      throw new ServeError(
        "CAPACITY_REACHED",
        `the server is at capacity (${this.maxSessions} sessions open): close one, or start the server with a larger --max-sessions`,
        503,
      );
    }
    const index = this.nextIndex++;
    let env: Env;
    try {
      env = this.host.createEnv(format);
    } catch (e) {
      throw executionError("creating the env", e);
    }
    const session = new Session(this.host, env, index, (s) => {
      this.live.delete(s.index);
      this.gone.set(s.index, s.closeReason);
      if (this.gone.size > 4096) this.gone.delete(this.gone.keys().next().value as number);
      this.stats.closed++;
    });
    this.live.set(index, session);
    this.stats.opened++;
    return session;
  }

  /** The live session with this index, or SESSION_ERROR saying it never existed or why it closed. */
  get(index: number): Session {
    const s = this.live.get(index);
    if (s) return s;
    const why = this.gone.get(index);
    if (why !== undefined) throw new ServeError("SESSION_ERROR", `session ${index} is closed (${why})`, 404);
    throw new ServeError("SESSION_ERROR", `no session ${index} on this server`, 404);
  }

  /** Closes sessions unused for longer than their idle timeout (a connection's, or the one without). */
  async reapIdle(now = Date.now()): Promise<number> {
    const timeout = (s: Session) => (s.connected ? this.connectedIdleTimeoutMs : this.idleTimeoutMs);
    const idle = [...this.live.values()].filter((s) => !s.closed && !s.isBusy && timeout(s) > 0 && now - s.lastActive >= timeout(s));
    this.stats.reaped += idle.length;
    await Promise.all(idle.map((s) => s.close(`idle for more than ${timeout(s) / 1000} s`)));
    return idle.length;
  }

  /** Stops the reaper and closes every session (each after its call in flight); no session opens after. */
  async close(reason = "the server is shutting down"): Promise<void> {
    this.closing = true;
    clearInterval(this.reaper);
    await Promise.all([...this.live.values()].map((s) => s.close(reason)));
  }
}
