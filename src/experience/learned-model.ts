import { createHash } from "node:crypto";
import { availableParallelism } from "node:os";
import {
  deriveSeed,
  InvalidConfigError,
  OUTCOME_REWARDS,
  RequestThread,
  Rng,
  type Demo,
  type ExperienceModel,
  type HistoryStep,
  type PredictInput,
  type Prediction,
  type PolicyFeatures,
  type RewardSpec,
  type StateAbstraction,
  type Trajectory,
  type TrajectoryStore,
} from "../core/index.ts";
import type { ReplayBuffer } from "../buffer/index.ts";
import { packParams, ScoreNet, unpackParams, viewAction, webView, type SparseVector } from "../rl/index.ts";
import { findEnv, plugPoint } from "../envs/index.ts";
import { keptDemos } from "./demos.ts";
import { EmbeddedExperienceModel } from "./embedded-model.ts";
import { RecordedSteps } from "./recorded-steps.ts";
import { isValTask } from "./sft-data.ts";
import { PurchaseSupport, purchaseKey, TRANSITION_FEATURE_VERSION, transitionFeatures } from "./transition-features.ts";
import {
  combine,
  Ensemble,
  FORMAT,
  HEADS,
  MAGIC,
  readModelFile,
  sigmoid,
  type Estimate,
  type EstimateInput,
  type EstimateRequest,
  type EstimateThreadControl,
  type EstimateThreadData,
  type LearnedModelInfo,
  type LearnedModelValidation,
  type ReturnRule,
} from "./ensemble.ts";

export { combine, UNSUPPORTED_TOP } from "./ensemble.ts";
export type { Estimate, EstimateInput, HeadOutputs, LearnedModelInfo, LearnedModelValidation, ReturnRule } from "./ensemble.ts";

/** A refit model's state (`refitState`): its members' parameters and Adam's moments. */
const REFIT_MAGIC = "DGEXPREFIT1\n";

/**
 * How hard a refit learns. The defaults were chosen on WebShop's dev split (data seeds 0 and 2, 240k
 * synthetic steps; return gap over the last quarter of audits, exploitation, dev score): without refit
 * +0.036 / +0.081; 2 passes at 0.01 on the latest audit, Adam's moments carried over, +0.007 / +0.023
 * (exploitation 0 / 1.4%, dev score as without); 4 passes from fresh moments each time let
 * exploitation reach 12.6%; 1 pass at 0.003 over every audit so far left +0.066 on seed 2
 * (docs/results.md).
 */
export interface RefitOptions {
  /** Passes over the sample. @default 2 */
  epochs?: number;
  /** Adam's learning rate. @default 0.01 */
  learningRate?: number;
}

export interface LearnedModelOptions {
  abstraction: StateAbstraction;
  /** @default the rewards the model was trained with */
  rewards?: RewardSpec;
}

/** Estimates kept at most (with the texts their keys number: see `memoKey`). */
const ESTIMATES_KEPT = 20_000;
/**
 * The learned experience model: an ensemble of small networks trained on the buffer's real
 * transitions ({@link trainLearnedModel}; `dreamgym model train`) that predicts whether a step ends
 * the episode and its reward, from features that relate the page to the instruction
 * (`transitionFeatures`), so it carries over to new instructions. The next state comes from the
 * embedded kNN model over the retrieved real demos (a copied and rewritten recorded page; with no usable
 * demo, the state is kept as it is rather than the step failing). The members' disagreement is `u`
 * (same scale as the embedded model's): `u_reward`, the standard deviation of the members' expected
 * rewards of the step (with outcome rewards: end probability × expected reward if it ends) over half
 * the reward range; `u_outcome`, twice the standard deviation of their end
 * probabilities; u is the larger. A purchase of a product no real training episode bought in full
 * for this request is never paid the top (`UNSUPPORTED_TOP`; `info.top` says so).
 */
export class LearnedExperienceModel implements ExperienceModel {
  readonly id = "learned-ensemble-v1";
  /** Its uncertainty is the members' disagreement, not the kNN model's grounding. */
  readonly readsAnchor = false;
  /**
   * Its next states are copied from real recorded steps only. A synthetic episode written back holds
   * pages this model copied (or told) itself, so reading them adds no evidence. Each step then
   * searches the offline rows, which do not change in a run (80k steps: 196 s → 129 s). On WebShop
   * (5 data seeds, 80k steps, std floor 0.1) the teach ratio went from 0.83 / 0.65 (median /
   * minimum) to 1.47 / 0.86 on dev, but on test from 1.00 / 0.36 to 0.80 / 0.12: within the runs'
   * noise, so kept for its cost (docs/results.md).
   */
  readonly realDemosOnly = true;
  /** No endpoint: a pool over it plays many episodes at once. */
  readonly inProcess = true;
  /** Whether it reads retrieved demos: not where its abstraction's states are made of parts (it replays its own table of recorded steps). */
  readonly usesDemos: boolean;
  readonly info: LearnedModelInfo;
  private readonly members: ScoreNet[][];
  private readonly knn: EmbeddedExperienceModel;
  private readonly abstraction: StateAbstraction;
  private readonly rewards: RewardSpec;
  private readonly h: Float64Array;
  private readonly returns: Map<string, string>;
  /** The members' estimates, worked out here (no memo: see `estimate`). */
  private readonly ensemble: Ensemble;
  /** The real recorded steps by command, where the abstraction's states are made of parts (`StateAbstraction.parts`). */
  private readonly recorded: RecordedSteps | undefined;

