// `npm run bench`: prints the figures docs/benchmarks.md quotes. Timings, never assertions.
// `npm run bench -- --large` adds the 1M-transition buffer (a few minutes, ~1.5 GB of disk).
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { OraclePolicy, WebShopEnv, loadCatalogue, getReward } from "../src/envs/webshop/index.ts";
import { tagNouns } from "../src/envs/webshop/title-nouns.ts";
import { indexedText } from "../src/envs/webshop/catalogue.ts";
import { analyzeCorpus, isAnalysis, TextSearchIndex } from "../src/envs/webshop/text-search.ts";
import { runEpisode } from "../src/envs/index.ts";
import { benchBuffer } from "./buffer.ts";
import { benchSynthetic } from "./synthetic.ts";
import { benchRl } from "./rl.ts";
import { benchAlfworld } from "./alfworld.ts";
import { benchAlfworldSynthetic } from "./alfworld-synthetic.ts";
import { benchServer } from "./server.ts";
import { quantile } from "./stats.ts";

const fmt = (x: number, d = 3) => x.toFixed(d);
const rows: [string, string][] = [];
const report = (name: string, value: string) => {
  rows.push([name, value]);
  console.log(`${name.padEnd(44)} ${value}`);
};

console.log(`dreamgym benchmarks — node ${process.version}, ${process.platform}/${process.arch}\n`);

// No cache folder (docs/cli.md): the figures do not depend on what ran before; the index row below times both ways.
process.env.DREAMGYM_CACHE = "off";

// Catalogue load (the products and their prices; goals and the search index are made at first use), cold, in this process.
let t0 = performance.now();
const catalogue = loadCatalogue();
report("webshop: load catalogue (cold)", `${fmt(performance.now() - t0, 0)} ms`);

// The search index, made at a process's first search: from the products' texts (analysed), or from the analysis
// the cache folder keeps (read back, checked and built), as the catalogue makes it.
const texts = catalogue.products.map(indexedText);
t0 = performance.now();
new TextSearchIndex(texts);
const analysed = performance.now() - t0;
const keptAnalysis = JSON.stringify(analyzeCorpus(texts));
t0 = performance.now();
const readBack: unknown = JSON.parse(keptAnalysis);
if (!isAnalysis(readBack, texts.length)) throw new Error("the analysis did not read back");
new TextSearchIndex(readBack);
report("webshop: search index, analysed / read back", `${fmt(analysed, 0)} / ${fmt(performance.now() - t0, 0)} ms`);

