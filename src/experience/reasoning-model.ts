import { z } from "zod";
import {
  isAbstractState,
  OUTCOME_REWARDS,
  type Demo,
  type ExperienceModel,
  type HistoryStep,
  type PredictInput,
  type Prediction,
  type RewardSpec,
  type StateAbstraction,
} from "../core/index.ts";
import { EndpointFailedError, type ChatChoice, type ChatMessage, type ChatModel } from "../llm/index.ts";
import { elementF1 } from "./audit.ts";

export interface ReasoningModelOptions {
  chat: ChatModel;
  abstraction: StateAbstraction;
  /** The env's reward range and whether rewards are outcome-only or dense. @default outcome rewards in [0, 1] */
  rewards?: RewardSpec;
  /** Most recent steps shown in full; older ones are summarised one line each. @default 4 */
  recentSteps?: number;
  /** Demos shown at most. @default 5 */
  demos?: number;
  /** Calls per step before it counts as failed (the first, then repairs). @default 3 */
  maxAttempts?: number;
  /** A next state longer than this is rejected as absurd. @default 8000 */
  maxStateChars?: number;
  /** States in the prompt are cut to this many characters. @default 3000 */
  promptStateChars?: number;
  temperature?: number;
  /** @default 1200 */
  maxTokens?: number;
  /**
   * Predictions sampled per step (one call with n choices, n× the tokens): the first valid one is the
   * step, and their disagreement is its uncertainty `info.u`. 1: no `u`. @default 1
   */
  samples?: number;
}

/** The structured output: the reasoning first, then the next state, reward and end. */
const Output = z.object({
  reasoning: z.string(),
  next_state: z.string(),
  reward: z.number(),
  terminated: z.boolean(),
});
const OUTPUT_SCHEMA = { name: "experience_step", schema: z.toJSONSchema(Output) as Record<string, unknown> };

/** A valid predicted step. */
interface Step {
  reasoning: string;
  nextState: string;
  reward: number;
  terminated: boolean;
}

const cut = (text: string, n: number) => (text.length > n ? `${text.slice(0, n)}\n…(cut)` : text);

/** The prompt's sentence on rewards, from the env's reward spec. */
function rewardRule({ min, max, dense }: RewardSpec): string {
  return dense
    ? `Rewards are dense: any step can earn a reward in [${min}, ${max}] (what the action gained, e.g. a score increase); most steps earn ${Math.max(min, Math.min(0, max))}.`
    : `Rewards are outcome-based: ${Math.max(min, Math.min(0, max))} for every step that does not end the episode; an ending step gets the task's score in [${min}, ${max}] (${max} only when the task is completed).`;
}

/** How the prompt's machine-readable episode line starts (the line after the task in the user message). */
export const EPISODE_BLOCK_PREFIX = "Episode (machine-readable): ";

/** The episode line: the task id and every action of the episode so far, the current one last. */
export function episodeBlock(taskId: string, actions: readonly string[]): string {
  return `${EPISODE_BLOCK_PREFIX}${JSON.stringify({ task: taskId, actions })}`;
}

/** The episode line of a reasoning model's user message, read back (null: there is none, or it is malformed). */
export function parseEpisodeBlock(userMessage: string): { task: string; actions: string[] } | null {
  // The first such line: the states shown after it cannot come before it.
  const at = userMessage.indexOf(`\n${EPISODE_BLOCK_PREFIX}`);
  if (at < 0) return null;
  const end = userMessage.indexOf("\n", at + 1);
  const line = userMessage.slice(at + 1, end < 0 ? undefined : end);
  try {
    const v = JSON.parse(line.slice(EPISODE_BLOCK_PREFIX.length)) as { task?: unknown; actions?: unknown };
    if (typeof v.task !== "string" || !Array.isArray(v.actions) || v.actions.length === 0 || !v.actions.every((a) => typeof a === "string")) return null;
    return { task: v.task, actions: v.actions as string[] };
  } catch {
    return null;
  }
}

/**
 * The paper's reasoning experience model M_exp over any `ChatModel`: the prompt carries the env's
 * profile, the task, the bounded history (older steps summarised), the retrieved similar transitions
 * and the current state and action; the model answers with its reasoning, then the next state,
 * reward and end. Outcome-based rewards: a step that does not end the episode has reward 0. With no
 * demos (an empty buffer) it plays from the profile alone. Output that is not valid JSON of that
 * shape is repaired where the intent is clear (numbers or booleans as strings, a fenced block), else
 * asked again with the error; after `maxAttempts` the step fails and is never stored. A failed call
 * fails the step too. It throws only when the chat model's breaker trips (the endpoint cannot be
 * reached, or calls or steps kept failing): then the run must stop, not fill up with no-ops.
 */
