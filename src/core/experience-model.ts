import type { ExperienceSource, StepInfo, Task, Trajectory } from "./types.ts";

/** A step of the episode so far, in abstract states. */
export interface HistoryStep {
  state: string;
  action: string;
  nextState: string;
  reward: number;
}

/** A similar recorded transition that grounds a prediction (abstract states). */
export interface Demo {
  state: string;
  action: string;
  nextState: string;
  reward: number;
  terminated: boolean;
  task: { id: string; instruction: string };
  source: ExperienceSource;
  /** Cosine similarity of its (state, action) to the query's. */
  score: number;
  /** Retrieved only to tell how well real data backs the step (`realAnchor`): not a demo to predict from or show. */
  anchor?: boolean;
}

export interface PredictInput {
  task: Task;
  history: HistoryStep[];
  state: string;
  action: string;
  demos: Demo[];
}

export interface Prediction {
  reasoning?: string;
  nextState: string;
  reward: number;
  terminated: boolean;
  /**
   * `info.failed` says why the model could not give a valid step (the step is then a no-op, never
   * stored). `info.u`, when the model can tell, is its uncertainty about this step in [0, 1] (0: sure),
   * what pessimism reads (see `SyntheticEnvOptions.pessimism`).
   */
  info: StepInfo & { failed?: string; u?: number };
}

/** DreamGym's experience model M_exp: plays the environment in abstract states. */
export interface ExperienceModel {
  readonly id: string;
  predict(input: PredictInput): Promise<Prediction>;
  /** Whether, in this state, the model reads only exact recorded steps (then retrieval looks them up instead of searching by similarity). */
  exactDemos?(state: string): boolean;
  /**
   * Where, in this state, it predicts from the demos of this very action alone once one of them is at
   * least this similar (and reads the others only where none is): retrieval then searches the steps of
   * this action first, and every recorded step by similarity only where they fall short (the
   * embedded and learned models: that search of all steps was nine in ten of a run's search work).
   * Undefined: it reads every demo.
   */
  sameActionFirst?(state: string): number | undefined;
  /** Whether it reads the retrieved demos; false: the synthetic env retrieves none (a model that learned its own tables). @default true */
  readonly usesDemos?: boolean;
  /** Whether it reads the real anchor among the demos (`DemoOptions.realAnchor`: how well real data backs the step); false spares a search per step. @default true */
  readonly readsAnchor?: boolean;
  /**
   * It reads only its first n demos, by score (the reasoning model's prompt): where retrieval fetches
   * at least n by an exact search, the steps of the action's own search would come after them, and
   * that search is left out (`DemoOptions.readsFirst`). Undefined: it reads every demo.
   */
  readonly readsTopDemos?: number;
  /** Whether its demos are only real recorded steps (`DemoOptions.realOnly`). @default false */
  readonly realDemosOnly?: boolean;
  /**
   * Whether it runs in this process, with no endpoint or outside limit to spare (the embedded and learned
   * models): a synthetic pool over it plays at least 128 episodes at once, whatever `concurrency` says.
   * @default false
   */
  readonly inProcess?: boolean;
  /**
   * Told of a step before its demos are retrieved (then `predict` is asked about it): a model may start
   * on what it reads without them (the learned model sends the step to its estimate thread, so that it
   * is worked out while the search runs). Changes nothing that `predict` gives.
   */
  prepare?(input: Omit<PredictInput, "demos">): void;
  /** Learns from the buffer's offline transitions before its first prediction (a model with tables of its own; once per buffer). */
  fit?(buffer: TrajectoryStore): Promise<void>;
  /**
   * Learns, during training, from real trajectories the run paid for (the on-policy audit's replays
   * of the policy's own episodes: Dyna's model learning); the same model, trajectories and seed give
   * the same model, so a resumed run refits again from the audits it kept.
   */
  refit?(trajectories: readonly Trajectory[], seed: number): void;
  /**
   * What the refits so far changed (with `loadRefitState`), for a run's checkpoint: a resumed run
   * loads it rather than refitting again from every audit it kept, and goes on as the same model.
   */
  refitState?(): Uint8Array;
  /** The state `refitState` gave, of this same model (its file); anything else is an `InvalidConfigError` naming `source`. */
  loadRefitState?(bytes: Uint8Array, source: string): void;
}

/**
 * What `ExperienceModel.fit` reads of a replay buffer (the `ReplayBuffer` is one): its stored
 * trajectories by env and source. Declared here so that a model can live beside its env, below the buffer.
 */
export interface TrajectoryStore {
  trajectories(filter?: { env?: string; source?: ExperienceSource }): Iterable<Trajectory>;
}
