import { existsSync } from "node:fs";
import { abstractEnv, closing, InvalidConfigError, withActions, type ActionSource, type Env, type Task } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { Curriculum, LlmTaskGenerator, type TaskGenerator } from "../curriculum/index.ts";
import { actionVocabulary, createEnv, envEntry, envTasks, findLocalEnv, hasSyntheticSupport, plugPoint, syntheticSupport } from "../envs/index.ts";
import { createExperienceModel, SyntheticEnv, type ExperienceModel } from "../experience/index.ts";
import { NeuralPolicy, type TrainablePolicy } from "../rl/index.ts";
import type { TrainConfig } from "./config.ts";

/**
 * Parts a library user passes in instead of names in the config (each optional; the config builds
 * the rest). A resumed run needs the same parts again.
 */
export interface TrainParts {
  /** The policy to train. @default a NeuralPolicy from `config.policy` and `config.seed` */
  policy?: TrainablePolicy<unknown>;
  /** The synthetic env's experience model. @default from `config.experience` */
  experienceModel?: ExperienceModel;
  /** The curriculum's task generator. @default the env's own (`EnvSpec.taskGenerator`), or the LLM generator over a chat experience model */
  taskGenerator?: TaskGenerator;
  /** Candidate actions where the env lists none. @default the env spec's, else a vocabulary learned from the buffer */
  candidateActions?: ActionSource;
}

/** Envs of one split, ready for the policy (abstract states, candidate actions), and the split's tasks. */
export interface EnvPool {
  envs: Env[];
  tasks: Task[];
}

/** The synthetic env pool: one experience model and one buffer behind `concurrency` envs. */
export interface SyntheticPool extends EnvPool {
  buffer: ReplayBuffer;
  generator?: TaskGenerator;
  /** LLM tokens the experience model (and generator) used so far. */
  tokens(): number;
  /** How the on-policy audit replays this env's synthetic episodes (the config's choice, else the env's). */
  auditReplay: "actions" | "policy";
  /** Evicts the oldest synthetic episodes past `bufferCapacity`. */
  trim(): Promise<void>;
  close(): Promise<void>;
}

/** Everything a run trains with. */
export interface Parts {
  policy: TrainablePolicy<unknown>;
  /** GRPO's frozen reference (the initial policy), when its KL term is on. */
  reference?: TrainablePolicy<unknown>;
  real: EnvPool;
  evaluation: EnvPool;
  synthetic?: SyntheticPool;
  curriculum?: Curriculum;
  isSuccess: (totalReward: number) => boolean;
  /** Candidate actions where the env lists none (from the parts, the env spec or the buffer's vocabulary). */
  actions?: ActionSource;
  close(): Promise<void>;
}

/**
 * Where the policy's candidates come from when an env lists no actions: the parts', else the env
 * spec's, else a command vocabulary learned from the real transitions of `bufferFile`. Undefined
 * when there is none (the check at start then tells what to give).
 */
export function candidateSource(config: TrainConfig, bufferFile: string | undefined, parts: TrainParts = {}): ActionSource | undefined {
  const own = parts.candidateActions ?? envEntry(config.env).spec.candidateActions;
  // A cold start's run buffer does not exist before its synthetic env opens it (and holds nothing real).
  if (own || !bufferFile || !existsSync(bufferFile)) return own;
  const buffer = ReplayBuffer.open(bufferFile, { readonly: true });
  try {
    // Real (offline) transitions only: the synthetic ones a run adds must not change the vocabulary on resume.
    const actions = buffer.actions({ env: config.env, source: "real" });
    return actions.length > 0 ? actionVocabulary(actions) : undefined;
  } finally {
    buffer.close();
  }
}

/** `concurrency` envs of a split, as the policy sees them, and the split's tasks. */
export function makeEnvPool(config: TrainConfig, split: string, actions?: ActionSource): EnvPool {
  const envs: Env[] = [];
  let tasks: Task[] = [];
  try {
    for (let i = 0; i < config.concurrency; i++) {
      const env = createEnv(config.env, { split, dataDir: config.dataDir, maxSteps: config.maxSteps });
      envs.push(env);
      if (i === 0) tasks = envTasks(config.env, env);
      // Observations as abstract states, as in the synthetic env, so a policy transfers between the two.
      const seen = hasSyntheticSupport(config.env) ? abstractEnv(env, syntheticSupport(config.env, env).abstraction) : env;
      envs[i] = actions ? withActions(seen, actions) : seen;
    }
  } catch (e) {
    void Promise.all(envs.map((env) => env.close()));
    throw e;
  }
  if (tasks.length === 0) throw new InvalidConfigError(`${config.env} split ${split} has no tasks`);
  return { envs, tasks };
}

