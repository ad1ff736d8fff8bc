import { join } from "node:path";
import { closing, JsonlWriter } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { importJsonl } from "../buffer/index.ts";
import { createEnv, syntheticSupport } from "../envs/index.ts";
import { abstractTrajectory } from "../experience/index.ts";
import { playScriptedEpisodes } from "./episodes.ts";

/** Plays `episodes` of a scripted policy over a WebShop split, in task order; returns score ×100 and success. */
export async function playScripted(policyName: string, split: "train" | "test", episodes: number, out?: string): Promise<{ score: number; success: number }> {
  const writer = out ? new JsonlWriter(out, { append: false }) : undefined;
  try {
    const r = await playScriptedEpisodes({ env: "webshop", policy: policyName, split, episodes }, `${policyName} ${split}`, (t) => writer?.write(t));
    return { score: 100 * r.score, success: r.success };
  } finally {
    writer?.close();
  }
}

/**
 * The paper's WebShop seed, in miniature: 1,000 oracle, 500 slipping-oracle (`oracle-noisy`: wrong
 * products and options, so the data shows near misses as well as successes and random walks) and 500
 * random episodes on train goals,
 * written as JSONL into `dir` and imported (as abstract states) into a new buffer. Returns its transitions.
 */
export async function seedWebShopBuffer(dir: string, bufferFile: string): Promise<number> {
  await playScripted("oracle", "train", 1000, join(dir, "oracle.jsonl"));
  await playScripted("oracle-noisy", "train", 500, join(dir, "oracle-noisy.jsonl"));
  await playScripted("random", "train", 500, join(dir, "random.jsonl"));
  ReplayBuffer.remove(bufferFile);
  const buffer = ReplayBuffer.open(bufferFile);
  try {
    const abstraction = await closing(createEnv("webshop", {}), (env) => syntheticSupport("webshop", env).abstraction);
    for (const f of ["oracle.jsonl", "oracle-noisy.jsonl", "random.jsonl"]) await importJsonl(buffer, join(dir, f), { seed: true, transform: (t) => abstractTrajectory(t, abstraction) });
    return buffer.count();
  } finally {
    buffer.close();
  }
}
