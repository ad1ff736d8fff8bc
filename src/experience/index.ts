export type { ExperienceModel, PredictInput, Prediction, Demo, HistoryStep } from "./experience-model.ts";
export { EmbeddedExperienceModel } from "./embedded-model.ts";
export type { EmbeddedModelOptions } from "./embedded-model.ts";
export { SyntheticEnv } from "./synthetic-env.ts";
export type { SyntheticEnvOptions, Verifier } from "./synthetic-env.ts";
export { abstractTrajectory } from "./abstract-trajectory.ts";
export { ReasoningExperienceModel } from "./reasoning-model.ts";
export type { ReasoningModelOptions } from "./reasoning-model.ts";
