import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readJsonlAll, type Trajectory } from "../core/index.ts";
import { runEpisode } from "../envs/index.ts";
import { OraclePolicy, WebShopEnv, webshopAbstraction } from "../envs/webshop/index.ts";
import { OpenAIChatModel } from "../llm/index.ts";
import { chatServer } from "../testing/index.ts";
import { buildSftData, isValTask } from "./sft-data.ts";

const env = new WebShopEnv({ split: "train" });
const abs = webshopAbstraction(env.catalogue);
const oracle = new OraclePolicy(env);
const trajectories: Trajectory[] = [];
for (const task of env.tasks().slice(0, 24)) trajectories.push(await runEpisode(env, oracle, { envName: "webshop", task }));
const steps = trajectories.reduce((n, t) => n + t.steps.length, 0);

type Example = { key: string; task: string; split: string; messages: { role: string; content: string }[] };

test("SFT data: one example per transition, reasoning first, split by task, resumable after a kill", async () => {
  const s = await chatServer({ reply: () => "Searching the instruction lists matching products, so the results page follows." });
  const out = mkdtempSync(join(tmpdir(), "dreamgym-sft-"));
  try {
    const teacher = new OpenAIChatModel({ baseURL: s.url, model: "teacher", backoffMs: 1 });
    const first = await buildSftData({ teacher, abstraction: abs, trajectories, outDir: out, valFraction: 0.25, concurrency: 4 });
    assert.equal(first.examples, steps);
    assert.equal(first.train + first.val, steps);
    assert.ok(first.val > 0 && first.train > 0);
    assert.equal(s.requests.length, steps);
    const train = await readJsonlAll<Example>(join(out, "train.jsonl"));
    const val = await readJsonlAll<Example>(join(out, "val.jsonl"));
    const trainTasks = new Set(train.map((e) => e.task));
    assert.ok(
      val.every((e) => !trainTasks.has(e.task)),
      "no task in both splits",
    );
    assert.ok(val.every((e) => isValTask(e.task, 0.25)));
    const e = train[0];
    assert.deepEqual(
      e.messages.map((m) => m.role),
      ["system", "user", "assistant"],
    );
    const answer = JSON.parse(e.messages[2].content);
    assert.deepEqual(Object.keys(answer), ["reasoning", "next_state", "reward", "terminated"]);
    assert.match(answer.reasoning, /results page follows/);
    assert.ok(answer.next_state.startsWith("page: "));
    assert.ok(e.messages[1].content.includes("Current state:\npage: "), "the student's prompt is the reasoning model's");

    // Resume: nothing new to pay for.
    const again = await buildSftData({ teacher, abstraction: abs, trajectories, outDir: out, valFraction: 0.25 });
    assert.deepEqual([again.examples, again.skipped], [0, steps]);
    assert.equal(s.requests.length, steps);

    // A build killed mid-write leaves a torn last line: that example is built again, only that one.
    const file = join(out, "train.jsonl");
    const text = readFileSync(file, "utf8");
    writeFileSync(file, text.slice(0, text.length - 40));
    const resumed = await buildSftData({ teacher, abstraction: abs, trajectories, outDir: out, valFraction: 0.25 });
    assert.deepEqual([resumed.examples, resumed.skipped], [1, steps - 1]);
    assert.equal(s.requests.length, steps + 1);
    const repaired = await readJsonlAll<Example>(file); // every line parses again
    assert.equal(repaired.length, train.length);
    // The split cannot change on resume.
    await assert.rejects(buildSftData({ teacher, abstraction: abs, trajectories, outDir: out, valFraction: 0.5 }), /built with a validation share of 0.25/);

    // Lines that are not examples (garbage, a foreign record) go on resume; the examples stay.
    writeFileSync(file, `not json\n${readFileSync(file, "utf8")}{"note":"foreign"}\n\u0000\u0001binary\n`);
    const cleaned = await buildSftData({ teacher, abstraction: abs, trajectories, outDir: out, valFraction: 0.25 });
    assert.deepEqual([cleaned.examples, cleaned.dropped], [0, 3]);
    const kept = await readJsonlAll<Example>(file);
    assert.equal(kept.length, train.length);
    assert.ok(kept.every((x) => typeof x.key === "string" && Array.isArray(x.messages)));
  } finally {
    await s.close();
  }
});
