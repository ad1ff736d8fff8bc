/** The LLM layer's one small interface: every backend (HTTP, local GGUF) implements `ChatModel`. */
import type { FailureBreaker } from "./breaker.ts";

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

/** A JSON schema for structured output (e.g. from zod's `z.toJSONSchema`). */
export type JsonSchema = Record<string, unknown>;

export interface ChatRequest {
  messages: ChatMessage[];
  /** Ask for JSON matching this schema; the response carries the parsed value. */
  schema?: { name: string; schema: JsonSchema };
  temperature?: number;
  maxTokens?: number;
  seed?: number;
  /** Number of completions. @default 1 */
  n?: number;
  stop?: string[];
}

export interface ChatChoice {
  text: string;
  /** The parsed JSON when a schema was asked for and the text parsed; undefined otherwise. */
  parsed?: unknown;
  /** Why parsing failed, when it did. */
  parseError?: string;
  finishReason?: string;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

export interface ChatResponse {
  model: string;
  choices: ChatChoice[];
  usage: TokenUsage;
  /** Wall time of the call, including retries and waiting for a concurrency slot. */
  latencyMs: number;
  /** Served from the response cache. */
  cached: boolean;
}

export interface ChatModel {
  /** Names the backend and model, e.g. `http://127.0.0.1:8000/v1#Qwen2.5-7B`. */
  readonly id: string;
  generate(request: ChatRequest): Promise<ChatResponse>;
  /**
   * A remote backend's circuit breaker. Users that check the output report each step to it
   * (`stepSucceeded`/`stepFailed`), so a model that keeps answering garbage stops the run too.
   */
  readonly breaker?: FailureBreaker;
  /** Calls, tokens and latency so far, where the backend counts them. */
  readonly stats?: ModelStats;
  /** Releases what the model holds (its response cache, a local model). */
  close?(): void | Promise<void>;
}

/** Counters every backend keeps. */
export interface ModelStats {
  requests: number;
  cacheHits: number;
  retries: number;
  failures: number;
  promptTokens: number;
  completionTokens: number;
  /** Sum of call latencies (ms), cache hits excluded. */
  latencyMs: number;
}

/**
 * Reads JSON out of model text: the whole text, else a fenced ```json block, else the outermost
 * {...}. Returns the value or the reason it failed.
 */
export function extractJson(text: string): { value?: unknown; error?: string } {
  const attempts = [text.trim()];
  const fence = /```(?:json)?\s*([\s\S]*?)```/.exec(text);
  if (fence) attempts.push(fence[1].trim());
  const first = text.indexOf("{");
  const last = text.lastIndexOf("}");
  if (first >= 0 && last > first) attempts.push(text.slice(first, last + 1));
  let error = "empty output";
  for (const a of attempts) {
    if (!a) continue;
    try {
      return { value: JSON.parse(a) };
    } catch (e) {
      error = (e as Error).message;
    }
  }
  return { error: `not JSON: ${error}` };
}
