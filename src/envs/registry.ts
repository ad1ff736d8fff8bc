import {
  InvalidConfigError,
  OUTCOME_REWARDS,
  type ActionSource,
  type CheckEnvOptions,
  type Env,
  type ExperienceModel,
  type Oracle,
  type OracleOptions,
  type Policy,
  type PolicyFeatures,
  type RewardSpec,
  type StateAbstraction,
  type Task,
  type TaskGenerator,
  type Trajectory,
  type Verifier,
} from "../core/index.ts";
import type { AgentGymSupport, ExperienceModelContext, TaskGeneratorContext } from "./plug-points.ts";
import { RandomPolicy } from "./policies.ts";

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
  verifier?: Verifier;
  /** Steps before a synthetic episode is truncated, where the run sets none (the real env's episode length). @default the synthetic env's (15) */
  maxSteps?: number;
  /** Scripted policies that can play the synthetic env (those that need the real env's state cannot). @default [] */
  policies?: readonly string[];
  /**
   * How the on-policy audit replays a synthetic episode in the real env: "actions" (its actions,
   * open loop: right where the model can know what the real env will show) or "policy" (the policy
   * that played it plays the real env, same task and seeds, closed loop: where the real env hides
   * what no model can know, like where ALFWorld's objects lie, so a synthetic episode's exact actions
   * cannot be expected to hold). @default "actions"
   */
  auditReplay?: "actions" | "policy";
}

/**
 * Everything dreamgym needs to know of an environment, registered once under a name with
 * {@link registerEnv}; every command and `createEnv(name)` then work with it. Only `create` is
 * required.
 */
export interface EnvSpec<E extends Env = Env> {
  /** One line for `dreamgym env list`. */
  description?: string;
  /** A new instance; `options` are the common ones plus whatever the caller passed. */
  create(options: CommonEnvOptions & Record<string, unknown>): E;
  /** The tasks of the instance's split (what training samples from). @default `env.tasks()` */
  tasks?(env: E): Task[];
  /** The splits training and evaluation use when none is given. @default { train: "train", eval: "test" } */
  splits?: { train: string; eval: string };
  /** Scripted policies by name, for `collect` and `env eval`. A uniform `random` is always there. */
  policies?: Record<string, (env: E, opts: { seed: number }) => Policy>;
  /** What a synthetic version of the env needs: without it, the env trains only in real mode. */
  synthetic?(env: E): SyntheticSupport;
  /** Reward range and outcome-only or dense. @default outcome rewards in [0, 1] */
  rewards?: Partial<RewardSpec>;
  /** Whether an episode with this return succeeded. @default a return at or above `rewards.max` */
  success?(totalReward: number): boolean;
  /**
   * Candidate actions for states that list none (free-text envs): what the neural and random
   * policies pick from. Without it, training learns a command vocabulary from the buffer.
   */
  candidateActions?: ActionSource;
  /** How `dreamgym env check` calls `checkEnv` (probe actions, the invalid-action answer). */
  check?: CheckEnvOptions;
  /**
   * Why an instance cannot play real episodes here (no deployment given, no browser), or undefined
   * when it can. A run that would step the real env then stops before it starts, saying so; its
   * tasks and synthetic version may still work (WebArena without a deployment). @default always available
   */
  unavailable?(env: E): string | undefined;
  /**
   * The demonstrations its data folder ships, for `buffer import --few-shot`: trajectory JSONL files,
   * and trajectories parsed from another format (ALFWorld's ReAct prompts), by the file they came from.
   */
  shippedDemos?(dataDir: string): { jsonl?: string[]; parsed?: { file: string; trajectories: Trajectory[] }[] };

  // Plug points: what an env gives the framework's parts beyond the Env contract, each optional.

