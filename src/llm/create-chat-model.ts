import { InvalidConfigError } from "../core/index.ts";
import type { ChatModel } from "./chat-model.ts";
import { OpenAIChatModel, type OpenAIChatModelOptions } from "./openai-chat-model.ts";

/**
 * A chat model from one string: `openai:gpt-4o-mini` (api.openai.com, `$OPENAI_API_KEY`), or
 * `http://127.0.0.1:8000/v1#Qwen2.5-7B` (any OpenAI-compatible server, `#` then the model).
 * (`gguf:<file>`, a local model through node-llama-cpp, is not in this version yet.)
 */
export function createChatModel(spec: string, opts: Omit<OpenAIChatModelOptions, "baseURL" | "model"> = {}): ChatModel {
  if (spec.startsWith("openai:")) return new OpenAIChatModel({ ...opts, baseURL: "https://api.openai.com/v1", model: spec.slice("openai:".length) });
  const url = /^(https?:\/\/[^#]+)#(.+)$/.exec(spec);
  if (url) return new OpenAIChatModel({ ...opts, baseURL: url[1], model: url[2] });
  if (spec.startsWith("gguf:")) throw new InvalidConfigError(`local GGUF models ("${spec}") are not available in this version yet; serve the model with llama.cpp's server and use http://127.0.0.1:8080/v1#<model>`);
  throw new InvalidConfigError(`unknown model "${spec}" (use openai:<model> or http(s)://host:port/v1#<model>)`);
}
