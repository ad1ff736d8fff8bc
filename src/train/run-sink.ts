import type { AuditPair } from "../experience/index.ts";
import type { IterationMetrics } from "./config.ts";

/** Counters a run carries across iterations and resumes. */
export interface RunState {
  iteration: number;
  /** LLM tokens so far, across resumes. */
  tokens?: number;
  realInteractions: number;
  evalInteractions: number;
  syntheticInteractions: number;
  /** Real env steps of on-policy audits (absent in checkpoints of runs from before the audit). */
  auditInteractions?: number;
  droppedEpisodes: number;
  episodes: number;
  wallSeconds: number;
}

export const NEW_RUN: RunState = Object.freeze({
  iteration: 0,
  realInteractions: 0,
  evalInteractions: 0,
  syntheticInteractions: 0,
  auditInteractions: 0,
  droppedEpisodes: 0,
  episodes: 0,
  wallSeconds: 0,
});

/**
 * Where a training loop puts what it makes: metrics lines, checkpoints, audited episodes. The run
 * folder is one (`RunFolder`); `MemorySink` keeps them in memory, for library users and tests.
 */
export interface RunSink {
  /** Where the run is kept, for messages. */
  readonly where: string;
  /** The policy label of one iteration's synthetic episodes in the buffer (a resume finds them by it). */
  episodeLabel(iteration: number): string;
  appendMetrics(m: IterationMetrics): void;
  writeAuditPairs(iteration: number, pairs: readonly AuditPair[]): void;
  /** `trimmed`: false for a checkpoint off schedule, whose buffer was not trimmed. */
  saveCheckpoint(policy: Uint8Array, state: RunState, curriculum: unknown, trimmed?: boolean): void;
  /** The iteration of the last checkpoint (0: none). */
  lastCheckpoint(): number;
}

/** A sink that keeps everything in memory. */
export class MemorySink implements RunSink {
  readonly where = "the in-memory run";
  readonly metrics: IterationMetrics[] = [];
  readonly audits = new Map<number, readonly AuditPair[]>();
  checkpoint?: { policy: Uint8Array; state: RunState; curriculum: unknown; trimmed: boolean };

  constructor(private readonly runId = "memory") {}

  episodeLabel(iteration: number): string {
    return `neural@${this.runId}#${iteration}`;
  }
  appendMetrics(m: IterationMetrics): void {
    this.metrics.push(m);
  }
  writeAuditPairs(iteration: number, pairs: readonly AuditPair[]): void {
    this.audits.set(iteration, pairs);
  }
  saveCheckpoint(policy: Uint8Array, state: RunState, curriculum: unknown, trimmed = true): void {
    this.checkpoint = { policy, state: { ...state }, curriculum: structuredClone(curriculum), trimmed };
  }
  lastCheckpoint(): number {
    return this.checkpoint?.state.iteration ?? 0;
  }
}
