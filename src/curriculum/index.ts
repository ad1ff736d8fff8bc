export { Curriculum, curriculumConfigSchema, rewardVariance } from "./curriculum.ts";
export type { CurriculumConfig, CurriculumUpdate, GeneratedTask, Lineage } from "./curriculum.ts";
export type { TaskGenerator } from "../core/index.ts";
export { LlmTaskGenerator } from "./llm-generator.ts";
export type { LlmTaskGeneratorOptions } from "./llm-generator.ts";
// The envs' own generators live in their folders (dreamgym/envs/webshop, dreamgym/envs/alfworld).
