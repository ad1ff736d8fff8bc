// The import thread's own side (see importers.ts): content ids, vectors and text keys of the batch
// after the one the main thread writes. It loads neither SQLite nor the envs, so it is up quickly.
import { serveRequests } from "../core/request-thread.ts";
import { HashingEmbedder } from "./hashing-embedder.ts";
import type { ImportThreadRequest } from "./importers.ts";
import { type PreparedVectors, prepareVectors, RecentTexts } from "./import-vectors.ts";

let embedder: HashingEmbedder | undefined;
/** The embedder came unfitted for a new buffer: the next batch, its first, fits it. */
let fitNext = false;
const recent = new RecentTexts();

function answer(req: ImportThreadRequest): PreparedVectors | { up: true } | null {
  if (req.embedder) {
    embedder = new HashingEmbedder(req.embedder);
    fitNext = req.embedder.fit === true;
  }
  if (!req.trajectories) return { up: true };
  if (!embedder) return null;
  const fit = fitNext;
  fitNext = false;
  // Until a fit has been made, there is no embedder for the batches after it: if it fails, they are
  // answered null (done by the caller) rather than made with the unfitted one.
  const unfitted = embedder;
  if (fit) embedder = undefined;
  const r = prepareVectors(req.trajectories, unfitted, recent, fit);
  embedder = r.embedder;
  return r.vectors;
}

serveRequests(answer);
