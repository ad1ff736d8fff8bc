// The estimate thread's own side (see `LearnedExperienceModel.startEstimateThread`): the model's
// ensemble, made from the model's bytes, answering estimates of the members' generation it holds.
import { workerData } from "node:worker_threads";
import { serveRequests } from "../core/index.ts";
import type { HistoryStep } from "../core/index.ts";
import { Ensemble, type Estimate, type EstimateInput, type EstimateRequest, type EstimateThreadControl, type EstimateThreadData } from "./ensemble.ts";

const data = workerData as EstimateThreadData;
// The envs (every one, with its packages) load only where the model's env has policy features to read:
// a run's first estimates wait for this thread to be up.
const features = data.featuresOf === undefined ? undefined : (await import("../envs/index.ts")).plugPoint(data.featuresOf, "features");
let ensemble = Ensemble.read(data.model, "the estimate thread's model", data.rewards, features);
let generation = data.generation;

// The caller's texts and tasks by number, as its requests send them (`EstimateRequest`).
let epoch = -1;
let texts: string[] = [];
let tasks = new Map<number, EstimateInput["task"]>();

/** The step a request names; undefined where this table lacks a text or the task (a request lost on its way): the caller then works it out. */
function stepOf(q: EstimateRequest): EstimateInput | undefined {
  if (q.epoch !== epoch) {
    epoch = q.epoch;
    texts = [];
    tasks = new Map();
  }
  if (q.base !== texts.length) return undefined;
  for (const t of q.texts) texts.push(t);
  if (q.taskObject) tasks.set(q.task, q.taskObject);
  const task = tasks.get(q.task);
  const history: HistoryStep[] = [];
  for (let i = 0; i < q.history.length; i += 4)
    history.push({ state: texts[q.history[i]], action: texts[q.history[i + 1]], nextState: texts[q.history[i + 2]], reward: q.history[i + 3] });
  const [state, action] = [texts[q.state], texts[q.action]];
  if (!task || state === undefined || action === undefined || history.some((h) => h.state === undefined || h.action === undefined || h.nextState === undefined))
    return undefined;
  return { task, history, state, action };
}

serveRequests(
  (q: EstimateRequest): Estimate | null => {
    const step = stepOf(q); // its texts are kept whatever the generation
    return step && q.generation === generation ? ensemble.estimate(step) : null;
  },
  (m) => {
    const c = m as EstimateThreadControl;
    ensemble = Ensemble.read(c.model, "the estimate thread's model", data.rewards, features);
    generation = c.generation;
  },
);
