import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chatServer } from "../src/testing/index.ts";
import { runAsync, runInProcess } from "./helpers.ts";

/** A synthetic WebShop episode as a run stores it: search, open an item, buy. */
const episode = (i: number, instruction: string) => {
  const start = `page: search\ninstruction: ${instruction}\n[search box]`;
  const results = `page: results\ninstruction: ${instruction}\n[< prev] [next >]\n[b0000000${i}a] item ${i} | $${10 + i}.00`;
  const item = `page: item\ninstruction: ${instruction}\n[< prev]\nitem ${i} | $${10 + i}.00\n[buy now]`;
  const steps = [
    { observation: start, action: `search[${instruction}]`, reward: 0, next_observation: results, terminated: false, truncated: false },
    { observation: results, action: `click[b0000000${i}a]`, reward: 0, next_observation: item, terminated: false, truncated: false },
    { observation: item, action: "click[buy now]", reward: 0.5, next_observation: "page: done\nreward: 0.5", terminated: true, truncated: false },
  ];
  return {
    env: "webshop",
    task: { id: `webshop:${i}`, instruction },
    steps,
    total_reward: 0.5,
    success: false,
    source: "synthetic",
    policy: "neural@x#1",
    created_at: new Date(0).toISOString(),
  };
};

test("audit --judge: a chat model over the OpenAI protocol scores a file's synthetic trajectories; a garbage answer is counted as failed", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-judge-cli-"));
  const file = join(dir, "synthetic.jsonl");
  const real = { ...episode(9, "a real one"), source: "real" };
  writeFileSync(file, [episode(1, "red mug"), episode(2, "blue socks"), episode(3, "GARBAGE lamp"), real].map((t) => JSON.stringify(t)).join("\n") + "\n");
  const server = await chatServer({
    reply: (body) =>
      (body.messages as { content: string }[])[1].content.includes("Task: GARBAGE")
        ? "{not json"
        : '{"consistency": 9, "diversity": 5, "informativeness": 6, "hallucination": 2, "rationale": "ok"}',
  });
  try {
    // The file's binary run of audit --judge; the --json rerun and the refusal run in this process (which does
    // not block: the server here answers).
    const r = await runAsync(["audit", "--judge", `${server.url}#judge`, "--trajectories", file, "--cache", join(dir, "cache.db")]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /LLM judge .*#judge on 3 of 3 synthetic webshop trajectories/);
    assert.match(r.stdout, /consistency\s+9\.00 ± 0\.00/);
    assert.match(r.stdout, /hallucination \(lower is better\)\s+2\.00/);
    assert.match(r.stdout, /judged \/ failed\s+2 \/ 1/);
    assert.match(r.stdout, /first failure .*invalid judge answer after 3 attempts/);
    // The real trajectory is not judged; WebShop's state format is in the prompt.
    assert.ok(server.requests.every((b) => !(b.messages as { content: string }[])[1].content.includes("a real one")));
    assert.match((server.requests[0].messages as { content: string }[])[0].content, /search\[<query>\]/);
    const json = await runInProcess([
      "audit",
      "--judge",
      `${server.url}#judge`,
      "--trajectories",
      file,
      "--json",
      "--sample",
      "2",
      "--cache",
      join(dir, "cache.db"),
    ]);
    assert.equal(json.status, 0, json.stderr);
    const report = JSON.parse(json.stdout);
    assert.equal(report.trajectories, 2);
    assert.equal(report.available, 3);
    assert.equal(report.judged + report.failed, 2);
    // Every answer garbage: no score at all is an error, not a table of dashes.
    const garbage = join(dir, "garbage.jsonl");
    writeFileSync(garbage, `${JSON.stringify(episode(4, "GARBAGE chair"))}\n`);
    const none = await runInProcess(["audit", "--judge", `${server.url}#judge`, "--trajectories", garbage]);
    assert.equal(none.status, 2, none.stderr);
    assert.match(
      none.stderr,
      new RegExp(
        `^error: the judge ${server.url}#judge judged none of the 1 trajectories: every call failed \\(first: .*invalid judge answer after 3 attempts.*\\); check the judge model and its endpoint\\n$`,
      ),
    );
    const both = await runInProcess(["audit", "--judge", `${server.url}#judge`, "--trajectories", file, "--buffer", join(dir, "b.db")]);
    assert.equal(both.status, 2);
    assert.match(both.stderr, /one of --run DIR, --buffer B.db or --trajectories/);
  } finally {
    await server.close();
  }
});
