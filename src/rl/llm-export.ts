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

/**
 * Writes LLM rollouts for an external trainer as JSONL: each group is the episodes of one task, and
 * each episode's total reward is normalised within its group (GRPO) and broadcast to its steps. The
 * file is written whole, then renamed into place, so a failed export leaves any old file as it was.
 */
export function exportForTrainer(
  groups: readonly (readonly Episode<LlmStepRecord>[])[], file: string, opts: TrainerExportOptions,
): { groups: number; episodes: number; steps: number; lines: number } {
  const format = opts.format ?? "steps";
  let episodes = 0;
  let steps = 0;
  let lines = 0;
  writeJsonlAtomic(file, (out) => {
    groups.forEach((group, g) => {
      const advantages = groupAdvantages(group.map((e) => e.totalReward), opts.advantageEps);
      group.forEach((e, rollout) => {
        const advantage = advantages[rollout];
        if (format === "trajectories") {
          out.write({
            env: opts.env, task: e.task, group: g, rollout, total_reward: e.totalReward, success: e.success, advantage,
            steps: e.steps.map((s) => ({
              prompt: s.record.messages, completion: s.record.completion, action: s.action, reward: s.reward, observation: s.observation,
              ...(s.failed ? { failed: s.failed } : {}),
            })),
          });
          lines++;
        } else {
          out.write(...e.steps.map((s, step) => ({
            env: opts.env, task_id: e.task.id, group: g, rollout, step, prompt: s.record.messages, completion: s.record.completion, action: s.action,
            reward: s.reward, advantage, episode_reward: e.totalReward, success: e.success, ...(s.failed ? { failed: s.failed } : {}),
          })));
          lines += e.steps.length;
        }
        episodes++;
        steps += e.steps.length;
      });
    });
  });
  return { groups: groups.length, episodes, steps, lines };
}
