import { FREE_TEXT_SLOT, InvalidConfigError } from "../core/index.ts";
import { EndpointFailedError } from "../llm/index.ts";
import type { ChatMessage, ChatModel } from "../llm/index.ts";
import type { ActOptions, Decision, Policy, PolicyInput } from "./policy.ts";

export interface LlmPolicyOptions {
  model: ChatModel;
  /** Sampling temperature; a greedy `act` uses 0. @default 0.7 */
  temperature?: number;
  maxTokens?: number;
  /** Model calls per step, the first included: a malformed or unlisted action is asked again. @default 2 */
  maxAttempts?: number;
  /** Most recent steps shown with their observations; older ones are summarised as a count. @default 6 */
  historySteps?: number;
  /** Replaces the opening role description; the action and reply formats are always added. */
  systemPrompt?: string;
  /** The environment's description for the prompt (e.g. a `StateAbstraction.profile`). */
  profile?: string;
}

/** What an LLM step keeps for training: the prompt and completion as the trainer will see them. */
export interface LlmStepRecord {
  /** The prompt of the accepted (or, on failure, the last) attempt. */
  messages: ChatMessage[];
  /** The raw reply to `messages`. */
  completion: string;
  /** Model calls made for this step. */
  attempts: number;
}

const DEFAULT_ROLE =
  "You are an agent acting in an environment to complete a task. At each step you see the task, the recent history, the current observation and the available actions, and you choose exactly one action.";
const REPLY_FORMAT = "Reply with\nThought: <reasoning>\nAction: <one action>";

/** The action of the last `Action:` line (markdown, backticks and quotes around it tolerated); null when there is none. */
export function parseActionLine(text: string): string | null {
  const lines = text.split(/\r?\n/);
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = /^[\s>#*_-]*action[\s*_]*:[\s*_]*(.*)$/i.exec(lines[i]);
    if (!m) continue;
    let rest = m[1];
    // "Action:" alone on its line, the action on the next.
    if (rest.trim() === "") rest = lines.slice(i + 1).find((l) => l.trim() !== "") ?? "";
    return cleanAction(rest);
  }
  return null;
}

