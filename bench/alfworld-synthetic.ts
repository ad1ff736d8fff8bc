// ALFWorld synthetic steps/s with the embedded model (no LLM): expert + random seed episodes on
// valid_train, random play on valid_unseen's games in the synthetic env.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReplayBuffer } from "../src/buffer/index.ts";
import { AlfWorldEnv, AlfWorldExpert, AlfWorldReplay, alfworldAbstraction, alfworldVerifier } from "../src/envs/alfworld/index.ts";
import { RandomPolicy, runEpisode } from "../src/envs/index.ts";
import { abstractTrajectory, SyntheticEnv } from "../src/experience/index.ts";
import { AlfWorldExperienceModel } from "../src/envs/alfworld/index.ts";

type Report = (name: string, value: string) => void;

export async function benchAlfworldSynthetic(report: Report): Promise<void> {
  const real = new AlfWorldEnv({ split: "valid_train" });
  const expert = new AlfWorldExpert(real);
  const random = new RandomPolicy(1);
  const trajectories = [];
  for (const [i, task] of real.tasks().entries()) {
    trajectories.push(abstractTrajectory(await runEpisode(real, expert, { envName: "alfworld", task, seed: i }), alfworldAbstraction));
    trajectories.push(abstractTrajectory(await runEpisode(real, random, { envName: "alfworld", task, seed: i }), alfworldAbstraction));
  }
  const buffer = ReplayBuffer.open(join(mkdtempSync(join(tmpdir(), "dreamgym-bench-alfsyn-")), "b.db"));
  await buffer.appendTrajectories(trajectories, { seed: true });
  const model = new AlfWorldExperienceModel();
  let t0 = performance.now();
  await model.fit(buffer);
  report("alfworld synthetic: fit on the buffer", `${(performance.now() - t0).toFixed(0)} ms (${buffer.count()} transitions)`);
  const evalEnv = new AlfWorldEnv({ split: "valid_unseen" });
  const tasks = evalEnv.tasks();
  const env = new SyntheticEnv({
    model,
    abstraction: alfworldAbstraction,
    tasks,
    initialState: (t) => evalEnv.introOf(t),
    buffer,
    maxSteps: 50,
    record: false,
  });
  const policy = new RandomPolicy(2);
  let steps = 0;
  t0 = performance.now();
  for (let i = 0; performance.now() - t0 < 3000; i++)
    steps += (await runEpisode(env, policy, { envName: "alfworld", task: tasks[i % tasks.length] })).steps.length;
  report(
    "alfworld synthetic: embedded model, steps/s",
    `${(steps / ((performance.now() - t0) / 1000)).toFixed(0)} (one env, random policy, 50-step episodes, no recording)`,
  );
  // Hybrid: each step also replayed in the real game while it admits the synthetic commands.
  const hybrid = new SyntheticEnv({
    model,
    abstraction: alfworldAbstraction,
    tasks,
    initialState: (t) => evalEnv.introOf(t),
    buffer,
    maxSteps: 50,
    record: false,
    verifier: alfworldVerifier(new AlfWorldReplay({ split: "valid_unseen" })),
  });
  steps = 0;
  let verified = 0;
  t0 = performance.now();
  for (let i = 0; performance.now() - t0 < 3000; i++) {
    const t = await runEpisode(hybrid, policy, { envName: "alfworld", task: tasks[i % tasks.length] });
    steps += t.steps.length;
    verified += t.steps.filter((s) => s.info?.verified === true).length;
  }
  report(
    "alfworld synthetic: hybrid, steps/s",
    `${(steps / ((performance.now() - t0) / 1000)).toFixed(0)} (as above; ${((100 * verified) / Math.max(1, steps)).toFixed(0)}% of the random policy's steps judged by the real game)`,
  );
  buffer.close();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchAlfworldSynthetic((n, v) => console.log(`${n.padEnd(44)} ${v}`));
}
