import type { ChatModel } from "./chat-model.ts";
import { GgufChatModel } from "./gguf-chat-model.ts";
import { OPENAI_BASE_URL, parseModelSpec, type ModelSpec } from "./model-spec.ts";
import { OpenAIChatModel, type OpenAIChatModelOptions } from "./openai-chat-model.ts";

/**
 * A chat model from one string: `openai:gpt-4o-mini` (api.openai.com, `$OPENAI_API_KEY`),
 * `http://127.0.0.1:8000/v1#Qwen2.5-7B` (any OpenAI-compatible server, `#` then the model), or
 * `gguf:./models/x.gguf` (a local model through node-llama-cpp, an optional dependency), or such a
 * string already taken apart (`parseModelSpec`).
 */
export function createChatModel(spec: string | ModelSpec, opts: Omit<OpenAIChatModelOptions, "baseURL" | "model"> = {}): ChatModel {
  // A GGUF file is read when the model is first used.
  const m = typeof spec === "string" ? parseModelSpec(spec, { checkFile: false }) : spec;
  switch (m.kind) {
    case "openai":
      return new OpenAIChatModel({ ...opts, baseURL: OPENAI_BASE_URL, model: m.model });
    case "http":
      return new OpenAIChatModel({ ...opts, baseURL: m.baseURL, model: m.model });
    // A local model has no endpoint to lose: no timeout, no breaker.
    case "gguf":
      return new GgufChatModel({ path: m.path, cache: opts.cache });
  }
}
