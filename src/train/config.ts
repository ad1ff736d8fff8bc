import { z } from "zod";
import { parseConfig } from "../core/index.ts";
import { curriculumConfigSchema } from "../curriculum/index.ts";
import { defaultSplits, plugPoint } from "../envs/index.ts";
import type { OnPolicyAuditSummary } from "../experience/index.ts";
import { bcConfigSchema, grpoConfigSchema, ppoConfigSchema } from "../rl/index.ts";

/** Every setting of a training run, each with its default and its bounds: what `config.json` stores. */
export const trainConfigSchema = z.strictObject({
  env: z.string().default("webshop"),
  /**
   * An env server's URL (ws://, http://host:port; `dreamgym serve`): the real env's steps and evaluations
   * run there, and `env` is the env it serves. Stored, so a resume reconnects.
   */
  remote: z
    .string()
    .regex(/^(wss?|https?):\/\/./i, "an env server URL: ws://, wss://, http:// or https://host:port")
    .optional(),
  /**
   * real: RL in the real env; dreamgym: RL in the synthetic env; s2r: dreamgym, then RL in the real env;
   * bc: behaviour cloning on the buffer's successful real episodes (offline, no RL; `bc.epochs` passes).
   */
  mode: z.enum(["real", "dreamgym", "s2r", "bc"]).default("real"),
  algo: z.enum(["grpo", "ppo"]).default("grpo"),
  /**
   * Training interactions of the first phase: real env steps (real), synthetic steps (dreamgym, and
   * s2r's synthetic phase). The last iteration may run past it by less than one iteration.
   */
  budget: z.number().int().min(1).max(1e9).default(20_000),
  /** s2r: real env steps of the second phase. */
  realBudget: z.number().int().min(0).max(1e9).default(0),
  /** Stop after this much training wall time too (0: no limit), e.g. to compare at equal wall time. */
  maxSeconds: z.number().min(0).max(1e7).default(0),
  /**
   * dreamgym/s2r: the buffer with offline trajectories (abstract states) that grounds the experience model; copied into the run folder.
   * bc: the buffer whose successful real episodes are cloned (read, not copied).
   */
  buffer: z.string().optional(),
  /**
   * dreamgym/s2r with no offline trajectories: the run's buffer starts empty and grows with its
   * synthetic episodes; the reasoning experience model plays from the env's profile alone (the
   * embedded and learned models need a buffer, so a chat model is required).
   */
  coldStart: z.boolean().default(false),
  /**
   * dreamgym: no real env step at all — no evaluation, no on-policy audit — for an env that cannot
   * be played here (WebArena with no deployment). The checkpoints are the result, to evaluate elsewhere.
   */
  syntheticOnly: z.boolean().default(false),
  /**
   * A DreamGym session server's run (`dreamgym serve --mode dreamgym --run DIR`): a trainer's sessions
   * play the episodes and update the policy; the server plans tasks, grows the buffer, audits and
   * logs. `dreamgym serve --run DIR` resumes it, not `train --resume`.
   */
  served: z.boolean().default(false),
  /** dreamgym/s2r: "default" (the embedded model) or a chat model (http://host/v1#model, openai:model, gguf:file). */
  experience: z.string().default("default"),
  /** Terminal rewards from the real env's verifier instead of the experience model. */
  hybrid: z.boolean().default(false),
  /** Grow the buffer with the synthetic episodes and give the model retrieved demos (off: the ablation). */
  replay: z.boolean().default(true),
  /** Retrieved demos per synthetic step. */
  demos: z.number().int().min(0).max(100).default(5),
  /**
   * Synthetic transitions the run's buffer keeps besides the offline seed (which always stays): the
   * oldest episodes go first, at each checkpoint. Bounds retrieval time as the buffer grows (0: no bound).
   */
  bufferCapacity: z.number().int().min(0).max(1e9).default(40_000),
  /** A chat model's response cache (SQLite). */
  cache: z.string().optional(),
  /** Seconds a chat model's HTTP attempt may take (a timed-out attempt fails its call, not retried). */
  requestTimeout: z.number().positive().max(86_400).default(60),
  /**
   * Failed chat calls in a row, or tasks with failed synthetic steps and no good step between, that stop the run,
   * checkpointed (an endpoint that never answered stops it at the first call).
   */
  maxFailures: z.number().int().min(1).max(1e6).default(10),
  /**
   * The on-policy audit (synthetic phases): every `every` iterations, and at the last synthetic one,
   * at least `episodes` of that iteration's synthetic episodes, as whole groups (the G episodes of a
   * task; which groups is fixed by the seed), are replayed action by action in the real env, to see
   * whether what the policy learned holds there and whether the model ranks a group's episodes as the
   * real env does (what GRPO learns from). Its real steps are counted as `auditInteractions`, apart
   * from training and evaluation (every 0: off).
   */
  onPolicyAudit: z
    .strictObject({
      every: z.number().int().min(0).max(1e9).default(5),
      episodes: z.number().int().min(1).max(1e6).default(16),
      /**
       * actions: the synthetic episodes' actions replayed open loop; policy: the policy as it played
       * them plays the real env, same tasks and seeds (closed loop); auto: the env's choice
       * (`SyntheticSupport.auditReplay`, else actions).
       */
      replay: z.enum(["auto", "actions", "policy"]).default("auto"),
      /**
       * Dyna: after each audit, the experience model learns from its real replays
       * (`ExperienceModel.refit`; the learned model can), and their steps count as real training
       * interactions (`realInteractions`), since they now train something.
       */
      refit: z.boolean().default(false),
    })
    .prefault({}),
  /**
   * Pessimism toward the experience model, in the synthetic phase. Where the model reports its
   * uncertainty u in [0, 1], the reward becomes r − beta·u (MOPO), and an episode halts with reward
   * 0 where u > halt (MOReL; unset: never); on WebShop at 8k synthetic steps beta 1 took the final
   * score from 4.0 to 35.6 (docs/training.md). And GRPO does not trust the model's fine distinctions:
   * a group's standard deviation is floored at `stdFloor` (returns a few thousandths apart are the
   * model's noise, not an order), and a KL penalty of β `kl` to the starting policy (added to
   * `grpo.klCoef`) keeps that noise from walking the policy off the data, onto pages the model has
   * not seen: DreamGym's teach ratio on WebShop went from 0.72 / 0.34 (median / minimum over 5 data
   * seeds, dev) to 1.06 / 0.65 (docs/results.md). `--no-pessimism` turns all of it off.
   */
  pessimism: z
    .strictObject({
      beta: z.number().min(0).max(1e6).default(1),
      halt: z.number().min(0).max(1e6).optional(),
      kl: z.number().min(0).max(1e6).default(0.05),
      stdFloor: z.number().min(0).max(1e6).default(0.1),
    })
    .prefault({}),
  /** A reasoning model's predictions sampled per step: their disagreement is u (n× the tokens; 1: no u). */
  experienceSamples: z.number().int().min(1).max(64).default(1),
  curriculum: curriculumConfigSchema.prefault({}),
  /**
   * The tasks of the synthetic phase: the train split's ("split"), or those of the seed buffer's
   * real episodes in the train split ("seed": the paper's seed task set, where the model has
   * recorded pages of the very task; the curriculum still adds its variations). With a small seed
   * buffer over a large split, "split" plays mostly tasks whose searches the model never saw.
   */
  syntheticTasks: z.enum(["split", "seed"]).default("split"),
  /**
   * The tasks of real RL (real mode, S2R's real phase): the train split's ("split"), or only those
   * of the buffer's real episodes ("seed"), to tell what the task set gives from what the
   * experience model gives (real-env GRPO on DreamGym's own tasks). "seed" needs `buffer`.
   * "server": the env server picks them (a DreamGym session server's curriculum, `dreamgym serve
   * --mode dreamgym`): each reset names its group (iteration and task slot) instead of a task.
   */
  realTasks: z.enum(["split", "seed", "server"]).default("split"),
  /**
   * S2R's real phase: each iteration draws `realScreen`× its tasks and plays each G times in the
   * synthetic env first; its real steps go to the tasks whose synthetic returns vary most (the
   * curriculum's criterion). A policy trained in the synthetic env is nearly deterministic, and a
   * real group whose returns are all equal teaches GRPO nothing. The screening's steps count as
   * synthetic interactions. 1 (the default): no screening; with a chat experience model or an LLM
   * policy, screening costs `realScreen`× an iteration's calls in the synthetic env.
   */
  realScreen: z.number().int().min(1).max(64).default(1),
  /**
   * S2R's real phase: GRPO's `batchAdvantage` λ there (unset: `grpo.batchAdvantage`, as in the first
   * phase). DreamGym's policy plays most real tasks one way; a group of equal returns teaches GRPO
   * nothing, and the batch term still moves the policy off a way that earns less than the batch.
   */
  realBatchAdvantage: z.number().min(0).max(100).optional(),
  seed: z
    .number()
    .int()
    .min(0)
    .max(2 ** 52)
    .default(0),
  /** Tasks sampled per iteration, each rolled out `rolloutsPerTask` times (GRPO's group size G). */
  tasksPerIteration: z.number().int().min(1).max(1e5).default(16),
  rolloutsPerTask: z.number().int().min(2).max(1e4).default(8),
  /** Episodes played at once (envs in the pool). */
  concurrency: z.number().int().min(1).max(1024).default(4),
  /**
   * Let a run's helper threads use a second core: the searches of the offline rows, the learned model's
   * new estimates, GRPO's reference scores (a run alone ~5% faster on 2 cores). Off for several runs at once on
   * few cores, where they slow each run down (two at once on 2 cores: ~7–10% each). Either way the same
   * results.
   */
  helperThreads: z.boolean().default(true),
  /** Tasks to train on (default: the env's training split, `EnvSpec.splits`). */
  trainSplit: z.string().optional(),
  /** Tasks to evaluate on (default: the env's evaluation split). */
  evalSplit: z.string().optional(),
  /** Evaluate every this many iterations (0: only at the end). */
  evalEvery: z.number().int().min(0).max(1e9).default(10),
  /** Tasks (the first of the eval split) in an interval evaluation. */
  evalTasks: z.number().int().min(1).max(1e6).default(100),
  /** Tasks in the final evaluation. */
  finalEvalTasks: z.number().int().min(1).max(1e6).default(500),
  checkpointEvery: z.number().int().min(1).max(1e9).default(5),
  maxSteps: z.number().int().min(1).max(1e6).optional(),
  dataDir: z.string().optional(),
  /** Start from this policy file (a run's `checkpoints/iter-*.policy`) instead of fresh weights, e.g. S2R from a DreamGym run. */
  initPolicy: z.string().optional(),
  policy: z
    .strictObject({
      dim: z
        .number()
        .int()
        .min(16)
        .max(1 << 24)
        .default(32768),
      hidden: z.number().int().min(1).max(4096).default(16),
    })
    .prefault({}),
  grpo: grpoConfigSchema.prefault({}),
  ppo: ppoConfigSchema.prefault({}),
  /** Behaviour cloning (mode bc): epochs, learning rate, minibatch size, gradient clip. */
  bc: bcConfigSchema.prefault({}),
});
/** The config with each env's default splits filled in (what config.json stores). */
export type TrainConfig = z.infer<typeof trainConfigSchema> & { trainSplit: string; evalSplit: string };

