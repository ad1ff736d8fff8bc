/**
 * dreamgym's library API: the actions a user needs, one line each. Every room of `src/` is also a
 * subpath export with the rest of its parts: `dreamgym/core` (the Env contract, episodes, errors,
 * JSONL), `/envs` (the registry) and `/envs/webshop`, `/envs/alfworld`, `/envs/webarena`,
 * `/envs/browser`, `/envs/webshop-site`; `/buffer`, `/llm`, `/experience`, `/curriculum`, `/oracle`,
 * `/rl`, `/train`, `/remote`, `/server`; and `/testing` for users' own tests.
 */

// Envs: make one by name, register your own (with its plug points), check it, wrap it, play it.
/** Creates a registered env by name (`webshop`, `alfworld`, `webshop-browser`, … or your own). */
export { createEnv } from "./envs/index.ts";
/** Registers an env of your own: how to create it, its tasks, splits and plug points. */
export { registerEnv } from "./envs/index.ts";
/** The names of the registered envs. */
export { listEnvs } from "./envs/index.ts";
/** A registered env's entry (its spec with defaults filled in). */
export { envEntry } from "./envs/index.ts";
/** Loads env modules (files or packages) that register envs, as `--env-module` does. */
export { loadEnvModules } from "./envs/index.ts";
/** A scripted policy of an env by name (`oracle`, `rule`, `random`, …). */
export { createPolicy } from "./envs/index.ts";
/** Plays one episode of an env with a policy. */
export { runEpisode } from "./envs/index.ts";
/** Checks that an env keeps the Env contract (reset, step, seeds, ends, close). */
export { checkEnv } from "./core/index.ts";
/** Wrappers: a step limit, reset-before-step order, listed actions. */
export { withTimeLimit, orderEnforcing, withActions } from "./core/index.ts";
/** A policy from a function (a script), for tests and baselines. */
export { scripted } from "./core/index.ts";
/** WebShop, in-process (its pages as text), for typed options. */
export { WebShopEnv } from "./envs/webshop/index.ts";
/** ALFWorld's text games, in-process. */
export { AlfWorldEnv } from "./envs/alfworld/index.ts";
/** A real browser (Playwright over Chromium) as an env. */
export { BrowserEnv } from "./envs/browser/index.ts";

// Offline data.
/** The replay buffer: trajectories in SQLite, searchable by meaning. */
export { ReplayBuffer } from "./buffer/index.ts";
/** Reads and writes trajectories as JSONL. */
export { importJsonl, exportJsonl } from "./buffer/index.ts";

// LLMs.
/** A chat model from a spec: an OpenAI-compatible endpoint or a GGUF file. */
export { createChatModel } from "./llm/index.ts";

// Experience models and the synthetic env.
/** An experience model from a spec (`default`, `learned:<file>`, a chat model). */
export { createExperienceModel } from "./experience/index.ts";
/** The experience models: kNN over the buffer, learned from it, or a reasoning LLM. */
export { EmbeddedExperienceModel, LearnedExperienceModel, ReasoningExperienceModel } from "./experience/index.ts";
/** Trains the learned experience model on a buffer's real trajectories. */
export { trainLearnedModel } from "./experience/index.ts";
/** An env played by an experience model. */
export { SyntheticEnv } from "./experience/index.ts";
/** The offline audit of an experience model against held-out real trajectories. */
export { auditModel } from "./experience/index.ts";
/** The reward-variance curriculum. */
export { Curriculum } from "./curriculum/index.ts";

// Policies and algorithms.
/** The CPU-trainable policy, and an LLM as a policy. */
export { NeuralPolicy, LlmPolicy } from "./rl/index.ts";
/** One GRPO or PPO update of a policy from played episodes. */
export { grpoUpdate, ppoUpdate } from "./rl/index.ts";

// Training.
/** Trains in a run folder (real, DreamGym, S2R or BC), and resumes one. */
export { train, resumeTraining } from "./train/index.ts";
/** The loop itself over parts you compose, writing through a sink (`MemorySink`: in memory). */
export { trainingLoop, MemorySink } from "./train/index.ts";

// Serving.
/** Serves envs (real or synthetic) over OpenEnv's and AgentGym's protocols: the app, and its server on a port. */
export { createServeApp, startServer } from "./server/index.ts";

// Errors.
/** What a caller may catch: every dreamgym error, a bad config, bad data (with file and line). */
export { DreamGymError, InvalidConfigError, DataError } from "./core/index.ts";

export type { Env, ResetOptions, ResetResult, StepResult, Task, Trajectory, Policy } from "./core/index.ts";
export type { EnvSpec, SyntheticSupport, ExperienceModelContext, TaskGeneratorContext } from "./envs/index.ts";
export type { ExperienceModel, PredictInput, Prediction } from "./core/index.ts";
export type { TaskGenerator } from "./core/index.ts";
export type { ChatModel } from "./llm/index.ts";
export type { TrainablePolicy } from "./rl/index.ts";
export type { TrainConfigInput, TrainSummary, TrainParts, IterationMetrics, EvalResult, TrainHooks, RunSink } from "./train/index.ts";
