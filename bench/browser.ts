// The browser WebShop (`createEnv("webshop-browser")`): steps/s and latency per action with 1 and 4
// contexts, and the Chromium processes' memory per context (/proc). Oracle episodes on test goals,
// one loop per context. Figures, never assertions.
// `npm run bench:browser [-- --seconds 20 --contexts 1,4]`.
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { Rng } from "../src/core/index.ts";
import { createPolicy } from "../src/envs/index.ts";
import { createWebShopBrowserEnv } from "../src/envs/webshop-site/index.ts";
import { quantile } from "./stats.ts";

const { values } = parseArgs({
  options: { seconds: { type: "string", default: "20" }, warmup: { type: "string", default: "3" }, contexts: { type: "string", default: "1,4" } },
});
const seconds = Number(values.seconds);
const warmup = Number(values.warmup);
const sizes = values.contexts.split(",").map(Number);

const fmt = (x: number, d = 0) => x.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
const mb = (b: number) => fmt(b / 2 ** 20, 0);

interface Row {
  contexts: number;
  steps: number;
  episodes: number;
  failed: number;
  seconds: number;
  latency: Map<string, number[]>;
  rss: number;
  pss: number;
  processes: number;
}

async function run(n: number): Promise<Row> {
  const envs = Array.from({ length: n }, () => createWebShopBrowserEnv({ split: "test", contexts: n }));
  const tasks = envs[0].tasks();
  const latency = new Map<string, number[]>();
  let measuring = false;
  let stop = false;
  let steps = 0;
  let episodes = 0;
  let failed = 0;
  const record = (kind: string, ms: number) => {
    if (!measuring) return;
    (latency.get(kind) ?? latency.set(kind, []).get(kind)!).push(ms);
  };
  const loops = envs.map(async (env, k) => {
    const oracle = createPolicy("webshop-browser", "oracle", env);
    for (let i = k; !stop; i += n) {
      const task = tasks[i % tasks.length];
      oracle.reset?.(task);
      let t = performance.now();
      let { observation, info } = await env.reset({ task });
      record("reset", performance.now() - t);
      for (;;) {
        const action = (await oracle.act({ observation, actions: env.availableActions(), task, info, history: [] }, { rng: new Rng(0) })).action;
        t = performance.now();
        const r = await env.step(action);
        record(action.split(" ")[0], performance.now() - t);
        if (measuring) steps++;
        ({ observation, info } = r);
        if (r.terminated || r.truncated) {
          if (measuring) {
            episodes++;
            if (r.info.error) failed++;
          }
          break;
        }
      }
    }
  });
  await new Promise((resolve) => setTimeout(resolve, warmup * 1000));
  measuring = true;
  const t0 = performance.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  // Memory with every context open and busy.
  const procs = envs[0].pool.processes();
  measuring = false;
  const elapsed = (performance.now() - t0) / 1000;
  stop = true;
  await Promise.all(loops);
  for (const e of envs) await e.close();
  return {
    contexts: n,
    steps,
    episodes,
    failed,
    seconds: elapsed,
    latency,
    rss: procs.reduce((s, p) => s + p.rss, 0),
    pss: procs.reduce((s, p) => s + p.pss, 0),
    processes: procs.length,
  };
}

console.log(
  `browser WebShop: oracle episodes on test goals, ${seconds} s measured after ${warmup} s warm-up; load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(" ")} on this machine`,
);
const rows: Row[] = [];
for (const n of sizes) rows.push(await run(n));

console.log(
  "\n| contexts | steps/s | episodes/s | failed | p50 / p99 ms: type (search) | click | reset | Chromium processes | RSS total | PSS total | PSS per context |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|");
for (const r of rows) {
  const lat = (k: string) => `${fmt(quantile(r.latency.get(k) ?? [], 0.5))} / ${fmt(quantile(r.latency.get(k) ?? [], 0.99))}`;
  console.log(
    `| ${r.contexts} | ${fmt(r.steps / r.seconds, 1)} | ${fmt(r.episodes / r.seconds, 2)} | ${r.failed} | ${lat("type")} | ${lat("click")} | ${lat("reset")} | ${r.processes} | ${mb(r.rss)} MB | ${mb(r.pss)} MB | ${mb(r.pss / r.contexts)} MB |`,
  );
}
if (rows.length >= 2) {
  const [a, b] = [rows[0], rows.at(-1)!];
  if (b.contexts > a.contexts)
    console.log(
      `\nmarginal memory of a context: ${mb((b.pss - a.pss) / (b.contexts - a.contexts))} MB PSS, ${mb((b.rss - a.rss) / (b.contexts - a.contexts))} MB RSS`,
    );
}
