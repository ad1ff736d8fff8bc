import { OUTCOME_REWARDS, type Demo, type ExperienceModel, type PredictInput, type Prediction, type RewardSpec, type StateAbstraction } from "../core/index.ts";
// Narrowly, not the rl's index (which loads the trainers and their schemas): the estimate thread loads this module.
import { clickChoice, viewAction, webView } from "../rl/web-view.ts";

export interface EmbeddedModelOptions {
  abstraction: StateAbstraction;
  /** The env's rewards: with dense rewards every step gets its demo's reward. @default outcome rewards in [0, 1] */
  rewards?: RewardSpec;
  /** Below this similarity no demo is trusted and the step fails. @default 0.2 */
  minScore?: number;
}

/** Recorded states whose demos' actions `EmbeddedExperienceModel` keeps read. */
const DEMO_STATES_KEPT = 8192;
/** Actions compare by their text, trimmed and lowercased. */
const normAction = (a: string) => a.trim().toLowerCase();

/**
 * The embedded default (the paper's "without reasoning" level): no LLM, no network. The next state
 * is the recorded next state of a demo with the same action (the one from the most similar state,
 * with a small preference for the same task), else of the most similar demo with the same kind of
 * action — another `search[...]`, another value of an option group, another item of a list (see
 * {@link elementKind}) — rewritten to the current task's instruction; a demo whose action left the
 * page unchanged predicts no change. With neither, the step fails (a no-op). In a free-text env
 * (states that list no actions) only the same command recorded in the same state is replayed;
 * any other command is an invalid no-op step. Whether the step ends
 * the episode follows that demo; the reward of an ending step is a nearest-neighbour reward model:
 * the similarity-weighted mean reward of the ending demos taken with the same action.
 *
 * It can replay what the buffer has seen and transfer it across states (clicking a product leads to
 * that product's page from any results page); it cannot invent pages it has never seen (a new search
 * gets the results of the most similar recorded search), and with an empty buffer it cannot step.
 */
export class EmbeddedExperienceModel implements ExperienceModel {
  readonly id = "embedded-knn-v1";
  /** No endpoint: a pool over it plays many episodes at once. */
  readonly inProcess = true;
  private readonly abstraction: StateAbstraction;
  private readonly minScore: number;
  private readonly rewards: RewardSpec;

  constructor(opts: EmbeddedModelOptions) {
    this.abstraction = opts.abstraction;
    this.rewards = opts.rewards ?? OUTCOME_REWARDS;
    this.minScore = opts.minScore ?? 0.2;
  }

  /** A free-text env's steps are replayed only from the same command in the same state (see `predict`). */
  exactDemos(state: string): boolean {
    // Asked several times a step (the env, the model, the kNN model) about the same page: read it once.
    let listsNone = this.listsNone.get(state);
    if (listsNone === undefined) {
      if (this.listsNone.size >= 4096) this.listsNone.clear();
      this.listsNone.set(state, (listsNone = this.abstraction.actions(state) === undefined));
    }
    return listsNone;
  }
  private readonly listsNone = new Map<string, boolean>();

  /**
   * On a state that is not a web page (where an action names its element by its own id: see `viewAction`),
   * the same action's usable demos are the pool whenever there is one (see `predict`): the others are
   * read only where there is none.
   */
  sameActionFirst(state: string): number | undefined {
    return this.exactDemos(state) || webView(state) !== null ? undefined : this.minScore;
  }

