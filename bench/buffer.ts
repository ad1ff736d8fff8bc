// Replay-buffer benchmarks: import speed, top-5 search latency (exact at 100k, HNSW at 1M), recall, memory.
// Run alone: node --expose-gc --import tsx bench/buffer.ts [--large]
import { execFileSync } from "node:child_process";
import { rmSync, statSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReplayBuffer, transitionText } from "../src/buffer/index.ts";
import { RandomPolicy, runEpisode } from "../src/envs/index.ts";
import { OraclePolicy, WebShopEnv } from "../src/envs/webshop/index.ts";
import type { Trajectory } from "../src/core/index.ts";
import { quantile } from "./stats.ts";

const mb = (b: number) => `${(b / 2 ** 20).toFixed(0)} MB`;
export type Report = (name: string, value: string) => void;

/** Memory of a fresh process that opens the buffer and searches once (RSS and JS heap, MB). */
function memoryOf(
  file: string,
  annThreshold: number,
): { baseRss: number; openRss: number; openHeap: number; searchRss: number; searchHeap: number; external: number } {
  const out = execFileSync(process.execPath, ["--expose-gc", "--import", "tsx", join(import.meta.dirname, "buffer-memory.ts"), file, String(annThreshold)], {
    encoding: "utf8",
  });
  return JSON.parse(out);
}

