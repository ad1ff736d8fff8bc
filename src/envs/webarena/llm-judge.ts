import type { ChatModel } from "../../llm/index.ts";
import type { AnswerJudge } from "./string-match.ts";

/**
 * WebArena's LLM grading (helper_functions.py: llm_fuzzy_match, llm_ua_match) over any chat model:
 * the same inputs (question, reference, answer), the same decision words and the same reading of the
 * reply — fuzzy: "incorrect" or "partially correct" anywhere is 0, else "correct" is 1; unachievable:
 * "different" is 0, else "same" is 1. The prompt wording is ours. WebArena graded with
 * gpt-4-1106-preview at temperature 0 and 768 tokens at most; which model grades here is the user's
 * choice (scores move with it). A reply with neither word is an error (WebArena asserts), so a broken
 * grader never passes or fails a task silently.
 */
export class LlmAnswerJudge implements AnswerJudge {
  constructor(
    private readonly chat: ChatModel,
    private readonly opts: { maxTokens?: number } = {},
  ) {}

  private async ask(prompt: string): Promise<string> {
    const res = await this.chat.generate({
      messages: [
        { role: "system", content: "You are a helpful assistant" },
        { role: "user", content: prompt },
      ],
      temperature: 0,
      maxTokens: this.opts.maxTokens ?? 768,
    });
    return (res.choices[0]?.text ?? "").toLowerCase();
  }

  async fuzzy(pred: string, reference: string, question: string): Promise<number> {
    const reply = await this.ask(
      [
        "Grade a student's answer to a question for a teacher. The student may phrase it differently; what counts is whether it means the same as the reference answer.",
        `question: ${question}`,
        `reference answer: ${reference}`,
        "The string 'N/A' anywhere here is a special value meaning 'not achievable'.",
        `student answer: ${pred}`,
        "End your judgement with one of: correct, incorrect, partially correct.",
      ].join("\n"),
    );
    if (reply.includes("partially correct") || reply.includes("incorrect")) return 0;
    if (reply.includes("correct")) return 1;
    throw new JudgeReplyError("fuzzy_match", reply);
  }

  async unachievable(pred: string, reference: string, question: string): Promise<number> {
    const reply = await this.ask(
      [
        `task: ${question}`,
        `actual unachievable reason: ${reference}`,
        `reported unachievable reason: ${pred}`,
        "The task above cannot be done, for the reason under 'actual unachievable reason'. Someone tried it, failed, and gave the reason under 'reported unachievable reason'. " +
          "Compare the two: if the reported reason agrees with the actual one, even implicitly, answer 'same'; otherwise answer 'different'.",
      ].join("\n"),
    );
    if (reply.includes("different")) return 0;
    if (reply.includes("same")) return 1;
    throw new JudgeReplyError("ua_match", reply);
  }
}

/** The grader's reply had none of the decision words. */
export class JudgeReplyError extends Error {
  constructor(what: string, reply: string) {
    super(`the ${what} grader's reply has no verdict (${JSON.stringify(reply.slice(0, 120))})`);
  }
}
