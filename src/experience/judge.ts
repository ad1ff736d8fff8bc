import { z } from "zod";
import type { Trajectory } from "../core/index.ts";
import { EndpointFailedError, type ChatMessage, type ChatModel } from "../llm/index.ts";

/** The judge's four dimensions, each scored 1–10. Hallucination is the one where lower is better. */
export const JUDGE_DIMENSIONS = ["consistency", "diversity", "informativeness", "hallucination"] as const;
export type JudgeDimension = (typeof JUDGE_DIMENSIONS)[number];

export interface JudgeOptions {
  chat: ChatModel;
  /** The env's state format and action grammar (its abstraction's profile), so the judge knows what a state should look like. */
  profile?: string;
  /** Other trajectories of the sample shown (one line each) for the diversity score. @default 4 */
  context?: number;
  /** Calls per trajectory before it counts as failed (the first, then repairs). @default 3 */
  maxAttempts?: number;
  /** Steps shown at most (the first and the last ones; the middle is summarised). @default 12 */
  maxSteps?: number;
  /** States in the prompt are cut to this many characters. @default 1200 */
  stateChars?: number;
  /** @default 0 */
  temperature?: number;
  /** @default 800 */
  maxTokens?: number;
  /** Called as each trajectory is judged or fails. */
  onJudged?: (done: number, total: number) => void;
}

export type JudgeScores = Record<JudgeDimension, number> & { rationale: string };

export interface JudgeReport {
  model: string;
  /** Trajectories given to the judge. */
  trajectories: number;
  /** Judged with a valid answer. */
  judged: number;
  /** No valid answer after the repairs (or a failed call): counted, not scored. */
  failed: number;
  /** Mean of each dimension over the judged trajectories (null: none judged). */
  mean: Record<JudgeDimension, number | null>;
  /** Standard deviation (population) of each dimension over the judged trajectories. */
  sd: Record<JudgeDimension, number | null>;
  /** Per trajectory, in the order given: its task, and its scores or why it failed. */
  results: { task: string; scores?: JudgeScores; error?: string }[];
  firstFailure?: string;
  /** LLM tokens used, where the backend counts them (cache hits cost none). */
  tokens: number;
}

const RUBRIC = `Score each dimension with an integer from 1 to 10:
- consistency: do the states follow from one another and from the actions, in the environment's rules? (10: every transition is what the environment would do; 1: states change at random or contradict earlier ones)
- diversity: how different is this trajectory from the other trajectories shown (tasks, pages, products, action sequences), and how varied are its own states? (10: new ground, nothing repeated; 1: a near copy of another trajectory, or one state repeated)
- informativeness: how much can an agent learn from it: meaningful progress toward the task, rewards that tell success from failure? (10: every step teaches something and the reward is telling; 1: nothing happens or the reward says nothing)
- hallucination: how much content is invented or impossible: items, options, prices or pages that could not exist there, or a reward that the states do not justify? (1: none; 10: most of it) — lower is better for this one.`;

const Output = z.object({
  consistency: z.number(),
  diversity: z.number(),
  informativeness: z.number(),
  hallucination: z.number(),
  rationale: z.string(),
});
const OUTPUT_SCHEMA = { name: "trajectory_judgement", schema: z.toJSONSchema(Output) as Record<string, unknown> };

const cut = (text: string, n: number) => (text.length > n ? `${text.slice(0, n)}\n…(cut)` : text);
const oneLine = (t: Trajectory) =>
  `task: ${cut(t.task.instruction, 160).replace(/\s+/g, " ")} | actions: ${t.steps
    .map((s) => s.action)
    .join(" → ")
    .slice(0, 400)} | return ${t.total_reward}`;

/**
 * The paper's evaluation of synthetic experience by a strong LLM (GPT-4o there; any chat model
 * here): each trajectory is scored 1–10 for consistency, diversity (against the other trajectories
 * shown), informativeness and hallucination (lower is better), with the rubric in the prompt and a
 * JSON answer. An answer that is not that JSON is repaired where the intent is clear (numbers as
 * strings, "7/10", {"score": 7}, a fenced block), else asked again with the error; after
 * `maxAttempts` the trajectory counts as failed, as does a failed call. It throws only when the chat
 * model's breaker trips (the endpoint is down, or answers kept failing on many trajectories).
 */
