/** dreamgym's library API. Subpaths (`dreamgym/core`, `dreamgym/envs`, `dreamgym/envs/webshop`, `dreamgym/buffer`, `dreamgym/llm`, `dreamgym/experience`) give the rest. */
export * from "./core/index.ts";
export { createEnv, listEnvs, listPolicies, createPolicy, runEpisode, RandomPolicy, resolveDataDir } from "./envs/index.ts";
export type { EnvName, ActingPolicy, ActContext, EpisodeOptions } from "./envs/index.ts";
export { WebShopEnv } from "./envs/webshop/index.ts";
export type { WebShopOptions, WebShopTask } from "./envs/webshop/index.ts";
export {
  ReplayBuffer, HashingEmbedder, OpenAIEmbedder, createEmbedder, transitionText, importJsonl, exportJsonl, fewShotTrajectories,
} from "./buffer/index.ts";
export type { Embedder, SearchOptions, SearchResult, SearchFilter, StoredTransition, TransitionRecord, BufferStats } from "./buffer/index.ts";
export { OpenAIChatModel, createChatModel, ResponseCache } from "./llm/index.ts";
export type { ChatModel, ChatMessage, ChatRequest, ChatResponse, ModelStats } from "./llm/index.ts";
export { EmbeddedExperienceModel, SyntheticEnv, abstractTrajectory } from "./experience/index.ts";
export type { ExperienceModel, PredictInput, Prediction, Demo, SyntheticEnvOptions, Verifier } from "./experience/index.ts";
