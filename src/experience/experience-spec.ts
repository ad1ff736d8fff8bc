import { parseModelSpec, type ModelSpec } from "../llm/index.ts";

/**
 * An experience spec taken apart: the embedded model (`default`), a learned model file
 * (`learned:<file>`), or the reasoning model over a chat model. Configs and flags keep the string
 * (config.json stores it, so old run folders resume); a run parses it once.
 */
export type ExperienceSpec = { kind: "embedded" } | { kind: "learned"; file: string } | { kind: "chat"; spec: ModelSpec };

/** The prefix of a learned model's spec: `learned:<file>`. */
export const LEARNED_PREFIX = "learned:";

/**
 * Takes an experience spec apart. A chat model string is checked as `parseModelSpec` checks it (a
 * malformed string, a missing GGUF file); a learned model's file is read by `loadLearnedModel`, which
 * says what is wrong with it (an empty name included).
 */
export function parseExperienceSpec(spec: string): ExperienceSpec {
  if (spec === "default") return { kind: "embedded" };
  if (spec.startsWith(LEARNED_PREFIX)) return { kind: "learned", file: spec.slice(LEARNED_PREFIX.length) };
  return { kind: "chat", spec: parseModelSpec(spec) };
}

/** Whether an experience spec names a model that runs here with no endpoint (the embedded default, a learned model file). */
export function isLocalExperience(spec: string | ExperienceSpec): boolean {
  return typeof spec === "string" ? spec === "default" || spec.startsWith(LEARNED_PREFIX) : spec.kind !== "chat";
}