export class ReasoningExperienceModel implements ExperienceModel {
  readonly id: string;
  private readonly o: Required<Omit<ReasoningModelOptions, "temperature">> & { temperature?: number };
  /** Its prompt shows the top `demos` by score, and no anchor. */
  readonly readsAnchor = false;
  get readsTopDemos(): number {
    return this.o.demos;
  }

  constructor(opts: ReasoningModelOptions) {
    this.o = {
      recentSteps: 4,
      demos: 5,
      maxAttempts: 3,
      maxStateChars: 8000,
      promptStateChars: 3000,
      maxTokens: 1200,
      rewards: OUTCOME_REWARDS,
      samples: 1,
      ...opts,
    };
    this.id = `reasoning:${opts.chat.id}`;
  }

  /** The prompt for one step (exposed for SFT data and tests). */
  messages({ task, history, state, action, demos }: PredictInput): ChatMessage[] {
    const n = this.o.promptStateChars;
    const system = [
      "You are the environment. Given the current state and the agent's action, predict what the environment shows next.",
      this.o.abstraction.profile,
      "Think step by step about what the action does in this state, then give the next state in exactly the same format as the states you are shown.",
      this.o.abstraction.rewardRule ?? rewardRule(this.o.rewards),
      'Answer with JSON only: {"reasoning": string, "next_state": string, "reward": number, "terminated": boolean}.',
    ].join("\n\n");
    // After the task, one machine-readable line: the task id and the episode's actions, this one last
    // (a tool reads it: the oracle model of `dreamgym oracle-model serve` replays them in the real env).
    const parts = [`Task: ${task.instruction}`, episodeBlock(task.id, [...history.map((h) => h.action), action])];
    if (history.length > 0) {
      const recent = history.slice(-this.o.recentSteps);
      const older = history.slice(0, history.length - recent.length);
      const summarize = (st: string) => this.o.abstraction.summarize?.(st) ?? st.split("\n")[0];
      const lines = older.map((h: HistoryStep, i: number) => `${i + 1}. ${h.action} → ${summarize(h.nextState)}`);
      recent.forEach((h, i) => lines.push(`${older.length + i + 1}. state:\n${cut(h.state, n)}\naction: ${h.action}`));
      parts.push(`History (${history.length} steps):\n${lines.join("\n")}`);
    }
    const shown = demos.filter((d) => !d.anchor).slice(0, this.o.demos);
    if (shown.length > 0) {
      parts.push(
        `Similar recorded transitions:\n${shown
          .map(
            (d: Demo, i: number) =>
              `--- ${i + 1} (similarity ${d.score.toFixed(2)})\nstate:\n${cut(d.state, n)}\naction: ${d.action}\nnext_state:\n${cut(d.nextState, n)}\nreward: ${d.reward}, terminated: ${d.terminated}`,
          )
          .join("\n")}`,
      );
    }
    parts.push(`Current state:\n${cut(state, n)}`, `Action: ${action}`);
    return [
      { role: "system", content: system },
      { role: "user", content: parts.join("\n\n") },
    ];
  }

  /** Checks (and where the intent is clear, repairs) a parsed output. */
  private validate(parsed: unknown): { value?: z.infer<typeof Output>; error?: string } {
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return { error: "the output is not a JSON object" };
    const raw = { ...(parsed as Record<string, unknown>) };
    if (typeof raw.reward === "string" && raw.reward.trim() !== "" && Number.isFinite(Number(raw.reward))) raw.reward = Number(raw.reward);
    if (raw.terminated === "true" || raw.terminated === "false") raw.terminated = raw.terminated === "true";
    if (raw.reasoning === undefined) raw.reasoning = "";
    const r = Output.safeParse(raw);
    if (!r.success) return { error: r.error.issues.map((i) => `${i.path.join(".") || "output"}: ${i.message}`).join("; ") };
    const v = r.data;
    if (v.next_state.trim() === "") return { error: "next_state is empty" };
    if (v.next_state.length > this.o.maxStateChars) return { error: `next_state has ${v.next_state.length} characters (more than ${this.o.maxStateChars})` };
    const { min, max } = this.o.rewards;
    if (!Number.isFinite(v.reward) || v.reward < min || v.reward > max) return { error: `reward ${v.reward} is not in [${min}, ${max}]` };
    return { value: v };
  }

