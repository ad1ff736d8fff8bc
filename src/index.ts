/** dreamgym's library API. Subpaths (`dreamgym/core`, `dreamgym/envs`, `dreamgym/envs/webshop`) give the rest. */
export * from "./core/index.ts";
export { createEnv, listEnvs, listPolicies, createPolicy, runEpisode, RandomPolicy, resolveDataDir } from "./envs/index.ts";
export type { EnvName, ActingPolicy, ActContext, EpisodeOptions } from "./envs/index.ts";
export { WebShopEnv } from "./envs/webshop/index.ts";
export type { WebShopOptions, WebShopTask } from "./envs/webshop/index.ts";
