import type { Rng } from "./rng.ts";
import type { Task } from "./types.ts";

/** Varies tasks into new ones (the curriculum's generator). Generators filter out infeasible tasks themselves and say how many. */
export interface TaskGenerator {
  readonly name: string;
  generate(parent: Task, count: number, rng: Rng): Promise<{ tasks: Task[]; infeasible: number }>;
  /**
   * What makes two tasks the same, where the instruction does not (one sentence asked of many scenes:
   * the key is the scene and the task's targets). Without it, near-equal instructions (word Jaccard
   * ≥ 0.95) are duplicates.
   */
  key?(task: Task): string | undefined;
}