  constructor(info: LearnedModelInfo, members: ScoreNet[][], opts: LearnedModelOptions) {
    this.info = info;
    this.members = members;
    this.abstraction = opts.abstraction;
    this.rewards = opts.rewards ?? info.rewards;
    this.knn = new EmbeddedExperienceModel({ abstraction: opts.abstraction, rewards: this.rewards });
    this.h = new Float64Array(info.hidden);
    this.returns = new Map((info.returns ?? []).map((r) => [`${r.action}\t${r.from}`, r.to]));
    this.ensemble = new Ensemble(info, members, this.rewards, plugPoint(opts.abstraction.env, "features"));
    this.recorded = opts.abstraction.parts ? new RecordedSteps(opts.abstraction) : undefined;
    this.usesDemos = this.recorded === undefined;
  }

  exactDemos(state: string): boolean {
    return this.knn.exactDemos(state);
  }

  /** Its next state is the kNN model's, from the same demos (its heads read none). */
  sameActionFirst(state: string): number | undefined {
    return this.knn.sameActionFirst(state);
  }

  /** The ensemble's end probability, reward and uncertainty for one transition. */
  estimate(input: EstimateInput): Estimate {
    // A group's rollouts of one task repeat each other's steps (WebShop, 20k steps from BC: 59% of
    // the estimates were asked before, with the same history): the answer is kept, by everything it
    // reads, until the members change (`refit`).
    const memoKey = this.memoKey(input);
    return this.estimates.get(memoKey) ?? this.kept(memoKey, this.ensemble.estimate(input));
  }
  private kept(memoKey: string, e: Estimate): Estimate {
    this.estimates.set(memoKey, e);
    return e;
  }

  /**
   * `estimate`, with one not asked before worked out on the estimate thread where it runs
   * (`startEstimateThread`), while this thread goes on with other steps: the same estimate (the
   * thread's members are these members), and here where the thread cannot answer.
   */
  private estimateSoon(input: EstimateInput, memoKey = this.memoKey(input)): Estimate | Promise<Estimate> {
    const known = this.estimates.get(memoKey) ?? this.asked.get(memoKey);
    if (known) return known;
    // Worked out here until the thread is up (~0.1 s after it starts, as the run sets up): the same estimate, no wait.
    if (!this.thread?.up) return this.kept(memoKey, this.ensemble.estimate(input)); // the key made once
    // Asked once: a group's rollouts of a task reach the same step at about the same time. The
    // step goes as the numbers of its texts (the memo key's), each text sent the first time only: a
    // step's history repeats the episode's pages, ~7 KB a request in full (51 MB a 20k-step run).
    const { generation, memoEpoch, asked } = this;
    const step = { task: input.task, history: [...input.history], state: input.state, action: input.action };
    if (this.tasksHere.has(this.taskIds.get(input.task)!)) return this.kept(memoKey, this.ensemble.estimate(step));
    const request = this.numbered(step, generation);
    const e = this.thread.request(request).then((r) => {
      if (r === null) this.unanswered(request);
      const e = r ?? this.ensemble.estimate(step);
      asked.delete(memoKey);
      // Kept unless the memo was emptied meanwhile: its keys' text numbers may now mean other texts.
      return memoEpoch === this.memoEpoch ? this.kept(memoKey, e) : e;
    });
    asked.set(memoKey, e);
    return e;
  }
  /**
   * The request for a step whose memo key was just made: its texts and task by their numbers (`textIds`),
   * with the texts numbered since the last request and the task's object where the thread has not had them.
   */
  private numbered(input: EstimateInput, generation: number): EstimateRequest {
    const ids = this.textIds;
    const texts = this.textList.slice(this.textsSent);
    this.textsSent = this.textList.length;
    const task = this.taskIds.get(input.task)!;
    const history = new Float64Array(4 * input.history.length);
    input.history.forEach((h, i) => history.set([ids.get(h.state)!, ids.get(h.action)!, ids.get(h.nextState)!, h.reward], 4 * i));
    const newTask = this.tasksSent.has(task) ? undefined : input.task;
    this.tasksSent.add(task);
    return {
      generation,
      epoch: this.textEpoch,
      base: this.textsSent - texts.length,
      texts,
      task,
      taskObject: newTask,
      state: ids.get(input.state)!,
      action: ids.get(input.action)!,
      history,
    };
  }
  /** Estimates asked of the thread and not answered yet, by memo key. */
  private asked = new Map<string, Promise<Estimate>>();

  /** With the estimate thread, a step's estimate is asked for before its demos are retrieved (they are not read). */
  prepare(input: Omit<PredictInput, "demos">): void {
    // Its failure, if any, is `predict`'s to report (it asks again).
    if (!this.thread || this.recorded) return;
    // Its key is made here, and read back at `predict` (a step's history makes it long).
    const key = this.memoKey(input);
    this.prepared.set(input.history, {
      epoch: this.memoEpoch,
      steps: input.history.length,
      tail: input.history[input.history.length - 1],
      task: input.task,
      state: input.state,
      action: input.action,
      key,
    });
    Promise.resolve(this.estimateSoon(input, key)).catch(() => {});
  }

