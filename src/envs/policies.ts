import { FREE_TEXT_SLOT, InvalidConfigError, Rng, ScriptedPolicy, type ActionSource, type PolicyInput } from "../core/index.ts";

/**
 * Uniform over the listed actions (else over `candidates` of the state, for a free-text env); a
 * free-text slot is filled with the task instruction.
 */
export class RandomPolicy extends ScriptedPolicy {
  readonly name = "random";
  private rng: Rng;
  constructor(
    seed = 0,
    private readonly candidates?: ActionSource,
  ) {
    super();
    this.rng = new Rng(seed);
  }
  // Its own stream, seeded once: collected data does not depend on how episodes are scheduled.
  choose({ actions, task, observation }: PolicyInput): string {
    const pool = actions ?? this.candidates?.(observation, task);
    if (!pool || pool.length === 0)
      throw new InvalidConfigError("the random policy needs an env that lists its actions, or candidate actions (the env spec's candidateActions)");
    return this.rng.choice(pool).replace(FREE_TEXT_SLOT, task.instruction);
  }
}
