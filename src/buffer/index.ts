export { ReplayBuffer } from "./replay-buffer.ts";
export type {
  StoredTransition,
  TransitionRecord,
  AnnouncedStep,
  SearchFilter,
  SearchOptions,
  SearchResult,
  BufferStats,
  BufferGroupStats,
  ReplayBufferOptions,
  AppendOptions,
  AppendResult,
} from "./buffer-types.ts";
export type { Embedder } from "./embedder.ts";
export { l2Normalize, dot } from "./embedder.ts";
export { HashingEmbedder } from "./hashing-embedder.ts";
export type { HashingEmbedderOptions } from "./hashing-embedder.ts";
export { OpenAIEmbedder } from "./openai-embedder.ts";
export type { OpenAIEmbedderOptions } from "./openai-embedder.ts";
export { createEmbedder } from "./create-embedder.ts";
export { transitionText, EMBED_STATE_CHARS } from "./transition-text.ts";
export { parseTrajectory, trajectoryContentId } from "./trajectory-schema.ts";
export { importJsonl, exportJsonl, parseTranscript } from "./importers.ts";
export type { ImportReport, ImportOptions } from "./importers.ts";
export { checkBufferEnv, checkBufferGrounds, refuseBufferFolder } from "./buffer-env.ts";
export type { EpisodeQuery, EpisodePage, EpisodeSummary, EpisodeOrigin } from "./episode-pages.ts";
