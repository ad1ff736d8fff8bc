import { InvalidConfigError } from "../core/index.ts";
import type { ChatModel } from "./chat-model.ts";
import { GgufChatModel } from "./gguf-chat-model.ts";
import { OpenAIChatModel, type OpenAIChatModelOptions } from "./openai-chat-model.ts";

/**
 * A chat model from one string: `openai:gpt-4o-mini` (api.openai.com, `$OPENAI_API_KEY`),
 * `http://127.0.0.1:8000/v1#Qwen2.5-7B` (any OpenAI-compatible server, `#` then the model), or
 * `gguf:./models/x.gguf` (a local model through node-llama-cpp, an optional dependency).
 */
export function createChatModel(spec: string, opts: Omit<OpenAIChatModelOptions, "baseURL" | "model"> = {}): ChatModel {
  if (spec.startsWith("openai:")) return new OpenAIChatModel({ ...opts, baseURL: "https://api.openai.com/v1", model: spec.slice("openai:".length) });
  const url = /^(https?:\/\/[^#]+)#(.+)$/.exec(spec);
  if (url) return new OpenAIChatModel({ ...opts, baseURL: url[1], model: url[2] });
  // A local model has no endpoint to lose: no timeout, no breaker.
  if (spec.startsWith("gguf:")) return new GgufChatModel({ path: spec.slice("gguf:".length), cache: opts.cache });
  throw new InvalidConfigError(`unknown model "${spec}" (use openai:<model>, http(s)://host:port/v1#<model> or gguf:<file>)`);
}
