export { train, resumeTraining } from "./train.ts";
export { trainingLoop, evaluate } from "./loop.ts";
export { trainConfigSchema, resolveTrainConfig } from "./config.ts";
export type { TrainConfig, TrainConfigInput, TrainSummary, IterationMetrics, EvalResult, TrainHooks, ResumeOverrides } from "./config.ts";
export { candidateSource, makeEnvPool, makeSyntheticPool, makePolicy } from "./compose.ts";
export type { TrainParts, Parts, EnvPool, SyntheticPool } from "./compose.ts";
export { RunFolder, auditFiles, latestPolicyFile } from "./run-folder.ts";
export type { RunState, Checkpoint } from "./run-folder.ts";
export { writeReport, lineChart, readMetrics } from "./report.ts";
