/**
 * dreamgym's library API: the main actions of each room. The subpaths (`dreamgym/core`, `/envs`,
 * `/envs/webshop`, `/envs/alfworld`, `/envs/browser`, `/envs/webshop-site`, `/buffer`, `/llm`, `/experience`, `/curriculum`, `/rl`,
 * `/train`, `/remote`, and `/testing` for users' own tests) give the rest.
 */
// The ground floor: types, the Env contract and its wrappers, checkEnv, the episode loop, errors, JSONL.
export * from "./core/index.ts";
// Environments: the registry (built-in and your own), scripted policies, the data folder.
export {
  createEnv, registerEnv, unregisterEnv, envEntry, listEnvs, listPolicies, createPolicy, syntheticSupport, envTasks, defaultSplits, loadEnvModules,
  actionVocabulary, runEpisode, RandomPolicy, resolveDataDir, plugPoint,
} from "./envs/index.ts";
export type {
  EnvName, EnvSpec, EnvEntry, CommonEnvOptions, SyntheticSupport, EpisodeOptions, PlugPoint, ExperienceModelContext, TaskGeneratorContext, AgentGymSupport,
} from "./envs/index.ts";
export { WebShopEnv } from "./envs/webshop/index.ts";
export type { WebShopOptions, WebShopTask } from "./envs/webshop/index.ts";
export { AlfWorldEnv } from "./envs/alfworld/index.ts";
// Real browsers: the browser env over Playwright and WebShop served as a website.
export { BrowserEnv, BrowserPool, webAbstraction, parseBrowserAction, readPageState, BrowserUnavailableError, SiteUnreachableError } from "./envs/browser/index.ts";
export type { BrowserSite, SiteVerdict, BrowserEnvOptions, BrowserPoolOptions, PageState, PageElement } from "./envs/browser/index.ts";
export { WebShopSite, createWebShopBrowserEnv } from "./envs/webshop-site/index.ts";
export type { WebShopSiteOptions, WebShopBrowserOptions } from "./envs/webshop-site/index.ts";
export type { AlfWorldOptions, AlfWorldTask } from "./envs/alfworld/index.ts";
// The replay buffer.
export {
  ReplayBuffer, HashingEmbedder, OpenAIEmbedder, createEmbedder, transitionText, importJsonl, exportJsonl, fewShotTrajectories,
} from "./buffer/index.ts";
export type { Embedder, SearchOptions, SearchResult, SearchFilter, StoredTransition, TransitionRecord, BufferStats } from "./buffer/index.ts";
// LLM backends.
export { OpenAIChatModel, GgufChatModel, createChatModel, ResponseCache } from "./llm/index.ts";
export type { ChatModel, ChatMessage, ChatRequest, ChatResponse, ModelStats } from "./llm/index.ts";
// Experience models, the synthetic env, the audit.
export {
  createExperienceModel, EmbeddedExperienceModel, ReasoningExperienceModel, SyntheticEnv, abstractTrajectory, auditModel, buildSftData,
} from "./experience/index.ts";
export type { ExperienceModel, ExperienceModelHandle, PredictInput, Prediction, Demo, SyntheticEnvOptions, AuditReport } from "./experience/index.ts";
// The curriculum.
export { Curriculum, WebShopTaskGenerator, LlmTaskGenerator, rewardVariance } from "./curriculum/index.ts";
export type { TaskGenerator, CurriculumConfig } from "./curriculum/index.ts";
// Policies and algorithms.
export { NeuralPolicy, LlmPolicy, grpoUpdate, ppoUpdate, gae, groupAdvantages } from "./rl/index.ts";
export type { TrainablePolicy, NeuralPolicyConfig, GrpoConfig, PpoConfig } from "./rl/index.ts";
// Training: the DreamGym loop over a run folder.
export { train, resumeTraining, trainingLoop, evaluate } from "./train/index.ts";
export type { TrainConfig, TrainConfigInput, TrainSummary, TrainParts, IterationMetrics, EvalResult, TrainHooks } from "./train/index.ts";
