import { FREE_TEXT_SLOT, InvalidConfigError, Rng, type ActionSource, type StepInfo, type Task } from "../core/index.ts";

/** What a scripted policy sees before it acts. */
export interface ActContext {
  observation: string;
  /** The env's listed actions, when it lists them. */
  actions: string[] | undefined;
  task: Task;
  /** The info of the last reset/step. */
  info: StepInfo;
}

/**
 * A policy that makes offline data or serves as a baseline: picks the next action. (The trainable
 * policies, with log-probabilities, build on this in `rl`.)
 */
export interface ActingPolicy {
  readonly name: string;
  /** Called at the start of every episode. */
  reset?(task: Task): void;
  act(ctx: ActContext): string | Promise<string>;
}

/**
 * Uniform over the listed actions (else over `candidates` of the state, for a free-text env); a
 * free-text slot is filled with the task instruction.
 */
export class RandomPolicy implements ActingPolicy {
  readonly name = "random";
  private rng: Rng;
  constructor(seed = 0, private readonly candidates?: ActionSource) {
    this.rng = new Rng(seed);
  }
  act({ actions, task, observation }: ActContext): string {
    const pool = actions ?? this.candidates?.(observation, task);
    if (!pool || pool.length === 0) throw new InvalidConfigError("the random policy needs an env that lists its actions, or candidate actions (the env spec's candidateActions)");
    return this.rng.choice(pool).replace(FREE_TEXT_SLOT, task.instruction);
  }
}
