import { join } from "node:path";
import { JsonlWriter } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { importJsonl } from "../buffer/importers.ts";
import { createEnv, createPolicy, runEpisode, syntheticSupport } from "../envs/index.ts";
import { abstractTrajectory } from "../experience/index.ts";
import { progressBar } from "./progress.ts";

/** Plays `episodes` of a scripted policy over a split, in task order; returns score ×100 and success. */
export async function playScripted(policyName: string, split: "train" | "test", episodes: number, out?: string): Promise<{ score: number; success: number }> {
  const env = createEnv("webshop", { split });
  const policy = createPolicy("webshop", policyName, env, { seed: 0 });
  const tasks = env.tasks();
  const writer = out ? new JsonlWriter(out, { append: false }) : undefined;
  const bar = progressBar(`${policyName} ${split}`, episodes);
  let reward = 0;
  let success = 0;
  for (let i = 0; i < episodes; i++) {
    const t = await runEpisode(env, policy, { envName: "webshop", task: tasks[i % tasks.length], seed: i });
    reward += t.total_reward;
    success += t.success ? 1 : 0;
    writer?.write(t);
    bar.update(i + 1);
  }
  bar.stop();
  writer?.close();
  await env.close();
  return { score: (100 * reward) / episodes, success: success / episodes };
}

/**
 * The paper's WebShop seed, in miniature: 1,000 oracle and 500 random episodes on train goals,
 * written as JSONL into `dir` and imported (as abstract states) into a new buffer. Returns its transitions.
 */
export async function seedWebShopBuffer(dir: string, bufferFile: string): Promise<number> {
  await playScripted("oracle", "train", 1000, join(dir, "oracle.jsonl"));
  await playScripted("random", "train", 500, join(dir, "random.jsonl"));
  ReplayBuffer.remove(bufferFile);
  const buffer = ReplayBuffer.open(bufferFile);
  try {
    const abstraction = syntheticSupport("webshop", createEnv("webshop", {})).abstraction;
    for (const f of ["oracle.jsonl", "random.jsonl"]) await importJsonl(buffer, join(dir, f), { seed: true, transform: (t) => abstractTrajectory(t, abstraction) });
    return buffer.count();
  } finally {
    buffer.close();
  }
}
