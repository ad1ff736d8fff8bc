/**
 * Test support for dreamgym and for users' own tests (`dreamgym/testing`, as the AI SDK ships
 * `ai/test`): a local OpenAI-compatible chat server with injectable faults, an in-process scripted
 * chat model, a tiny GGUF model writer, toy envs with a known optimum, and trajectory helpers.
 * Nothing in the product imports it.
 */
export { chatServer } from "./chat-server.ts";
export type { Fault, Served } from "./chat-server.ts";
export { ScriptedChatModel } from "./scripted-chat-model.ts";
export { writeTinyGguf } from "./tiny-gguf.ts";
export { BanditEnv, banditPage, banditSyntheticSupport, ChainEnv, ShopToyEnv } from "./toy-envs.ts";
export { makeTrajectory, tempFile } from "./trajectories.ts";
