// The learned experience model on a free-text env (the vault example): what it predicts must not
// contradict its own data. A policy trained on it finds every step where it does (issue 31: on vault,
// most synthetic chest-openings failed for real).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
// From the package, as the example itself imports it.
import { createEnv, createPolicy, ReplayBuffer, runEpisode, trainLearnedModel } from "dreamgym";
import { abstractTrajectory, type HistoryStep, type Trajectory } from "dreamgym/core";
import { envTasks, syntheticSupport } from "dreamgym/envs";
import { retrieveDemos } from "dreamgym/experience";
import "../examples/vault/vault.ts";

// The pipeline's offline data (docs/byo-env.md): the expert and two wanderers on the 200 training
// layouts, as abstract states; a learned model trained on them (fewer members and epochs than the CLI's).
const world = (async () => {
  const env = createEnv("vault", { split: "train" });
  const { abstraction, rewards } = syntheticSupport("vault", env);
  const played: Trajectory[] = [];
  for (const [policy, seed] of [
    ["expert", 0],
    ["wander", 1],
    ["wander", 2],
  ] as const)
    for (const [i, task] of envTasks("vault", env).entries())
      played.push(
        abstractTrajectory(
          await runEpisode(env, createPolicy("vault", policy, env, { seed: seed * 1000 + i }), { envName: "vault", task, seed: i }),
          abstraction,
        ),
      );
  await env.close();
  const buffer = ReplayBuffer.open(join(mkdtempSync(join(tmpdir(), "dreamgym-vault-fidelity-")), "b.db"));
  await buffer.appendTrajectories(played, { seed: true });
  const { model } = trainLearnedModel(buffer, { abstraction, rewards, members: 3, epochs: 6 });
  return { abstraction, buffer, played, model };
})();

test("the learned model pays and ends as every recorded step of a command in a state did: a chest opens with the key, and only with it (vault)", async () => {
  const { abstraction, buffer, played, model } = await world;
  // Every outcome the data recorded of each (state, command).
  const outcomes = new Map<string, Set<string>>();
  for (const t of played)
    for (const s of t.steps) {
      const key = `${s.observation}\t${s.action}`;
      outcomes.set(key, (outcomes.get(key) ?? new Set()).add(JSON.stringify([s.reward, s.terminated])));
    }
  // Each recorded step, with the history it had, where its (state, command) always did the same.
  const wrong = new Map<string, number>();
  let checked = 0;
  let locked = 0;
  for (const t of played) {
    const history: HistoryStep[] = [];
    for (const s of t.steps) {
      const seen = outcomes.get(`${s.observation}\t${s.action}`)!;
      if (seen.size === 1) {
        const demos = await retrieveDemos(
          buffer,
          abstraction,
          { state: s.observation, action: s.action },
          {
            k: 5,
            exact: model.exactDemos(s.observation),
            preferTask: t.task.id,
            realOnly: true,
          },
        );
        const p = await model.predict({ task: t.task, history, state: s.observation, action: s.action, demos });
        const kind = `${s.action}: predicted ${p.reward}${p.terminated ? " (ends)" : ""}, recorded ${s.reward}${s.terminated ? " (ends)" : ""}`;
        if (p.reward !== s.reward || p.terminated !== s.terminated) wrong.set(kind, (wrong.get(kind) ?? 0) + 1);
        checked++;
        if (s.action === "open chest" && /You see: [^.]*chest/.test(s.observation) && !/You carry: [^.]*key/.test(s.observation)) locked++;
      }
      history.push({ state: s.observation, action: s.action, nextState: s.next_observation, reward: s.reward });
    }
  }
  assert.deepEqual(Object.fromEntries(wrong), {}, `of ${checked} recorded steps`);
  assert.ok(checked > 5000, `${checked} recorded steps checked`);
  assert.ok(locked > 20, `${locked} locked chests among them`);
});