  /**
   * Works out estimates not asked before on a worker thread (a second core) from now on, while the
   * thread that plays the synthetic episodes goes on with other steps: a training run's DreamGym
   * iteration spent ~1.1 s of 8.4 on them (bench:train, 20k steps). Nothing where the machine has
   * one core. The thread gets the members as they are, and again after each `refit`. Until it is up
   * (~0.1 s: it loads the ensemble's modules, and the envs only for an env with policy features of its
   * own, whose estimates read them), estimates are worked out here; the
   * promise says when it is (true), or that it is not to be (false).
   */
  startEstimateThread(): Promise<boolean> {
    // The thread's registry has the built-in envs alone: another's features (the estimates read them) would be missing there.
    // A model that replays its own table of recorded steps (`recorded`) asks for its estimates as it replays.
    if (this.thread || this.recorded || availableParallelism() < 2 || findEnv(this.info.env)?.builtin !== true)
      return this.thread?.ready ?? Promise.resolve(false);
    this.sendTextsAgain(); // a thread started again has an empty table
    this.thread = new RequestThread(new URL("./estimate-thread", import.meta.url), {
      model: this.save(),
      rewards: this.rewards,
      generation: this.generation,
      featuresOf: this.ensemble.features ? this.info.env : undefined,
    } satisfies EstimateThreadData);
    return this.thread.ready;
  }

  /** Estimates the estimate thread worked out so far. */
  get estimatesOnThread(): number {
    return this.thread?.answered ?? 0;
  }

  /** Ends the estimate thread (estimates are worked out here again). */
  closeEstimateThread(): void {
    this.thread?.close();
    this.thread = undefined;
  }
  private thread: RequestThread<EstimateRequest, Estimate> | undefined;
  /** Bumped by each refit: the thread answers only for the members of the generation asked about. */
  private generation = 0;
  /** Bumped each time the memo is emptied (`forgetEstimates`). */
  private memoEpoch = 0;
  /** Empties the memo: estimates asked of the thread before now are not kept when they come. */
  private forgetEstimates(): void {
    this.estimates.clear();
    this.asked = new Map();
    this.memoEpoch++;
  }
  private readonly estimates = new Map<string, Estimate>();
  /** Numbers for the texts and tasks in memo keys (a text's hash is kept with it, so a page seen again costs no rescan). */
  private readonly textIds = new Map<string, number>();
  private taskIds = new WeakMap<object, number>();
  /** The texts by number, and how many of them the estimate thread has (it keeps them in this order). */
  private textList: string[] = [];
  private textsSent = 0;
  /** The task numbers whose objects the thread has; `textEpoch` counts the numberings (each empties the thread's table). */
  private tasksSent = new Set<number>();
  private textEpoch = 0;
  /** Tasks (by number) whose estimates are worked out here: a request with the task's object went unanswered (it may not copy). */
  private tasksHere = new Set<number>();
  /** Times the thread's table was started again in this numbering (`unanswered`), a few at most. */
  private resent = 0;
  /** Numbers the texts anew, from 0, with an empty memo: a kept key's numbers mean the texts they meant when it was made. */
  private renumber(): void {
    this.forgetEstimates();
    this.textIds.clear();
    this.taskIds = new WeakMap();
    this.textList = [];
    this.tasksHere = new Set();
    this.resent = 0;
    this.sendTextsAgain();
  }
  /** The thread's table starts again (a new epoch): the next request carries every text numbered so far. */
  private sendTextsAgain(): void {
    this.textsSent = 0;
    this.tasksSent = new Set();
    this.textEpoch++;
  }
  /**
   * A request of this numbering and these members went unanswered: its message may not have reached
   * the thread (a task that does not copy: its steps are then worked out here), and its texts with
   * it, so the requests after would name texts the thread lacks. Its table starts again, a few times at
   * most per numbering (each sends every text), then the thread answers nothing until the next one.
   */
  private unanswered(r: EstimateRequest): void {
    // A closed or stopped thread lost nothing a thread started later would need (it starts a new table).
    if (r.epoch !== this.textEpoch || r.generation !== this.generation || !this.thread?.running) return;
    if (r.taskObject !== undefined) this.tasksHere.add(r.task);
    if (this.resent >= 4) return;
    this.resent++;
    this.sendTextsAgain();
  }
  /**
   * The memo key `prepare` made for the step `predict` now asks about, taken (once): made again, it
   * would be the same (the same task, state and action, and the same history list at the same length,
   * its last step the same object; an episode only adds to its history, and the steps `prepare` was
   * told of must not change before `predict`). Undefined where the step is another.
   */
  private preparedKey(input: EstimateInput): string | undefined {
    const p = this.prepared.get(input.history);
    if (!p) return undefined;
    this.prepared.delete(input.history);
    const same =
      p.epoch === this.memoEpoch &&
      p.steps === input.history.length &&
      p.tail === input.history[input.history.length - 1] &&
      p.task === input.task &&
      p.state === input.state &&
      p.action === input.action;
    return same ? p.key : undefined;
  }
  /** The key `prepare` made for each episode's step, by its history (see `preparedKey`). */
  private readonly prepared = new WeakMap<
    readonly HistoryStep[],
    { epoch: number; steps: number; tail: HistoryStep | undefined; task: object; state: string; action: string; key: string }
  >();
  private memoKey(input: EstimateInput): string {
    if (this.estimates.size >= ESTIMATES_KEPT || this.textIds.size >= 4 * ESTIMATES_KEPT) this.renumber();
    const id = (text: string) => {
      let i = this.textIds.get(text);
      if (i === undefined) {
        this.textIds.set(text, (i = this.textIds.size));
        this.textList.push(text);
      }
      return i;
    };
    let task = this.taskIds.get(input.task);
    if (task === undefined) this.taskIds.set(input.task, (task = id(JSON.stringify(input.task))));
    let key = `${task}|${id(input.state)}|${id(input.action)}`;
    for (const h of input.history) key += `|${id(h.state)},${id(h.action)},${id(h.nextState)},${h.reward}`;
    return key;
  }

