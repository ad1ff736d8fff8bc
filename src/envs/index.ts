import { InvalidConfigError, type Env, type StateAbstraction, type Task } from "../core/index.ts";
import { OraclePolicy, RulePolicy, WebShopEnv, webshopAbstraction, webshopStartPage, webshopVerifier, type WebShopOptions } from "./webshop/index.ts";
import { RandomPolicy, type ActingPolicy } from "./policies.ts";
import { AlfWorldEnv, AlfWorldExpert, alfworldAbstraction, type AlfWorldOptions } from "./alfworld/index.ts";

/** Options every environment understands; each env adds its own. */
export interface CommonEnvOptions {
  /** The data root; else `$DREAMGYM_DATA`, else `../shared/data` when it exists. */
  dataDir?: string;
  /** The task split that `reset()` samples from. */
  split?: string;
  /** Steps before truncation. */
  maxSteps?: number;
}

/** What a synthetic version of an env needs from the real one. */
export interface SyntheticSupport {
  abstraction: StateAbstraction;
  /** The abstract start state of a task. */
  initialState: (task: Task) => string;
  /** Hybrid mode: the real env's verdict on a step, where it has one. */
  verifier?: (task: Task, history: { state: string; action: string }[], state: string, action: string) => { reward: number; terminated: boolean } | null;
  /** Scripted policies that can play the synthetic env (those that need the real env's state cannot). */
  policies: readonly string[];
}

/** The registry: name → factory and the scripted policies that can play it. */
const REGISTRY = {
  webshop: {
    description: "WebShop (small setting): 1,000 products, 6,910 synthetic goals, text observations",
    create: (opts: WebShopOptions) => new WebShopEnv(opts),
    splits: { train: "train", eval: "test" },
    rewardRange: [0, 1],
    policies: ["oracle", "rule", "random"],
    synthetic: (env: WebShopEnv): SyntheticSupport => ({
      abstraction: webshopAbstraction(env.catalogue),
      initialState: webshopStartPage,
      verifier: webshopVerifier(env.catalogue),
      policies: ["rule", "random"],
    }),
  },
  alfworld: {
    description: "ALFWorld (text): household tasks from PDDL games, 134 unseen + 140 seen evaluation games, 200 training games",
    create: (opts: AlfWorldOptions) => new AlfWorldEnv(opts),
    splits: { train: "valid_train", eval: "valid_unseen" },
    rewardRange: [0, 1],
    policies: ["expert", "random"],
    synthetic: (env: AlfWorldEnv): SyntheticSupport => ({
      abstraction: alfworldAbstraction,
      initialState: (task: Task) => env.introOf(task),
      policies: [],
    }),
  },
} as const;

export type EnvName = keyof typeof REGISTRY;
export type EnvOptions<N extends EnvName> = Parameters<(typeof REGISTRY)[N]["create"]>[0];
export type EnvInstance<N extends EnvName> = ReturnType<(typeof REGISTRY)[N]["create"]>;

export function listEnvs(): { name: EnvName; description: string }[] {
  return (Object.keys(REGISTRY) as EnvName[]).map((name) => ({ name, description: REGISTRY[name].description }));
}

function entry(name: string) {
  if (!Object.hasOwn(REGISTRY, name)) {
    throw new InvalidConfigError(`unknown environment "${name}" (known: ${Object.keys(REGISTRY).join(", ")})`);
  }
  return REGISTRY[name as EnvName];
}

/** Creates an environment by name. Catalogues and indexes are shared between envs of one data folder. */
export function createEnv<N extends EnvName>(name: N, options?: EnvOptions<N>): EnvInstance<N> {
  return entry(name).create((options ?? {}) as never) as EnvInstance<N>;
}

/** The state abstraction, start states and verifier that a synthetic version of an env instance uses. */
export function syntheticSupport(envName: string, env: Env): SyntheticSupport {
  return entry(envName).synthetic(env as never);
}

/** The splits an env trains and evaluates on when none is given (unknown envs: "train" / "test"; `createEnv` names them). */
export function defaultSplits(envName: string): { train: string; eval: string } {
  return Object.hasOwn(REGISTRY, envName) ? REGISTRY[envName as EnvName].splits : { train: "train", eval: "test" };
}

/**
 * The range of an env's rewards (of a step, and of an episode's total); imported trajectories
 * outside it are refused.
 */
export function rewardRange(envName: string): readonly [number, number] {
  return entry(envName).rewardRange;
}

/** What the trajectory schema checks against: the registry's envs and their reward ranges. */
export function trajectoryRules(): { envs: readonly string[]; rewardRange: (env: string) => readonly [number, number] } {
  return { envs: Object.keys(REGISTRY), rewardRange };
}

/** The scripted policies an env offers (for `collect` and `env eval`). */
export function listPolicies(envName: string): readonly string[] {
  return entry(envName).policies;
}

/** Builds a scripted policy for an env instance. */
export function createPolicy(envName: string, policy: string, env: Env, opts: { seed?: number } = {}): ActingPolicy {
  const known = entry(envName).policies as readonly string[];
  if (!known.includes(policy)) throw new InvalidConfigError(`unknown policy "${policy}" for ${envName} (known: ${known.join(", ")})`);
  switch (policy) {
    case "random": return new RandomPolicy(opts.seed ?? 0);
    case "rule": return new RulePolicy();
    case "oracle": return new OraclePolicy(env as WebShopEnv);
    case "expert": return new AlfWorldExpert(env as AlfWorldEnv);
    default: throw new InvalidConfigError(`unknown policy "${policy}"`);
  }
}

export { resolveDataDir, PACKAGE_ROOT } from "./data-dir.ts";
export { RandomPolicy } from "./policies.ts";
export type { ActingPolicy, ActContext } from "./policies.ts";
export { runEpisode } from "./rollout.ts";
export type { EpisodeOptions } from "./rollout.ts";
