import { RequestThread } from "../core/index.ts";
import type { SparseVector } from "../core/index.ts";
import type { NeuralPolicy, NeuralStepRecord } from "./neural-policy.ts";

/** What the reference thread is started with: the frozen policy's bytes (`NeuralPolicy.save`) and shape. */
export interface ReferenceThreadData {
  policy: Uint8Array;
  dim: number;
  hidden: number;
}

/**
 * An update's step records packed into a few flat arrays, for the thread: each record's candidate
 * count and choice, each candidate's number of features, and the features one after another (a
 * record holds a typed array per candidate, a million a run, and copying each costs more than the work).
 */
export interface PackedRecords {
  candidates: Int32Array;
  choices: Int32Array;
  lengths: Int32Array;
  idx: Int32Array;
  val: Float32Array;
}

/** The records packed, or null where a candidate's features are not the typed arrays the packing keeps exactly. */
export function packRecords(records: readonly NeuralStepRecord[]): PackedRecords | null {
  let nc = 0;
  let nv = 0;
  for (const r of records)
    for (const c of r.features.candidates) {
      if (!(c.idx instanceof Int32Array && c.val instanceof Float32Array)) return null;
      nc++;
      nv += c.idx.length;
    }
  const p: PackedRecords = {
    candidates: new Int32Array(records.length),
    choices: new Int32Array(records.length),
    lengths: new Int32Array(nc),
    idx: new Int32Array(nv),
    val: new Float32Array(nv),
  };
  let c = 0;
  let v = 0;
  records.forEach((r, i) => {
    p.candidates[i] = r.features.candidates.length;
    p.choices[i] = r.choice;
    for (const x of r.features.candidates) {
      p.lengths[c++] = x.idx.length;
      p.idx.set(x.idx, v);
      p.val.set(x.val, v);
      v += x.idx.length;
    }
  });
  return p;
}

const NO_FEATURES: SparseVector = { idx: new Int32Array(0), val: new Float32Array(0) };

/** The records again, each candidate a view of the packed features; without state features (`chosenLogProbs` reads none). */
export function unpackRecords(p: PackedRecords): NeuralStepRecord[] {
  const out: NeuralStepRecord[] = [];
  let c = 0;
  let v = 0;
  for (let i = 0; i < p.candidates.length; i++) {
    const candidates: SparseVector[] = [];
    for (let k = 0; k < p.candidates[i]; k++) {
      const n = p.lengths[c++];
      candidates.push({ idx: p.idx.subarray(v, v + n), val: p.val.subarray(v, v + n) });
      v += n;
    }
    out.push({ features: { candidates, actions: [], state: NO_FEATURES }, choice: p.choices[i] });
  }
  return out;
}

/**
 * GRPO's frozen reference on a worker thread: the log-probabilities of an update's steps under it
 * (`chosenLogProbs`), worked out from the moment the rollouts end while this thread writes the
 * episodes to the buffer and updates the curriculum (a DreamGym run's KL term read ~0.3 s of 20k
 * steps here). The thread holds a copy of the policy made from its bytes: the same numbers.
 */
export class ReferenceThread {
  private readonly thread: RequestThread<PackedRecords, Float64Array>;

  constructor(reference: NeuralPolicy) {
    this.thread = new RequestThread(new URL("./reference-thread", import.meta.url), {
      policy: reference.save(),
      dim: reference.dim,
      hidden: reference.hidden,
    } satisfies ReferenceThreadData);
  }

  /** Resolves true once the thread is up, false if it stops before. */
  get ready(): Promise<boolean> {
    return this.thread.ready;
  }

  /** The records' log-probabilities, or null where the thread is not up or cannot answer (the caller then scores them itself). */
  logProbs(records: readonly NeuralStepRecord[]): Promise<Float64Array | null> {
    const packed = this.thread.up && records.length > 0 ? packRecords(records) : null;
    if (!packed) return Promise.resolve(null);
    const asked = this.thread.request(packed);
    this.thread.flush();
    return asked;
  }

  close(): void {
    this.thread.close();
  }
}