  /** Reads the store's real steps into its table, where its states are made of parts (once per store). */
  async fit(store: TrajectoryStore): Promise<void> {
    this.recorded?.fit(store);
  }

  async predict(input: PredictInput): Promise<Prediction> {
    if (this.recorded) return this.replay(input, this.recorded);
    const base = await this.knnPrediction(input);
    // A free-text command the buffer never saw in this state stays an invalid no-op (see the embedded model).
    if (base.info.invalid) return { ...base, info: { ...base.info } };
    const e = await this.estimateSoon(input, this.preparedKey(input));
    const failed = base.info.failed !== undefined;
    const back = returnTarget(this.returns, input);
    const nextState = back ?? (failed ? input.state : base.nextState);
    // In a free-text env the step is replayed from the real steps of this very command in this very
    // state; where they all paid the same and ended alike, so does the step (see `recordedOutcome`).
    const recorded = this.knn.exactDemos(input.state) ? recordedOutcome(exactSteps(input, this.abstraction)) : undefined;
    const terminated = recorded ? recorded.terminated || this.abstraction.isTerminal(nextState) : e.pEnd >= 0.5 || this.abstraction.isTerminal(nextState);
    const reward = recorded ? recorded.reward : terminated || this.rewards.dense ? e.reward : 0;
    const round = (x: number) => Math.round(x * 1e6) / 1e6;
    const { failed: _f, u: _u, u_reward: _r, u_outcome: _o, u_grounding: _g, ...knnInfo } = base.info;
    return {
      nextState,
      reward,
      terminated,
      info: {
        ...knnInfo,
        ...(failed ? { next_state: "unchanged (no usable demo)" } : {}),
        ...(back !== undefined ? { next_state: "an earlier page of this episode" } : {}),
        ...(recorded ? { outcome: "as every recorded step of this command in this state" } : {}),
        // What the data agrees on leaves nothing to be unsure of.
        u: recorded ? 0 : round(e.u),
        u_reward: recorded ? 0 : round(e.u_reward),
        u_outcome: recorded ? 0 : round(e.u_outcome),
        p_end: round(e.pEnd),
        p_success: round(e.pTop),
        ...(terminated && !recorded && !e.supported ? { top: "capped: no real episode bought this product for this request in full" } : {}),
      },
    };
  }

  /**
   * The kNN model's next state for the step. It reads the task (its id and instruction), the state,
   * the action and the demos only (`EmbeddedExperienceModel.predict`), so where the demos are a list
   * retrieval hands out again for the same query (`keptDemos`, frozen), its answer is kept with that list: a group's rollouts of one task take
   * the same steps again and again (a 20k-step WebShop run from BC: 13,403 of its 20,060 kNN answers).
   */
  private knnPrediction(input: PredictInput): Promise<Prediction> {
    if (!keptDemos.has(input.demos)) return this.knn.predict(input);
    let byState = this.knnAnswers.get(input.demos);
    if (!byState) this.knnAnswers.set(input.demos, (byState = new Map()));
    let byStep = byState.get(input.state);
    if (!byStep) byState.set(input.state, (byStep = new Map()));
    const key = JSON.stringify([input.action, input.task.id, input.task.instruction]);
    let answer = byStep.get(key);
    if (!answer) {
      const made = this.knn.predict(input);
      byStep.set(key, (answer = made));
      // Not kept: asked again, it is worked out again.
      made.catch(() => {
        if (byStep.get(key) === made) byStep.delete(key);
      });
    }
    return answer;
  }
  /** The kNN model's answers by their demo list (`keptDemos`), then state, then action and task. */
  private readonly knnAnswers = new WeakMap<readonly Demo[], Map<string, Map<string, Promise<Prediction>>>>();

  /**
   * A step of a free-text env whose states are made of parts: the next state from the real recorded
   * steps (`RecordedSteps`: the task's own first, a command carried over from a state alike in the
   * parts it changes, the episode's places as it saw them); the reward and end as those steps had
   * them where they agree, else the heads'. A command the record has nothing of is an invalid no-op.
   */
  private replay(input: PredictInput, table: RecordedSteps): Prediction {
    const r = table.replay(input);
    if (r === undefined) return { nextState: input.state, reward: 0, terminated: false, info: { invalid: true, unrecorded: true } };
    const recorded = recordedOutcome(r.pool);
    const e = recorded ? undefined : this.estimate(input);
    const terminated = (recorded ? recorded.terminated : e!.pEnd >= 0.5) || this.abstraction.isTerminal(r.nextState);
    const predicted = recorded ? recorded.reward : terminated || this.rewards.dense ? e!.reward : 0;
    // At a place the task's world never shows (a guess from other worlds), what is done earns no credit:
    // a chest drawn there and opened was a success that the real game never paid (vault's variants).
    const guessed = table.guessed(input.task, input.state);
    const reward = guessed ? Math.min(predicted, 0) : predicted;
    const round = (x: number) => Math.round(x * 1e6) / 1e6;
    return {
      nextState: r.nextState,
      reward,
      terminated,
      info: {
        next_state: r.how,
        ...(guessed ? { guessed_place: `a place this task's world never shows: paid ${reward}, not ${predicted}` } : {}),
        recorded: r.pool.length,
        ...(recorded
          ? { outcome: "as every recorded step it was read from", u: 0, u_reward: 0, u_outcome: 0 }
          : { u: round(e!.u), u_reward: round(e!.u_reward), u_outcome: round(e!.u_outcome), p_end: round(e!.pEnd), p_success: round(e!.pTop) }),
      },
    };
  }