/**
 * Parses a training config (one error naming every bad key) and fills in the env's default splits
 * (`splits`: where they come from; the env is looked up only when a split is missing, so a stored
 * config resumes before its env is known).
 */
export function resolveTrainConfig(
  input: unknown,
  what = "training config",
  splits: (env: string) => { train: string; eval: string } = defaultSplits,
): TrainConfig {
  const c = parseConfig(trainConfigSchema, input, what);
  // The env's own pessimism defaults (`EnvSpec.pessimism`), for what the input leaves unset.
  const own = plugPoint(c.env, "pessimism");
  const given = (input as { pessimism?: Record<string, unknown> } | undefined)?.pessimism ?? {};
  for (const k of ["kl", "stdFloor"] as const) if (own?.[k] !== undefined && given[k] === undefined) c.pessimism[k] = own[k];
  const d = c.trainSplit !== undefined && c.evalSplit !== undefined ? { train: c.trainSplit, eval: c.evalSplit } : splits(c.env);
  return { ...c, trainSplit: c.trainSplit ?? d.train, evalSplit: c.evalSplit ?? d.eval };
}
export type TrainConfigInput = z.input<typeof trainConfigSchema>;

export interface EvalResult {
  tasks: number;
  /** Real env steps the evaluation took (not training interaction). */
  steps: number;
  /** Mean reward × 100 (the benchmarks' score). */
  score: number;
  /** Share of episodes with reward 1. */
  success: number;
}