  // Reads the task's id and instruction, the state, the action and the demos, nothing else (the
  // history not at all): the learned model keeps its answers by those (`LearnedExperienceModel.knnPrediction`).
  async predict({ task, state, action, demos: all }: PredictInput): Promise<Prediction> {
    // Anchors (the best real same-action transition) only tell how well real data backs the step.
    const demos = all.filter((d) => !d.anchor);
    const anchors = all.filter((d) => d.anchor);
    // A free-text env (a parser game: its states list no actions) takes any text, and what a command
    // does there depends on the exact state (is the gem here?): only a demo of this very command in
    // this very state is trusted. Anything else is a command it cannot vouch for, an invalid no-op,
    // so a policy cannot harvest a reward recorded elsewhere. Only a real step vouches: a synthetic
    // episode written back to the buffer records what a model said (an invalid no-op among it, as
    // a plain step), and trusting it let a model's guess become its own evidence (on vault, "take
    // gem" in a room with no gem, paid again and again: 100% of synthetic successes failed for real).
    if (this.exactDemos(state)) {
      const here = demos.filter((d) => d.source === "real" && normAction(d.action) === normAction(action) && this.abstraction.abstract(d.state) === state);
      if (here.length === 0) return { nextState: state, reward: 0, terminated: false, info: { invalid: true, unrecorded: true } };
      return this.replay(here, task, state, action, true, anchors);
    }
    const usable = demos.filter((d) => d.score >= this.minScore);
    if (usable.length === 0) return { nextState: state, reward: 0, terminated: false, info: { failed: "no similar transition in the buffer" } };
    // Actions compare by what they do: on web pages `click [7]` by the element it names (ids differ between pages).
    const key = (s: string, a: string) => normAction(viewAction(s, a));
    const mine = key(state, action);
    const sameAction = usable.filter((d) => this.demoAction(d).key === mine);
    // Else a demo whose action did the same kind of thing: another search, another option or
    // another item of a list — never a different button (a size click must not act as "buy now").
    const kind = elementKind(state, action);
    const sameKind = kind === undefined ? [] : usable.filter((d) => this.demoAction(d).kind === kind);
    const pool = sameAction.length > 0 ? sameAction : sameKind;
    if (pool.length === 0) return { nextState: state, reward: 0, terminated: false, info: { failed: `no recorded transition with the action ${action}` } };
    const p = this.replay(pool, task, state, action, sameAction.length > 0, anchors);
    // An item the data never opened: its page as the listing tells it, not another item's copied page.
    if (sameAction.length === 0 && kind === "item" && !p.terminated && this.abstraction.unseenPage) {
      const told = this.abstraction.unseenPage(state, action, p.nextState);
      if (told !== undefined) return { ...p, nextState: told, info: { ...p.info, next_state: "an item the data never opened, told from its listing" } };
    }
    return p;
  }

  /**
   * A demo's action as `predict` compares it (what it does, and the kind of element), read once per
   * recorded (state, action): the same recorded steps ground step after step, and each search's
   * answer holds them anew.
   */
  private demoAction(d: Demo): { key: string; kind: string | undefined } {
    let byAction = this.demoActions.get(d.state);
    if (!byAction) {
      if (this.demoActions.size >= DEMO_STATES_KEPT) this.demoActions.clear();
      this.demoActions.set(d.state, (byAction = new Map()));
    }
    let a = byAction.get(d.action);
    if (!a) {
      const state = this.abstraction.abstract(d.state);
      byAction.set(d.action, (a = { key: normAction(viewAction(state, d.action)), kind: elementKind(state, d.action) }));
    }
    return a;
  }
  private readonly demoActions = new Map<string, Map<string, { key: string; kind: string | undefined }>>();

  /** The best demo of `pool` carried over to this task and state: next state, end and reward, and how sure that is (`u`). */
  private replay(pool: Demo[], task: PredictInput["task"], state: string, action: string, sameAction: boolean, anchors: Demo[]): Prediction {
    const rank = (d: Demo) => d.score + (d.task.id === task.id ? 0.05 : 0);
    const best = pool.reduce((a, b) => (rank(b) > rank(a) ? b : a));
    let nextState = this.abstraction.abstract(best.nextState);
    const bestState = this.abstraction.abstract(best.state);
    // A demo whose action left its page as it was (an option click) transfers as "no change here";
    // on a web page such a click marks its radio checked (the view leaves marks out), here too.
    if (nextState === bestState) nextState = state;
    else if (webView(nextState) !== null && webView(nextState)?.text === webView(bestState)?.text) nextState = clickChoice(state, action) ?? state;
    else if (best.task.instruction && best.task.instruction !== task.instruction) nextState = nextState.split(best.task.instruction).join(task.instruction);
    const terminated = best.terminated || this.abstraction.isTerminal(nextState);
    const weight = (d: Demo) => Math.max(d.score, 0) ** 2;
    // The demos the reward is read from: the ending ones for an ending step, the same-action ones for a dense reward.
    let rewardDemos: Demo[] = [];
    let reward = 0;
    if (this.rewards.dense && !terminated) {
      // Dense rewards: what the same action earned where it was taken (a same-kind demo earns nothing sure).
      reward = sameAction ? best.reward : 0;
      rewardDemos = sameAction ? pool : [];
    } else if (terminated) {
      const ending = pool.filter((d) => d.terminated);
      const total = ending.reduce((s, d) => s + weight(d), 0);
      reward = total > 0 ? ending.reduce((s, d) => s + weight(d) * d.reward, 0) / total : best.reward;
      rewardDemos = ending;
    }
    const u = this.uncertainty(pool, rewardDemos, anchors, weight);
    return { nextState, reward, terminated, info: { grounding: best.score, demo_task: best.task.id, ...u } };
  }

