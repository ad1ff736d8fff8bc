export type {
  ActOptions,
  Decision,
  PastStep,
  Evaluation,
  OutputGradients,
  Policy,
  PolicyInput,
  TrainablePolicy,
  UpdateStats,
} from "./policy.ts";
export { FEATURE_VERSION, featurize, queryCandidates, contentTokens, idLike } from "./features.ts";
export { FeatureBuilder, bucket } from "../core/index.ts";
export { webView, viewAction, isWebState, clickChoice } from "./web-view.ts";
export type { WebView } from "./web-view.ts";
export { FusedScoreNets, ScoreNet } from "./score-net.ts";
export { packParams, unpackParams } from "./param-file.ts";
export type { FeaturizedStep, PolicyFeatures, SparseVector } from "../core/index.ts";
export { NeuralPolicy } from "./neural-policy.ts";
export type { NeuralPolicyConfig, NeuralStepRecord } from "./neural-policy.ts";
export { grpoConfigSchema, grpoUpdate, groupAdvantages, updateRecords } from "./grpo.ts";
export { ReferenceThread } from "./reference.ts";
export type { GrpoConfig, GrpoStats } from "./grpo.ts";
export { ppoConfigSchema, ppoUpdate, gae } from "./ppo.ts";
export type { PpoConfig, PpoStats } from "./ppo.ts";
export { LlmPolicy, parseActionLine, matchAction } from "./llm-policy.ts";
export type { LlmPolicyOptions, LlmStepRecord } from "./llm-policy.ts";
export { exportForTrainer, groupLines } from "./llm-export.ts";
export type { TrainerExportOptions } from "./llm-export.ts";
export { bcConfigSchema, bcEpoch } from "./bc.ts";
export type { BcConfig, BcStats } from "./bc.ts";