/** One line of metrics.jsonl. */
export interface IterationMetrics {
  iteration: number;
  episodes: number;
  steps: number;
  meanReward: number;
  success: number;
  /** Real env steps used for training so far (evaluation is not counted here). */
  realInteractions: number;
  /** Real env steps of evaluations so far. */
  evalInteractions: number;
  /** Synthetic env steps used for training so far. */
  syntheticInteractions: number;
  /** Real env steps of on-policy audits so far (not evaluation; with `onPolicyAudit.refit`, the scheduled audits' steps are in `realInteractions` too). */
  auditInteractions: number;
  /** "real" or "synthetic": where this iteration's episodes ran; "offline": an epoch of behaviour cloning (no episodes played). */
  phase: "real" | "synthetic" | "offline";
  /** Episodes left out of the update because the experience model kept failing in them (all so far). */
  droppedEpisodes: number;
  /** LLM tokens so far (experience model and task generator). */
  tokens: number;
  /** GRPO: the groups of the update whose returns are not all equal (the others give no gradient), of `groups`. */
  groups?: { total: number; informative: number };
  /** S2R's screened real iterations: the candidate tasks played in the synthetic env, their steps, and the mean variance of their synthetic returns, over all candidates and over those chosen. */
  screen?: { candidates: number; steps: number; meanVariance: number; chosenVariance: number };
  curriculum?: {
    meanVariance: number;
    selected: number;
    added: number;
    infeasible: number;
    duplicates: number;
    pool: number;
    generatorFailures: number;
    lastFailure?: string;
    generatedInBatch: number;
  };
  /** The update's figures; absent on a served run (`dreamgym serve --mode dreamgym`), where the trainer updates the policy. */
  policyLoss?: number;
  valueLoss?: number;
  entropy?: number;
  kl?: number;
  approxKl?: number;
  clipFraction?: number;
  gradNorm?: number;
  rolloutSeconds: number;
  updateSeconds: number;
  evalSeconds: number;
  auditSeconds: number;
  /** Seconds of training so far (across resumes). */
  wallSeconds: number;
  eval?: EvalResult;
  /** This iteration's synthetic episodes replayed in the real env (audited iterations only). */
  onPolicyAudit?: OnPolicyAuditSummary;
  /**
   * Behaviour cloning (phase offline): the demonstrations (successful real episodes of the buffer, eval-split tasks left
   * out) and their steps cloned, steps whose action is not among the policy's candidates (skipped), mean −log π(a*|s)
   * and mean π(a*|s) over the epoch.
   */
  bc?: { demonstrations: number; steps: number; skipped: number; loss: number; meanProb: number };
  /** The experience model's uncertainty over this iteration's synthetic steps (where it reports one): mean u, largest u, steps with u, halted episodes. */
  uncertainty?: { mean: number; max: number; steps: number; halts: number };
  /** Hybrid runs: this iteration's synthetic steps whose reward and end the real env's verifier gave (of `steps`). */
  verifiedSteps?: number;
}

