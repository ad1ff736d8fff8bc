// The reference thread's own side (see `ReferenceThread`): the frozen policy, made from its bytes,
// scoring the packed records of an update.
import { workerData } from "node:worker_threads";
import { serveRequests } from "../core/index.ts";
import { NeuralPolicy } from "./neural-policy.ts";
import { type PackedRecords, type ReferenceThreadData, unpackRecords } from "./reference.ts";

const data = workerData as ReferenceThreadData;
const reference = NeuralPolicy.fromBytes(data.policy, "the reference thread's policy", { dim: data.dim, hidden: data.hidden });

serveRequests((p: PackedRecords): Float64Array => reference.chosenLogProbs(unpackRecords(p)));