  /**
   * Dyna-style recalibration on real steps the run paid for (the on-policy audit's replays of the
   * policy's own synthetic episodes): each member's heads take `epochs` passes over a bootstrap sample
   * of the trajectories' tasks, Adam's moments carried over from the refit before. The model after a
   * refit depends only on the model file, the refits before and these steps, so a resumed run that
   * loads the file and refits from the audits it kept gets the same model. The offline data taught the
   * heads the purchases the seed buffer made; the policy soon makes others, whose reward they
   * overrate (WebShop at 240k: synthetic − real return +0.03 to +0.08 late in training, mostly on
   * purchases whose pages match the real ones step for step).
   */
  refit(trajectories: readonly Trajectory[], seed: number, opts: RefitOptions = {}): { steps: number } {
    this.origin(); // of the members before any refit
    const r = this.refitMembers(trajectories, seed, opts);
    this.membersChanged();
    return r;
  }

  /** The members changed (a refit, a refit state loaded): estimates kept go, and the estimate thread gets the new members. */
  private membersChanged(): void {
    this.forgetEstimates();
    this.ensemble.changed();
    this.generation++;
    this.thread?.control({ model: this.save(), generation: this.generation } satisfies EstimateThreadControl);
  }

  /**
   * The members' parameters and Adam's moments after the refits so far (`save` writes the parameters
   * alone: a model loaded from it would refit on from fresh moments, to another model).
   */
  refitState(): Uint8Array {
    const origin = this.origin();
    const states = this.members.flat().map((n) => n.state());
    return packParams(
      REFIT_MAGIC,
      { model: this.id, origin, dim: this.info.dim, hidden: this.info.hidden, adamSteps: states.map((s) => s.adamStep) },
      states.flatMap((s) => s.arrays),
    );
  }
  /** A digest of the model as it was before any refit (its file's members): a refit state is of that model alone. */
  private origin(): string {
    this.originDigest ??= createHash("sha256").update(this.save()).digest("hex").slice(0, 32);
    return this.originDigest;
  }
  private originDigest: string | undefined;

  /** The members as `refitState` left them: estimates kept go, and the estimate thread gets the members, as after a refit. */
  loadRefitState(bytes: Uint8Array, source: string): void {
    const nets = this.members.flat();
    const notMine = "a refit state of this learned experience model (a run's checkpoints/experience-*.bin)";
    const { header, arrays } = unpackParams<{ model: string; origin: string; dim: number; hidden: number; adamSteps: number[] }>(
      bytes,
      REFIT_MAGIC,
      source,
      notMine,
    );
    const lengths = nets.flatMap((n) => n.state().arrays.map((a) => a.length));
    const fits =
      header.model === this.id &&
      typeof header.origin === "string" &&
      header.dim === this.info.dim &&
      header.hidden === this.info.hidden &&
      Array.isArray(header.adamSteps) &&
      header.adamSteps.length === nets.length &&
      header.adamSteps.every((k) => Number.isInteger(k) && k >= 0) &&
      arrays.length === lengths.length &&
      arrays.every((a, i) => a.length === lengths[i]);
    if (!fits) throw new InvalidConfigError(`${source} is not ${notMine}: its shape is another model's`);
    if (header.origin !== this.origin())
      throw new InvalidConfigError(`${source} is a refit state of another model file than this one: restore the run's model file, or start a new run`);
    const per = lengths.length / nets.length;
    nets.forEach((n, i) => n.setState(arrays.slice(i * per, (i + 1) * per), header.adamSteps[i]));
    this.membersChanged();
  }

  private refitMembers(trajectories: readonly Trajectory[], seed: number, opts: RefitOptions): { steps: number } {
    const { examples } = examplesOf(trajectories, this.abstraction, this.rewards, this.info.dim, this.ensemble.support, this.ensemble.features);
    if (examples.length === 0) return { steps: 0 };
    const epochs = opts.epochs ?? 2;
    const lr = opts.learningRate ?? 0.01;
    const batchSize = 32;
    const byTask = groupByTask(examples);
    const taskIds = [...byTask.keys()];
    this.members.forEach((nets, m) => {
      const rng = new Rng(deriveSeed(seed, "refit", m));
      const sample: Example[] = [];
      for (let i = 0; i < taskIds.length; i++) sample.push(...byTask.get(taskIds[rng.randbelow(taskIds.length)])!);
      for (let epoch = 0; epoch < epochs; epoch++) {
        const order = rng.shuffle(sample.map((_, i) => i));
        for (let start = 0; start < order.length; start += batchSize) {
          const batch = order.slice(start, start + batchSize);
          for (const i of batch) learnExample(nets, sample[i], this.h);
          for (const n of nets) n.adam(lr, 1 / batch.length);
        }
      }
    });
    return { steps: examples.length };
  }

  /** The model file: a header line (JSON) and the members' parameters (float32). Same model → same bytes. */
  save(): Uint8Array {
    return packParams(
      MAGIC,
      { ...this.info },
      this.members.flatMap((nets) => nets.flatMap((n) => n.params())),
    );
  }