export class TrajectoryJudge {
  private readonly o: Required<Omit<JudgeOptions, "profile" | "onJudged">> & Pick<JudgeOptions, "profile" | "onJudged">;

  constructor(opts: JudgeOptions) {
    this.o = { context: 4, maxAttempts: 3, maxSteps: 12, stateChars: 1200, temperature: 0, maxTokens: 800, ...opts };
  }

  /** The prompt for one trajectory; `others` are the trajectories shown for diversity. */
  messages(t: Trajectory, others: readonly Trajectory[]): ChatMessage[] {
    const system = [
      "You are an expert judge of synthetic agent experience: trajectories that an environment model (an LLM, a learned network or a retrieval model) produced in place of the real environment, for training an agent with reinforcement learning.",
      ...(this.o.profile ? [`The environment:\n${this.o.profile}`] : []),
      RUBRIC,
      'Answer with JSON only: {"consistency": int, "diversity": int, "informativeness": int, "hallucination": int, "rationale": string (one or two sentences)}.',
    ].join("\n\n");
    const n = this.o.stateChars;
    const steps = t.steps;
    const max = this.o.maxSteps;
    const head = steps.length > max ? steps.slice(0, max - Math.floor(max / 3)) : steps;
    const tail = steps.length > max ? steps.slice(steps.length - Math.floor(max / 3)) : [];
    const show = (s: Trajectory["steps"][number], i: number) =>
      `--- step ${i + 1}\nstate:\n${cut(s.observation, n)}\naction: ${s.action}\nreward: ${s.reward}, ended: ${s.terminated || s.truncated}`;
    const lines = head.map((s, i) => show(s, i));
    if (tail.length > 0) {
      lines.push(
        `--- steps ${head.length + 1}–${steps.length - tail.length}: ${steps
          .slice(head.length, steps.length - tail.length)
          .map((s) => s.action)
          .join(" → ")}`,
      );
      lines.push(...tail.map((s, i) => show(s, steps.length - tail.length + i)));
    }
    const last = steps.at(-1);
    if (last) lines.push(`--- final state:\n${cut(last.next_observation, n)}`);
    const parts = [`Task: ${t.task.instruction}`, `Trajectory (${steps.length} steps, return ${t.total_reward}, success ${t.success}):\n${lines.join("\n")}`];
    if (others.length > 0) parts.push(`Other trajectories of the same sample (for diversity):\n${others.map((o, i) => `${i + 1}. ${oneLine(o)}`).join("\n")}`);
    parts.push("Score this trajectory.");
    return [
      { role: "system", content: system },
      { role: "user", content: parts.join("\n\n") },
    ];
  }

