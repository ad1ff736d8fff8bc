import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OpenAIChatModel, EndpointFailedError } from "../llm/index.ts";
import { chatServer, makeTrajectory } from "../testing/index.ts";
import { TrajectoryJudge } from "./judge.ts";

const synthetic = (i: number, instruction?: string) => {
  const t = makeTrajectory(i, { source: "synthetic", task: `task-${i}` });
  return instruction ? { ...t, task: { ...t.task, instruction } } : t;
};
const userText = (body: Record<string, unknown>) => (body.messages as { role: string; content: string }[]).find((m) => m.role === "user")!.content;
const fast = { maxRetries: 0, backoffMs: 1 };

test("the LLM judge scores synthetic trajectories over the OpenAI protocol: repairs, a garbage answer counted as failed, means per dimension", async () => {
  // Answers by task: valid JSON; numbers as strings and "x/10" (repaired); garbage every time (fails).
  const server = await chatServer({
    reply: (body) => {
      const text = userText(body);
      if (text.includes("Task: GARBAGE")) return "I am sorry, I cannot rate this.";
      if (text.includes("Task: buy item 1"))
        return '```json\n{"Consistency": "6", "diversity": "4/10", "informativeness": {"score": 5}, "hallucination": 3}\n```';
      return JSON.stringify({ consistency: 8, diversity: 6, informativeness: 7, hallucination: 2, rationale: "plausible pages" });
    },
  });
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-judge-"));
  const chat = new OpenAIChatModel({ baseURL: server.url, model: "judge", cache: join(dir, "cache.db"), ...fast });
  try {
    const trajectories = [synthetic(0), synthetic(1), synthetic(2, "GARBAGE"), synthetic(3)];
    const judge = new TrajectoryJudge({ chat, profile: "Actions: click[<label>]", context: 2 });
    const r = await judge.judgeAll(trajectories);
    assert.equal(r.trajectories, 4);
    assert.equal(r.judged, 3);
    assert.equal(r.failed, 1);
    assert.match(r.results[2].error!, /invalid judge answer after 3 attempts/);
    assert.match(r.firstFailure!, /not JSON/);
    assert.equal(r.results[1].scores!.consistency, 6);
    assert.equal(r.results[1].scores!.diversity, 4);
    assert.equal(r.results[1].scores!.informativeness, 5);
    assert.ok(Math.abs(r.mean.consistency! - (8 + 6 + 8) / 3) < 1e-9);
    assert.ok(Math.abs(r.mean.hallucination! - (2 + 3 + 2) / 3) < 1e-9);
    assert.ok(r.tokens > 0);
    // 3 good calls, then the garbage one 3 times (each repair shows the model its answer and the problem).
    assert.equal(server.requests.length, 6);
    const repair = server.requests.find((b) => (b.messages as unknown[]).length === 4)!;
    assert.match((repair.messages as { content: string }[]).at(-1)!.content, /That answer was invalid/);
    // The prompt carries the rubric, the env's profile, the trajectory and others for diversity.
    const prompt = server.requests[0].messages as { content: string }[];
    assert.match(prompt[0].content, /consistency: .*diversity: .*informativeness: .*hallucination: /s);
    assert.match(prompt[0].content, /Actions: click/);
    assert.match(prompt[1].content, /Other trajectories of the same sample/);
    assert.ok(server.requests[0].response_format !== undefined, "structured output is asked for");
    // The response cache answers a second judgement of the same sample without a call (it keeps what the endpoint said, garbage too).
    const again = await judge.judgeAll(trajectories);
    assert.deepEqual(again.mean, r.mean);
    assert.equal(again.failed, 1);
    assert.equal(server.requests.length, 6);
    assert.ok(existsSync(join(dir, "cache.db")));
  } finally {
    chat.close();
    await server.close();
  }
});

test("the LLM judge stops with the endpoint's error when answers keep failing on many trajectories (the breaker), and on a dead endpoint", async () => {
  const server = await chatServer({ reply: () => "no" });
  const chat = new OpenAIChatModel({ baseURL: server.url, model: "judge", maxFailures: 3, ...fast });
  try {
    await assert.rejects(new TrajectoryJudge({ chat }).judgeAll(Array.from({ length: 6 }, (_, i) => synthetic(i))), (e) => e instanceof EndpointFailedError);
  } finally {
    await server.close();
  }
  const dead = new OpenAIChatModel({ baseURL: server.url, model: "judge", ...fast, timeoutMs: 2000 });
  await assert.rejects(new TrajectoryJudge({ chat: dead }).judgeAll([synthetic(0)]), (e) => e instanceof EndpointFailedError);
});