  /** Reads a model file; anything else (or a model of another env or shape) is an `InvalidConfigError` naming `source`. */
  static load(bytes: Uint8Array, source: string, opts: LearnedModelOptions): LearnedExperienceModel {
    const { info, members } = readModelFile(bytes, source);
    if (info.env !== opts.abstraction.env) throw new InvalidConfigError(`${source} is a model of ${info.env}, not of ${opts.abstraction.env}`);
    return new LearnedExperienceModel(info, members, opts);
  }
}

/** The real recorded steps of this very command in this very state among a step's demos (a free-text env's replay). */
function exactSteps(input: PredictInput, abstraction: StateAbstraction): Demo[] {
  const norm = (a: string) => a.trim().toLowerCase();
  return input.demos.filter((d) => !d.anchor && d.source === "real" && norm(d.action) === norm(input.action) && abstraction.abstract(d.state) === input.state);
}

/**
 * The reward and end every one of `steps` (recorded steps of one command in one state) had, or
 * undefined where they differ (or there are none). In a free-text env the heads' features read the
 * command, the step count and the history, not the state (the generic features read web pages), so
 * the heads cannot tell a locked chest from one the agent holds the key for: on vault they paid 5 for
 * "open chest" with no key, where every recorded step of it in that state found the chest locked
 * (129 of the 267 synthetic chest-openings of a 20k run, seed 0). Where the data itself agrees, it
 * decides; where it differs (what the state does not show), the heads do.
 */
export function recordedOutcome(steps: readonly { reward: number; terminated: boolean }[]): { reward: number; terminated: boolean } | undefined {
  if (steps.length === 0) return undefined;
  const [first] = steps;
  return steps.every((s) => Math.abs(s.reward - first.reward) <= 1e-9 && s.terminated === first.terminated)
    ? { reward: first.reward, terminated: first.terminated }
    : undefined;
}

/** The distinct rewards of the real steps, when there are at most 32 (a dense env's payments: vault's 0, 1 and 5). */
function rewardValuesOf(examples: readonly Example[]): number[] | undefined {
  const values = new Set<number>();
  for (const e of examples) {
    values.add(Math.round(e.reward * 1e6) / 1e6);
    if (values.size > 32) return undefined;
  }
  return [...values].sort((a, b) => a - b);
}

// ---------------------------------------------------------------------------------------------
// Training

export interface TrainLearnedModelOptions {
  abstraction: StateAbstraction;
  /** The env's rewards. @default outcome rewards in [0, 1] */
  rewards?: RewardSpec;
  /** Passes over each member's training sample. @default 12 */
  epochs?: number;
  /** Seeds the split-independent parts: initial weights, bootstrap samples, shuffling. @default 0 */
  seed?: number;
  /** Ensemble members. @default 5 */
  members?: number;
  /** Share of the tasks held out for validation (by a hash of the task id). @default 0.1 */
  valFraction?: number;
  /** Hashed feature buckets. @default 8192 */
  dim?: number;
  /** Hidden units of each head. @default 8 */
  hidden?: number;
  /** Adam's learning rate. @default 0.01 */
  learningRate?: number;
  /** Steps per update. @default 32 */
  batchSize?: number;
  /** After each epoch of each member. */
  onEpoch?: (e: { member: number; epoch: number; trainLoss: number; valLoss: number | null }) => void;
}

interface Example {
  x: SparseVector;
  task: string;
  end: boolean;
  /** The step earns a reward the heads learn (ending steps; every step with dense rewards). */
  earns: boolean;
  reward: number;
  top: boolean;
  bottom: boolean;
  /** The reward as a share of the range. */
  share: number;
  /** Its `purchaseKey` (undefined: not on an item page). */
  key: string | undefined;
}

/** The purchases at the top reward of the trajectories' tasks that `use` admits (ending steps on an item page). */
function supportOf(trajectories: readonly Trajectory[], a: StateAbstraction, rewards: RewardSpec, use: (task: string) => boolean): PurchaseSupport {
  const support = new PurchaseSupport();
  for (const t of trajectories) {
    if (!use(t.task.id)) continue;
    const history: HistoryStep[] = [];
    for (const s of t.steps) {
      const state = a.abstract(s.observation);
      const nextState = a.abstract(s.next_observation, s.info);
      const key = s.terminated && s.reward >= rewards.max - 1e-9 ? purchaseKey({ task: t.task, history, state, action: s.action }) : undefined;
      if (key !== undefined) support.add(key, t.task.id);
      history.push({ state, action: s.action, nextState, reward: s.reward });
    }
  }
  return support;
}

