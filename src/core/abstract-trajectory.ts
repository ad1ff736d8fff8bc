import type { StateAbstraction } from "./state-abstraction.ts";
import type { Trajectory } from "./types.ts";

/** A real trajectory with its observations turned into abstract states (for seeding a buffer the synthetic env reads). */
export function abstractTrajectory(t: Trajectory, abstraction: StateAbstraction): Trajectory {
  return {
    ...t,
    steps: t.steps.map((s, i) => ({
      ...s,
      // A step's observation is the one before's next observation: abstracted with that step's info
      // (an env whose text alone does not make the state: its info lists the admissible commands).
      observation:
        i > 0 && t.steps[i - 1].next_observation === s.observation
          ? abstraction.abstract(s.observation, t.steps[i - 1].info)
          : abstraction.abstract(s.observation),
      next_observation: abstraction.abstract(s.next_observation, s.info),
    })),
  };
}
