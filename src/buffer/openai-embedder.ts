import { Agents, ApiCallError, HttpStatusError, InvalidConfigError, openAIHeaders, postJson, retryableStatus } from "../core/index.ts";
import { l2Normalize, type Embedder } from "./embedder.ts";

export interface OpenAIEmbedderOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:8000/v1` (vLLM, Ollama, TEI) or OpenAI's. */
  baseURL: string;
  model: string;
  /** Default: `$OPENAI_API_KEY`, else a placeholder (local servers ignore it). */
  apiKey?: string;
  /** Texts per request. @default 64 */
  batchSize?: number;
  /** Retries on connection errors, timeouts, 408/409/429/5xx, with exponential backoff and jitter. @default 4 */
  maxRetries?: number;
  /** Per-request timeout. @default 30000 */
  timeoutMs?: number;
  /** Expected vector length; checked against the server's. */
  dims?: number;
}

/**
 * Any OpenAI-compatible `/v1/embeddings` endpoint (over Node's HTTP client, as the chat model's calls:
 * a retrieving synthetic step embeds its query with it). Vectors are L2-normalised. Connection errors,
 * timeouts and 408/409/429/5xx are retried with exponential backoff and jitter (0.5 s doubling to
 * 8 s, or the server's Retry-After), as the `openai` client did.
 */
export class OpenAIEmbedder implements Embedder {
  readonly id: string;
  private dimsValue: number;
  private readonly agents = new Agents();
  private readonly headers: Record<string, string>;
  private readonly maxRetries: number;
  private readonly timeoutMs: number;
  private readonly model: string;
  private readonly batchSize: number;
  private readonly baseURL: string;

  constructor(opts: OpenAIEmbedderOptions) {
    if (!opts.baseURL || !opts.model) throw new InvalidConfigError("an OpenAI-compatible embedder needs a baseURL and a model");
    this.baseURL = opts.baseURL.replace(/\/+$/, "");
    this.model = opts.model;
    this.batchSize = opts.batchSize ?? 64;
    this.dimsValue = opts.dims ?? 0;
    this.id = `openai-compatible:${this.baseURL}#${this.model}`;
    this.maxRetries = opts.maxRetries ?? 4;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.headers = openAIHeaders(opts.apiKey);
  }

  /** Vector length; 0 until the first call when not given. */
  get dims(): number {
    return this.dimsValue;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.batchSize) {
      const batch = texts.slice(i, i + this.batchSize);
      let res: { data?: { index: number; embedding: number[] }[] };
      try {
        res = await this.withRetries(JSON.stringify({ model: this.model, input: batch, encoding_format: "float" }));
      } catch (e) {
        const status = (e as { status?: number }).status;
        // The system's word under a connection error (ECONNREFUSED, ENOTFOUND …) says which.
        const code = (e as { cause?: { code?: unknown } }).cause?.code;
        const why = `${(e as Error).message}${typeof code === "string" ? ` (${code})` : ""}`;
        throw new ApiCallError(`embeddings request failed after retries: ${why}`, { url: `${this.baseURL}/embeddings`, status, cause: e });
      }
      const data = [...(Array.isArray(res?.data) ? res.data : [])].sort((a, b) => a.index - b.index);
      if (data.length !== batch.length) {
        throw new ApiCallError(`embeddings response has ${data.length} vectors for ${batch.length} inputs`, {
          url: `${this.baseURL}/embeddings`,
          isRetryable: false,
        });
      }
      for (const d of data) {
        const v = l2Normalize(Float32Array.from(d.embedding));
        if (this.dimsValue === 0) this.dimsValue = v.length;
        if (v.length !== this.dimsValue) {
          throw new ApiCallError(`embedding has ${v.length} dims, expected ${this.dimsValue}`, { url: `${this.baseURL}/embeddings`, isRetryable: false });
        }
        out.push(v);
      }
    }
    return out;
  }

  /** One request, retried where it may pass on a later try. */
  private async withRetries(body: string): Promise<{ data?: { index: number; embedding: number[] }[] }> {
    for (let attempt = 0; ; attempt++) {
      try {
        // Not aborted: each attempt is bounded by its timeout, as through the `openai` client.
        const answer = await postJson(`${this.baseURL}/embeddings`, body, {
          headers: this.headers,
          headersTimeoutMs: this.timeoutMs,
          maxBytes: 256 * 1024 * 1024,
          agents: this.agents,
        });
        if (answer.status < 200 || answer.status > 299) throw new HttpStatusError(answer);
        return JSON.parse(answer.body) as { data?: { index: number; embedding: number[] }[] };
      } catch (e) {
        const status = e instanceof HttpStatusError ? e.status : undefined;
        if (attempt >= this.maxRetries || (status !== undefined && !retryableStatus(status)) || e instanceof SyntaxError) throw e;
        const retryAfter = Number(e instanceof HttpStatusError ? e.retryAfter : undefined);
        const wait =
          Number.isFinite(retryAfter) && retryAfter >= 0 && retryAfter <= 60 ? retryAfter : Math.min(0.5 * 2 ** attempt, 8) * (1 - Math.random() * 0.25);
        await new Promise((r) => setTimeout(r, wait * 1000));
      }
    }
  }
}
