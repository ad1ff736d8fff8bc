import { deriveSeed, InvalidConfigError, nextTurn, Rng, type ActionSource, type StateAbstraction, type Task } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { bcEpoch, type TrainablePolicy } from "../rl/index.ts";
import type { EvalResult, IterationMetrics, TrainConfig, TrainHooks } from "./config.ts";
import type { Parts } from "./parts.ts";
import { checkFinite, runCounters } from "./iteration-metrics.ts";
import { evaluate } from "./loop.ts";
import type { RunSink } from "./run-sink.ts";
import type { RunState } from "./run-sink.ts";

/** The demonstrations of a behaviour-cloning run, as the policy's own step records. */
export interface Demonstrations<R = unknown> {
  records: R[];
  /** Successful real episodes cloned. */
  episodes: number;
  /** Steps whose action is not among the policy's candidates (not cloned). */
  skipped: number;
  /** Successful episodes left out because their task is in the eval split. */
  excluded: number;
}

/**
 * The successful real episodes of `bufferFile` (the env's success rule on their return; the
 * synthetic ones never), minus those of tasks in `evalTasks` (so the evaluation stays held out), as
 * the policy's records of taking each demonstrated action: each step is shown to the policy as the
 * real env shows it in training — the abstract state (`abstraction`: the real env's, where it has
 * one), the actions it lists (else `actions`'), the episode's actions so far. Deterministic: the
 * buffer's order.
 */
export async function demonstrations<R>(
  config: TrainConfig,
  bufferFile: string,
  policy: TrainablePolicy<R>,
  evalTasks: readonly Task[],
  isSuccess: (totalReward: number) => boolean,
  abstraction: StateAbstraction | undefined,
  actions?: ActionSource,
): Promise<Demonstrations<R>> {
  if (!policy.recordFor)
    throw new InvalidConfigError(`mode bc needs a policy that can score a demonstrated action (recordFor), as the neural policy can; ${policy.name} cannot`);
  const held = new Set(evalTasks.map((t) => t.id));
  const out: Demonstrations<R> = { records: [], episodes: 0, skipped: 0, excluded: 0 };
  const buffer = ReplayBuffer.open(bufferFile, { readonly: true });
  try {
    for (const t of buffer.trajectories({ env: config.env, source: "real" })) {
      if (!isSuccess(t.total_reward) || t.steps.length === 0) continue;
      if (held.has(t.task.id)) {
        out.excluded++;
        continue;
      }
      out.episodes++;
      const history: string[] = [];
      for (const step of t.steps) {
        const observation = abstraction ? abstraction.abstract(step.observation) : step.observation;
        const listed = abstraction?.actions(observation) ?? actions?.(observation, t.task);
        const record = policy.recordFor({ task: t.task, observation, actions: listed, history: [...history] }, step.action);
        if (record === undefined) out.skipped++;
        else out.records.push(record);
        history.push(step.action);
      }
    }
  } finally {
    buffer.close();
  }
  return out;
}

/**
 * Successful real episodes of the env in a buffer, those with steps (a start check of mode bc): by
 * their total rewards alone, not by reading every real episode with its steps.
 */
export function countDemonstrations(config: TrainConfig, bufferFile: string, isSuccess: (totalReward: number) => boolean): number {
  const buffer = ReplayBuffer.open(bufferFile, { readonly: true });
  try {
    return buffer.totalRewards({ env: config.env, source: "real" }).filter(isSuccess).length;
  } finally {
    buffer.close();
  }
}

/**
 * Behaviour cloning as a run (`mode: "bc"`): each iteration is an epoch of maximum likelihood on the
 * demonstrations (`bc.epochs` of them), evaluated greedily on the real eval split at intervals and at
 * the end, logged and checkpointed like an RL iteration. No env step is training interaction: real
 * and synthetic interactions stay 0. The epoch's order derives from (seed, iteration), so a resumed
 * run gives the same metrics as one that was never stopped. `abstraction`: the real env's (its train
 * pool's), where it has one.
 */
export async function behaviourCloningLoop(
  config: TrainConfig,
  parts: Parts,
  state: RunState,
  sink: RunSink,
  hooks: TrainHooks,
  abstraction: StateAbstraction | undefined,
): Promise<EvalResult> {
  const { policy, evaluation } = parts;
  const t00 = performance.now();
  const demos = await demonstrations(config, config.buffer!, policy, evaluation.tasks, parts.isSuccess, abstraction, parts.actions);
  if (demos.records.length === 0) {
    throw new InvalidConfigError(
      `mode bc: no step of the buffer's successful real ${config.env} episodes could be cloned (${demos.episodes} episodes, ${demos.skipped} steps whose action the policy does not offer)`,
    );
  }
  let prepSeconds = (performance.now() - t00) / 1000;
  let finalEval: EvalResult | undefined;
  while (state.iteration < config.bc.epochs && !(config.maxSeconds > 0 && state.wallSeconds >= config.maxSeconds)) {
    const iteration = state.iteration + 1;
    const t0 = performance.now();
    const s = bcEpoch(policy, demos.records, config.bc, new Rng(deriveSeed(config.seed, "bc", iteration)));
    checkFinite(s, iteration, sink);
    const t1 = performance.now();
    const last = iteration === config.bc.epochs || (config.maxSeconds > 0 && state.wallSeconds + prepSeconds + (t1 - t0) / 1000 >= config.maxSeconds);
    let evalResult: EvalResult | undefined;
    if (last) evalResult = finalEval = await evaluate(policy, evaluation, config.finalEvalTasks, parts.isSuccess);
    else if (config.evalEvery > 0 && iteration % config.evalEvery === 0) evalResult = await evaluate(policy, evaluation, config.evalTasks, parts.isSuccess);
    const t2 = performance.now();
    state.iteration = iteration;
    state.evalInteractions += evalResult?.steps ?? 0;
    // The demonstrations' preparation counts as training time of the first epoch this process runs.
    state.wallSeconds += prepSeconds + (t2 - t0) / 1000;
    const m: IterationMetrics = {
      iteration,
      phase: "offline",
      episodes: 0,
      steps: 0,
      meanReward: 0,
      success: 0,
      ...runCounters(state),
      policyLoss: s.loss,
      entropy: s.entropy,
      approxKl: 0,
      clipFraction: 0,
      gradNorm: s.gradNorm,
      rolloutSeconds: prepSeconds,
      updateSeconds: (t1 - t0) / 1000,
      auditSeconds: 0,
      evalSeconds: (t2 - t1) / 1000,
      wallSeconds: state.wallSeconds,
      ...(evalResult ? { eval: evalResult } : {}),
      bc: { demonstrations: demos.episodes, steps: demos.records.length, skipped: demos.skipped, loss: s.loss, meanProb: s.meanProb },
    };
    prepSeconds = 0;
    sink.appendMetrics(m);
    if (last || iteration % config.checkpointEvery === 0) {
      sink.saveCheckpoint(policy.save(), state, undefined);
    }
    hooks.onIteration?.(m, config);
    await nextTurn(); // once an iteration: a run of in-process envs never waits on I/O, and a signal's handler (Ctrl-C) runs only then
    if (last) break;
  }
  // Resumed after the last epoch's checkpoint: evaluate again (deterministic: greedy).
  return finalEval ?? (await evaluate(policy, evaluation, config.finalEvalTasks, parts.isSuccess));
}
