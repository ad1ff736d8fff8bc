// `dreamgym train --mode dreamgym --env alfworld --experience <endpoint>` end to end, against the
// local OpenAI-protocol server. The "model" behind it answers with the real game's next state (it
// replays the episode line of the prompt in ALFWorld), and now and then with malformed output.
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReplayBuffer } from "../src/buffer/index.ts";
import { AlfWorldEnv, AlfWorldReplay, alfworldAbstraction, parseAlfState } from "../src/envs/alfworld/index.ts";
import { parseEpisodeBlock } from "../src/experience/index.ts";
import { chatServer } from "../src/testing/index.ts";
import { run, runAsync, runInProcess } from "./helpers.ts";

const root = mkdtempSync(join(tmpdir(), "dreamgym-alf-llm-"));
const seed = join(root, "seed.db");
const tasks = new Map(new AlfWorldEnv({ split: "valid_train" }).tasks().map((t) => [t.id, t]));

before(async () => {
  const c = await runInProcess(["collect", "--env", "alfworld", "--policy", "expert", "--episodes", "6", "--out", join(root, "expert.jsonl")]);
  assert.equal(c.status, 0, c.stderr);
  const i = await runInProcess(["buffer", "import", join(root, "expert.jsonl"), "--abstract", "--buffer", seed]);
  assert.equal(i.status, 0, i.stderr);
});

/** The real game as an experience model: the next state, reward and end of the prompt's episode, as JSON. */
function realGame() {
  const replay = new AlfWorldReplay({ split: "valid_train" });
  return async (body: Record<string, unknown>): Promise<string> => {
    const user = (body.messages as { role: string; content: string }[]).find((m) => m.role === "user")!.content;
    const episode = parseEpisodeBlock(user);
    const task = episode ? tasks.get(episode.task) : undefined;
    if (!episode || !task) return "I do not know this game.";
    const r = await replay.play(task, episode.actions);
    return JSON.stringify({ reasoning: "as the game goes", next_state: r.state ?? "Nothing happens.", reward: r.reward, terminated: r.terminated });
  };
}

const trainArgs = (url: string, out: string) => [
  "train",
  "--mode",
  "dreamgym",
  "--env",
  "alfworld",
  "--experience",
  `${url}#tiny`,
  "--buffer",
  seed,
  "--budget",
  "40",
  "--tasks-per-iter",
  "2",
  "--group",
  "2",
  "--concurrency",
  "2",
  "--eval-every",
  "0",
  "--final-eval-tasks",
  "2",
  "--set",
  "maxSteps=10",
  "--set",
  "policy.dim=1024",
  "--seed",
  "3",
  "--out",
  out,
];

test("train --mode dreamgym --env alfworld over an endpoint: ALFWorld prompts, synthetic episodes listing the real game's commands, malformed output repaired or retried", async () => {
  const game = realGame();
  // Every 4th answer is malformed in one of three ways; the retry (the next request) is the game's.
  const bad = [
    () => "The agent walks to the cabinet and sees a mug.",
    () => JSON.stringify({ reasoning: "", next_state: "task: x\nat: x\nholding: nothing\nobservation: hm\nactions:", reward: 0, terminated: false }),
    () => JSON.stringify({ reasoning: "", next_state: "page: results\ninstruction: x", reward: 0, terminated: false }),
  ];
  let n = 0;
  const s = await chatServer({ reply: async (body) => (++n % 4 === 0 ? bad[(n / 4) % 3]() : game(body)) });
  try {
    const out = join(root, "run");
    const r = await runAsync(trainArgs(s.url, out));
    assert.equal(r.status, 0, r.stderr);
    const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8")) as { syntheticInteractions: number; realInteractions: number };
    assert.ok(summary.syntheticInteractions >= 40 && summary.realInteractions === 0, JSON.stringify(summary));

    // The prompts: ALFWorld's profile and rules, its states.
    const prompts = s.requests.map((q) => q.messages as { role: string; content: string }[]);
    assert.ok(prompts.length >= 40);
    for (const [system, user] of prompts) {
      assert.ok(system.content.includes(alfworldAbstraction.profile) && system.content.includes(alfworldAbstraction.rewardRule!));
      assert.match(user.content, /\nCurrent state:\ntask: [^\n]+\nat: [^\n]+\nholding: [^\n]+\nobservation: [^\n]*\nactions:\n/);
    }
    const repairs = prompts.filter((m) => m.some((x) => x.content.startsWith("That answer was invalid")));
    assert.ok(repairs.length > 0, "malformed answers are sent back with their error");

    // The synthetic episodes the run kept: every state lists exactly the real game's commands there.
    const buffer = ReplayBuffer.open(join(out, "buffer.db"), { readonly: true });
    const replay = new AlfWorldReplay({ split: "valid_train" });
    let steps = 0;
    try {
      const synthetic = [...buffer.trajectories({ source: "synthetic" })].filter((t) => t.source === "synthetic");
      assert.ok(synthetic.length >= 4, `${synthetic.length} synthetic episodes`);
      for (const t of synthetic) {
        for (const [i, st] of t.steps.entries()) {
          const next = parseAlfState(st.next_observation);
          assert.ok(next && next.actions.length > 0, st.next_observation);
          const real = await replay.play(
            tasks.get(t.task.id)!,
            t.steps.slice(0, i + 1).map((x) => x.action),
          );
          assert.equal(st.next_observation, real.state, `${t.task.id} step ${i}`);
          assert.equal(st.reward, real.reward);
          steps++;
        }
      }
    } finally {
      buffer.close();
    }
    assert.ok(steps >= 20, `${steps} synthetic steps checked`);
  } finally {
    await s.close();
  }
});

test("an endpoint whose every answer is malformed stops train on ALFWorld: exit 2, one line", async () => {
  const s = await chatServer({ reply: () => "The agent looks around the room." });
  try {
    const out = join(root, "garbage");
    const r = await runAsync([...trainArgs(s.url, out), "--max-failures", "2"]);
    assert.equal(r.status, 2, r.stderr);
    const lines = r.stderr.trim().split("\n");
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], new RegExp(`^error: LLM endpoint ${s.url}/chat/completions .*invalid model output after 3 attempts`));
    assert.match(lines[0], /the run stopped, checkpointed at iteration 0: continue it with dreamgym train --resume /);
    assert.ok(existsSync(join(out, "config.json")));
  } finally {
    await s.close();
  }
});
