import { InvalidConfigError } from "../core/index.ts";
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

/** MemorySink's default: the audited iterations whose episodes it keeps. */
const AUDITS_KEPT = 100;

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
  /**
   * `trimmed`: false for a checkpoint off schedule, whose buffer was not trimmed. `refitState`: the
   * experience model's, where a refit changed it since it was last taken (a sink takes it when it keeps one).
   */
  saveCheckpoint(policy: Uint8Array, state: RunState, curriculum: unknown, trimmed?: boolean, refitState?: () => Uint8Array | undefined): void;
  /** The iteration of the last checkpoint (0: none). */
  lastCheckpoint(): number;
}

/**
 * A sink that keeps the run in memory: every metrics line, the last checkpoint, and the episodes of the
 * latest on-policy audits (`audits`, by iteration). An audit's episodes weigh ~200 KB (WebShop's: 190 KB
 * parsed, for 16 pairs), so only the `auditsKept` latest audited iterations are kept, the older ones
 * dropped as new ones come (default 100, ~20 MB; `Infinity`: all, growing with the run; 0: none). Their figures stay in
 * `metrics` (`onPolicyAudit`).
 */
export class MemorySink implements RunSink {
  readonly where = "the in-memory run";
  readonly metrics: IterationMetrics[] = [];
  /** The latest `auditsKept` audits' episodes, by iteration. */
  readonly audits = new Map<number, readonly AuditPair[]>();
  checkpoint?: { policy: Uint8Array; state: RunState; curriculum: unknown; trimmed: boolean; refitState?: Uint8Array };
  readonly auditsKept: number;

  constructor(
    private readonly runId = "memory",
    o: { auditsKept?: number } = {},
  ) {
    const kept = o.auditsKept ?? AUDITS_KEPT;
    if (!(kept === Infinity || (Number.isInteger(kept) && kept >= 0)))
      throw new InvalidConfigError(`MemorySink's auditsKept must be an integer ≥ 0 or Infinity, got ${kept}`);
    this.auditsKept = kept;
  }

  episodeLabel(iteration: number): string {
    return `neural@${this.runId}#${iteration}`;
  }
  appendMetrics(m: IterationMetrics): void {
    this.metrics.push(m);
  }
  writeAuditPairs(iteration: number, pairs: readonly AuditPair[]): void {
    this.audits.set(iteration, pairs);
    // The lowest iteration goes, whatever order they came in.
    while (this.audits.size > this.auditsKept) {
      let oldest = Infinity;
      for (const i of this.audits.keys()) oldest = Math.min(oldest, i);
      this.audits.delete(oldest);
    }
  }
  saveCheckpoint(policy: Uint8Array, state: RunState, curriculum: unknown, trimmed = true, refitState?: () => Uint8Array | undefined): void {
    const kept = refitState?.() ?? this.checkpoint?.refitState;
    this.checkpoint = { policy, state: { ...state }, curriculum: structuredClone(curriculum), trimmed, ...(kept ? { refitState: kept } : {}) };
  }
  lastCheckpoint(): number {
    return this.checkpoint?.state.iteration ?? 0;
  }
}
