// Synthetic-env benchmarks: steps/s of the embedded default, and of the reasoning model against a
// local OpenAI-compatible server with a set latency and concurrency cap (as a share of its capacity),
// with the framework's CPU per step (the server runs in another process, so the model is excluded).
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReplayBuffer } from "../src/buffer/index.ts";
import { RandomPolicy, runEpisode } from "../src/envs/index.ts";
import { OraclePolicy, RulePolicy, WebShopEnv, webshopAbstraction, webshopStartPage } from "../src/envs/webshop/index.ts";
import { abstractTrajectory, EmbeddedExperienceModel, ReasoningExperienceModel, SyntheticEnv, type ExperienceModel } from "../src/experience/index.ts";
import { OpenAIChatModel } from "../src/llm/index.ts";
import type { Report } from "./buffer.ts";

/** A buffer in a temp folder seeded with `episodes` abstract WebShop episodes (2 oracle : 1 random). */
export async function seeded(episodes = 1500): Promise<{ buffer: ReplayBuffer; real: WebShopEnv }> {
  const real = new WebShopEnv({ split: "train" });
  const abs = webshopAbstraction(real.catalogue);
  const buffer = ReplayBuffer.open(join(mkdtempSync(join(tmpdir(), "dreamgym-bench-syn-")), "b.db"));
  const oracle = new OraclePolicy(real);
  const random = new RandomPolicy(1);
  const trajs = [];
  const tasks = real.tasks();
  for (let i = 0; i < episodes; i++)
    trajs.push(abstractTrajectory(await runEpisode(real, i % 3 === 2 ? random : oracle, { envName: "webshop", task: tasks[i], seed: i }), abs));
  await buffer.appendTrajectories(trajs, { seed: true });
  return { buffer, real };
}

/**
 * Runs `workers` concurrent episode loops until `steps` steps are done; returns steps/s and CPU ms per
 * step over the whole run, and over its steady state: from `warmup` seconds in until the first loop
 * stops (after which fewer episodes are in flight as the last ones finish, and a server's slots idle).
 */
async function drive(
  model: ExperienceModel,
  buffer: ReplayBuffer,
  real: WebShopEnv,
  workers: number,
  steps: number,
  record: boolean,
  sameActionDemos = true,
  warmup = 2,
) {
  const abs = webshopAbstraction(real.catalogue);
  const tasks = new WebShopEnv({ split: "test" }).tasks();
  let done = 0;
  let stepped = 0; // steps answered so far (`done` counts whole episodes)
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const mark = () => ({ t: performance.now(), cpu: process.cpuUsage(), stepped });
  let open: ReturnType<typeof mark> | undefined;
  let close: ReturnType<typeof mark> | undefined;
  const opening = setTimeout(() => (open = mark()), warmup * 1000);
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const env = new SyntheticEnv({ model, abstraction: abs, tasks, initialState: webshopStartPage, buffer, record, seed: w, sameActionDemos });
      const step = env.step.bind(env);
      env.step = async (action) => {
        const r = await step(action);
        stepped++;
        return r;
      };
      const policy = w % 2 ? new RulePolicy() : new RandomPolicy(w);
      for (let i = w; done < steps; i += workers) {
        const t = await runEpisode(env, policy, { envName: "webshop", task: tasks[i % tasks.length] });
        done += t.steps.length; // after the await: `done += await …` would read `done` before it and lose updates
      }
      close ??= mark();
    }),
  );
  clearTimeout(opening);
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const steady =
    open && close && close.t > open.t
      ? {
          stepsPerSec: ((close.stepped - open.stepped) * 1000) / (close.t - open.t),
          cpuMsPerStep: (close.cpu.user - open.cpu.user + close.cpu.system - open.cpu.system) / 1000 / (close.stepped - open.stepped),
          seconds: (close.t - open.t) / 1000,
        }
      : undefined;
  return { stepsPerSec: done / secs, cpuMsPerStep: (cpu.user + cpu.system) / 1000 / done, steps: done, steady };
}

export async function benchSynthetic(report: Report): Promise<void> {
  const { buffer, real } = await seeded();
  const abs = webshopAbstraction(real.catalogue);
  if (!process.env.SYN_SKIP_EMBEDDED) {
    const embedded = await drive(new EmbeddedExperienceModel({ abstraction: abs }), buffer, real, 1, 3000, true);
    report(
      "synthetic: embedded default, steps/s (recording)",
      `${embedded.stepsPerSec.toFixed(0)} (CPU ${embedded.cpuMsPerStep.toFixed(2)} ms/step, buffer ${buffer.count()} transitions)`,
    );
  }
  const latency = 200;
  const cap = 64;
  const server = spawn(process.execPath, [join(import.meta.dirname, "llm-server.mjs"), String(latency), String(cap)], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve) => server.stdout.once("data", (d: Buffer) => resolve(JSON.parse(d.toString()).port)));
  try {
    const chat = new OpenAIChatModel({ baseURL: `http://127.0.0.1:${port}/v1`, model: "bench", concurrency: cap });
    const model = new ReasoningExperienceModel({ chat, abstraction: abs });
    const capacity = cap / (latency / 1000);
    const steps = Number(process.env.SYN_STEPS ?? 4000);
    // Twice as many episodes as server slots, so the server's queue stays full while episodes do their own work.
    const workers = cap * 2;
    const pct = (x: number) => `${((100 * x) / capacity).toFixed(1)}%`;
    // Steady state (the target's measure) first; the whole run, with its ramp-up and its tail of last episodes, after.
    const line = (r: Awaited<ReturnType<typeof drive>>) =>
      r.steady
        ? `${r.steady.stepsPerSec.toFixed(0)} steps/s = ${pct(r.steady.stepsPerSec)} of its ${capacity} req/s, framework CPU ${r.steady.cpuMsPerStep.toFixed(2)} ms/step ` +
          `in steady state (${r.steady.seconds.toFixed(1)} s); whole run ${r.stepsPerSec.toFixed(0)} steps/s = ${pct(r.stepsPerSec)}, ${r.cpuMsPerStep.toFixed(2)} ms/step`
        : `${r.stepsPerSec.toFixed(0)} steps/s = ${pct(r.stepsPerSec)} of its ${capacity} req/s; CPU ${r.cpuMsPerStep.toFixed(2)} ms/step (too short for a steady state)`;
    const r = await drive(model, buffer, real, workers, steps, true, false);
    report(
      `synthetic: reasoning model vs server (${latency} ms, cap ${cap}), ${workers} episodes, exact retrieval over ${buffer.count()} transitions`,
      line(r),
    );
    // As a training run plays it: no step recorded one by one (the loop appends each iteration's
    // episodes at once, so retrieval's answers hold through an iteration), same-action demos as by default.
    const t = await drive(model, buffer, real, workers, steps, false, true);
    report(
      `synthetic: reasoning model as a training run plays it (no step recorded, same-action demos), exact retrieval over ${buffer.count()} transitions`,
      line(t),
    );
    if (process.env.SYN_SKIP_HNSW) return;
    // The same with the buffer's HNSW index serving retrieval.
    const annBuffer = ReplayBuffer.open(buffer.path, { annThreshold: 1 });
    annBuffer.buildIndex();
    const a = await drive(model, annBuffer, real, workers, steps, true, false);
    report(`synthetic: reasoning model, HNSW retrieval (framework CPU: retrieval, prompt, HTTP client, recording)`, line(a));
    annBuffer.close();
  } finally {
    server.kill("SIGTERM");
    buffer.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchSynthetic((n, v) => console.log(`${n.padEnd(44)} ${v}`));
}
