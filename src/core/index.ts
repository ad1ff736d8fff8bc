export type { Action, Observation, StepInfo, Task, Transition, Trajectory, ExperienceSource } from "./types.ts";
export type { Env, ResetOptions, ResetResult, StepResult } from "./env.ts";
export { FREE_TEXT_SLOT } from "./env.ts";
export { Rng } from "./rng.ts";
export { readJsonl, readJsonlAll, writeJsonl, readJsonFile, JsonlWriter, repairJsonlTail, writeFileAtomic, writeJsonlAtomic } from "./jsonl.ts";
export type { JsonlLineError, ReadJsonlOptions } from "./jsonl.ts";
export {
  DreamGymError, InvalidConfigError, DataError, ResetNeededError, ClosedEnvironmentError, ApiCallError,
} from "./errors.ts";
export { checkEnv } from "./check-env.ts";
export type { CheckEnvOptions } from "./check-env.ts";
export { abstractEnv } from "./state-abstraction.ts";
export type { StateAbstraction } from "./state-abstraction.ts";
