import {
  Agents,
  AnswerTooLargeError,
  ApiCallError,
  HeadersTimeoutError,
  HttpStatusError,
  InvalidConfigError,
  openAIHeaders,
  postJson,
  RedirectLoopError,
  retryableStatus,
  timeoutAfterRead,
} from "../core/index.ts";
import { FailureBreaker } from "./breaker.ts";
import { extractJson, type ChatChoice, type ChatModel, type ChatRequest, type ChatResponse, type ModelStats } from "./chat-model.ts";
import { ResponseCache } from "./response-cache.ts";
import { Semaphore } from "./semaphore.ts";

export interface OpenAIChatModelOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:8000/v1` (vLLM, SGLang, Ollama, llama.cpp server) or OpenAI's. */
  baseURL: string;
  model: string;
  /** Default: `$OPENAI_API_KEY`, else a placeholder (local servers ignore it). */
  apiKey?: string;
  /** Calls in flight at once. @default 16 */
  concurrency?: number;
  /** Per-attempt timeout. A timed-out attempt is not retried (the call fails): a retry would multiply the wait. @default 60000 */
  timeoutMs?: number;
  /** Retries on 408/409/429/5xx, cut connections and unreadable responses, once the endpoint has answered. @default 4 */
  maxRetries?: number;
  /** Failed calls in a row (or failed tasks, reported by the model's users) that stop the run: see `FailureBreaker`. @default 10 */
  maxFailures?: number;
  /** First backoff; doubles each retry, with jitter, capped at `maxBackoffMs`. @default 500 */
  backoffMs?: number;
  /** @default 8000 */
  maxBackoffMs?: number;
  /** A response cache (or its file path): identical requests are answered from it. */
  cache?: ResponseCache | string;
  /** The largest answer read, in bytes; a longer one fails the attempt as it streams in. @default 16 MiB */
  maxAnswerBytes?: number;
}

/** What a chat completion's answer holds that is read here. */
interface ChatCompletion {
  model?: string;
  choices: { message?: { content?: string | null }; finish_reason?: string | null }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number };
}

/** An HTTP answer that is not an OpenAI chat completion (the endpoint is there, but speaks something else). */
class NotTheProtocolError extends Error {}
/** An answer that did not arrive whole within the request timeout (a server that drips its body). */
class AnswerDeadlineError extends Error {}

/** Any OpenAI-compatible chat server (`POST {baseURL}/chat/completions`, over Node's HTTP client: see core/http-post.ts). */
export class OpenAIChatModel implements ChatModel {
  readonly id: string;
  /** Stops the run when the endpoint cannot be reached or keeps failing. */
  readonly breaker: FailureBreaker;
  readonly stats: ModelStats = { requests: 0, cacheHits: 0, retries: 0, failures: 0, promptTokens: 0, completionTokens: 0, latencyMs: 0 };
  private readonly agents = new Agents();
  private readonly headers: Record<string, string>;
  private readonly maxAnswerBytes: number;
  private readonly model: string;
  private readonly url: string;
  private readonly semaphore: Semaphore;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly cache: ResponseCache | null;

  constructor(opts: OpenAIChatModelOptions) {
    if (!opts.baseURL || !opts.model) throw new InvalidConfigError("an OpenAI-compatible chat model needs a baseURL and a model");
    const baseURL = opts.baseURL.replace(/\/+$/, "");
    this.model = opts.model;
    this.url = `${baseURL}/chat/completions`;
    this.id = `${baseURL}#${opts.model}`;
    this.semaphore = new Semaphore(opts.concurrency ?? 16);
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.maxRetries = opts.maxRetries ?? 4;
    this.backoffMs = opts.backoffMs ?? 500;
    this.maxBackoffMs = opts.maxBackoffMs ?? 8000;
    if (!(this.timeoutMs > 0)) throw new InvalidConfigError(`the request timeout must be positive, got ${this.timeoutMs} ms`);
    this.breaker = new FailureBreaker(this.url, { maxFailures: opts.maxFailures });
    this.cache = typeof opts.cache === "string" ? new ResponseCache(opts.cache) : (opts.cache ?? null);
    this.maxAnswerBytes = opts.maxAnswerBytes ?? 16 * 1024 * 1024;
    if (!(this.maxAnswerBytes >= 1)) throw new InvalidConfigError(`the answer bound must be at least 1 byte, got ${this.maxAnswerBytes}`);
    this.headers = openAIHeaders(opts.apiKey);
  }

  /** Calls in flight and calls waiting for a slot. */
  get load(): { inFlight: number; waiting: number } {
    return { inFlight: this.semaphore.inFlight, waiting: this.semaphore.waiting };
  }

  async generate(request: ChatRequest): Promise<ChatResponse> {
    this.breaker.check();
    const key = this.cache ? ResponseCache.key(this.id, request) : null;
    if (key) {
      const hit = this.cache!.get(key);
      if (hit) {
        this.stats.cacheHits++;
        return { ...hit, cached: true, latencyMs: 0 };
      }
    }
    const started = performance.now();
    const response = await this.semaphore.run(() => this.withRetries(request));
    response.latencyMs = performance.now() - started;
    this.stats.latencyMs += response.latencyMs;
    this.stats.promptTokens += response.usage.promptTokens;
    this.stats.completionTokens += response.usage.completionTokens;
    if (key) this.cache!.put(key, response);
    return response;
  }

  private async withRetries(request: ChatRequest): Promise<ChatResponse> {
    for (let attempt = 0; ; attempt++) {
      this.breaker.check(); // tripped while this call waited for a slot or backed off
      this.stats.requests++;
      try {
        const response = await this.once(request);
        this.breaker.callSucceeded();
        return response;
      } catch (e) {
        if (this.breaker.tripped) throw this.breaker.tripped; // aborted by the trip
        const status = (e as { status?: number }).status;
        // An answer that is not the protocol, too large or too slow to finish came from a server that is there.
        const answered =
          status !== undefined || e instanceof NotTheProtocolError || causedBy(e, AnswerTooLargeError) || causedBy(e, AnswerDeadlineError) || redirectLoop(e);
        if (answered) this.breaker.answered();
        const timedOut = causedBy(e, HeadersTimeoutError) || causedBy(e, AnswerDeadlineError);
        // No status: no connection, a cut connection, no answer in time, or a body that is not the protocol.
        const transport = status === undefined;
        const retryable = transport ? !timedOut && this.breaker.reached : retryableStatus(status);
        if (!retryable || attempt >= this.maxRetries) {
          this.stats.failures++;
          const message = `chat completion failed${attempt > 0 ? ` after ${attempt + 1} attempts` : ""}: ${describe(e)}`;
          this.breaker.callFailed(`${message}${status ? ` (HTTP ${status})` : ""}`, { transport, cause: e });
          throw new ApiCallError(message, { url: this.url, status, isRetryable: transport || retryableStatus(status), cause: e });
        }
        this.stats.retries++;
        await new Promise((r) => setTimeout(r, this.backoff(attempt, e)));
      }
    }
  }

  /** Exponential backoff with full jitter; a server's Retry-After (seconds) is honoured up to the cap. */
  private backoff(attempt: number, e: unknown): number {
    const retryAfter = Number(e instanceof HttpStatusError ? e.retryAfter : undefined);
    const base = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt);
    const jittered = base / 2 + Math.random() * (base / 2);
    return Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(this.maxBackoffMs, retryAfter * 1000) : jittered;
  }

  private async once(request: ChatRequest): Promise<ChatResponse> {
    const abort = new AbortController();
    const off = this.breaker.onTrip(() => abort.abort());
    // The request timeout ends at the answer's headers; this one bounds the whole answer, a moment
    // later. Where it passes with no headers come, it is the request timeout (not answered): the
    // process may have stalled between setting it and sending the request, which then times out after it.
    // It acts after the loop's next read of the sockets: a process stalled past it takes an answer that came in time.
    let headersCame = false;
    const cancelDeadline = timeoutAfterRead(this.timeoutMs + 50, () =>
      abort.abort(
        headersCame
          ? new AnswerDeadlineError(`timed out: no whole answer within ${this.timeoutMs / 1000} s (--request-timeout)`)
          : new HeadersTimeoutError("Request timed out."),
      ),
    );
    try {
      return await this.attempt(request, abort.signal, () => (headersCame = true));
    } catch (e) {
      if (abort.signal.aborted && abort.signal.reason instanceof AnswerDeadlineError && !causedBy(e, AnswerDeadlineError)) throw abort.signal.reason;
      throw e;
    } finally {
      cancelDeadline();
      off();
    }
  }

  private async attempt(request: ChatRequest, signal: AbortSignal, onHeaders: () => void): Promise<ChatResponse> {
    const body = JSON.stringify({
      model: this.model,
      messages: request.messages,
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
      ...(request.seed !== undefined ? { seed: request.seed } : {}),
      ...(request.n !== undefined ? { n: request.n } : {}),
      ...(request.stop ? { stop: request.stop } : {}),
      ...(request.schema
        ? { response_format: { type: "json_schema", json_schema: { name: request.schema.name, schema: request.schema.schema, strict: true } } }
        : {}),
    });
    const answer = await postJson(this.url, body, {
      headers: this.headers,
      signal,
      headersTimeoutMs: this.timeoutMs,
      maxBytes: this.maxAnswerBytes,
      agents: this.agents,
      onHeaders,
    });
    if (answer.status < 200 || answer.status > 299) throw new HttpStatusError(answer);
    // A JSON answer that does not parse is a broken transfer (retried once the server has answered);
    // any other kind of answer is a server that speaks something else.
    if (answer.status === 204 || answer.body.trim() === "") throw new NotTheProtocolError("the answer is not an OpenAI chat completion (an empty answer)");
    const type = String(answer.headers["content-type"] ?? "");
    if (!/[/+]json\b/i.test(type))
      throw new NotTheProtocolError(`the answer is not an OpenAI chat completion (it begins ${JSON.stringify(answer.body.slice(0, 40))})`);
    const res = JSON.parse(answer.body) as ChatCompletion | null;
    if (!res || typeof res !== "object" || !Array.isArray(res.choices))
      throw new NotTheProtocolError("the answer is not an OpenAI chat completion (no choices)");
    const choices: ChatChoice[] = res.choices.map((c) => {
      const text = c.message?.content ?? "";
      const choice: ChatChoice = { text, finishReason: c.finish_reason ?? undefined };
      if (request.schema) {
        const { value, error } = extractJson(text);
        if (error) choice.parseError = error;
        else choice.parsed = value;
      }
      return choice;
    });
    return {
      model: res.model ?? this.model,
      choices,
      usage: { promptTokens: res.usage?.prompt_tokens ?? 0, completionTokens: res.usage?.completion_tokens ?? 0 },
      latencyMs: 0,
      cached: false,
    };
  }

  close(): void {
    this.cache?.close();
    this.agents.close();
  }
}

/** The error's message with the system error code under it, if any (e.g. "Connection error. (ECONNREFUSED)"). */
function describe(e: unknown): string {
  const message = (e as Error).message;
  if (redirectLoop(e)) return `${message} (the server redirects in a loop: check the URL)`;
  for (let c = (e as { cause?: unknown }).cause, depth = 0; c && depth < 4; c = (c as { cause?: unknown }).cause, depth++) {
    // Our own verdict on the answer, which the client reports as a "Connection error." when fetch throws it.
    if (c instanceof AnswerTooLargeError || c instanceof AnswerDeadlineError) return c.message;
    const code = (c as { code?: unknown }).code;
    if (typeof code === "string" && !message.includes(code)) return `${message} (${code})`;
  }
  return message;
}

/** Whether the client gave up following redirects: the server is there, and answers with redirects. */
const redirectLoop = (e: unknown): boolean => causedBy(e, RedirectLoopError);

/** Whether `e` or an error in its cause chain is a `kind`. */
function causedBy(e: unknown, kind: new (...args: never[]) => Error): boolean {
  for (let c = e, depth = 0; c && depth < 5; c = (c as { cause?: unknown }).cause, depth++) if (c instanceof kind) return true;
  return false;
}
