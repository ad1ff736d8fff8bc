import type { StateAbstraction, Trajectory } from "../core/index.ts";

/** A real trajectory with its observations turned into abstract states (for seeding a buffer the synthetic env reads). */
export function abstractTrajectory(t: Trajectory, abstraction: StateAbstraction): Trajectory {
  return {
    ...t,
    steps: t.steps.map((s) => ({
      ...s,
      observation: abstraction.abstract(s.observation),
      next_observation: abstraction.abstract(s.next_observation, s.info),
    })),
  };
}
