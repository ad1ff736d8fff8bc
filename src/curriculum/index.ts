export { Curriculum, curriculumConfigSchema, rewardVariance } from "./curriculum.ts";
export type { CurriculumConfig, CurriculumUpdate, GeneratedTask, Lineage } from "./curriculum.ts";
export type { TaskGenerator } from "../core/index.ts";
export { WebShopTaskGenerator } from "../envs/webshop/index.ts";
export { LlmTaskGenerator } from "./llm-generator.ts";
export type { LlmTaskGeneratorOptions } from "./llm-generator.ts";
export { AlfWorldTaskGenerator, alfworldTaskKey, sceneFits } from "../envs/alfworld/index.ts";
export type { AlfWorldTaskGeneratorOptions } from "../envs/alfworld/index.ts";
