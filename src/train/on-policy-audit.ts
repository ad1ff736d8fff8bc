import { deriveSeed, InvalidConfigError, playEpisodes, type Env, type Episode, type Rng, type Task } from "../core/index.ts";
import {
  auditPairs,
  compareReal,
  realTrajectories,
  replayInRealEnv,
  summarizeReplays,
  type AuditPair,
  type OnPolicyAuditSummary,
  type ReplayResult,
  type SyntheticRecord,
} from "../experience/index.ts";
import type { TrainablePolicy } from "../rl/index.ts";
import { modelReward } from "./synthetic-episodes.ts";
import type { TrainConfig } from "./config.ts";
import type { SyntheticPool } from "./parts.ts";

/** A played episode with the job that played it (task, env seed, sampling seed). */
export interface PlayedEpisode {
  e: Episode;
  job: { task?: Task; seed: number; rngSeed: number };
}

/**
 * Replays whole groups of this iteration's synthetic episodes (the G episodes of a task, as GRPO
 * compared them; groups in an order drawn from `rng`, until at least `count` episodes) in the real
 * envs, same task and env seed: their actions (open loop), or, given the policy as it played them
 * (`auditor`), its own play of the real env from the same sampling seed (closed loop). An episode's
 * synthetic return is the model's rewards before any pessimism penalty (a halted step earns 0): what
 * the model told the policy the actions were worth; its trained return, the one the update ranked,
 * is kept beside it.
 */
export async function onPolicyAudit(
  groups: PlayedEpisode[][],
  envs: Env[],
  count: number,
  rng: Rng,
  isSuccess: (totalReward: number) => boolean,
  keep: (pairs: AuditPair[]) => void,
  auditor?: TrainablePolicy<unknown>,
): Promise<OnPolicyAuditSummary> {
  const order = rng.shuffle(groups.map((_, t) => t).filter((t) => groups[t].length > 0));
  const sample: (PlayedEpisode & { group: string })[] = [];
  for (const t of order) {
    if (sample.length >= count) break;
    sample.push(...groups[t].map((x) => ({ ...x, group: String(t) })));
  }
  const records: SyntheticRecord[] = sample.map(({ e, job, group }) => ({
    task: e.task,
    seed: job.seed,
    observation: e.steps[0]?.observation ?? "",
    group,
    trainedReturn: e.totalReward,
    steps: e.steps.map((s) => ({
      action: s.action,
      nextObservation: s.next_observation,
      terminated: s.terminated,
      reward: modelReward(s),
      ...(s.info?.reasoning ? { reasoning: String(s.info.reasoning) } : {}),
    })),
  }));
  let results: (ReplayResult | null)[];
  if (auditor) {
    const real = await playInRealEnv(
      envs,
      auditor,
      sample.map(({ e, job }) => ({ task: e.task, seed: job.seed, rngSeed: job.rngSeed })),
      isSuccess,
    );
    results = real.map(
      (x, i) =>
        x &&
        compareReal(
          records[i],
          {
            observation: x.steps[0]?.observation ?? "",
            steps: x.steps.map((s) => ({
              action: s.action,
              observation: s.next_observation,
              reward: s.reward,
              terminated: s.terminated,
              truncated: s.truncated,
            })),
          },
          isSuccess,
        ),
    );
  } else results = await replayInRealEnv(envs, records, isSuccess);
  keep(auditPairs(records, results)); // the episodes themselves, for `dreamgym view`
  return summarizeReplays(results);
}

/**
 * Dyna (`onPolicyAudit.refit`): the experience model learns from a scheduled audit's real replays,
 * read as their file keeps them (JSON), so a resume that refits from the audit files gets the same
 * model. Returns the real steps it learned from (real training interactions from then on).
 */
export function refitOnAudit(config: TrainConfig, synthetic: SyntheticPool | undefined, pairs: readonly AuditPair[], iteration: number): number {
  // Only the scheduled audits: the one a run's last synthetic iteration adds would train nothing, and
  // a run extended with a larger --budget goes on as one that never stopped there.
  const scheduled = config.onPolicyAudit.every > 0 && iteration % config.onPolicyAudit.every === 0;
  if (!config.onPolicyAudit.refit || !scheduled || !synthetic?.refit || pairs.length === 0) return 0;
  const trajectories = realTrajectories(JSON.parse(JSON.stringify(pairs)) as AuditPair[], config.env);
  synthetic.refit(trajectories, deriveSeed(config.seed, "refit", iteration));
  return trajectories.reduce((s, t) => s + t.steps.length, 0);
}

/**
 * The policy's own episodes in the real envs, one job per env at a time (each job its own sampling
 * stream, so the order envs finish in changes nothing); null for a task the real env cannot play (an
 * LLM-generated task with no goal behind it), as the open-loop replay skips it.
 */
async function playInRealEnv(
  envs: Env[],
  policy: TrainablePolicy<unknown>,
  jobs: { task: Task; seed: number; rngSeed: number }[],
  isSuccess: (totalReward: number) => boolean,
): Promise<(Episode | null)[]> {
  const out: (Episode | null)[] = new Array(jobs.length).fill(null);
  let next = 0;
  await Promise.all(
    envs.map(async (env) => {
      while (next < jobs.length) {
        const i = next++;
        try {
          [out[i]] = await playEpisodes([env], policy, [jobs[i]], { isSuccess });
        } catch (e) {
          if (!(e instanceof InvalidConfigError)) throw e;
        }
      }
    }),
  );
  return out;
}
