import type { Env, TrajectoryRules } from "../core/index.ts";
import {
  catalogueTaskGenerator,
  NoisyOraclePolicy,
  OraclePolicy,
  RulePolicy,
  WebShopEnv,
  webshopAbstraction,
  webshopAgentGym,
  WebShopOracle,
  webshopStartPage,
  webshopReactFiles,
  webshopVerifier,
  type WebShopOptions,
} from "./webshop/index.ts";
import { dirname } from "node:path";
import {
  AlfWorldEnv,
  AlfWorldExperienceModel,
  AlfWorldExpert,
  AlfWorldReplay,
  alfworldAbstraction,
  alfworldAgentGym,
  alfworldFeatures,
  alfworldFewShot,
  AlfWorldTaskGenerator,
  alfworldVerifier,
  type AlfWorldOptions,
  type AlfWorldSplit,
} from "./alfworld/index.ts";
import { useBrowserEnv, WebArenaEnv, webarenaAbstraction, webarenaStartState, type BrowserEnvFactory, type WebArenaEnvOptions } from "./webarena/index.ts";
import { envEntry, envNames, registerBuiltin, type CommonEnvOptions } from "./registry.ts";
import { BrowserEnv, BrowserPool } from "./browser/index.ts";
import {
  BrowserOraclePolicy,
  BrowserRulePolicy,
  createWebShopBrowserEnv,
  webshopBrowserAbstraction,
  webshopBrowserStartState,
  webshopBrowserVerifier,
  WebShopPagesEnv,
  type WebShopBrowserOptions,
  type WebShopPagesOptions,
  type WebShopSite,
} from "./webshop-site/index.ts";

// The built-in envs register through the same door as a user's.
registerBuiltin<WebShopEnv>("webshop", {
  description: "WebShop (small setting): 1,000 products, 6,910 synthetic goals, text observations",
  create: (opts) => new WebShopEnv(opts as WebShopOptions),
  tasks: (env) => env.tasks(),
  splits: { train: "train", eval: "test" },
  policies: { oracle: (env) => new OraclePolicy(env), "oracle-noisy": (env) => new NoisyOraclePolicy(env), rule: () => new RulePolicy() },
  synthetic: (env) => ({
    abstraction: webshopAbstraction(env.catalogue),
    initialState: webshopStartPage,
    verifier: webshopVerifier(env.catalogue),
    policies: ["rule", "random"],
  }),
  taskGenerator: (env, context) => catalogueTaskGenerator(env.catalogue, context),
  shippedDemos: (dataDir) => ({ jsonl: webshopReactFiles(dataDir) }),
  oracle: (options) => new WebShopOracle(options),
  agentGym: webshopAgentGym,
});
registerBuiltin<AlfWorldEnv>("alfworld", {
  description: "ALFWorld (text): household tasks from PDDL games, 134 unseen + 140 seen evaluation games, 200 training games",
  create: (opts) => new AlfWorldEnv(opts as AlfWorldOptions),
  tasks: (env) => env.tasks(),
  splits: { train: "valid_train", eval: "valid_unseen" },
  policies: { expert: (env) => new AlfWorldExpert(env) },
  synthetic: (env) => ({
    abstraction: alfworldAbstraction,
    initialState: (task) => env.introOf(task),
    // Hybrid: the synthetic episode replayed in the real game while the game admits its commands.
    verifier: alfworldVerifier(new AlfWorldReplay({ dataDir: dirname(env.root), split: env.split })),
    maxSteps: 50,
    policies: ["random"],
    // Where a scene's objects lie is the game's secret: the audit lets the policy play the real game.
    auditReplay: "policy",
  }),
  check: { invalidFeedback: "Nothing happens." },
  // Its embedded model learns de-lexicalised templates from the buffer's real games (kNN cannot invent a room).
  experienceModel: () => new AlfWorldExperienceModel(),
  // Commands scored against the task's goal by entity type: the same weights serve every scene.
  features: alfworldFeatures,
  // Variants on training games' scenes, each checked by the expert in the real game.
  taskGenerator: (_env, context) =>
    new AlfWorldTaskGenerator({ dataDir: context.dataDir, trainSplit: context.trainSplit as AlfWorldSplit, maxSteps: context.maxSteps }),
  // A task is a game's scene with a goal: an LLM's free-text variation has no scene to start in.
  llmTasks: false,
  shippedDemos: (dataDir) => ({ parsed: alfworldFewShot(dataDir) }),
  agentGym: alfworldAgentGym,
  // Its model is a rule-based replica of the game, not a noisy ranker: the penalty cost it teach ratio
  // (5 data seeds: median 0.77 without, 0.68 with; docs/results.md).
  pessimism: { kl: 0, stdFloor: 0 },
});

