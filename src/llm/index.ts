export type { ChatModel, ChatMessage, ChatRequest, ChatResponse, ChatChoice, TokenUsage, ModelStats, JsonSchema } from "./chat-model.ts";
export { extractJson } from "./chat-model.ts";
export { OpenAIChatModel } from "./openai-chat-model.ts";
export type { OpenAIChatModelOptions } from "./openai-chat-model.ts";
export { ResponseCache } from "./response-cache.ts";
export { Semaphore } from "./semaphore.ts";
export { createChatModel } from "./create-chat-model.ts";
export { GgufChatModel } from "./gguf-chat-model.ts";
export type { GgufChatModelOptions } from "./gguf-chat-model.ts";
