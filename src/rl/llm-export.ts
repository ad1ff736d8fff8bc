import { writeJsonlAtomic } from "../core/index.ts";
import type { Episode } from "../core/index.ts";
import { groupAdvantages } from "./grpo.ts";
import type { LlmStepRecord } from "./llm-policy.ts";

export interface TrainerExportOptions {
  env: string;
  /**
   * `steps`: one line per step (prompt, completion, advantage), what TRL/verl-style GRPO trainers
   * consume; `trajectories`: one line per episode. @default "steps"
   */
  format?: "steps" | "trajectories";
  /** ε in the group advantage's denominator. @default 1e-6 */
  advantageEps?: number;
}

/** A group's lines: its episodes' total rewards normalised within the group (GRPO), broadcast to their steps. */
export function groupLines(
  group: readonly Episode<LlmStepRecord>[],
  g: number,
  opts: TrainerExportOptions & { extra?: Record<string, unknown> },
): Record<string, unknown>[] {
  const advantages = groupAdvantages(
    group.map((e) => e.totalReward),
    opts.advantageEps,
  );
  const extra = opts.extra ?? {};
  return group.flatMap((e, rollout): Record<string, unknown>[] => {
    const advantage = advantages[rollout];
    if ((opts.format ?? "steps") === "trajectories") {
      return [
        {
          env: opts.env,
          task: e.task,
          group: g,
          rollout,
          total_reward: e.totalReward,
          success: e.success,
          advantage,
          steps: e.steps.map((s) => ({
            prompt: s.record.messages,
            completion: s.record.completion,
            action: s.action,
            reward: s.reward,
            observation: s.observation,
            ...(s.failed ? { failed: s.failed } : {}),
          })),
          ...extra,
        },
      ];
    }
    return e.steps.map((s, step) => ({
      env: opts.env,
      task_id: e.task.id,
      group: g,
      rollout,
      step,
      prompt: s.record.messages,
      completion: s.record.completion,
      action: s.action,
      reward: s.reward,
      advantage,
      episode_reward: e.totalReward,
      episode_steps: e.steps.length,
      success: e.success,
      ...(s.failed ? { failed: s.failed } : {}),
      ...extra,
    }));
  });
}

/**
 * Writes LLM rollouts for an external trainer as JSONL (see `groupLines`): each group is the
 * episodes of one task. The file is written whole, then renamed into place, so a failed export
 * leaves any old file as it was.
 */
export function exportForTrainer(
  groups: readonly (readonly Episode<LlmStepRecord>[])[],
  file: string,
  opts: TrainerExportOptions,
): { groups: number; episodes: number; steps: number; lines: number } {
  let episodes = 0;
  let steps = 0;
  let lines = 0;
  writeJsonlAtomic(file, (out) => {
    groups.forEach((group, g) => {
      const rows = groupLines(group, g, opts);
      out.write(...rows);
      lines += rows.length;
      episodes += group.length;
      steps += group.reduce((n, e) => n + e.steps.length, 0);
    });
  });
  return { groups: groups.length, episodes, steps, lines };
}