// Click steps: item page ↔ options ↔ sub-pages ↔ results, on one env.
const env = new WebShopEnv({ split: "test", maxSteps: 1_000_000_000 });
await env.reset({ seed: 0 });
await env.step("search[pillow cover]");
const clickable = env.availableActions()!.filter((a) => /^click\[b0/.test(a));
const cycle: string[] = [];
for (const product of clickable.slice(0, 5)) {
  cycle.push(product);
  const p = catalogue.byAsin.get(product.slice(6, -1).toUpperCase())!;
  for (const values of Object.values(p.options)) cycle.push(`click[${values[0]}]`);
  cycle.push("click[description]", "click[< prev]", "click[features]", "click[< prev]", "click[< prev]");
}
let steps = 0;
t0 = performance.now();
while (performance.now() - t0 < 2000) {
  for (const a of cycle) {
    const r = await env.step(a);
    if (r.info.invalid) throw new Error(`bench cycle hit an invalid action: ${a}`);
  }
  steps += cycle.length;
}
report("webshop: click steps/s (one env, one core)", `${fmt(steps / ((performance.now() - t0) / 1000), 0)}`);

// Search: through env.step (search + render) and the index alone, over 1,000 goal instructions.
const queries = catalogue.goals.slice(500, 1500).map((g) => g.instruction_text.toLowerCase());
for (const q of queries.slice(0, 100)) catalogue.search.search(q, 50); // warm up
const raw: number[] = [];
for (const q of queries) {
  const s = performance.now();
  catalogue.search.search(q, 50);
  raw.push(performance.now() - s);
}
const viaStep: number[] = [];
for (const q of queries) {
  const s = performance.now();
  await env.step(`search[${q}]`);
  viaStep.push(performance.now() - s);
}
report("webshop: search (index) p50 / p99", `${fmt(quantile(raw, 0.5))} / ${fmt(quantile(raw, 0.99))} ms`);
report("webshop: search step (search + page) p50 / p99", `${fmt(quantile(viaStep, 0.5))} / ${fmt(quantile(viaStep, 0.99))} ms`);

// A whole oracle episode, over the test split.
const oracleEnv = new WebShopEnv({ split: "test" });
const oracle = new OraclePolicy(oracleEnv);
const tasks = oracleEnv.tasks();
for (const task of tasks.slice(0, 50)) await runEpisode(oracleEnv, oracle, { envName: "webshop", task });
const episodeMs: number[] = [];
let oracleSteps = 0;
for (const task of tasks) {
  const s = performance.now();
  const t = await runEpisode(oracleEnv, oracle, { envName: "webshop", task });
  episodeMs.push(performance.now() - s);
  oracleSteps += t.steps.length;
}
report(
  "webshop: oracle episode mean / p99",
  `${fmt(episodeMs.reduce((a, b) => a + b, 0) / episodeMs.length)} / ${fmt(quantile(episodeMs, 0.99))} ms (${fmt(oracleSteps / tasks.length, 1)} steps)`,
);

// The reward of one purchase (type + attribute + option + price parts).
const rewardMs: number[] = [];
for (const g of catalogue.goals.slice(0, 2000)) {
  const p = catalogue.byAsin.get(g.asin)!;
  const s = performance.now();
  getReward(p, g, catalogue.prices.get(g.asin)!, g.goal_options as Record<string, string>);
  rewardMs.push(performance.now() - s);
}
report("webshop: reward of a purchase p50 / p99", `${fmt(quantile(rewardMs, 0.5))} / ${fmt(quantile(rewardMs, 0.99))} ms`);

// Tagging a title the reward has not met before (the reward caches each title's nouns).
const tagMs: number[] = [];
for (const p of catalogue.products) {
  const s = performance.now();
  tagNouns(p.name);
  tagMs.push(performance.now() - s);
}
report("webshop: title nouns, uncached, p50 / p99", `${fmt(quantile(tagMs, 0.5))} / ${fmt(quantile(tagMs, 0.99))} ms (${catalogue.products.length} titles)`);

// Memory: separate processes, so each starts clean.
const memory = (n: number) =>
  JSON.parse(
    execFileSync(process.execPath, ["--expose-gc", "--import", "tsx", join(import.meta.dirname, "webshop-memory.ts"), String(n)], { encoding: "utf8" }),
  ) as { rssMB: number; heapMB: number; rssDeltaMB: number; heapDeltaMB: number };
const one = memory(1);
const many = memory(64);
report("webshop: memory, 1 env (RSS / heap, delta)", `${fmt(one.rssDeltaMB, 1)} MB / ${fmt(one.heapDeltaMB, 1)} MB`);
report("webshop: memory, 64 envs (RSS / heap, delta)", `${fmt(many.rssDeltaMB, 1)} MB / ${fmt(many.heapDeltaMB, 1)} MB`);
report("webshop: memory per extra env (heap)", `${fmt(((many.heapDeltaMB - one.heapDeltaMB) / 63) * 1024, 1)} KB`);

// ALFWorld.
await benchAlfworld(report);
await benchAlfworldSynthetic(report);

// The replay buffer.
await benchBuffer(report, process.argv.includes("--large"));

// Synthetic environments.
await benchSynthetic(report);

// Policies and the RL updates.
await benchRl(report);

// `dreamgym serve` under load (the server in a child process; also `npm run bench:server`).
await benchServer(report);
