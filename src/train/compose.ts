import { availableParallelism } from "node:os";
import { closing, withActions, type ActionSource, type Env, type PolicyFeatures, type Task } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { Curriculum, LlmTaskGenerator, type TaskGenerator } from "../curriculum/index.ts";
import { createEnv, envEntry, envTasks, plugPoint, plugPoints, syntheticSupport, type EnvSpec } from "../envs/index.ts";
import {
  createExperienceModel,
  LearnedExperienceModel,
  SyntheticEnv,
  type ExperienceModel,
  type ExperienceModelHandle,
  type ExperienceSpec,
} from "../experience/index.ts";
import { NeuralPolicy, type TrainablePolicy } from "../rl/index.ts";
import type { TrainConfig } from "./config.ts";
import type { EnvPool, Parts, SyntheticPool, TrainParts } from "./parts.ts";
import { candidatesOf, openPool, runEnv, type Support } from "./resolve.ts";

/**
 * Where the policy's candidates come from when an env lists no actions: the parts', else the env
 * spec's, else a command vocabulary learned from the real transitions of `bufferFile`. Undefined
 * when there is none (the check at start then tells what to give).
 */
export function candidateSource(config: TrainConfig, bufferFile: string | undefined, parts: TrainParts = {}): ActionSource | undefined {
  return candidatesOf(parts.candidateActions ?? envEntry(config.env).spec.candidateActions, config, bufferFile);
}

/** `concurrency` envs of a split, as the policy sees them, and the split's tasks. */
export function makeEnvPool(config: TrainConfig, split: string, actions?: ActionSource): EnvPool {
  const pool = openPool(runEnv(config), config, split === config.trainSplit ? "train" : "eval", split, actions);
  return { envs: pool.envs, tasks: pool.tasks };
}

/**
 * Builds the synthetic env pool over the run's buffer copy, with the synthetic support of an env of
 * the train split it opens (a run gives the support of its train pool's first env instead).
 */
export async function makeSyntheticPool(
  config: TrainConfig,
  bufferFile: string,
  tasks: Task[],
  parts: TrainParts,
  actions?: ActionSource,
): Promise<SyntheticPool> {
  const entry = envEntry(config.env);
  const support = await closing(createEnv(config.env, { split: config.trainSplit, dataDir: config.dataDir }), (env) => syntheticSupport(entry, env));
  const plugs = plugPoints(config.env);
  return syntheticPool(config, bufferFile, tasks, parts, actions, {
    support,
    model: parts.experienceModel ?? config.experience,
    llmTasks: plugs.llmTasks,
    // The env's own generator over an instance of its evaluation split.
    envGenerator: async () =>
      plugs.taskGenerator
        ? closing(createEnv(config.env, { split: config.evalSplit, dataDir: config.dataDir }), (env) =>
            envTaskGenerator(plugs.taskGenerator, config, env, envTasks(entry, env)),
          )
        : undefined,
  });
}

/** What a synthetic pool is built from. */
export interface SyntheticSources {
  /** The env's synthetic support. */
  support: Support;
  /** The experience model: a spec (a string, or parsed) or a ready model (not closed by the pool). */
  model: string | ExperienceSpec | ExperienceModel;
  /** The env's `llmTasks` plug point. */
  llmTasks?: boolean;
  /** The env's own task generator (its `taskGenerator` plug point), where the model gives no LLM one. */
  envGenerator(): Promise<TaskGenerator | undefined>;
}

/**
 * Episodes a synthetic pool over an in-process model plays at once at least: WebShop's whole iteration
 * (16 tasks × 8). While one step waits for the search and estimate threads, the others' go on (a 20k
 * DreamGym run, 5 alternating rounds: 5.90–6.50 s against 6.18–6.78 at 16; when the policy's features
 * were made at every step, this thread was the bottleneck and 16, 32 and 64 were alike).
 */
const IN_PROCESS_EPISODES = 128;

/**
 * The run's buffer as its synthetic pool reads it. Retrieval's searches of the offline data run on a
 * second core where there is one, and where the trainer does not need it: a served run's trainer is a
 * process of its own (on 2 cores, bench:train's served run took 16.9 s without the thread, 18.1–18.8 s
 * with it). With `model` given as an object that will search real rows (the learned model), the
 * thread starts at once and reads them while the run sets up the rest.
 */
export function openSyntheticBuffer(config: TrainConfig, bufferFile: string, model?: SyntheticSources["model"]): ReplayBuffer {
  const buffer = ReplayBuffer.open(bufferFile, { searchThread: helperThreads(config) });
  if (typeof model === "object" && "predict" in model && searchesRealRows(model, config.demos)) buffer.startSearchThread();
  return buffer;
}

/** Whether a run's helper threads may have a core of their own (`helperThreads`; not a served run's, whose trainer is the other process). */
export const helperThreads = (config: TrainConfig): boolean => config.helperThreads && !config.served && availableParallelism() > 1;

/** Whether a model's synthetic steps search the real rows (on the search thread, where there is one). */
const searchesRealRows = (model: ExperienceModel, demos: number) => model.realDemosOnly === true && model.usesDemos !== false && demos > 0;

/**
 * The synthetic env pool: `concurrency` synthetic envs (at least IN_PROCESS_EPISODES over an
 * in-process model) over one experience model and the buffer in `bufferFile`, or the buffer
 * `openSyntheticBuffer` opened (the pool then owns it: it closes it with itself, or on failure).
 */