  /**
   * The env's own embedded experience model: what `--experience default` plays its synthetic env with
   * (no LLM; a fresh model per call), in place of the kNN model over the buffer. @default the kNN model
   */
  experienceModel?(context: ExperienceModelContext): ExperienceModel;
  /**
   * The env's own task variation for the curriculum (no LLM), over an instance of the env of the
   * evaluation split (its data). Undefined, or none returned: the curriculum varies tasks only with
   * an LLM experience model.
   */
  taskGenerator?(env: E, context: TaskGeneratorContext): TaskGenerator | undefined;
  /**
   * Whether an LLM can write the env's tasks (a task is its sentence): with an LLM experience model the
   * curriculum then varies tasks with it, in place of `taskGenerator`. false where a task needs more
   * than a sentence (a scene to start in), and `taskGenerator` stays. @default true
   */
  llmTasks?: boolean;
  /** The env's own features for the neural policy, for states in its format. @default the generic text features */
  features?: PolicyFeatures;
  /** The oracle experience model (`dreamgym oracle-model serve`): the real env behind the reasoning model's protocol, with seeded noise. */
  oracle?(options: OracleOptions): Oracle;
  /** How AgentGym's HTTP protocol serves the env (`dreamgym serve`, `/agentgym`), where its upstream server differs from the generic one. */
  agentGym?: AgentGymSupport;
  /**
   * The synthetic phase's GRPO pessimism for this env where the general defaults (KL β 0.05 to the
   * start, group-std floor 0.1) were measured not to help: a run's config still overrides it.
   */
  pessimism?: { kl?: number; stdFloor?: number };
}

/** The plug points of an env spec. */
export type PlugPoint = "experienceModel" | "taskGenerator" | "llmTasks" | "features" | "oracle" | "agentGym" | "pessimism";

/** A registered env with its defaults filled in. */
export interface EnvEntry {
  readonly name: string;
  readonly spec: EnvSpec;
  readonly builtin: boolean;
  readonly description: string;
  readonly splits: { train: string; eval: string };
  readonly rewards: RewardSpec;
  /** Scripted policy names, `random` included. */
  readonly policies: readonly string[];
  success(totalReward: number): boolean;
}

// Registrations live on globalThis, so a user's env module that imports another copy of the package
// (its own node_modules/dreamgym, or the built JS beside these sources) registers into the same table.
const KEY = Symbol.for("dreamgym.envRegistry");
const table: Map<string, EnvEntry> = ((globalThis as Record<symbol, unknown>)[KEY] ??= new Map<string, EnvEntry>()) as Map<string, EnvEntry>;
/** Built-in envs are this copy's own (never another copy's classes). */
const builtins = new Map<string, EnvEntry>();

const NAME = /^[a-z][a-z0-9_.-]{0,63}$/;

function makeEntry(name: string, spec: EnvSpec, builtin: boolean): EnvEntry {
  if (!NAME.test(name))
    throw new InvalidConfigError(`env name "${name}" is not valid: use lower-case letters, digits, "_", "-" or ".", starting with a letter`);
  if (typeof spec?.create !== "function") throw new InvalidConfigError(`env "${name}": its spec needs a create(options) function`);
  const rewards: RewardSpec = { ...OUTCOME_REWARDS, ...spec.rewards };
  if (!Number.isFinite(rewards.min) || !Number.isFinite(rewards.max) || rewards.min > rewards.max) {
    throw new InvalidConfigError(`env "${name}": rewards range [${rewards.min}, ${rewards.max}] is not a range of finite numbers`);
  }
  const policies = [...Object.keys(spec.policies ?? {}).filter((p) => p !== "random"), "random"];
  return {
    name,
    spec,
    builtin,
    rewards,
    policies,
    description: spec.description ?? `${name} (registered)`,
    splits: spec.splits ?? { train: "train", eval: "test" },
    success: spec.success ?? ((total) => total >= rewards.max - 1e-9),
  };
}

/**
 * Registers an environment under `name`, for `createEnv(name)` and every CLI command (through
 * `--env-module <file>` or a `dreamgym.config.js` that calls this). Registering the same spec again
 * is a no-op; another spec under a taken name is an error.
 */
