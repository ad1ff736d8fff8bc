import { Rng, type Env, type Task } from "../core/index.ts";
import { deriveSeed, playEpisodes } from "../core/index.ts";
import { grpoConfigSchema, grpoUpdate, type GrpoConfig } from "./grpo.ts";
import { NeuralPolicy } from "./neural-policy.ts";
import { ppoConfigSchema, ppoUpdate, type PpoConfig } from "./ppo.ts";

export interface ToyRun {
  /** Success of the sampled rollouts of the first iteration (before any update). */
  initialSuccess: number;
  /** Greedy success on the held-out tasks after each evaluated iteration. */
  evalSuccess: number[];
  /** Updates until greedy success first reached `target` (undefined: never). */
  updatesToTarget: number | undefined;
}

/**
 * A compact training loop over an env with a task list, for tests and examples: each iteration
 * rolls out `group` episodes of `tasksPerIteration` tasks, updates, evaluates greedily.
 */
export async function learnToy(opts: {
  env: Env & { tasks(count: number, seed?: number): Task[] };
  algo: "grpo" | "ppo";
  iterations: number;
  seed?: number;
  tasksPerIteration?: number;
  group?: number;
  target?: number;
  grpo?: Partial<GrpoConfig>;
  ppo?: Partial<PpoConfig>;
}): Promise<ToyRun> {
  const seed = opts.seed ?? 0;
  const group = opts.group ?? 8;
  const policy = new NeuralPolicy({ dim: 4096, hidden: 16, seed });
  const grpo = grpoConfigSchema.parse(opts.grpo ?? {});
  const ppo = ppoConfigSchema.parse(opts.ppo ?? {});
  const evalTasks = opts.env.tasks(50, 1_000_000 + seed);
  const run: ToyRun = { initialSuccess: 0, evalSuccess: [], updatesToTarget: undefined };
  for (let it = 1; it <= opts.iterations; it++) {
    const tasks = opts.env.tasks(opts.tasksPerIteration ?? 8, deriveSeed(seed, "tasks", it) % 1_000_000);
    const jobs = tasks.flatMap((task, t) => Array.from({ length: group }, (_, g) => ({ task, rngSeed: deriveSeed(seed, it, t, g) })));
    const episodes = await playEpisodes([opts.env], policy, jobs);
    if (it === 1) run.initialSuccess = episodes.filter((e) => e.success).length / episodes.length;
    const rng = new Rng(deriveSeed(seed, "update", it));
    if (opts.algo === "grpo") grpoUpdate(policy, undefined, tasks.map((_, t) => episodes.slice(t * group, (t + 1) * group)), grpo, rng);
    else ppoUpdate(policy, episodes, ppo, rng);
    const evals = await playEpisodes([opts.env], policy, evalTasks.map((task, i) => ({ task, rngSeed: i })), { greedy: true });
    const success = evals.filter((e) => e.success).length / evals.length;
    run.evalSuccess.push(success);
    if (run.updatesToTarget === undefined && success >= (opts.target ?? 0.9)) run.updatesToTarget = it;
  }
  return run;
}
