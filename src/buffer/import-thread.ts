// The import thread's own side (see importers.ts): content ids, vectors and text keys of the batch
// after the one the main thread writes. It loads neither SQLite nor the envs, so it is up quickly.
import { serveRequests } from "../core/request-thread.ts";
import { HashingEmbedder } from "./hashing-embedder.ts";
import type { ImportThreadRequest } from "./importers.ts";
import { type PreparedVectors, prepareVectors, RecentTexts } from "./import-vectors.ts";

let embedder: HashingEmbedder | undefined;
const recent = new RecentTexts();

function answer(req: ImportThreadRequest): PreparedVectors | { up: true } | null {
  if (req.embedder) embedder = new HashingEmbedder(req.embedder);
  if (!req.trajectories) return { up: true };
  return embedder ? prepareVectors(req.trajectories, embedder, recent) : null;
}

serveRequests(answer);