export function registerEnv<E extends Env>(name: string, spec: EnvSpec<E>): void {
  if (builtins.has(name)) throw new InvalidConfigError(`env "${name}" is built in; register yours under another name`);
  const known = table.get(name);
  if (known) {
    if (known.spec === (spec as unknown as EnvSpec)) return;
    throw new InvalidConfigError(`env "${name}" is already registered; choose another name`);
  }
  table.set(name, makeEntry(name, spec as unknown as EnvSpec, false));
}

/** Removes a registered (not built-in) env; for tests and interactive sessions. */
export function unregisterEnv(name: string): boolean {
  return table.delete(name);
}

/** The built-in envs come in through the same door as users' (without the name check against themselves). */
export function registerBuiltin<E extends Env>(name: string, spec: EnvSpec<E>): void {
  builtins.set(name, makeEntry(name, spec as unknown as EnvSpec, true));
}

/**
 * Envs served by a remote env server (`--env ws://…`; `dreamgym/remote`), by the served env's name,
 * with the server's URL. For this process they shadow a registered env of the same name (so a remote
 * WebShop's trajectories are still "webshop"): every lookup finds them first.
 */
const remotes = new Map<string, { entry: EnvEntry; url: string }>();

/**
 * Makes `name` mean `spec`, the env an env server at `url` serves, for this process, shadowing a
 * registered or built-in env of that name until `unregisterRemote(name)`. Registering again replaces it.
 */
export function registerRemote<E extends Env>(name: string, spec: EnvSpec<E>, url: string): void {
  remotes.set(name, { entry: makeEntry(name, spec as unknown as EnvSpec, false), url });
}

/** Removes a remote shadow; the registered env of that name (if any) is found again. */
export function unregisterRemote(name: string): boolean {
  return remotes.delete(name);
}

/** The URL of the env server whose env `name` means now, or undefined when it means a local env. */
export function remoteUrl(name: string): string | undefined {
  return remotes.get(name)?.url;
}

/** The registered env `name`, or undefined. */
export function findEnv(name: string): EnvEntry | undefined {
  return remotes.get(name)?.entry ?? builtins.get(name) ?? table.get(name);
}

/** The env `name` registered locally (built-in or by registerEnv), ignoring a remote shadow. */
export function findLocalEnv(name: string): EnvEntry | undefined {
  return builtins.get(name) ?? table.get(name);
}

/**
 * The env `name`'s plug point `key`: its entry's, else (an env server's env, which shadows the name)
 * the local env's of that name, whose data and parts are here. Undefined when neither has it.
 */
export function plugPoint<K extends PlugPoint>(name: string, key: K): EnvSpec[K] | undefined {
  return plugOf([findEnv(name)?.spec, findLocalEnv(name)?.spec], key);
}

function plugOf<K extends PlugPoint>(specs: (EnvSpec | undefined)[], key: K): EnvSpec[K] | undefined {
  const spec = specs.find((s) => s?.[key] !== undefined);
  const value = spec?.[key];
  // A method keeps its spec as `this`, as when the framework calls it on the spec.
  return (typeof value === "function" ? value.bind(spec) : value) as EnvSpec[K] | undefined;
}

/**
 * Every plug point of env `name` at once, each as `plugPoint(name, key)` gives it (a run looks them
 * up once).
 */
export function plugPoints(name: string): { [K in PlugPoint]?: EnvSpec[K] } {
  const specs = [findEnv(name)?.spec, findLocalEnv(name)?.spec];
  const keys: PlugPoint[] = ["experienceModel", "taskGenerator", "llmTasks", "features", "oracle", "agentGym", "pessimism"];
  return Object.fromEntries(keys.map((k) => [k, plugOf(specs, k)]).filter(([, v]) => v !== undefined));
}

