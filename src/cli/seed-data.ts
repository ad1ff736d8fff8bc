import { join } from "node:path";
import { closing, deriveSeed, JsonlWriter, Rng } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { importJsonl } from "../buffer/index.ts";
import { createEnv, envTasks, syntheticSupport } from "../envs/index.ts";
import { abstractTrajectory } from "../experience/index.ts";
import { playScriptedEpisodes } from "./episodes.ts";

/**
 * Plays `episodes` of a scripted policy over a WebShop split, in task order (or the split's task
 * indexes `order`, episode i seeded `seed + i`); returns score ×100 and success.
 */
export async function playScripted(
  policyName: string,
  split: "train" | "test" | "dev",
  episodes: number,
  out?: string,
  draw: { order?: readonly number[]; seed?: number } = {},
): Promise<{ score: number; success: number }> {
  const writer = out ? new JsonlWriter(out, { append: false }) : undefined;
  try {
    const r = await playScriptedEpisodes({ env: "webshop", policy: policyName, split, episodes, ...draw }, `${policyName} ${split}`, (t) => writer?.write(t));
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
 *
 * Without a data seed: the first 1,000 train goals (the slipping and random episodes on the first
 * 500), episode seeds 0, 1, … (the demo's buffer). With data seed s: 1,000 train goals drawn from all
 * of the split's (5,410) and the episodes' seeds, both derived from s, so that each seed is other offline data.
 */
export async function seedWebShopBuffer(dir: string, bufferFile: string, dataSeed?: number): Promise<number> {
  const goals = dataSeed === undefined ? 0 : await closing(createEnv("webshop", { split: "train" }), (env) => envTasks("webshop", env).length);
  const draw = (kind: string) =>
    dataSeed === undefined
      ? {}
      : {
          order: new Rng(deriveSeed(dataSeed, "seed-goals")).sample(
            Array.from({ length: goals }, (_, i) => i),
            Math.min(1000, goals),
          ),
          seed: deriveSeed(dataSeed, "seed-episodes", kind) % 2 ** 31,
        };
  await playScripted("oracle", "train", 1000, join(dir, "oracle.jsonl"), draw("oracle"));
  await playScripted("oracle-noisy", "train", 500, join(dir, "oracle-noisy.jsonl"), draw("oracle-noisy"));
  await playScripted("random", "train", 500, join(dir, "random.jsonl"), draw("random"));
  ReplayBuffer.remove(bufferFile);
  const buffer = ReplayBuffer.open(bufferFile);
  try {
    const abstraction = await closing(createEnv("webshop", {}), (env) => syntheticSupport("webshop", env).abstraction);
    for (const f of ["oracle.jsonl", "oracle-noisy.jsonl", "random.jsonl"])
      await importJsonl(buffer, join(dir, f), { seed: true, transform: (t) => abstractTrajectory(t, abstraction) });
    return buffer.count();
  } finally {
    buffer.close();
  }
}
