import { createRequire } from "node:module";
import type OpenAI from "openai";
import { ApiCallError, InvalidConfigError } from "../core/index.ts";
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

// The `openai` package is read when the first embedder is made (as the chat model's: a command that
// calls no endpoint does not pay its load).
const require = createRequire(import.meta.url);
let openaiClass: typeof OpenAI | undefined;
const openai = (): typeof OpenAI => (openaiClass ??= (require("openai") as { OpenAI: typeof OpenAI }).OpenAI);

/** Any OpenAI-compatible `/v1/embeddings` endpoint, through the official client. Vectors are L2-normalised. */
export class OpenAIEmbedder implements Embedder {
  readonly id: string;
  private dimsValue: number;
  private readonly client: OpenAI;
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
    this.client = new (openai())({
      baseURL: this.baseURL,
      apiKey: opts.apiKey ?? process.env.OPENAI_API_KEY ?? "not-needed",
      maxRetries: opts.maxRetries ?? 4,
      timeout: opts.timeoutMs ?? 30_000,
    });
  }

  /** Vector length; 0 until the first call when not given. */
  get dims(): number {
    return this.dimsValue;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.batchSize) {
      const batch = texts.slice(i, i + this.batchSize);
      let res;
      try {
        res = await this.client.embeddings.create({ model: this.model, input: batch, encoding_format: "float" });
      } catch (e) {
        const status = (e as { status?: number }).status;
        throw new ApiCallError(`embeddings request failed after retries: ${(e as Error).message}`, { url: `${this.baseURL}/embeddings`, status, cause: e });
      }
      const data = [...(res.data ?? [])].sort((a, b) => a.index - b.index);
      if (data.length !== batch.length) {
        throw new ApiCallError(`embeddings response has ${data.length} vectors for ${batch.length} inputs`, {
          url: `${this.baseURL}/embeddings`,
          isRetryable: false,
        });
      }
      for (const d of data) {
        const v = l2Normalize(Float32Array.from(d.embedding as number[]));
        if (this.dimsValue === 0) this.dimsValue = v.length;
        if (v.length !== this.dimsValue) {
          throw new ApiCallError(`embedding has ${v.length} dims, expected ${this.dimsValue}`, { url: `${this.baseURL}/embeddings`, isRetryable: false });
        }
        out.push(v);
      }
    }
    return out;
  }
}
