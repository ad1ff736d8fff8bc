export type { ExperienceModel, PredictInput, Prediction, Demo, HistoryStep, TrajectoryStore } from "../core/index.ts";
export { EmbeddedExperienceModel } from "./embedded-model.ts";
export type { EmbeddedModelOptions } from "./embedded-model.ts";
export { SyntheticEnv } from "./synthetic-env.ts";
export type { SyntheticEnvOptions } from "./synthetic-env.ts";
export { abstractTrajectory } from "../core/index.ts";
export { ReasoningExperienceModel, EPISODE_BLOCK_PREFIX, episodeBlock, parseEpisodeBlock } from "./reasoning-model.ts";
export type { ReasoningModelOptions } from "./reasoning-model.ts";
export { auditModel, elementF1, stateKind } from "./audit.ts";
export type { AuditReport, AuditOptions } from "./audit.ts";
export { retrieveDemos } from "./demos.ts";
export type { DemoOptions } from "./demos.ts";
export { buildSftData, isValTask } from "./sft-data.ts";
export type { SftBuildOptions, SftBuildReport } from "./sft-data.ts";
export { createExperienceModel } from "./create-experience-model.ts";
export type { CreateExperienceModelOptions, ExperienceModelHandle } from "./create-experience-model.ts";
export {
  replayInRealEnv,
  compareReal,
  summarizeReplays,
  auditRows,
  auditPairs,
  auditTable,
  advantageAgreement,
  orderAgreementByMargin,
  realTrajectories,
} from "./on-policy-audit.ts";
export type { SyntheticRecord, ReplayResult, OnPolicyAuditSummary, AuditPair, RealReplay, AdvantageAgreement } from "./on-policy-audit.ts";
export { pessimisticStep } from "./synthetic-env.ts";
export type { Pessimism } from "./synthetic-env.ts";
export { LearnedExperienceModel, trainLearnedModel } from "./learned-model.ts";
export { RecordedSteps } from "./recorded-steps.ts";
export type { Replayed } from "./recorded-steps.ts";
export type { LearnedModelInfo, LearnedModelValidation, LearnedModelOptions, RefitOptions, TrainLearnedModelOptions } from "./learned-model.ts";
export { transitionFeatures, TRANSITION_FEATURE_VERSION } from "./transition-features.ts";
export type { TransitionInput } from "./transition-features.ts";
export { loadLearnedModel } from "./create-experience-model.ts";
export { isLocalExperience, LEARNED_PREFIX, parseExperienceSpec } from "./experience-spec.ts";
export type { ExperienceSpec } from "./experience-spec.ts";
export { TrajectoryJudge, JUDGE_DIMENSIONS } from "./judge.ts";
export type { JudgeOptions, JudgeReport, JudgeScores, JudgeDimension } from "./judge.ts";
