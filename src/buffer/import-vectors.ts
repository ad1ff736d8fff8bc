import type { Trajectory } from "../core/types.ts";
import { encodeHalf } from "./float16.ts";
import { type HashingEmbedder, IDF_FIT_MIN_TRANSITIONS } from "./hashing-embedder.ts";
import { textKey } from "./text-key.ts";
import { transitionText } from "./transition-text.ts";
import { trajectoryContentId } from "./trajectory-schema.ts";

/**
 * What the import thread works out for a batch of trajectories, as the buffer would: each one's
 * content id, and for the steps of the first of each content id in the batch their vectors as
 * stored (f16) by the embedder `embedderId`, and the keys of their texts (`textKey`).
 */
export interface PreparedVectors {
  uids: string[];
  /** Per trajectory, the row of its first step in `half` and `keys`; -1 for a repeat within the batch. */
  firstRow: Int32Array;
  half: Uint8Array;
  /** Per row, the keys of the instruction, the state and the next state; -1 where not worked out (`RecentTexts`). */
  keys: BigInt64Array;
  embedderId: string;
  /** The IDF fitted on this batch, as a new buffer fits it on its first (`prepareVectors`'s `fit`). */
  idf?: Float32Array;
}

/**
 * The texts met lately, kept as the buffer keeps the ids of its last texts (up to 20,000, then
 * forgotten at once): a text met lately is likely still known to the buffer, which then needs no
 * key for it. Where it does, it works the key out itself.
 */
export class RecentTexts {
  private texts = new Set<string>();
  /** The text's key, or -1 if it was met lately. */
  key(text: string): bigint {
    if (this.texts.has(text)) return -1n;
    if (this.texts.size >= 20_000) this.texts = new Set();
    this.texts.add(text);
    return textKey(text);
  }
}

/**
 * The batch's vectors by `embedder`; with `fit`, by `embedder` fitted on this batch's steps (those of
 * the first of each content id) if there are enough, as a new buffer fits its first batch: the
 * embedder that made them is returned beside them, for the batches after.
 */
export function prepareVectors(
  trajectories: Trajectory[],
  embedder: HashingEmbedder,
  recent = new RecentTexts(),
  fit = false,
): { vectors: PreparedVectors; embedder: HashingEmbedder } {
  const uids = trajectories.map(trajectoryContentId);
  const firstRow = new Int32Array(trajectories.length);
  const seen = new Set<string>();
  let rows = 0;
  trajectories.forEach((t, i) => {
    if (seen.has(uids[i])) firstRow[i] = -1;
    else {
      seen.add(uids[i]);
      firstRow[i] = rows;
      rows += t.steps.length;
    }
  });
  let fitted: Float32Array | undefined;
  if (fit && rows >= IDF_FIT_MIN_TRANSITIONS) {
    const firsts = trajectories.filter((_, i) => firstRow[i] >= 0);
    embedder = embedder.fit(firsts.flatMap((t) => t.steps.map((s) => transitionText(s.observation, s.action))));
    fitted = embedder.idf!;
  }
  const bytes = embedder.dims * 2;
  const half = new Uint8Array(rows * bytes);
  const keys = new BigInt64Array(rows * 3);
  trajectories.forEach((t, i) => {
    const first = firstRow[i];
    if (first < 0) return;
    const instruction = recent.key(t.task.instruction);
    let prevNext: string | undefined;
    let prevNextKey = 0n;
    t.steps.forEach((s, j) => {
      const row = first + j;
      half.set(encodeHalf(embedder.embedPair(s.observation, s.action)), row * bytes);
      keys[3 * row] = instruction;
      keys[3 * row + 1] = s.observation === prevNext ? prevNextKey : recent.key(s.observation);
      keys[3 * row + 2] = prevNextKey = recent.key(s.next_observation);
      prevNext = s.next_observation;
    });
  });
  return { vectors: { uids, firstRow, half, keys, embedderId: embedder.id, ...(fitted && { idf: fitted }) }, embedder };
}