  /**
   * How unsure a prediction is, from its neighbours (each part in [0, 1]): `u_reward`, the
   * similarity-weighted spread (standard deviation) of the rewards it was read from, over half the
   * reward range (neighbours that pay 0 and 1 alike give 1); `u_outcome`, how split the neighbours are
   * on ending the episode (2·min(p, 1 − p), p the weighted share that ended); `u_grounding`,
   * 1 − the similarity of the best *real* neighbour, among the demos and the anchor retrieval adds
   * (see `DemoOptions.realAnchor`) (a step seen exactly in the offline data gives 0,
   * one backed only by synthetic transitions 1: the model's own earlier outputs must not make it sure
   * of them, or a policy's exploit, once recorded, would vouch for itself). `u` is the largest: a
   * prediction is as sure as its least sure part.
   */
  private uncertainty(
    pool: Demo[],
    rewardDemos: Demo[],
    anchors: Demo[],
    weight: (d: Demo) => number,
  ): { u: number; u_reward: number; u_outcome: number; u_grounding: number } {
    const wsum = (ds: Demo[], f: (d: Demo) => number) => ds.reduce((s, d) => s + weight(d) * f(d), 0);
    const rw = wsum(rewardDemos, () => 1);
    let uReward = 0;
    if (rw > 0 && rewardDemos.length > 1) {
      const m = wsum(rewardDemos, (d) => d.reward) / rw;
      const sd = Math.sqrt(wsum(rewardDemos, (d) => (d.reward - m) ** 2) / rw);
      uReward = Math.min(1, sd / Math.max((this.rewards.max - this.rewards.min) / 2, 1e-9));
    }
    const pw = wsum(pool, () => 1);
    const p = pw > 0 ? wsum(pool, (d) => (d.terminated ? 1 : 0)) / pw : 0;
    const uOutcome = 2 * Math.min(p, 1 - p);
    const real = [...pool, ...anchors].filter((d) => d.source === "real");
    const uGrounding = Math.min(1, Math.max(0, 1 - Math.max(0, ...real.map((d) => d.score))));
    const round = (x: number) => Math.round(x * 1e6) / 1e6;
    return { u: round(Math.max(uReward, uOutcome, uGrounding)), u_reward: round(uReward), u_outcome: round(uOutcome), u_grounding: round(uGrounding) };
  }
}

/**
 * What kind of element an action works on, read from the abstract state: `search` (free text), an
 * `option` (a value on a "name: [a] [b]" line), an `item` (a line that starts with the label and
 * describes it), else the button itself (`button:<label>`, which only matches the same action).
 */
export function elementKind(state: string, action: string): string | undefined {
  // A web page's element by its view (`click [7]` → `click[b09qqp3356]` on an item line).
  const web = webView(state);
  if (web) return elementKind(web.text, web.action(action));
  const m = /^(\w+)\[(.*)\]$/s.exec(action.trim());
  if (!m) return undefined;
  const [, verb, label] = m;
  if (verb.toLowerCase() !== "click") return verb.toLowerCase();
  const tag = `[${label.toLowerCase()}]`;
  const line = firstLineWith(state, tag);
  if (line === undefined) return `button:${label.toLowerCase()}`;
  if (/^[^[\]:]{1,40}:\s*\[/.test(line)) return "option";
  if (line.toLowerCase().startsWith(tag) && line.trim().length > tag.length + 1 && !/^(\[[^\]]+\]\s*)+$/.test(line.trim())) return "item";
  return `button:${label.toLowerCase()}`;
}

/**
 * The first line of `text` whose lowercased form contains `lower` (itself lowercase), as
 * `text.split("\n").find((l) => l.toLowerCase().includes(lower))` finds it, with one lowercasing of
 * the whole text instead of one per line (lowercasing keeps every line break where it was, though it
 * may change a line's length, so the line is found by its number).
 */
function firstLineWith(text: string, lower: string): string | undefined {
  if (lower.includes("\n")) return undefined;
  const lowered = text.toLowerCase();
  const at = lowered.indexOf(lower);
  if (at < 0) return undefined;
  let n = 0;
  for (let i = lowered.indexOf("\n"); i >= 0 && i < at; i = lowered.indexOf("\n", i + 1)) n++;
  let start = 0;
  for (let k = 0; k < n; k++) start = text.indexOf("\n", start) + 1;
  const end = text.indexOf("\n", start);
  return end < 0 ? text.slice(start) : text.slice(start, end);
}
