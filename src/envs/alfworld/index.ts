import type { StateAbstraction } from "../../core/index.ts";

export { AlfWorldEnv, alfworldTask } from "./alfworld-env.ts";
export type { AlfWorldOptions, AlfWorldTask } from "./alfworld-env.ts";
export { AlfWorldExpert } from "./expert.ts";
export { Game, alfworldGames, loaderKeeps, ALFWORLD_SPLITS, TASK_TYPES } from "./game.ts";
export type { AlfWorldSplit, GameEntry } from "./game.ts";
export { displayNames } from "./names.ts";
export { parseDomain, parseProblem, parseSExpr } from "./pddl.ts";
export { parseGrammar, TextGenerator } from "./grammar.ts";

/**
 * ALFWorld's text is already a compact state: the abstraction keeps it as it is. Its states do not
 * list their actions (the real env does, through `availableActions()`).
 */
export const alfworldAbstraction: StateAbstraction = {
  env: "alfworld",
  abstract: (observation) => observation,
  actions: () => undefined,
  isTerminal: () => false,
  profile: `ALFWorld, a household in text. The first state describes the room ("You are in the middle of a room. Looking quickly around you, you see a cabinet 1, …") and the task ("Your task is to: put a clean mug in coffeemachine."); later states are the feedback of the last command.
Commands: go to <receptacle>, open/close <receptacle>, take <object> from <receptacle>, put <object> in/on <receptacle>, clean/heat/cool <object> with <sinkbasin/microwave/fridge>, use <lamp>, examine <thing>, look, inventory. A command that cannot be done answers "Nothing happens.". The reward is 1 when the task is done, else 0.`,
};
