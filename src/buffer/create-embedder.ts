import { InvalidConfigError } from "../core/index.ts";
import type { Embedder } from "./embedder.ts";
import { HashingEmbedder } from "./hashing-embedder.ts";
import { OpenAIEmbedder } from "./openai-embedder.ts";

/**
 * An embedder from one string: `hashing` or `hashing:512` (the default, with dims);
 * `http://127.0.0.1:8000/v1#bge-small` (any OpenAI-compatible server, `#` then the model);
 * `openai:text-embedding-3-small` (api.openai.com, key from `$OPENAI_API_KEY`).
 */
export function createEmbedder(spec: string, opts: { timeoutMs?: number } = {}): Embedder {
  const hashing = /^hashing(?::(\d+))?$/.exec(spec);
  if (hashing) return new HashingEmbedder({ dims: hashing[1] ? Number(hashing[1]) : undefined });
  if (spec.startsWith("openai:")) return new OpenAIEmbedder({ ...opts, baseURL: "https://api.openai.com/v1", model: spec.slice("openai:".length) });
  const url = /^(https?:\/\/[^#]+)#(.+)$/.exec(spec);
  if (url) return new OpenAIEmbedder({ ...opts, baseURL: url[1], model: url[2] });
  throw new InvalidConfigError(`unknown embedder "${spec}" (use hashing[:dims], openai:<model>, or http(s)://host/v1#<model>)`);
}