/** The training examples of a buffer's real trajectories of the abstraction's env, oldest first. */
function examplesOf(
  trajectories: Iterable<Trajectory>,
  a: StateAbstraction,
  rewards: RewardSpec,
  dim: number,
  support: PurchaseSupport,
  features: PolicyFeatures | undefined,
): { examples: Example[]; trajectories: number; returns: ReturnRule[] } {
  const examples: Example[] = [];
  const backs = new Map<string, { n: number; hits: number }>();
  let count = 0;
  const range = Math.max(rewards.max - rewards.min, 1e-9);
  for (const t of trajectories) {
    count++;
    const history: HistoryStep[] = [];
    for (const s of t.steps) {
      const state = a.abstract(s.observation);
      const nextState = a.abstract(s.next_observation, s.info);
      const earns = s.terminated || rewards.dense;
      const input = { task: t.task, history, state, action: s.action };
      examples.push({
        x: transitionFeatures(input, dim, support, features),
        key: purchaseKey(input),
        task: t.task.id,
        end: s.terminated,
        earns,
        reward: s.reward,
        top: s.reward >= rewards.max - 1e-9,
        bottom: s.reward <= rewards.min + 1e-9,
        share: Math.min(1, Math.max(0, (s.reward - rewards.min) / range)),
      });
      if (nextState !== state) {
        const key = [normAction(state, s.action), firstLine(state), firstLine(nextState)].join("\t");
        const c = backs.get(key) ?? { n: 0, hits: 0 };
        c.n++;
        if (earlierPage(history, state, firstLine(nextState)) === nextState) c.hits++;
        backs.set(key, c);
      }
      history.push({ state, action: s.action, nextState, reward: s.reward });
    }
  }
  // An action is a return when it almost always leads back to the page it names, over enough steps.
  const returns = [...backs]
    .filter(([, c]) => c.n >= 10 && c.hits >= 0.95 * c.n)
    .map(([key]) => key)
    .sort()
    .map((key) => {
      const [action, from, to] = key.split("\t");
      return { action, from, to };
    });
  return { examples, trajectories: count, returns };
}

/** An action by what it does (a web page's `click [7]` by the element it names), lowercased. */
const normAction = (state: string, action: string) => viewAction(state, action).trim().toLowerCase();
/** A state's first line: its kind, for abstract states that name their page ("page: results"); a web page's kind as its view names it. */
function firstLine(state: string): string {
  const web = webView(state);
  if (web) return `page: ${web.kind}`;
  const end = state.indexOf("\n");
  return end < 0 ? state : state.slice(0, end);
}

/** The episode's most recent earlier state whose first line (its kind) is `kind`, other than the current one. */
function earlierPage(history: readonly HistoryStep[], state: string, kind: string): string | undefined {
  for (let i = history.length - 1; i >= 0; i--) {
    const h = history[i].state;
    if (h !== state && firstLine(h) === kind) return h;
  }
  return undefined;
}

/** Where a return action leads in this episode (undefined: not a return, or no such earlier page). */
function returnTarget(returns: ReadonlyMap<string, string>, input: { history: readonly HistoryStep[]; state: string; action: string }): string | undefined {
  const to = returns.get(`${normAction(input.state, input.action)}\t${firstLine(input.state)}`);
  return to === undefined ? undefined : earlierPage(input.history, input.state, to);
}

/** Each head's target for an example, or undefined where the head does not learn from it. */
function targets(e: Example): (number | undefined)[] {
  return [
    e.end ? 1 : 0,
    e.earns ? (e.top ? 1 : 0) : undefined,
    e.earns && !e.top ? (e.bottom ? 1 : 0) : undefined,
    e.earns && !e.top && !e.bottom ? e.share : undefined,
  ];
}

/** The examples by task, in order of first appearance. */
function groupByTask(examples: readonly Example[]): Map<string, Example[]> {
  const byTask = new Map<string, Example[]>();
  for (const e of examples) {
    const list = byTask.get(e.task);
    if (list) list.push(e);
    else byTask.set(e.task, [e]);
  }
  return byTask;
}

/** Each head's gradient for one example, accumulated; returns the summed cross-entropy and the number of heads that learned. */
function learnExample(nets: ScoreNet[], e: Example, h: Float64Array): { loss: number; count: number } {
  let loss = 0;
  let count = 0;
  targets(e).forEach((y, j) => {
    if (y === undefined) return;
    const p = sigmoid(nets[j].forward(e.x, h));
    loss += bce(p, y);
    count++;
    nets[j].backward(e.x, h, p - y);
  });
  return { loss, count };
}

const bce = (p: number, y: number) => -(y * Math.log(Math.max(p, 1e-7)) + (1 - y) * Math.log(Math.max(1 - p, 1e-7)));

/** Mean cross-entropy of each head over the examples it learns from, averaged over the heads. */
function lossOf(nets: ScoreNet[], examples: readonly Example[], h: Float64Array): number {
  const sum = HEADS.map(() => 0);
  const count = HEADS.map(() => 0);
  for (const e of examples) {
    targets(e).forEach((y, j) => {
      if (y === undefined) return;
      sum[j] += bce(sigmoid(nets[j].forward(e.x, h)), y);
      count[j]++;
    });
  }
  const used = HEADS.map((_, j) => j).filter((j) => count[j] > 0);
  return used.length === 0 ? 0 : used.reduce((s, j) => s + sum[j] / count[j], 0) / used.length;
}

/**
 * Trains the learned experience model on a buffer's real trajectories of the abstraction's env:
 * the tasks are split (a hash of the task id) into training and validation; each member trains on a
 * bootstrap sample of the training tasks (drawn with replacement) from its own initial weights, and
 * keeps the epoch with the lowest validation loss. Deterministic: the same buffer and options give
 * the same model, byte for byte.
 */
