export { Curriculum, curriculumConfigSchema, rewardVariance } from "./curriculum.ts";
export type { CurriculumConfig, CurriculumUpdate, GeneratedTask, Lineage } from "./curriculum.ts";
export type { TaskGenerator } from "../core/index.ts";
export { WebShopTaskGenerator } from "./webshop-generator.ts";
export { LlmTaskGenerator } from "./llm-generator.ts";
export type { LlmTaskGeneratorOptions } from "./llm-generator.ts";
export { AlfWorldTaskGenerator, alfworldTaskKey, sceneFits } from "./alfworld-generator.ts";
export type { AlfWorldTaskGeneratorOptions } from "./alfworld-generator.ts";