  /** Checks (and where the intent is clear, repairs) a parsed answer. */
  validate(parsed: unknown): { value?: JudgeScores; error?: string } {
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return { error: "the answer is not a JSON object" };
    const raw: Record<string, unknown> = {};
    // Keys in any case ("Consistency"), values as numbers, numeric strings ("7", "7/10") or {"score": 7}.
    for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) raw[k.toLowerCase().trim()] = v;
    for (const d of JUDGE_DIMENSIONS) {
      let v = raw[d];
      if (typeof v === "object" && v !== null && !Array.isArray(v) && "score" in v) v = (v as { score: unknown }).score;
      if (typeof v === "string") {
        const m = /^\s*(-?\d+(?:\.\d+)?)\s*(?:\/\s*10)?\s*$/.exec(v);
        if (m) v = Number(m[1]);
      }
      raw[d] = v;
    }
    if (raw.rationale === undefined) raw.rationale = "";
    const r = Output.safeParse(raw);
    if (!r.success) return { error: r.error.issues.map((i) => `${i.path.join(".") || "answer"}: ${i.message}`).join("; ") };
    for (const d of JUDGE_DIMENSIONS) {
      const v = r.data[d];
      if (!Number.isFinite(v) || v < 1 || v > 10) return { error: `${d} ${v} is not a score from 1 to 10` };
    }
    return { value: r.data };
  }

  /** Scores one trajectory (failed: `error`). */
  async judge(t: Trajectory, others: readonly Trajectory[]): Promise<{ scores?: JudgeScores; error?: string }> {
    const r = await this.attempt(t, others);
    const breaker = this.o.chat.breaker;
    if (r.error) breaker?.stepFailed(r.error, `${t.task.id}#${t.created_at}#${t.steps.length}`);
    else breaker?.stepSucceeded();
    return r;
  }

  private async attempt(t: Trajectory, others: readonly Trajectory[]): Promise<{ scores?: JudgeScores; error?: string }> {
    const messages = this.messages(t, others);
    let lastError = "";
    for (let attempt = 0; attempt < this.o.maxAttempts; attempt++) {
      let choice: { text: string; parsed?: unknown; parseError?: string };
      try {
        const res = await this.o.chat.generate({ messages, schema: OUTPUT_SCHEMA, temperature: this.o.temperature, maxTokens: this.o.maxTokens });
        choice = res.choices[0] ?? { text: "", parseError: "no choices" };
      } catch (e) {
        if (e instanceof EndpointFailedError) throw e;
        return { error: `judge call failed: ${(e as Error).message}` };
      }
      const checked = choice.parseError ? { error: choice.parseError } : this.validate(choice.parsed);
      if (checked.value) return { scores: checked.value };
      lastError = checked.error!;
      messages.push(
        { role: "assistant", content: cut(choice.text, 2000) },
        { role: "user", content: `That answer was invalid (${lastError}). Reply with the JSON object only.` },
      );
    }
    return { error: `invalid judge answer after ${this.o.maxAttempts} attempts: ${lastError}` };
  }

  /**
   * Scores every trajectory (concurrently, as the chat model's concurrency allows); trajectory i is
   * shown the `context` trajectories after it in the list (wrapping around) for its diversity.
   */
  async judgeAll(trajectories: readonly Trajectory[]): Promise<JudgeReport> {
    const n = trajectories.length;
    const k = Math.min(this.o.context, Math.max(0, n - 1));
    const tokens0 = this.tokens();
    let done = 0;
    const results = await Promise.all(
      trajectories.map(async (t, i) => {
        const others = Array.from({ length: k }, (_, j) => trajectories[(i + 1 + j) % n]);
        const r = await this.judge(t, others);
        this.o.onJudged?.(++done, n);
        return { task: t.task.id, ...r };
      }),
    );
    const judged = results.filter((r) => r.scores);
    const stat = (d: JudgeDimension) => {
      if (judged.length === 0) return { m: null, sd: null };
      const xs = judged.map((r) => r.scores![d]);
      const m = xs.reduce((a, x) => a + x, 0) / xs.length;
      return { m, sd: Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / xs.length) };
    };
    const stats = Object.fromEntries(JUDGE_DIMENSIONS.map((d) => [d, stat(d)])) as Record<JudgeDimension, { m: number | null; sd: number | null }>;
    const firstFailure = results.find((r) => r.error)?.error;
    return {
      model: this.o.chat.id,
      trajectories: n,
      judged: judged.length,
      failed: n - judged.length,
      mean: Object.fromEntries(JUDGE_DIMENSIONS.map((d) => [d, stats[d].m])) as JudgeReport["mean"],
      sd: Object.fromEntries(JUDGE_DIMENSIONS.map((d) => [d, stats[d].sd])) as JudgeReport["sd"],
      results,
      ...(firstFailure ? { firstFailure } : {}),
      tokens: this.tokens() - tokens0,
    };
  }

  private tokens(): number {
    const s = this.o.chat.stats;
    return s ? s.promptTokens + s.completionTokens : 0;
  }
}
