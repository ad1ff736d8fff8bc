// The estimate thread's own side (see `LearnedExperienceModel.startEstimateThread`): the model's
// ensemble, made from the model's bytes, answering estimates of the members' generation it holds.
import { workerData } from "node:worker_threads";
import { serveRequests } from "../core/index.ts";
import { Ensemble, type Estimate, type EstimateRequest, type EstimateThreadControl, type EstimateThreadData } from "./learned-model.ts";

const data = workerData as EstimateThreadData;
let ensemble = Ensemble.read(data.model, "the estimate thread's model", data.rewards);
let generation = data.generation;

serveRequests(
  (q: EstimateRequest): Estimate | null => (q.generation === generation ? ensemble.estimate(q.input) : null),
  (m) => {
    const c = m as EstimateThreadControl;
    ensemble = Ensemble.read(c.model, "the estimate thread's model", data.rewards);
    generation = c.generation;
  },
);