// WebArena(-Lite) on a user's deployment: tasks and the synthetic env work anywhere; real episodes
// need the sites and the browser env (wired with useBrowserEnv), else `unavailable` says what is missing.
registerBuiltin<WebArenaEnv>("webarena", {
  description:
    "WebArena (812 tasks) and WebArena-Lite (165) on your own deployment of its sites: WebArena's evaluators; synthetic training from site profiles (cold start)",
  create: (opts) => new WebArenaEnv(opts as WebArenaEnvOptions),
  tasks: (env) => env.tasks(),
  // No training split exists: DreamGym trains and evaluates on WebArena-Lite.
  splits: { train: "lite", eval: "lite" },
  synthetic: (env) => ({
    abstraction: webarenaAbstraction(env.site.sites),
    initialState: webarenaStartState(env.tasks()),
    maxSteps: 30,
    policies: ["random"],
  }),
  unavailable: (env) => env.unavailable(),
});
// WebArena's real episodes play in the browser env: one Chromium pool per WebArena env (WebArena's
// sites keep state, so its envs do not share contexts with other sites), closed with the env.
export const webarenaBrowserEnv: BrowserEnvFactory = (site, o) => {
  const pool = new BrowserPool({ size: o.contexts ?? 4 });
  return new BrowserEnv({ site, pool, split: o.split, maxSteps: o.maxSteps, onClose: () => pool.close() });
};
useBrowserEnv(webarenaBrowserEnv);
registerBuiltin<BrowserEnv & { site: WebShopSite }>("webshop-browser", {
  description: "WebShop as a website in Chromium (Playwright): page states with element ids, click/type/select by id; a pool of 4 contexts",
  create: (opts) => createWebShopBrowserEnv(opts as WebShopBrowserOptions),
  tasks: (env) => env.tasks(),
  splits: { train: "train", eval: "test" },
  policies: { oracle: (env) => new BrowserOraclePolicy(env), rule: () => new BrowserRulePolicy() },
  synthetic: (env) => ({
    abstraction: webshopBrowserAbstraction,
    initialState: webshopBrowserStartState,
    verifier: webshopBrowserVerifier(env.site.catalogue),
    policies: ["rule", "random"],
  }),
  taskGenerator: (env, context) => catalogueTaskGenerator(env.site.catalogue, context),
});

// The browser's WebShop pages written in-process (no Chromium): same states, actions and rewards.
registerBuiltin<WebShopPagesEnv>("webshop-pages", {
  description:
    "WebShop in the browser env's page-state format, in-process (no Chromium): the same states, actions by element id and rewards as webshop-browser",
  create: (opts) => new WebShopPagesEnv(opts as WebShopPagesOptions),
  tasks: (env) => env.tasks(),
  splits: { train: "train", eval: "test" },
  policies: { oracle: (env) => new BrowserOraclePolicy(env), rule: () => new BrowserRulePolicy() },
  // Its own env name on the same format: its data and models are its own (relabel a trajectory's env to carry it over).
  synthetic: (env) => ({
    abstraction: { ...webshopBrowserAbstraction, env: "webshop-pages" },
    initialState: webshopBrowserStartState,
    verifier: webshopBrowserVerifier(env.catalogue),
    policies: ["rule", "random"],
  }),
  taskGenerator: (env, context) => catalogueTaskGenerator(env.catalogue, context),
});

/** The built-in envs, their options and instances (a registered env is an `Env` with common options). */
export interface BuiltinEnvs {
  webshop: { options: WebShopOptions; env: WebShopEnv };
  alfworld: { options: AlfWorldOptions; env: AlfWorldEnv };
  webarena: { options: WebArenaEnvOptions; env: WebArenaEnv };
  "webshop-browser": { options: WebShopBrowserOptions; env: BrowserEnv & { site: WebShopSite } };
  "webshop-pages": { options: WebShopPagesOptions; env: WebShopPagesEnv };
}
export type EnvName = keyof BuiltinEnvs;

/** Creates an environment by name. Catalogues and indexes are shared between envs of one data folder. */
export function createEnv<N extends EnvName>(name: N, options?: BuiltinEnvs[N]["options"]): BuiltinEnvs[N]["env"];
export function createEnv(name: string, options?: CommonEnvOptions & Record<string, unknown>): Env;
export function createEnv(name: string, options: CommonEnvOptions & Record<string, unknown> = {}): Env {
  return envEntry(name).spec.create(options);
}

/** The splits an env trains and evaluates on when none is given. */
export function defaultSplits(name: string): { train: string; eval: string } {
  return envEntry(name).splits;
}

/**
 * What the trajectory schema checks against: the registered envs, their reward ranges (of a step;
 * an episode's total within the step range times its steps for dense rewards) and success rules.
 */
export function trajectoryRules(): TrajectoryRules {
  return {
    envs: envNames(),
    rewards: (name) => envEntry(name).rewards,
    success: (name, total) => envEntry(name).success(total),
  };
}

/** The scripted policies an env offers (for `collect` and `env eval`). */
export function listPolicies(name: string): readonly string[] {
  return envEntry(name).policies;
}

export {
  registerEnv,
  unregisterEnv,
  registerRemote,
  unregisterRemote,
  remoteUrl,
  envEntry,
  findEnv,
  findLocalEnv,
  envNames,
  listEnvs,
  envTasks,
  syntheticSupport,
  hasSyntheticSupport,
  createPolicy,
  plugPoint,
  plugPoints,
  shippedDemos,
  unregisteredEntry,
  unknownEnvError,
} from "./registry.ts";
export type { EnvSpec, EnvEntry, CommonEnvOptions, SyntheticSupport, PlugPoint } from "./registry.ts";
export type { AgentGymHost, AgentGymSupport, AgentGymView, ExperienceModelContext, TaskGeneratorContext } from "./plug-points.ts";
export { resolveDataDir } from "./data-dir.ts";
export { PACKAGE_ROOT } from "../core/index.ts";
export { RandomPolicy } from "./policies.ts";
export { runEpisode } from "./rollout.ts";
export type { EpisodeOptions } from "./rollout.ts";
export { loadEnvModules } from "./env-modules.ts";
export { actionVocabulary } from "./action-vocabulary.ts";
export type { ActionVocabularyOptions } from "./action-vocabulary.ts";