/**
 * An entry for a spec that is not registered (an env a run is given as parts under a name of its
 * own): its defaults filled in as `registerEnv` fills them, and nothing registered.
 */
export function unregisteredEntry(name: string, spec: EnvSpec): EnvEntry {
  return makeEntry(name, spec, false);
}

/** The registered env `name`, or an error that lists the known ones. */
export function envEntry(name: string): EnvEntry {
  const e = findEnv(name);
  if (!e) throw unknownEnvError(name);
  return e;
}

/** The error for an env name that is not registered: it lists the known ones and says how to add one. */
export function unknownEnvError(name: string): InvalidConfigError {
  return new InvalidConfigError(
    `unknown environment "${name}" (known: ${envNames().join(", ")}); register yours with registerEnv() and load it with --env-module <file>`,
  );
}

export function envNames(): string[] {
  const local = [...builtins.keys(), ...[...table.keys()].filter((n) => !builtins.has(n)).sort()];
  return [...local, ...[...remotes.keys()].filter((n) => !local.includes(n)).sort()];
}

/**
 * The demonstrations that the registered envs' data ships (`EnvSpec.shippedDemos`) in data folder
 * `dataDir`: every env's JSONL files, then every env's parsed trajectories, built-in envs first.
 */
export function shippedDemos(dataDir: string): { jsonl: string[]; parsed: { file: string; trajectories: Trajectory[] }[] } {
  const each = envNames().flatMap((n) => {
    const spec = findLocalEnv(n)?.spec;
    return spec?.shippedDemos ? [spec.shippedDemos(dataDir)] : [];
  });
  return { jsonl: each.flatMap((d) => d.jsonl ?? []), parsed: each.flatMap((d) => d.parsed ?? []) };
}

/** Every registered env, built-in first. */
export function listEnvs(): { name: string; description: string; builtin: boolean }[] {
  return envNames()
    .map((n) => envEntry(n))
    .map((e) => ({ name: e.name, description: e.description, builtin: e.builtin }));
}

/** The tasks of an env instance's split, by its spec (else `env.tasks()`); `name` or the entry already looked up. */
export function envTasks(name: string | EnvEntry, env: Env): Task[] {
  const e = typeof name === "string" ? envEntry(name) : name;
  if (e.spec.tasks) return e.spec.tasks(env);
  const own = (env as { tasks?: () => Task[] }).tasks;
  if (typeof own !== "function")
    throw new InvalidConfigError(`environment "${e.name}" cannot list its tasks: give its spec tasks(env) or the env a tasks() method`);
  return own.call(env);
}

/** The synthetic support of an env instance, or an error saying the env has none; `name` or the entry already looked up. */
export function syntheticSupport(name: string | EnvEntry, env: Env): SyntheticSupport & { rewards: RewardSpec; policies: readonly string[] } {
  const e = typeof name === "string" ? envEntry(name) : name;
  if (!e.spec.synthetic)
    throw new InvalidConfigError(`environment "${e.name}" has no synthetic support (its spec has no synthetic(env): a state abstraction and start states)`);
  return { policies: [], ...e.spec.synthetic(env), rewards: e.rewards };
}

/** Whether an env has a synthetic version. */
export function hasSyntheticSupport(name: string): boolean {
  return envEntry(name).spec.synthetic !== undefined;
}

/** Builds a scripted policy for an env instance (`candidates`: what `random` picks from where the env lists no actions). */
export function createPolicy(name: string, policy: string, env: Env, opts: { seed?: number; candidates?: ActionSource } = {}): Policy {
  const e = envEntry(name);
  if (!e.policies.includes(policy)) throw new InvalidConfigError(`unknown policy "${policy}" for ${name} (known: ${e.policies.join(", ")})`);
  const seed = opts.seed ?? 0;
  const make = e.spec.policies?.[policy];
  if (make) return make(env, { seed });
  return new RandomPolicy(seed, opts.candidates ?? e.spec.candidateActions);
}