export function trainLearnedModel(
  buffer: ReplayBuffer,
  opts: TrainLearnedModelOptions,
): { model: LearnedExperienceModel; validation: LearnedModelValidation | null } {
  const a = opts.abstraction;
  const rewards = opts.rewards ?? OUTCOME_REWARDS;
  const epochs = opts.epochs ?? 12;
  const seed = opts.seed ?? 0;
  const memberCount = opts.members ?? 5;
  const valFraction = opts.valFraction ?? 0.1;
  const dim = opts.dim ?? 8192;
  const hidden = opts.hidden ?? 8;
  const lr = opts.learningRate ?? 0.01;
  const batchSize = opts.batchSize ?? 32;
  if (!Number.isInteger(epochs) || epochs < 1) throw new InvalidConfigError(`epochs must be an integer ≥ 1, got ${epochs}`);
  if (!Number.isInteger(memberCount) || memberCount < 1) throw new InvalidConfigError(`members must be an integer ≥ 1, got ${memberCount}`);
  if (!(valFraction >= 0 && valFraction < 1)) throw new InvalidConfigError(`valFraction must be in [0, 1), got ${valFraction}`);
  const real = [...buffer.trajectories({ env: a.env, source: "real" })];
  // Support from the training tasks only, so the held-out ones are judged as new tasks are (and each
  // training task's own purchase never counts for itself: `others`).
  const support = supportOf(real, a, rewards, (task) => !isValTask(task, valFraction));
  const { examples, trajectories, returns } = examplesOf(real, a, rewards, dim, support, plugPoint(a.env, "features"));
  if (examples.length === 0)
    throw new InvalidConfigError(`the buffer has no real ${a.env} transitions to learn from (dreamgym buffer import F.jsonl --abstract --buffer B.db)`);
  const val = examples.filter((e) => isValTask(e.task, valFraction));
  const train = examples.filter((e) => !isValTask(e.task, valFraction));
  if (train.length === 0) throw new InvalidConfigError(`every task of the buffer fell into the validation share (${valFraction}); lower it or add tasks`);
  const byTask = groupByTask(train);
  const taskIds = [...byTask.keys()];
  const h = new Float64Array(hidden);
  const members: ScoreNet[][] = [];
  const memberReports: { bestEpoch: number; loss: number }[] = [];
  for (let m = 0; m < memberCount; m++) {
    const rng = new Rng(seed * 1009 + m + 1);
    const nets = HEADS.map(() => new ScoreNet(dim, hidden, { rng, embedScale: 0.1, outScale: 0.1 }));
    // A bootstrap sample of the training tasks (the first member too: each sees a different world).
    const sample: Example[] = [];
    for (let i = 0; i < taskIds.length; i++) sample.push(...byTask.get(taskIds[rng.randbelow(taskIds.length)])!);
    let best = { epoch: 0, loss: Infinity, params: [] as Float32Array[] };
    for (let epoch = 1; epoch <= epochs; epoch++) {
      const order = rng.shuffle(sample.map((_, i) => i));
      let trainLoss = 0;
      let trainCount = 0;
      for (let start = 0; start < order.length; start += batchSize) {
        const batch = order.slice(start, start + batchSize);
        for (const i of batch) {
          const { loss, count } = learnExample(nets, sample[i], h);
          trainLoss += loss;
          trainCount += count;
        }
        for (const n of nets) n.adam(lr, 1 / batch.length);
      }
      const valLoss = val.length > 0 ? lossOf(nets, val, h) : null;
      opts.onEpoch?.({ member: m + 1, epoch, trainLoss: trainCount > 0 ? trainLoss / trainCount : 0, valLoss });
      if (valLoss === null || valLoss < best.loss) best = { epoch, loss: valLoss ?? 0, params: nets.flatMap((n) => n.params().map((p) => p.slice())) };
    }
    // Back to the best epoch on the held-out tasks.
    const flat = nets.flatMap((n) => n.params());
    flat.forEach((p, i) => p.set(best.params[i]));
    members.push(nets);
    memberReports.push({ bestEpoch: best.epoch, loss: best.loss });
  }
  const valTasks = new Set(val.map((e) => e.task));
  const info: LearnedModelInfo = {
    format: FORMAT,
    env: a.env,
    featureVersion: TRANSITION_FEATURE_VERSION,
    dim,
    hidden,
    members: memberCount,
    rewards,
    training: { seed, epochs, trajectories, transitions: examples.length, tasks: taskIds.length + valTasks.size, valFraction },
    validation: null,
    returns,
    support: support.entries(),
  };
  const values = rewards.dense ? rewardValuesOf(train) : undefined;
  if (values) info.rewardValues = values;
  let validation: LearnedModelValidation | null = null;
  if (val.length > 0) {
    let endOk = 0;
    let errors = 0;
    let endingAbs = 0;
    let endings = 0;
    for (const e of val) {
      const est = combine(
        members.map((nets) => {
          const [end, top, bottom, mid] = nets.map((n) => sigmoid(n.forward(e.x, h)));
          return { end, top, bottom, mid };
        }),
        rewards,
        e.key === undefined || support.others(e.key, "") > 0,
        values,
      );
      const terminated = est.pEnd >= 0.5;
      const reward = terminated || rewards.dense ? est.reward : 0;
      if (terminated === e.end) endOk++;
      if (Math.abs(reward - e.reward) > 0.01) errors++;
      if (e.end) {
        endings++;
        endingAbs += Math.abs(reward - e.reward);
      }
    }
    const r6 = (x: number) => Math.round(x * 1e6) / 1e6;
    validation = {
      tasks: valTasks.size,
      steps: val.length,
      loss: r6(memberReports.reduce((s, r) => s + r.loss, 0) / memberCount),
      terminationAccuracy: r6(endOk / val.length),
      rewardErrorRate: r6(errors / val.length),
      endingRewardMAE: r6(endings > 0 ? endingAbs / endings : 0),
      members: memberReports.map((r) => ({ bestEpoch: r.bestEpoch, loss: r6(r.loss) })),
    };
  }
  info.validation = validation;
  return { model: new LearnedExperienceModel(info, members, { abstraction: a, rewards }), validation };
}
