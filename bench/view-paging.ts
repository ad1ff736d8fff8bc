// `dreamgym view` on a large buffer: how long a page of episodes takes at the start, deep in the
// buffer, and filtered, over HTTP (the real app on loopback). Prints figures; asserts nothing about time.
//   npm run bench:view                       (200k transitions)
//   VIEW_BENCH_TRANSITIONS=1000000 npm run bench:view
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReplayBuffer } from "../src/buffer/index.ts";
import { createViewApp, startServer } from "../src/server/index.ts";
import { makeTrajectory } from "../src/testing/index.ts";

const transitions = Number(process.env.VIEW_BENCH_TRANSITIONS ?? 200_000);
const STEPS = 10;
const root = mkdtempSync(join(tmpdir(), "dreamgym-view-bench-"));
const file = join(root, "big.db");
try {
  let t = performance.now();
  const b = ReplayBuffer.open(file);
  const episodes = Math.ceil(transitions / STEPS);
  for (let i = 0; i < episodes; i += 5000) {
    const batch = Array.from({ length: Math.min(5000, episodes - i) }, (_, k) =>
      makeTrajectory(i + k, { steps: STEPS, source: (i + k) % 3 === 0 ? "synthetic" : "real", task: `task-${(i + k) % 997}` }),
    );
    await b.appendTrajectories(batch, { seed: i === 0 });
  }
  console.log(`buffer: ${b.transitions} transitions, ${b.countTrajectories()} episodes, built in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  // As `dreamgym buffer import` does: above the ANN threshold, the HNSW index is built and saved now, not at the view's first search.
  t = performance.now();
  b.buildIndex();
  b.close();
  console.log(`search index built and saved in ${((performance.now() - t) / 1000).toFixed(1)} s`);

  const app = createViewApp({ runs: root, buffer: file });
  const server = await startServer({ app, port: 0, host: "127.0.0.1" });
  const rss0 = process.memoryUsage().rss;
  try {
    const time = async (label: string, path: string, n = 20) => {
      const ms: number[] = [];
      let body: { episodes?: unknown[]; total?: number; next?: number | null } = {};
      for (let i = 0; i < n; i++) {
        t = performance.now();
        body = (await (await fetch(`${server.url}${path}`)).json()) as typeof body;
        ms.push(performance.now() - t);
      }
      ms.sort((a, b) => a - b);
      console.log(
        `${label.padEnd(44)} p50 ${ms[n >> 1].toFixed(1)} ms  max ${ms.at(-1)!.toFixed(1)} ms  (${body.episodes?.length ?? "-"} rows of ${body.total ?? "-"})`,
      );
      return body;
    };
    await time("first page (50)", "/api/episodes?src=buffer&limit=50");
    await time("deep page (after the 99% mark)", `/api/episodes?src=buffer&limit=50&after=${Math.floor(episodes * 0.99)}`);
    await time("filtered: synthetic, failed", "/api/episodes?src=buffer&limit=50&origin=synthetic&success=false");
    await time("filtered: task text 'task-99'", "/api/episodes?src=buffer&limit=50&task=task-99");
    await time("one episode with its steps", `/api/episode?src=buffer&id=${Math.floor(episodes / 2)}`);
    await time("search top-5 (exact)", "/api/search?src=buffer&state=page%203%20of%20episode%2012&action=click%5Bbuy%20now%5D&k=5", 10);
    console.log(`server RSS grew ${((process.memoryUsage().rss - rss0) / 2 ** 20).toFixed(0)} MiB over these requests`);
  } finally {
    await server.close();
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
