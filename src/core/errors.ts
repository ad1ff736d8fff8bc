const MARKER = Symbol.for("dreamgym.error");

/** The base of every error dreamgym throws on purpose. Messages say what, where, and what to do. */
export class DreamGymError extends Error {
  readonly code: string;
  readonly [MARKER] = true;
  constructor(message: string, code = "DREAMGYM_ERROR", options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
  /** Works across duplicated copies of the package, unlike `instanceof`. */
  static isInstance(e: unknown): e is DreamGymError {
    return typeof e === "object" && e !== null && (e as Record<symbol, unknown>)[MARKER] === true;
  }
}

/** A configuration value or argument is wrong. */
export class InvalidConfigError extends DreamGymError {
  constructor(message: string) {
    super(message, "INVALID_CONFIG");
  }
}

/** A data file is missing or malformed. `file` and (when known) `line`/`column` say where. */
export class DataError extends DreamGymError {
  readonly file?: string;
  readonly line?: number;
  readonly column?: number;
  constructor(message: string, where: { file?: string; line?: number; column?: number } = {}, cause?: unknown) {
    const loc = where.file ? `${where.file}${where.line ? `:${where.line}${where.column ? `:${where.column}` : ""}` : ""}: ` : "";
    super(`${loc}${message}`, "DATA_ERROR", { cause });
    this.file = where.file;
    this.line = where.line;
    this.column = where.column;
  }
}

/** `step()` was called before `reset()` or after the episode ended. */
export class ResetNeededError extends DreamGymError {
  constructor(message = "call reset() before step(): the episode has not started or has ended") {
    super(message, "RESET_NEEDED");
  }
}

/** The environment was used after `close()`. */
export class ClosedEnvironmentError extends DreamGymError {
  constructor(message = "the environment is closed") {
    super(message, "ENV_CLOSED");
  }
}

/** A call to a remote API failed. `isRetryable` is true for timeouts, connection errors, 408/409/429/5xx. */
export class ApiCallError extends DreamGymError {
  readonly url: string;
  readonly status?: number;
  readonly isRetryable: boolean;
  constructor(message: string, details: { url: string; status?: number; isRetryable?: boolean; cause?: unknown }) {
    super(`${message} (${details.url}${details.status ? `, HTTP ${details.status}` : ""})`, "API_CALL_ERROR", { cause: details.cause });
    this.url = details.url;
    this.status = details.status;
    this.isRetryable = details.isRetryable ?? (details.status === undefined || [408, 409, 429].includes(details.status) || details.status >= 500);
  }
}

/** Training produced a loss, gradient or parameter that is not a finite number: the run stops there. */
export class TrainingDivergedError extends DreamGymError {
  constructor(message: string) {
    super(message, "TRAINING_DIVERGED");
  }
}

/** A value as an error message shows it: a string quoted, and its type when that is what is wrong (`"3" (a string)`). */
export function describeValue(v: unknown): string {
  if (typeof v === "string") return `${JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v)} (a string)`;
  if (typeof v === "number") return String(v);
  if (v === null || v === undefined) return String(v);
  if (Array.isArray(v)) return "an array";
  return `${typeof v === "object" ? "an object" : `${String(v)} (a ${typeof v})`}`;
}

/** An env's `step` argument: a string, else an `InvalidConfigError` that says what came instead. */
export function checkAction(action: unknown): string {
  if (typeof action !== "string")
    throw new InvalidConfigError(`an action is a string, got ${typeof action === "number" ? `${action} (a number)` : describeValue(action)}`);
  return action;
}
