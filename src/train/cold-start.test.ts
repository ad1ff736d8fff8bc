// Cold start on WebArena-Lite: DreamGym's synthetic training with the reasoning experience model, no
// offline trajectories and no deployment, over a local server speaking the OpenAI protocol.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReplayBuffer } from "../buffer/index.ts";
import { InvalidConfigError } from "../core/index.ts";
import { chatServer } from "../testing/index.ts";
import { loadWebArenaTasks } from "../envs/webarena/index.ts";
import { train } from "./index.ts";

type Msg = { role: string; content: string };

/** An experience model's answers: a results page after typing, a product page after a click, the end at stop. */
function reply(body: Record<string, unknown>): string {
  const format = (body.response_format as { json_schema?: { name?: string } } | undefined)?.json_schema?.name;
  const messages = body.messages as Msg[];
  if (format === "task_variations")
    return JSON.stringify({ tasks: [{ instruction: "What are the top-5 best-selling products in Feb 2023, with their quantities?" }] });
  const action = /\nAction: (.*)$/.exec(messages.find((m) => m.role === "user")!.content)?.[1] ?? "";
  if (action.startsWith("stop"))
    return JSON.stringify({
      reasoning: "the agent answered; the answer does not name the products",
      next_state: "url: __SHOPPING_ADMIN__/\ntitle: Dashboard / Magento Admin",
      reward: 0,
      terminated: true,
    });
  return JSON.stringify({
    reasoning: "the click opens the Reports menu",
    next_state:
      'url: __SHOPPING_ADMIN__/reports/report_sales/bestsellers/\ntitle: Bestsellers Report / Reports / Magento Admin\n[1] link "Dashboard"\n[2] textbox "From"\n[3] textbox "To"\n[4] button "Show Report"\ntext "Impulse Duffle | 12"',
    reward: 0,
    terminated: false,
  });
}

test("dreamgym --cold-start --synthetic-only on webarena: iterations complete, prompts carry the task and the site profile, the buffer grows from empty", async () => {
  const server = await chatServer({ reply });
  const dir = mkdtempSync(join(tmpdir(), "webarena-cold-"));
  try {
    const out = join(dir, "run");
    const summary = await train(out, {
      env: "webarena",
      mode: "dreamgym",
      coldStart: true,
      syntheticOnly: true,
      experience: `${server.url}#cold-model`,
      budget: 40,
      tasksPerIteration: 2,
      rolloutsPerTask: 2,
      concurrency: 2,
      maxSteps: 4,
      seed: 3,
      checkpointEvery: 1,
      curriculum: { enabled: true },
      policy: { dim: 4096, hidden: 8 },
    });
    assert.ok(summary.iterations >= 2, `iterations ${summary.iterations}`);
    assert.equal(summary.realInteractions, 0);
    assert.ok(summary.syntheticInteractions >= 40);
    assert.equal(summary.final.tasks, 0, "no evaluation: synthetic only");
    assert.equal(summary.auditInteractions, 0);

    const steps = server.requests.filter(
      (r) => (r.response_format as { json_schema?: { name?: string } } | undefined)?.json_schema?.name === "experience_step",
    );
    assert.ok(steps.length >= 40);
    const lite = new Map(loadWebArenaTasks("lite").map((t) => [t.instruction, t]));
    const first = steps[0].messages as Msg[];
    // The system prompt: the web meta-representation and every site's profile.
    assert.match(first[0].content, /\[id\] role "text"/);
    assert.match(first[0].content, /shopping \(One Stop Market, a Magento 2 storefront/);
    assert.match(first[0].content, /gitlab \(a GitLab instance/);
    assert.match(first[0].content, /stop \[answer\]/);
    // The user message: a WebArena-Lite task and its site's start page as the state.
    const instruction = /^Task: (.*)$/m.exec(first[1].content)![1];
    const task = lite.get(instruction);
    assert.ok(task, `a Lite task: ${instruction}`);
    assert.match(first[1].content, new RegExp(`Current state:\\nurl: ${task.start_url.replace(/[$()*+.?[\\\]^{|}]/g, "\\$&")}`));
    assert.doesNotMatch(first[1].content, /Similar recorded transitions/, "cold: nothing to retrieve at the first step");
    // Later steps are grounded in the synthetic episodes the run stored.
    assert.ok(
      steps.some((s) => (s.messages as Msg[])[1].content.includes("Similar recorded transitions")),
      "the buffer grew and grounds later steps",
    );
    const buffer = ReplayBuffer.open(join(out, "buffer.db"), { readonly: true });
    try {
      assert.equal(buffer.count({ env: "webarena", source: "real" }), 0);
      assert.ok(buffer.count({ env: "webarena", source: "synthetic" }) > 0);
    } finally {
      buffer.close();
    }
    assert.ok(existsSync(join(out, "checkpoints", "latest.json")));
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("cold start and synthetic-only are explicit: each missing piece is one clear error, and nothing is written", async () => {
  const dir = mkdtempSync(join(tmpdir(), "webarena-cold-"));
  try {
    const base = { env: "webarena", mode: "dreamgym" as const, experience: "http://127.0.0.1:9/v1#m" };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ syntheticOnly: true }, /needs a buffer of offline webarena trajectories .*or --cold-start with a reasoning experience model/],
      [{ syntheticOnly: true, coldStart: true, experience: "default" }, /--cold-start needs a reasoning experience model/],
      [{ syntheticOnly: true, coldStart: true, buffer: join(dir, "b.db") }, /--cold-start starts from an empty buffer: drop --buffer/],
      [{ coldStart: true, mode: "real" }, /--cold-start applies to the synthetic modes/],
      [{ syntheticOnly: true, mode: "s2r", realBudget: 10, coldStart: true }, /--synthetic-only .* needs --mode dreamgym/],
    ];
    for (const [extra, want] of cases) {
      const out = join(dir, "run");
      await assert.rejects(train(out, { ...base, ...extra }), (e: unknown) => e instanceof InvalidConfigError && want.test(e.message), JSON.stringify(extra));
      assert.equal(existsSync(out), false);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("without --synthetic-only, webarena with no deployment stops before it starts, saying what is missing", async () => {
  const server = await chatServer({ reply });
  const dir = mkdtempSync(join(tmpdir(), "webarena-cold-"));
  try {
    await assert.rejects(
      train(join(dir, "run"), { env: "webarena", mode: "dreamgym", coldStart: true, experience: `${server.url}#m` }),
      /webarena: no site of a deployment given.*--mode dreamgym --synthetic-only/,
    );
    assert.equal(existsSync(join(dir, "run")), false);
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
