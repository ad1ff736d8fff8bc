import type { StateAbstraction } from "./state-abstraction.ts";
import type { Trajectory } from "./types.ts";

/** A real trajectory with its observations turned into abstract states (for seeding a buffer the synthetic env reads). */
export function abstractTrajectory(t: Trajectory, abstraction: StateAbstraction): Trajectory {
  let prevNext = ""; // the previous step's abstract next state
  return {
    ...t,
    steps: t.steps.map((s, i) => {
      // A step's observation is the one before's next observation: abstracted with that step's info
      // (an env whose text alone does not make the state: its info lists the admissible commands),
      // which is that step's abstract next state, already made.
      const observation = i > 0 && t.steps[i - 1].next_observation === s.observation ? prevNext : abstraction.abstract(s.observation);
      prevNext = abstraction.abstract(s.next_observation, s.info);
      return { ...s, observation, next_observation: prevNext };
    }),
  };
}
