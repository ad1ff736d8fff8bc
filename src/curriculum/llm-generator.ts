import { z } from "zod";
import type { Rng, Task, TaskGenerator } from "../core/index.ts";
import { extractJson, type ChatModel } from "../llm/index.ts";

const Output = z.object({ tasks: z.array(z.object({ instruction: z.string().min(8) })) });
const OUTPUT_SCHEMA = { name: "task_variations", schema: z.toJSONSchema(Output) as Record<string, unknown> };

export interface LlmTaskGeneratorOptions {
  /** The chat model (in DreamGym, the experience model's own). */
  chat: ChatModel;
  /** The env's profile (state format and action grammar), so variations keep its action types. */
  profile: string;
  /** Keeps only tasks some real instance can satisfy (e.g. a catalogue product matches). */
  feasible?: (task: Task) => boolean;
  temperature?: number;
  /** Calls per `generate` before giving up on malformed output. @default 2 */
  maxAttempts?: number;
}

/**
 * Task variation by an LLM, as in the paper: given a task the policy finds neither trivial nor
 * hopeless, write harder variations — new constraints, goals or context — that the same actions can
 * complete. Structured output (a JSON list), validated; malformed replies are retried, then count
 * as infeasible. Never throws for bad output; errors of the call itself propagate to the curriculum,
 * which counts them and goes on.
 */
export class LlmTaskGenerator implements TaskGenerator {
  readonly name = "llm";
  constructor(private readonly o: LlmTaskGeneratorOptions) {}

  async generate(parent: Task, count: number, rng: Rng): Promise<{ tasks: Task[]; infeasible: number }> {
    const messages = [
      {
        role: "system" as const,
        content: `You design training tasks for an agent in this environment:\n${this.o.profile}\n\nWrite harder variations of a task: add or change constraints (attributes, options, price bounds), goals or context, keeping them achievable with the same kinds of actions. Reply with JSON: {"tasks": [{"instruction": "..."}]}.`,
      },
      { role: "user" as const, content: `Task: ${parent.instruction}\n\nWrite ${count} harder variation${count === 1 ? "" : "s"}.` },
    ];
    for (let attempt = 0; attempt < (this.o.maxAttempts ?? 2); attempt++) {
      const res = await this.o.chat.generate({ messages, schema: OUTPUT_SCHEMA, temperature: this.o.temperature ?? 0.9, seed: rng.randbelow(2 ** 31) });
      const text = res.choices[0]?.text ?? "";
      const parsed = Output.safeParse(res.choices[0]?.parsed ?? extractJson(text).value);
      if (!parsed.success) continue;
      const candidates: Task[] = parsed.data.tasks.slice(0, count).map((t, i) => ({ id: `${parent.id}~llm${i}`, instruction: t.instruction.trim() }));
      const tasks = candidates.filter((t) => t.instruction !== parent.instruction.trim() && (this.o.feasible?.(t) ?? true));
      return { tasks, infeasible: count - tasks.length };
    }
    return { tasks: [], infeasible: count };
  }
}
