/** dreamgym's library API. Subpaths (`dreamgym/core`, `dreamgym/envs`, `dreamgym/envs/webshop`, `dreamgym/buffer`, `dreamgym/llm`, `dreamgym/experience`) give the rest. */
export * from "./core/index.ts";
export {
  createEnv, registerEnv, unregisterEnv, envEntry, listEnvs, listPolicies, createPolicy, syntheticSupport, envTasks, defaultSplits, loadEnvModules,
  actionVocabulary, runEpisode, RandomPolicy, resolveDataDir,
} from "./envs/index.ts";
export type { EnvName, EnvSpec, CommonEnvOptions, SyntheticSupport, EpisodeOptions } from "./envs/index.ts";
export { WebShopEnv } from "./envs/webshop/index.ts";
export type { WebShopOptions, WebShopTask } from "./envs/webshop/index.ts";
export {
  ReplayBuffer, HashingEmbedder, OpenAIEmbedder, createEmbedder, transitionText, importJsonl, exportJsonl, fewShotTrajectories,
} from "./buffer/index.ts";
export type { Embedder, SearchOptions, SearchResult, SearchFilter, StoredTransition, TransitionRecord, BufferStats } from "./buffer/index.ts";
export { OpenAIChatModel, createChatModel, ResponseCache } from "./llm/index.ts";
export type { ChatModel, ChatMessage, ChatRequest, ChatResponse, ModelStats } from "./llm/index.ts";
export { EmbeddedExperienceModel, SyntheticEnv, abstractTrajectory } from "./experience/index.ts";
export type { ExperienceModel, PredictInput, Prediction, Demo, SyntheticEnvOptions } from "./experience/index.ts";
