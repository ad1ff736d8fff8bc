import { z } from "zod";
import { isAbstractState, OUTCOME_REWARDS, type RewardSpec, type StateAbstraction } from "../core/index.ts";
import { EndpointFailedError, type ChatMessage, type ChatModel } from "../llm/index.ts";
import type { Demo, ExperienceModel, HistoryStep, PredictInput, Prediction } from "./experience-model.ts";

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
}

/** The structured output: the reasoning first, then the next state, reward and end. */
const Output = z.object({
  reasoning: z.string(),
  next_state: z.string(),
  reward: z.number(),
  terminated: z.boolean(),
});
const OUTPUT_SCHEMA = { name: "experience_step", schema: z.toJSONSchema(Output) as Record<string, unknown> };

const cut = (text: string, n: number) => (text.length > n ? `${text.slice(0, n)}\n…(cut)` : text);

/** The prompt's sentence on rewards, from the env's reward spec. */
function rewardRule({ min, max, dense }: RewardSpec): string {
  return dense
    ? `Rewards are dense: any step can earn a reward in [${min}, ${max}] (what the action gained, e.g. a score increase); most steps earn ${Math.max(min, Math.min(0, max))}.`
    : `Rewards are outcome-based: ${Math.max(min, Math.min(0, max))} for every step that does not end the episode; an ending step gets the task's score in [${min}, ${max}] (${max} only when the task is completed).`;
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

  constructor(opts: ReasoningModelOptions) {
    this.o = { recentSteps: 4, demos: 5, maxAttempts: 3, maxStateChars: 8000, promptStateChars: 3000, maxTokens: 1200, rewards: OUTCOME_REWARDS, ...opts };
    this.id = `reasoning:${opts.chat.id}`;
  }

  /** The prompt for one step (exposed for SFT data and tests). */
  messages({ task, history, state, action, demos }: PredictInput): ChatMessage[] {
    const n = this.o.promptStateChars;
    const system = [
      "You are the environment. Given the current state and the agent's action, predict what the environment shows next.",
      this.o.abstraction.profile,
      "Think step by step about what the action does in this state, then give the next state in exactly the same format as the states you are shown.",
      rewardRule(this.o.rewards),
      'Answer with JSON only: {"reasoning": string, "next_state": string, "reward": number, "terminated": boolean}.',
    ].join("\n\n");
    const parts = [`Task: ${task.instruction}`];
    if (history.length > 0) {
      const recent = history.slice(-this.o.recentSteps);
      const older = history.slice(0, history.length - recent.length);
      const lines = older.map((h: HistoryStep, i: number) => `${i + 1}. ${h.action} → ${h.nextState.split("\n")[0]}`);
      recent.forEach((h, i) => lines.push(`${older.length + i + 1}. state:\n${cut(h.state, n)}\naction: ${h.action}`));
      parts.push(`History (${history.length} steps):\n${lines.join("\n")}`);
    }
    const shown = demos.slice(0, this.o.demos);
    if (shown.length > 0) {
      parts.push(
        `Similar recorded transitions:\n${shown
          .map((d: Demo, i: number) => `--- ${i + 1} (similarity ${d.score.toFixed(2)})\nstate:\n${cut(d.state, n)}\naction: ${d.action}\nnext_state:\n${cut(d.nextState, n)}\nreward: ${d.reward}, terminated: ${d.terminated}`)
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
      try {
        const res = await this.o.chat.generate({ messages, schema: OUTPUT_SCHEMA, temperature: this.o.temperature, maxTokens: this.o.maxTokens });
        ({ text, parsed, parseError } = res.choices[0] ?? { text: "", parseError: "no choices" });
      } catch (e) {
        if (e instanceof EndpointFailedError) throw e;
        return { nextState: input.state, reward: 0, terminated: false, info: { failed: `model call failed: ${(e as Error).message}` } };
      }
      const checked: { value?: z.infer<typeof Output>; error?: string } = parseError ? { error: parseError } : this.validate(parsed);
      let nextState = "";
      if (checked.value) {
        nextState = this.o.abstraction.abstract(checked.value.next_state);
        // A state the env's format does not know (prose, an unknown page kind) is invalid output.
        if (!isAbstractState(this.o.abstraction, nextState)) checked.error = "next_state is not a state in this environment's format (see the states shown)";
      }
      if (checked.value && !checked.error) {
        const v = checked.value;
        const terminated = v.terminated || this.o.abstraction.isTerminal(nextState);
        // Outcome rewards: a step that does not end the episode has none, whatever the model said.
        const reward = terminated || this.o.rewards.dense ? v.reward : 0;
        return { reasoning: v.reasoning, nextState, reward, terminated, info: { attempts: attempt + 1 } };
      }
      lastError = checked.error!;
      // Ask again, showing the model what was wrong with its answer.
      messages.push({ role: "assistant", content: cut(text, 2000) }, { role: "user", content: `That answer was invalid (${lastError}). Reply with the JSON object only.` });
    }
    return { nextState: input.state, reward: 0, terminated: false, info: { failed: `invalid model output after ${this.o.maxAttempts} attempts: ${lastError}` } };
  }
}
