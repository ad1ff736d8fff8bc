export { AlfWorldEnv, alfworldTask, isVariantTask } from "./alfworld-env.ts";
export { specGoal, specInstruction, specParams, specKey, taskSpec, sceneOf } from "./variants.ts";
export type { TaskSpec } from "./variants.ts";
export type { AlfWorldOptions, AlfWorldTask } from "./alfworld-env.ts";
export { AlfWorldExpert } from "./expert.ts";
export { Game, alfworldGames, loaderKeeps, ALFWORLD_SPLITS, TASK_TYPES } from "./game.ts";
export type { AlfWorldSplit, GameEntry } from "./game.ts";
export { displayNames } from "./names.ts";
export { parseDomain, parseProblem, parseSExpr } from "./pddl.ts";
export { parseGrammar, TextGenerator } from "./grammar.ts";

export {
  alfworldAbstraction,
  alfworldAbstract,
  checkAlfStep,
  parseAlfState,
  renderAlfState,
  introState,
  listedEntities,
  agentgymFeedback,
  MID_ROOM,
} from "./abstraction.ts";
export type { AlfState } from "./abstraction.ts";
export { AlfWorldReplay, alfworldVerifier } from "./replay.ts";
export { AlfWorldExperienceModel } from "./experience-model.ts";
export { AlfWorldTaskGenerator, alfworldTaskKey, sceneFits } from "./task-generator.ts";
export type { AlfWorldTaskGeneratorOptions } from "./task-generator.ts";
export { alfworldAgentGym } from "./agentgym.ts";
export { alfworldFewShot } from "./few-shot.ts";
export { AGENTGYM_ALFWORLD_FIRST, AGENTGYM_ALFWORLD_GAMES, AGENTGYM_ALFWORLD_VALID_TRAIN } from "./agentgym-games.ts";
export { alfworldFeatures, alfGoal, alfStep, alfView, featurizeAlfworld } from "./features.ts";
export type { AlfGoal, AlfStep } from "./features.ts";
export type { AlfWorldReplayOptions, Replayed } from "./replay.ts";
