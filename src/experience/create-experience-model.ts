import { InvalidConfigError, OUTCOME_REWARDS, type ExperienceModel, type RewardSpec, type StateAbstraction } from "../core/index.ts";
import { plugPoint } from "../envs/index.ts";
import { createChatModel, type ChatModel, type OpenAIChatModelOptions } from "../llm/index.ts";
import { readFileSync } from "node:fs";
import { EmbeddedExperienceModel } from "./embedded-model.ts";
import { LearnedExperienceModel } from "./learned-model.ts";
import { ReasoningExperienceModel } from "./reasoning-model.ts";
import { parseExperienceSpec, type ExperienceSpec } from "./experience-spec.ts";

export interface CreateExperienceModelOptions {
  abstraction: StateAbstraction;
  /** The env's rewards (its registry entry's). @default outcome rewards in [0, 1] */
  rewards?: RewardSpec;
  /** How the chat model of a reasoning model is built: concurrency, cache, timeouts, breaker. */
  chat?: Omit<OpenAIChatModelOptions, "baseURL" | "model">;
  /** A reasoning model's predictions sampled per step, whose disagreement is its uncertainty `u` (n× the tokens). @default 1 */
  samples?: number;
}

/** An experience model and what it holds open. */
export interface ExperienceModelHandle {
  model: ExperienceModel;
  /** The chat model behind a reasoning model (for its stats); undefined for the embedded model. */
  chat?: ChatModel;
  /** LLM tokens used so far. */
  tokens(): number;
  close(): Promise<void>;
}

/**
 * The one way to get an experience model: `"default"` is the embedded model (no LLM: the env's own,
 * where the entry of the abstraction's env has one (`EnvSpec.experienceModel`), else kNN),
 * `"learned:model.bin"` the learned model in that file (`dreamgym model train`; no LLM either), a chat
 * model string (`http://host/v1#model`, `openai:model`, `gguf:file`) is the reasoning model over it,
 * and a ready `ExperienceModel` (a user's own) is used as it is (and not closed here). A spec may
 * come parsed (`parseExperienceSpec`).
 */
export function createExperienceModel(spec: string | ExperienceSpec | ExperienceModel, opts: CreateExperienceModelOptions): ExperienceModelHandle {
  const rewards = opts.rewards ?? OUTCOME_REWARDS;
  if (typeof spec !== "string" && isModel(spec)) return { model: spec, tokens: () => 0, close: async () => {} };
  // A malformed string fails here, before anything is built.
  const parsed = typeof spec === "string" ? parseExperienceSpec(spec) : spec;
  if (parsed.kind === "embedded") {
    const own = plugPoint(opts.abstraction.env, "experienceModel");
    const model = own ? own({ abstraction: opts.abstraction, rewards }) : new EmbeddedExperienceModel({ abstraction: opts.abstraction, rewards });
    return { model, tokens: () => 0, close: async () => {} };
  }
  if (parsed.kind === "learned") return { model: loadLearnedModel(parsed.file, opts.abstraction, rewards), tokens: () => 0, close: async () => {} };
  const chat = createChatModel(parsed.spec, opts.chat);
  return {
    model: new ReasoningExperienceModel({ chat, abstraction: opts.abstraction, rewards, samples: opts.samples }),
    chat,
    tokens: () => (chat.stats ? chat.stats.promptTokens + chat.stats.completionTokens : 0),
    close: async () => {
      await chat.close?.();
    },
  };
}

/** A user's model predicts; a parsed spec is data. */
const isModel = (spec: ExperienceSpec | ExperienceModel): spec is ExperienceModel => typeof (spec as ExperienceModel).predict === "function";

/** Reads a learned model file; a missing or malformed file is one `InvalidConfigError`. */
export function loadLearnedModel(file: string, abstraction: StateAbstraction, rewards?: RewardSpec): LearnedExperienceModel {
  if (file === "") throw new InvalidConfigError("learned: needs a model file (learned:model.bin; make one with dreamgym model train)");
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new InvalidConfigError(
      `cannot read the learned model ${file}: ${code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a folder" : (code ?? String(e))}`,
    );
  }
  return LearnedExperienceModel.load(bytes, file, { abstraction, rewards });
}