/** Real WebShop episodes over the train goals: random (seeded) and oracle, about `transitions` steps. */
export async function* webshopEpisodes(transitions: number, seed: number): AsyncGenerator<Trajectory[]> {
  const env = new WebShopEnv({ split: "train" });
  const tasks = env.tasks();
  const oracle = new OraclePolicy(env);
  const random = new RandomPolicy(seed);
  let steps = 0;
  let batch: Trajectory[] = [];
  for (let i = 0; steps < transitions; i++) {
    const t = await runEpisode(env, i % 4 === 0 ? oracle : random, {
      envName: "webshop",
      task: tasks[(i * 7919 + seed) % tasks.length],
      seed: seed * 1_000_003 + i,
    });
    steps += t.steps.length;
    batch.push(t);
    if (batch.length === 500) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

/** Short ALFWorld-length transitions (~150-character states), for the import rate on short texts. */
export function shortEpisodes(n: number): Trajectory[] {
  const rooms = ["cabinet", "drawer", "countertop", "shelf", "fridge", "sinkbasin", "microwave", "desk"];
  const things = ["mug", "apple", "knife", "spraybottle", "book", "pen", "tomato", "plate"];
  return Array.from({ length: n }, (_, i) => {
    const steps = Array.from({ length: 10 }, (_, s) => {
      const r = rooms[(i + s) % 8];
      return {
        observation: `On the ${r} ${1 + ((i * 7 + s) % 5)}, you see a ${things[(i + s) % 8]} ${1 + (s % 3)}, a ${things[(i * 3 + s) % 8]} 2, and a ${things[(i * 5 + s) % 8]} ${i % 9}. Episode ${i}.`,
        action:
          s % 3 === 0 ? `go to ${rooms[(i + s + 1) % 8]} ${1 + (s % 4)}` : `take ${things[(i + s) % 8]} ${1 + (s % 3)} from ${r} ${1 + ((i * 7 + s) % 5)}`,
        reward: s === 9 ? 1 : 0,
        next_observation: `You arrive at the ${rooms[(i + s + 1) % 8]}. Nothing happens in episode ${i} step ${s}.`,
        terminated: s === 9,
        truncated: false,
      };
    });
    return {
      env: "alfworld-like",
      task: { id: `short-${i % 300}`, instruction: `put a ${things[i % 8]} in ${rooms[i % 8]}` },
      steps,
      total_reward: 1,
      success: true,
      source: "real" as const,
      created_at: new Date(0).toISOString(),
    };
  });
}

async function build(file: string, transitions: number, opts: { annThreshold?: number }): Promise<{ rate: number; held: Trajectory[] }> {
  ReplayBuffer.remove(file);
  const b = ReplayBuffer.open(file, opts);
  let ms = 0;
  let held: Trajectory[] = [];
  let total = 0;
  for await (const batch of webshopEpisodes(transitions, 1)) {
    if (held.length === 0) held = batch.splice(0, 50); // queries come from episodes not in the buffer
    const s = performance.now();
    const r = await b.appendTrajectories(batch, { seed: true });
    ms += performance.now() - s;
    total += r.transitions;
  }
  b.close();
  return { rate: total / (ms / 1000), held };
}

async function searchLatency(b: ReplayBuffer, held: Trajectory[], exact: boolean) {
  const queries = held.flatMap((t) => t.steps.map((s) => ({ state: s.observation, action: s.action })));
  const vectors = await Promise.all(queries.map((q) => b.embedQuery(q)));
  b.searchVector(vectors[0], { k: 5, exact }); // builds the index on first use
  const times: number[] = [];
  for (const v of vectors) {
    const s = performance.now();
    b.searchVector(v, { k: 5, exact });
    times.push(performance.now() - s);
  }
  return { p50: quantile(times, 0.5), p99: quantile(times, 0.99), queries, vectors };
}

export async function benchBuffer(report: Report, large: boolean): Promise<void> {
  const dir = tmpdir();
  // Import speed on real WebShop episodes (long pages) and on short ALFWorld-length texts.
  {
    const file = join(dir, "dreamgym-bench-import.db");
    ReplayBuffer.remove(file);
    const trajs: Trajectory[] = [];
    for await (const batch of webshopEpisodes(30_000, 2)) trajs.push(...batch);
    const b = ReplayBuffer.open(file);
    const s = performance.now();
    let n = 0;
    for (let i = 0; i < trajs.length; i += 500) n += (await b.appendTrajectories(trajs.slice(i, i + 500))).transitions;
    const rate = n / ((performance.now() - s) / 1000);
    const avg = trajs.reduce((a, t) => a + t.steps.reduce((x, st) => x + transitionText(st.observation, st.action).length, 0), 0) / n;
    report("buffer: import, WebShop episodes", `${Math.round(rate).toLocaleString("en-US")} transitions/s (${n} transitions, ${avg.toFixed(0)} chars each)`);
    b.close();
    ReplayBuffer.remove(file);
    const short = shortEpisodes(5000);
    const c = ReplayBuffer.open(file);
    const s2 = performance.now();
    let m = 0;
    for (let i = 0; i < short.length; i += 500) m += (await c.appendTrajectories(short.slice(i, i + 500))).transitions;
    report(
      "buffer: import, short texts (~150 chars)",
      `${Math.round(m / ((performance.now() - s2) / 1000)).toLocaleString("en-US")} transitions/s (${m} transitions)`,
    );
    c.close();
    ReplayBuffer.remove(file);
  }
  // A bounded buffer (capacity 20k) taking synthetic episodes of new texts, one append each, past its capacity:
  // every 2,000 rows evicted its unused texts are deleted, within an append.
  {
    const file = join(dir, "dreamgym-bench-bounded.db");
    ReplayBuffer.remove(file);
    const capacity = 20_000;
    const b = ReplayBuffer.open(file, { capacity });
    const episode = (i: number): Trajectory => ({
      env: "toy",
      task: { id: `t${i % 50}`, instruction: `find item ${i % 50}` },
      steps: Array.from({ length: 50 }, (_, s) => ({
        observation: `page ${s} of episode ${i}: item ${i * 7 + s}`,
        action: `click[item ${s}]`,
        reward: 0,
        next_observation: `page ${s + 1} of episode ${i}: item ${i * 7 + s + 1}`,
        terminated: false,
        truncated: false,
      })),
      total_reward: 0,
      success: false,
      source: "synthetic",
      policy: "bench",
      created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
    });
    let i = 0;
    while (i < capacity / 50) await b.appendTrajectories([episode(i++)]);
    const times: number[] = [];
    for (let j = 0; j < 200; j++) {
      const s = performance.now();
      await b.appendTrajectories([episode(i++)]);
      times.push(performance.now() - s);
    }
    report(
      "buffer: bounded (20k), an append past capacity",
      `p50 ${quantile(times, 0.5).toFixed(2)} ms, slowest ${Math.max(...times).toFixed(1)} ms (50 steps of new texts; the unused texts deleted every 2,000 rows evicted)`,
    );
    b.close();
    ReplayBuffer.remove(file);
  }
  // 100k: exact search.
  {
    const file = join(dir, "dreamgym-bench-100k.db");
    const { held } = await build(file, 100_000, {});
    const b = ReplayBuffer.open(file);
    const { p50, p99 } = await searchLatency(b, held, true);
    const full = performance.now();
    await b.search(held[0].steps[0].observation, { k: 5 });
    report(
      "buffer: 100k, exact top-5 p50 / p99",
      `${p50.toFixed(2)} / ${p99.toFixed(2)} ms (with embedding + rows: ${(performance.now() - full).toFixed(2)} ms)`,
    );
    b.close();
    const m = memoryOf(file, 250_000);
    report(
      "buffer: 100k, memory: open / after a search",
      `RSS ${m.openRss} / ${m.searchRss} MB, JS heap ${m.openHeap} / ${m.searchHeap} MB (process alone: ${m.baseRss} MB); file ${mb(statSync(file).size)}`,
    );
    ReplayBuffer.remove(file);
  }
  if (!large) return;
  // 1M: HNSW (usearch, f16) against exact search.
  {
    const file = join(dir, "dreamgym-bench-1m.db");
    const t0 = performance.now();
    const { rate, held } = await build(file, 1_000_000, { annThreshold: 250_000 });
    report(
      "buffer: 1M, build (episodes + import)",
      `${((performance.now() - t0) / 1000).toFixed(0)} s (import ${Math.round(rate).toLocaleString("en-US")} transitions/s)`,
    );
    const b = ReplayBuffer.open(file, { annThreshold: 250_000 });
    const t1 = performance.now();
    const ann = await searchLatency(b, held, false);
    report("buffer: 1M, HNSW index build (first search)", `${((performance.now() - t1) / 1000).toFixed(0)} s`);
    report("buffer: 1M, HNSW top-5 p50 / p99", `${ann.p50.toFixed(2)} / ${ann.p99.toFixed(2)} ms`);
    b.close();
    const m = memoryOf(file, 250_000);
    report(
      "buffer: 1M, memory: open / after a search",
      `RSS ${m.openRss} / ${m.searchRss} MB, JS heap ${m.openHeap} / ${m.searchHeap} MB (process alone: ${m.baseRss} MB)`,
    );
    const again = ReplayBuffer.open(file, { annThreshold: 250_000 });
    const t2 = performance.now();
    again.searchVector(ann.vectors[0], { k: 5 });
    report(
      "buffer: 1M, reopen + load saved HNSW",
      `${((performance.now() - t2) / 1000).toFixed(1)} s (index file ${mb(existsSync(`${file}.ann`) ? statSync(`${file}.ann`).size : 0)})`,
    );
    // Recall@5 against exact search; a result scoring at least the exact 5th best counts (ties).
    let hits = 0;
    let total = 0;
    const exactTimes: number[] = [];
    for (const v of ann.vectors.slice(0, 200)) {
      const s = performance.now();
      const exact = again.searchVector(v, { k: 5, exact: true });
      exactTimes.push(performance.now() - s);
      const approx = again.searchVector(v, { k: 5 });
      const kth = exact[exact.length - 1].score;
      hits += approx.filter((r) => r.score >= kth - 1e-4).length;
      total += exact.length;
    }
    report("buffer: 1M, HNSW recall@5 vs exact", `${(hits / total).toFixed(3)} (exact top-5 p50 ${quantile(exactTimes.slice(1), 0.5).toFixed(1)} ms)`);
    report("buffer: 1M, file size", `${mb(statSync(file).size)}`);
    again.close();
    rmSync(`${file}.ann`, { force: true });
    ReplayBuffer.remove(file);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchBuffer((n, v) => console.log(`${n.padEnd(44)} ${v}`), process.argv.includes("--large"));
}