export async function syntheticPool(
  config: TrainConfig,
  bufferFile: string | ReplayBuffer,
  tasks: Task[],
  parts: TrainParts,
  actions: ActionSource | undefined,
  from: SyntheticSources,
): Promise<SyntheticPool> {
  const support = from.support;
  let model: ExperienceModelHandle;
  try {
    model = createExperienceModel(from.model, {
      abstraction: support.abstraction,
      rewards: support.rewards,
      chat: { concurrency: config.concurrency, cache: config.cache, timeoutMs: 1000 * config.requestTimeout, maxFailures: config.maxFailures },
      samples: config.experienceSamples,
    });
  } catch (e) {
    if (typeof bufferFile !== "string") bufferFile.close();
    throw e;
  }
  let buffer: ReplayBuffer;
  try {
    buffer = typeof bufferFile === "string" ? openSyntheticBuffer(config, bufferFile) : bufferFile;
  } catch (e) {
    await model.close();
    throw e;
  }
  // Without replay the reasoning model gets no demos; the embedded model is retrieval itself, so it
  // keeps reading the offline seed, which then never grows.
  const demos = config.replay || !model.chat ? config.demos : 0;
  if (searchesRealRows(model.model, demos)) buffer.startSearchThread();
  const make = () => {
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
  };
  // A model in this process has no endpoint to spare (`ExperienceModel.inProcess`): its pool plays at
  // least IN_PROCESS_EPISODES episodes at once, whatever `concurrency` says. A step waits for the search
  // and estimate threads, and with 4 in flight this thread sat idle ~7% of a run (the same metrics: what
  // an episode gets does not depend on how many run beside it).
  const size = model.model.inProcess ? Math.max(config.concurrency, IN_PROCESS_EPISODES) : config.concurrency;
  const envs: Env[] = Array.from({ length: size }, make);
  // Where a task needs more than its sentence (`llmTasks: false`), an LLM's free-text variation has
  // nothing to start in, and the env keeps its own generator whatever the model.
  const llmTasks = model.chat !== undefined && from.llmTasks !== false;
  const generator =
    parts.taskGenerator ??
    (llmTasks
      ? new LlmTaskGenerator({ chat: model.chat!, profile: support.abstraction.profile })
      : await from.envGenerator().catch(async (e) => {
          buffer.close();
          await model.close();
          throw e;
        }));
  return {
    envs,
    make,
    tasks,
    buffer,
    generator,
    tokens: model.tokens,
    auditReplay: config.onPolicyAudit.replay === "auto" ? (support.auditReplay ?? "actions") : config.onPolicyAudit.replay,
    ...refitting(model.model),
    trim: async () => {
      if (config.bufferCapacity > 0) await buffer.trim(config.bufferCapacity);
    },
    close: async () => {
      buffer.close();
      await model.close();
    },
  };
}

/** A pool's refit and its state (`SyntheticPool`): the state is taken only when a refit changed the model since. */
function refitting(m: ExperienceModel): Pick<SyntheticPool, "refit" | "takeRefitState" | "loadRefitState"> {
  if (!m.refit) return {};
  let changed = false;
  const stateful = m.refitState && m.loadRefitState;
  return {
    refit: (trajectories, seed) => {
      m.refit!(trajectories, seed);
      changed = true;
    },
    ...(stateful && {
      takeRefitState: () => {
        if (!changed) return undefined;
        changed = false;
        return m.refitState!();
      },
      loadRefitState: (bytes: Uint8Array, source: string) => m.loadRefitState!(bytes, source),
    }),
  };
}

/**
 * The env's own task variation without an LLM (its `EnvSpec.taskGenerator`), over an env of its
 * evaluation split (`evalTasks`: that env's tasks). An env server's env has its local twin's
 * (`useRemoteEnv`).
 */
export async function envTaskGenerator(make: EnvSpec["taskGenerator"], config: TrainConfig, env: Env, evalTasks: Task[]): Promise<TaskGenerator | undefined> {
  return make?.(env, {
    trainSplit: config.trainSplit,
    evalSplit: config.evalSplit,
    evalTasks,
    dataDir: config.dataDir,
    maxSteps: config.maxSteps,
  });
}

/** The policy a run starts from: the parts', else fresh weights from the seed (or `initPolicy`'s), with the env's own features where it has them. */
export function makePolicy(config: TrainConfig, parts: TrainParts, initPolicy?: Uint8Array): TrainablePolicy<unknown> {
  return policyOf(config, parts, plugPoint(config.env, "features"), initPolicy);
}

/** As `makePolicy`, with the env's features (its plug point) already looked up. */
export function policyOf(config: TrainConfig, parts: TrainParts, features: PolicyFeatures | undefined, initPolicy?: Uint8Array): TrainablePolicy<unknown> {
  const from = initPolicy && config.initPolicy;
  if (parts.policy) {
    if (from) parts.policy.load(initPolicy, from);
    return parts.policy;
  }
  const policyConfig = { ...config.policy, seed: config.seed, features };
  return (from ? NeuralPolicy.fromBytes(initPolicy, from, policyConfig) : new NeuralPolicy(policyConfig)) as TrainablePolicy<unknown>;
}
