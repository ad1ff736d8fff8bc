import type { ExperienceSource, StepInfo, Task } from "../core/index.ts";
import type { Embedder } from "./embedder.ts";

/** The fields every stored step has. */
export interface StepFields {
  step: number;
  env: string;
  state: string;
  action: string;
  reward: number;
  nextState: string;
  terminated: boolean;
  truncated: boolean;
  reasoning?: string;
  info?: StepInfo;
  source: ExperienceSource;
  policy?: string;
}

/** A stored transition, as `get` and `search` return it. */
export interface StoredTransition extends StepFields {
  id: number;
  /** The trajectory's uid (its content id, or the id given by `appendTransitions`). */
  trajectory: string;
  task: { id: string; instruction: string };
  createdAt: string;
}

/** One step appended online (e.g. a synthetic step as it happens). */
export interface TransitionRecord extends StepFields {
  /** Groups steps into a trajectory; steps of one id must have distinct `step` numbers. */
  trajectoryId: string;
  task: Task;
  createdAt?: string;
}

/** A step announced to the buffer (`ReplayBuffer.announceStep`): it comes with `append`, or `cancel` says it will not (exactly one of them, once). */
export interface AnnouncedStep {
  append(records: TransitionRecord[]): Promise<number[]>;
  cancel(): void;
}

export interface SearchFilter {
  env?: string;
  source?: ExperienceSource;
  /** Task id. */
  task?: string;
  /** Exactly this action (e.g. transitions that clicked the same thing, from any state). */
  action?: string;
}

export interface SearchOptions {
  /** How many results. @default 5 */
  k?: number;
  filter?: SearchFilter;
  /** Use exact search even when the ANN index is active. @default false */
  exact?: boolean;
  /** Collapse results with the same (state, action) to the best one. @default true */
  distinct?: boolean;
}

export interface SearchResult {
  score: number;
  transition: StoredTransition;
}

export interface BufferGroupStats {
  env: string;
  source: ExperienceSource;
  trajectories: number;
  transitions: number;
  successes: number;
  meanReward: number;
  /** Trajectories by total reward: 0, between 0 and 1, 1 or more. */
  rewardZero: number;
  rewardPartial: number;
  rewardFull: number;
}

export interface BufferStats {
  path: string;
  trajectories: number;
  transitions: number;
  seedTrajectories: number;
  embedder: string | null;
  dims: number | null;
  capacity: number | null;
  index: "exact" | "ann";
  fileBytes: number;
  groups: BufferGroupStats[];
}

export interface ReplayBufferOptions {
  /** The embedder for new vectors and queries. Default: the stored one, else a new HashingEmbedder. */
  embedder?: Embedder;
  /** Most transitions to keep; older non-seed trajectories are evicted first. @default unlimited */
  capacity?: number;
  /** Above this many transitions, searches use an HNSW index. @default 250000 */
  annThreshold?: number;
  /** Open read-only (stats, export, search; no appends). @default false */
  readonly?: boolean;
  /** fsync every commit (survives power loss, not only process death). @default false */
  durable?: boolean;
  /** Wait this long for a lock held by another process. @default 5000 */
  busyTimeoutMs?: number;
  /**
   * Run `searchVectorAsync`'s searches of real transitions on a worker thread (a second core), with
   * the same results. For a synthetic env's retrieval, which asks about the offline data step after
   * step while the policy acts. @default false
   */
  searchThread?: boolean;
}

export interface AppendOptions {
  /** Marks the trajectories as the offline seed, which eviction never removes. @default false */
  seed?: boolean;
}

export interface AppendResult {
  added: number;
  duplicates: number;
  transitions: number;
  evicted: number;
}

/**
 * The default embedder's settings, for a thread that makes a buffer's vectors: its dimensions and
 * IDF; `fit`: the buffer is new and fits its IDF on its first batch, so the thread fits it there too.
 */
export interface ThreadEmbedder {
  dims: number;
  idf?: Float32Array;
  fit?: boolean;
}