function cleanAction(raw: string): string {
  let s = raw.trim();
  for (let prev = ""; prev !== s; ) {
    prev = s;
    s = s.replace(/^[*_`"'“”‘’]+|[*_`"'“”‘’.]+$/g, "").trim();
  }
  // Drop commentary after a bracketed action: "click[b07x] (the cheapest)".
  const bracketed = /^(\w[\w ]*?\s*\[.*\])/s.exec(s);
  return bracketed ? bracketed[1] : s;
}

const normalise = (s: string) =>
  s
    .trim()
    .replace(/\s+/g, " ")
    .replace(/\s*\[\s*/g, "[")
    .replace(/\s*\]/g, "]");

/**
 * Matches a parsed action to the listed ones: exactly; else ignoring case and spacing (returning the
 * listed spelling); else filling a template's `<query>` slot with non-empty text.
 */
export function matchAction(action: string, actions: readonly string[] | undefined): { action?: string; error?: string } {
  if (action.trim() === "") return { error: "the 'Action:' line is empty" };
  if (!actions || actions.length === 0) return { action: action.trim() };
  if (action.includes(FREE_TEXT_SLOT)) return { error: `'${action}' still contains ${FREE_TEXT_SLOT}: replace it with your own text` };
  if (actions.includes(action)) return { action };
  const wanted = normalise(action);
  const lower = wanted.toLowerCase();
  const same = actions.find((a) => !a.includes(FREE_TEXT_SLOT) && normalise(a).toLowerCase() === lower);
  if (same) return { action: same };
  for (const template of actions) {
    const t = normalise(template);
    const slot = t.indexOf(FREE_TEXT_SLOT);
    if (slot < 0) continue;
    const prefix = t.slice(0, slot);
    const suffix = t.slice(slot + FREE_TEXT_SLOT.length);
    if (wanted.length < prefix.length + suffix.length) continue;
    if (!lower.startsWith(prefix.toLowerCase()) || !lower.endsWith(suffix.toLowerCase())) continue;
    const text = wanted.slice(prefix.length, wanted.length - suffix.length).trim();
    if (text !== "") return { action: `${prefix}${text}${suffix}` };
  }
  return { error: `'${action}' is not one of the available actions` };
}

/**
 * A ReAct-style policy over any chat model: it prompts with the task, recent steps, the observation
 * and the listed actions, and takes the reply's last `Action:` line. Malformed output never throws:
 * the step is asked again, and after `maxAttempts` the decision carries `failed` (the env then treats
 * the action as an invalid no-op). With a model that has a breaker (a remote endpoint), a failed
 * call fails the step the same way and each step is reported to the breaker, which throws when the
 * endpoint cannot be reached or keeps failing; without one, errors of the model call propagate.
 */
export class LlmPolicy implements Policy<LlmStepRecord> {
  readonly name: string;
  private readonly o: Required<Omit<LlmPolicyOptions, "maxTokens" | "profile" | "systemPrompt">> & LlmPolicyOptions;

  constructor(opts: LlmPolicyOptions) {
    this.o = { ...opts, temperature: opts.temperature ?? 0.7, maxAttempts: opts.maxAttempts ?? 2, historySteps: opts.historySteps ?? 6 };
    if (!Number.isInteger(this.o.maxAttempts) || this.o.maxAttempts < 1)
      throw new InvalidConfigError(`maxAttempts must be a positive integer, got ${this.o.maxAttempts}`);
    if (!Number.isInteger(this.o.historySteps) || this.o.historySteps < 0)
      throw new InvalidConfigError(`historySteps must be an integer ≥ 0, got ${this.o.historySteps}`);
    this.name = `llm:${opts.model.id || "chat"}`;
  }

  private messages(input: PolicyInput): ChatMessage[] {
    const past = input.trace ?? [];
    const system = [this.o.systemPrompt ?? DEFAULT_ROLE];
    if (this.o.profile) system.push(`The environment:\n${this.o.profile}`);
    system.push(
      `Each action is written exactly as listed. A listed action containing ${FREE_TEXT_SLOT} (e.g. search[${FREE_TEXT_SLOT}]) takes any text of yours in place of ${FREE_TEXT_SLOT}. An action that is not listed is invalid and changes nothing.`,
      REPLY_FORMAT,
    );

    const parts = [`Task: ${input.task.instruction}`];
    const n = input.history.length;
    if (n > 0) {
      const from = Math.max(0, n - this.o.historySteps);
      const lines = [`History (${n} step${n === 1 ? "" : "s"}):`];
      if (from > 0) lines.push(`(${from} earlier step${from === 1 ? "" : "s"} not shown)`);
      for (let i = from; i < n; i++) {
        const s = past[i];
        if (s) lines.push(`Step ${i + 1} observation:\n${s.observation}`);
        const invalid = s ? s.invalid : i === n - 1 && input.info?.invalid;
        lines.push(`Step ${i + 1} action: ${input.history[i]}${invalid ? " (invalid: nothing changed)" : ""}`);
      }
      parts.push(lines.join("\n"));
    }
    parts.push(`Current observation:\n${input.observation}`);
    const actions = input.actions ?? [];
    parts.push(
      actions.length > 0
        ? `Available actions, one per line${actions.some((a) => a.includes(FREE_TEXT_SLOT)) ? ` (replace ${FREE_TEXT_SLOT} with your own text)` : ""}:\n${actions.join("\n")}`
        : "The environment lists no actions: write the action as the environment expects it.",
    );
    parts.push(REPLY_FORMAT);
    return [
      { role: "system", content: system.join("\n\n") },
      { role: "user", content: parts.join("\n\n") },
    ];
  }

  async act(input: PolicyInput, opts: ActOptions): Promise<Decision<LlmStepRecord>> {
    const breaker = this.o.model.breaker;
    const d = await this.attempt(input, opts);
    if (d.failed) breaker?.stepFailed(d.failed, input.task.id);
    else breaker?.stepSucceeded();
    return d;
  }

  private async attempt(input: PolicyInput, opts: ActOptions): Promise<Decision<LlmStepRecord>> {
    const messages = this.messages(input);
    const temperature = opts.greedy ? 0 : this.o.temperature;
    let completion = "";
    let parsed: string | null = null;
    let problem = "";
    for (let attempt = 1; attempt <= this.o.maxAttempts; attempt++) {
      if (attempt > 1) {
        messages.push(
          { role: "assistant", content: completion },
          {
            role: "user",
            content: `Your reply was invalid: ${problem}.${input.actions?.length ? " Choose one of the available actions listed above." : ""} ${REPLY_FORMAT}`,
          },
        );
      }
      // A seed from the episode's stream: a caching backend then replays a run exactly.
      const seed = opts.rng.randbelow(2 ** 31);
      let res;
      try {
        res = await this.o.model.generate({ messages, temperature, maxTokens: this.o.maxTokens, seed });
      } catch (e) {
        if (!this.o.model.breaker || e instanceof EndpointFailedError) throw e;
        return {
          action: parsed ?? "",
          logProb: NaN,
          record: { messages: [...messages], completion, attempts: attempt },
          failed: `model call failed: ${(e as Error).message}`,
        };
      }
      completion = res.choices[0]?.text ?? "";
      const action = parseActionLine(completion);
      if (action === null) {
        problem = "there is no 'Action:' line";
        continue;
      }
      parsed = action;
      const match = matchAction(action, input.actions);
      if (match.action !== undefined) {
        return { action: match.action, logProb: NaN, record: { messages: [...messages], completion, attempts: attempt } };
      }
      problem = match.error!;
    }
    return {
      action: parsed ?? "",
      logProb: NaN,
      record: { messages: [...messages], completion, attempts: this.o.maxAttempts },
      failed: `no valid action after ${this.o.maxAttempts} attempt${this.o.maxAttempts === 1 ? "" : "s"}: ${problem}`,
    };
  }
}
