export type { Action, Observation, StepInfo, Task, Transition, Trajectory, ExperienceSource, RewardSpec, TrajectoryRules } from "./types.ts";
export { OUTCOME_REWARDS } from "./types.ts";
export type { Env, EpisodeGroup, ResetOptions, ResetResult, StepResult } from "./env.ts";
export { FREE_TEXT_SLOT } from "./env.ts";
export { Rng } from "./rng.ts";
export {
  firstMissingFolder,
  readJsonl,
  readJsonlAll,
  writeJsonl,
  readJsonFile,
  JsonlWriter,
  jsonlEnd,
  repairJsonlTail,
  writeAll,
  writeFileAtomic,
  writeJsonlAtomic,
} from "./jsonl.ts";
export type { JsonlEnd, JsonlLineError, ReadJsonlOptions } from "./jsonl.ts";
export {
  DreamGymError,
  InvalidConfigError,
  DataError,
  ResetNeededError,
  ClosedEnvironmentError,
  ApiCallError,
  checkAction,
  describeValue,
  TrainingDivergedError,
} from "./errors.ts";
export { checkEnv } from "./check-env.ts";
export type { CheckEnvOptions } from "./check-env.ts";
export { abstractEnv, isAbstractState } from "./state-abstraction.ts";
export { withActions, withTimeLimit, orderEnforcing, closing } from "./wrappers.ts";
export type { ActionSource } from "./wrappers.ts";
export type { PredictedStep, StateAbstraction, Verifier, Verdict } from "./state-abstraction.ts";
export { ScriptedPolicy, scripted } from "./policy.ts";
export type { Policy, PolicyInput, PastStep, Decision, ActOptions } from "./policy.ts";
export { playEpisode, playEpisodes, deriveSeed, episodeTrajectory } from "./episode.ts";
export type { Episode, EpisodeStep, EpisodeJob, PlayOptions } from "./episode.ts";
export { parseConfig } from "./parse-config.ts";
// What an env can plug into the framework (its EnvSpec's plug points), declared here so an env's folder can implement them.
export type { ExperienceModel, PredictInput, Prediction, Demo, HistoryStep, TrajectoryStore } from "./experience-model.ts";
export { abstractTrajectory } from "./abstract-trajectory.ts";
export type { TaskGenerator } from "./task-generator.ts";
export { FeatureBuilder, bucket } from "./features.ts";
export type { FeaturizedStep, PolicyFeatures, SparseVector } from "./features.ts";
export { parseNoiseKinds, pickKind, requestRng, REWARD_NOISE_KINDS, STATE_NOISE_KINDS } from "./oracle.ts";
export type { Oracle, OracleAnswer, OracleNoise, OracleOptions, RewardNoiseKind, StateNoiseKind } from "./oracle.ts";
export { RequestThread, serveRequests, startWorker } from "./request-thread.ts";
export {
  Agents,
  AnswerTooLargeError,
  ConnectionError,
  getWhole,
  HeadersTimeoutError,
  HttpStatusError,
  openAIHeaders,
  postJson,
  RedirectLoopError,
  retryableStatus,
  statusAt,
  type PostAnswer,
  type PostOptions,
} from "./http-post.ts";
export { PACKAGE_ROOT, PACKAGE_VERSION } from "./package-root.ts";
export { nextTurn, timeoutAfterRead } from "./timeout.ts";
