import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { ReplayBuffer } from "../buffer/index.ts";
import { AlfWorldEnv, AlfWorldExpert, alfworldAbstraction } from "../envs/alfworld/index.ts";
import { runEpisode } from "../envs/index.ts";
import { abstractTrajectory } from "../experience/index.ts";
import { train } from "./train.ts";

test("bad input: an ALFWorld buffer used for WebShop, or the reverse, is refused naming both envs", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-bufenv-"));
  const alf = ReplayBuffer.open(join(dir, "alf.db"));
  const env = new AlfWorldEnv({ split: "valid_train" });
  const task = env.tasks()[0];
  await alf.appendTrajectories([abstractTrajectory(await runEpisode(env, new AlfWorldExpert(env), { envName: "alfworld", task }), alfworldAbstraction)], {
    seed: true,
  });
  alf.close();
  await assert.rejects(
    train(join(dir, "run1"), { env: "webshop", mode: "dreamgym", buffer: join(dir, "alf.db"), budget: 10 }),
    /buffer .*alf\.db holds alfworld trajectories, not webshop/,
  );
  const ws = ReplayBuffer.open(join(dir, "ws.db"));
  await ws.appendTrajectories(
    [
      {
        env: "webshop",
        task: { id: "webshop:1", instruction: "x" },
        source: "real",
        total_reward: 0,
        success: false,
        created_at: new Date(0).toISOString(),
        steps: [{ observation: "a", action: "search[x]", reward: 0, next_observation: "b", terminated: true, truncated: false }],
      },
    ],
    { seed: true },
  );
  ws.close();
  await assert.rejects(
    train(join(dir, "run2"), { env: "alfworld", mode: "dreamgym", buffer: join(dir, "ws.db"), budget: 10 }),
    /holds webshop trajectories, not alfworld/,
  );
});
