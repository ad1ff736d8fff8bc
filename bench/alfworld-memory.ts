// Child process of the benchmark: memory after creating N ALFWorld envs, each in a different game, one step each.
import { AlfWorldEnv } from "../src/envs/alfworld/index.ts";

const n = Number(process.argv[2] ?? "1");
const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
const before = process.memoryUsage();
const envs: AlfWorldEnv[] = [];
const tasks = new AlfWorldEnv({ split: "valid_train" }).tasks();
for (let i = 0; i < n; i++) {
  const env = new AlfWorldEnv({ split: "valid_train" });
  await env.reset({ task: tasks[i % tasks.length] });
  await env.step("look");
  envs.push(env);
}
gc?.();
const after = process.memoryUsage();
console.log(
  JSON.stringify({
    n,
    rssMB: after.rss / 2 ** 20,
    heapMB: after.heapUsed / 2 ** 20,
    rssDeltaMB: (after.rss - before.rss) / 2 ** 20,
    heapDeltaMB: (after.heapUsed - before.heapUsed) / 2 ** 20,
    envs: envs.length,
  }),
);
