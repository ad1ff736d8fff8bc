// Child process of the benchmark: resident memory after creating N WebShop envs and playing one step in each.
import { WebShopEnv } from "../src/envs/webshop/index.ts";

const n = Number(process.argv[2] ?? "1");
const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
const before = process.memoryUsage();
const envs: WebShopEnv[] = [];
for (let i = 0; i < n; i++) {
  const env = new WebShopEnv({ split: "train" });
  await env.reset({ seed: i });
  await env.step("search[white pillow]");
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