  /** A choice as a step (next state in the env's format, reward and end as outcome or dense rewards allow), or why it is not one. */
  private check(c: { text: string; parsed?: unknown; parseError?: string }, state: string): { value?: Step; error: string } {
    if (c.parseError) return { error: c.parseError };
    const checked = this.validate(c.parsed);
    if (!checked.value) return { error: checked.error! };
    const nextState = this.o.abstraction.abstract(checked.value.next_state);
    // A state the env's format does not know (prose, an unknown page kind) is invalid output.
    if (!isAbstractState(this.o.abstraction, nextState)) return { error: "next_state is not a state in this environment's format (see the states shown)" };
    const v = checked.value;
    const terminated = v.terminated || this.o.abstraction.isTerminal(nextState);
    // Outcome rewards: a step that does not end the episode has none, whatever the model said.
    const reward = terminated || this.o.rewards.dense ? v.reward : 0;
    // The env's own rules (a field the step cannot change, the reward/end pairs it has).
    const ruled = this.o.abstraction.checkStep ? this.o.abstraction.checkStep({ nextState, reward, terminated }, state) : { nextState, reward, terminated };
    if ("error" in ruled) return { error: ruled.error };
    return { value: { reasoning: v.reasoning, ...ruled }, error: "" };
  }

  /**
   * Disagreement of n sampled steps, in [0, 1]: the largest of the rewards' spread (standard
   * deviation over half the reward range), the split on ending (2·min(p, 1 − p)) and how far the
   * other next states are from the chosen one (1 − mean element F1).
   */
  private disagreement(chosen: Step, others: Step[]): number {
    const all = [chosen, ...others];
    const mean = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / xs.length;
    const m = mean(all.map((s) => s.reward));
    const sd = Math.sqrt(mean(all.map((s) => (s.reward - m) ** 2)));
    const uReward = Math.min(1, sd / Math.max((this.o.rewards.max - this.o.rewards.min) / 2, 1e-9));
    const p = mean(all.map((s) => (s.terminated ? 1 : 0)));
    const uState = 1 - mean(others.map((s) => elementF1(s.nextState, chosen.nextState)));
    return Math.round(Math.max(uReward, 2 * Math.min(p, 1 - p), uState) * 1e6) / 1e6;
  }

  async predict(input: PredictInput): Promise<Prediction> {
    const p = await this.attempt(input);
    const breaker = this.o.chat.breaker;
    if (p.info.failed) breaker?.stepFailed(p.info.failed, input.task.id);
    else breaker?.stepSucceeded();
    return p;
  }

  private async attempt(input: PredictInput): Promise<Prediction> {
    const messages = this.messages(input);
    let lastError = "";
    for (let attempt = 0; attempt < this.o.maxAttempts; attempt++) {
      let text: string;
      let parsed: unknown;
      let parseError: string | undefined;
      let others: ChatChoice[] = [];
      try {
        const res = await this.o.chat.generate({
          messages,
          schema: OUTPUT_SCHEMA,
          temperature: this.o.temperature,
          maxTokens: this.o.maxTokens,
          ...(this.o.samples > 1 ? { n: this.o.samples } : {}),
        });
        ({ text, parsed, parseError } = res.choices[0] ?? { text: "", parseError: "no choices" });
        others = res.choices.slice(1);
      } catch (e) {
        if (e instanceof EndpointFailedError) throw e;
        return { nextState: input.state, reward: 0, terminated: false, info: { failed: `model call failed: ${(e as Error).message}` } };
      }
      const checked = this.check(parseError ? { text, parseError } : { text, parsed }, input.state);
      if (checked.value) {
        const { reasoning, nextState, reward, terminated } = checked.value;
        // The other samples that are valid steps too: how much they disagree with this one is u.
        const valid = others.map((c) => this.check(c, input.state).value).filter((v) => v !== undefined);
        const u = valid.length > 0 ? this.disagreement(checked.value, valid) : undefined;
        return { reasoning, nextState, reward, terminated, info: { attempts: attempt + 1, ...(u !== undefined ? { u, samples: valid.length + 1 } : {}) } };
      }
      lastError = checked.error;
      // Ask again, showing the model what was wrong with its answer.
      messages.push(
        { role: "assistant", content: cut(text, 2000) },
        { role: "user", content: `That answer was invalid (${lastError}). Reply with the JSON object only.` },
      );
    }
    return {
      nextState: input.state,
      reward: 0,
      terminated: false,
      info: { failed: `invalid model output after ${this.o.maxAttempts} attempts: ${lastError}` },
    };
  }
}