/** Builds the synthetic env pool over the run's buffer copy. */
export async function makeSyntheticPool(
  config: TrainConfig,
  bufferFile: string,
  tasks: Task[],
  parts: TrainParts,
  actions?: ActionSource,
): Promise<SyntheticPool> {
  const support = await closing(createEnv(config.env, { split: config.trainSplit, dataDir: config.dataDir }), (env) => syntheticSupport(config.env, env));
  const model = createExperienceModel(parts.experienceModel ?? config.experience, {
    abstraction: support.abstraction,
    rewards: support.rewards,
    chat: { concurrency: config.concurrency, cache: config.cache, timeoutMs: 1000 * config.requestTimeout, maxFailures: config.maxFailures },
    samples: config.experienceSamples,
  });
  let buffer: ReplayBuffer;
  try {
    buffer = ReplayBuffer.open(bufferFile);
  } catch (e) {
    await model.close();
    throw e;
  }
  // Without replay the reasoning model gets no demos; the embedded model is retrieval itself, so it
  // keeps reading the offline seed, which then never grows.
  const demos = config.replay || !model.chat ? config.demos : 0;
  const envs: Env[] = Array.from({ length: config.concurrency }, () => {
    const env = new SyntheticEnv({
      model: model.model,
      abstraction: support.abstraction,
      tasks,
      initialState: support.initialState,
      buffer,
      k: demos,
      maxSteps: config.maxSteps ?? support.maxSteps,
      record: false,
      verifier: config.hybrid ? support.verifier : undefined,
      pessimism: config.pessimism.beta > 0 || config.pessimism.halt !== undefined ? config.pessimism : undefined,
    });
    return actions ? withActions(env, actions) : env;
  });
  // Where a task needs more than its sentence (`llmTasks: false`), an LLM's free-text variation has
  // nothing to start in, and the env keeps its own generator whatever the model.
  const llmTasks = model.chat !== undefined && plugPoint(config.env, "llmTasks") !== false;
  const generator =
    parts.taskGenerator ??
    (llmTasks
      ? new LlmTaskGenerator({ chat: model.chat!, profile: support.abstraction.profile })
      : await envTaskGenerator(config).catch(async (e) => {
          buffer.close();
          await model.close();
          throw e;
        }));
  return {
    envs,
    tasks,
    buffer,
    generator,
    tokens: model.tokens,
    auditReplay: config.onPolicyAudit.replay === "auto" ? (support.auditReplay ?? "actions") : config.onPolicyAudit.replay,
    trim: async () => {
      if (config.bufferCapacity > 0) await buffer.trim(config.bufferCapacity);
    },
    close: async () => {
      buffer.close();
      await model.close();
    },
  };
}

/** The env's own task variation without an LLM (its `EnvSpec.taskGenerator`), over an instance of its evaluation split. */
async function envTaskGenerator(config: TrainConfig): Promise<TaskGenerator | undefined> {
  const make = plugPoint(config.env, "taskGenerator");
  if (!make) return undefined;
  let env: Env;
  if (config.remote) {
    // A remote env's own variation comes from the local env of its name, where its data is here too.
    try {
      env = findLocalEnv(config.env)!.spec.create({ split: config.evalSplit, dataDir: config.dataDir });
    } catch {
      return undefined;
    }
  } else env = createEnv(config.env, { split: config.evalSplit, dataDir: config.dataDir });
  return closing(env, (e) =>
    make(e, {
      trainSplit: config.trainSplit,
      evalSplit: config.evalSplit,
      evalTasks: envTasks(config.env, e),
      dataDir: config.dataDir,
      maxSteps: config.maxSteps,
    }),
  );
}

/** The policy a run starts from: the parts', else fresh weights from the seed (or `initPolicy`'s), with the env's own features where it has them. */
export function makePolicy(config: TrainConfig, parts: TrainParts, initPolicy?: Uint8Array): TrainablePolicy<unknown> {
  const policy =
    parts.policy ?? (new NeuralPolicy({ ...config.policy, seed: config.seed, features: plugPoint(config.env, "features") }) as TrainablePolicy<unknown>);
  if (initPolicy && config.initPolicy) policy.load(initPolicy, config.initPolicy);
  return policy;
}
