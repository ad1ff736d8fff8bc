// The estimate thread's own side (see `LearnedExperienceModel.startEstimateThread`): the model's
// ensemble, made from the model's bytes, answering estimates of the members' generation it holds.
import { workerData } from "node:worker_threads";
import { type HistoryStep, serveRequests, type Task } from "../core/index.ts";
import { Ensemble, type Estimate, type EstimateRequest, type EstimateThreadControl, type EstimateThreadData } from "./learned-model.ts";

const data = workerData as EstimateThreadData;
let ensemble = Ensemble.read(data.model, "the estimate thread's model", data.rewards);
let generation = data.generation;

/** The texts and tasks of the requests so far, by their numbers (see `EstimateRequest`). */
let texts: string[] = [];
let tasks = new Map<number, Task>();
let epoch = -1;

function answer(q: EstimateRequest): Estimate | null {
  if (q.texts.epoch !== epoch) {
    texts = [];
    tasks = new Map();
    epoch = q.texts.epoch;
  }
  // Out of step (a request lost on the way): the caller works these out itself.
  if (q.texts.from !== texts.length) return null;
  for (const t of q.texts.add) texts.push(t);
  if (q.taskValue) tasks.set(q.task, q.taskValue);
  const task = tasks.get(q.task);
  if (q.generation !== generation || !task) return null;
  const history: HistoryStep[] = [];
  const h = q.history;
  for (let i = 0; i < h.length; i += 4) history.push({ state: texts[h[i]], action: texts[h[i + 1]], nextState: texts[h[i + 2]], reward: h[i + 3] });
  return ensemble.estimate({ task, history, state: texts[q.state], action: texts[q.action] });
}

serveRequests(answer, (m) => {
  const c = m as EstimateThreadControl;
  ensemble = Ensemble.read(c.model, "the estimate thread's model", data.rewards);
  generation = c.generation;
});