export interface TrainSummary {
  runDir: string;
  config: TrainConfig;
  iterations: number;
  realInteractions: number;
  syntheticInteractions: number;
  auditInteractions: number;
  droppedEpisodes: number;
  wallSeconds: number;
  final: EvalResult;
  /** The iteration the run resumed from, if it did. */
  resumedFrom?: number;
}

export interface TrainHooks {
  onIteration?: (m: IterationMetrics, config: TrainConfig) => void;
  /** Something the run goes on despite, which its user should know (a resume that found its metrics damaged). */
  onWarning?: (message: string) => void;
  /** The run has started in its folder (everything is open): from here a stop leaves a run to resume. */
  onStart?: (runDir: string) => void;
}

/**
 * Settings a resumed run may change: when it stops (`requestTimeout`, `maxFailures`); a larger
 * `budget`, which extends a real, DreamGym or S2R run (before its real phase) as if it had been given
 * from the start; and, for a DreamGym run, a real phase after its synthetic one (`mode: "s2r"` with
 * `realBudget`, and optionally `realScreen`): sim-to-real continuing the same run, its policy,
 * optimiser and counters; for an S2R run, a larger `realBudget`, which extends its real phase
 * (`realScreen` and `realBatchAdvantage` stay as they were once that phase has begun).
 */
export type ResumeOverrides = Partial<Pick<TrainConfig, "requestTimeout" | "maxFailures" | "budget" | "realBudget" | "realScreen" | "realBatchAdvantage">> & {
  mode?: "s2r";
};
