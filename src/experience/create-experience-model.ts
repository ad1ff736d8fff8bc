import { OUTCOME_REWARDS, type RewardSpec, type StateAbstraction } from "../core/index.ts";
import { createChatModel, parseModelSpec, type ChatModel, type OpenAIChatModelOptions } from "../llm/index.ts";
import { EmbeddedExperienceModel } from "./embedded-model.ts";
import { AlfWorldExperienceModel } from "./alfworld-model.ts";
import type { ExperienceModel } from "./experience-model.ts";
import { ReasoningExperienceModel } from "./reasoning-model.ts";

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
 * Envs whose embedded default is a model of their own (it learns its tables from the buffer's real
 * trajectories at its first step): ALFWorld's de-lexicalised template model. Others get the kNN model.
 */
const EMBEDDED_BY_ENV: Record<string, () => ExperienceModel> = {
  alfworld: () => new AlfWorldExperienceModel(),
};

/**
 * The one way to get an experience model: `"default"` is the embedded kNN model (no LLM), a chat
 * model string (`http://host/v1#model`, `openai:model`, `gguf:file`) is the reasoning model over it,
 * and a ready `ExperienceModel` (a user's own) is used as it is (and not closed here).
 */
export function createExperienceModel(spec: string | ExperienceModel, opts: CreateExperienceModelOptions): ExperienceModelHandle {
  const rewards = opts.rewards ?? OUTCOME_REWARDS;
  if (typeof spec !== "string") return { model: spec, tokens: () => 0, close: async () => {} };
  if (spec === "default") {
    const own = EMBEDDED_BY_ENV[opts.abstraction.env];
    return { model: own ? own() : new EmbeddedExperienceModel({ abstraction: opts.abstraction, rewards }), tokens: () => 0, close: async () => {} };
  }
  parseModelSpec(spec); // a clear error for a malformed string, before anything is built
  const chat = createChatModel(spec, opts.chat);
  return {
    model: new ReasoningExperienceModel({ chat, abstraction: opts.abstraction, rewards, samples: opts.samples }),
    chat,
    tokens: () => (chat.stats ? chat.stats.promptTokens + chat.stats.completionTokens : 0),
    close: async () => {
      await chat.close?.();
    },
  };
}
