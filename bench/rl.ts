import { abstractEnv, deriveSeed, playEpisodes, Rng, type Episode } from "../src/core/index.ts";
import { createEnv, syntheticSupport } from "../src/envs/index.ts";
import {
  featurize,
  grpoConfigSchema,
  grpoUpdate,
  NeuralPolicy,
  ppoConfigSchema,
  ppoUpdate,
  type NeuralStepRecord,
  type SparseVector,
} from "../src/rl/index.ts";
import { quantile } from "./stats.ts";

type Report = (name: string, value: string) => void;

/** The neural policy on WebShop: rollouts, act latency, GRPO and PPO update throughput. */
export async function benchRl(report: Report): Promise<void> {
  const envs = Array.from({ length: 4 }, () => {
    const env = createEnv("webshop", { split: "train" });
    return { env: abstractEnv(env, syntheticSupport("webshop", env).abstraction), tasks: env.tasks() };
  });
  const tasks = envs[0].tasks;
  const policy = new NeuralPolicy({ seed: 0 });
  const rollout = async (iteration: number) => {
    const chosen = new Rng(iteration).sample(tasks, 16);
    const jobs = chosen.flatMap((task, t) => Array.from({ length: 8 }, (_, g) => ({ task, rngSeed: deriveSeed(0, iteration, t, g) })));
    const t0 = performance.now();
    const episodes = await playEpisodes(
      envs.map((e) => e.env),
      policy,
      jobs,
    );
    return { episodes, seconds: (performance.now() - t0) / 1000 };
  };
  await rollout(0); // warm up
  let steps = 0,
    seconds = 0;
  const batches: Episode<NeuralStepRecord>[][] = [];
  for (let i = 1; i <= 4; i++) {
    const r = await rollout(i);
    batches.push(r.episodes);
    steps += r.episodes.reduce((s, e) => s + e.steps.length, 0);
    seconds += r.seconds;
  }
  report("rl: neural policy rollouts on WebShop", `${(steps / seconds).toFixed(0)} steps/s (policy + env, 128 episodes an iteration)`);

  // Act latency and its part in featurising, on recorded inputs.
  const inputs = batches[0].flatMap((e) =>
    e.steps.map((s, i) => ({
      task: e.task,
      observation: s.observation,
      actions: s.record.features.actions.some((a) => a.startsWith("search[")) ? ["search[<query>]"] : s.record.features.actions,
      history: e.steps.slice(0, i).map((x) => x.action),
    })),
  );
  const rng = new Rng(1);
  const act: number[] = [];
  const feat: number[] = [];
  for (const input of inputs) {
    let t0 = performance.now();
    featurize(input, policy.dim);
    feat.push(performance.now() - t0);
    t0 = performance.now();
    await policy.act(input, { rng });
    act.push(performance.now() - t0);
  }
  report(
    "rl: neural act p50 / p99 (of which features p50)",
    `${(quantile(act, 0.5) * 1000).toFixed(0)} / ${(quantile(act, 0.99) * 1000).toFixed(0)} µs (${(quantile(feat, 0.5) * 1000).toFixed(0)} µs)`,
  );

  // Update throughput: recorded steps processed per second (epochs × steps / time).
  const grpo = grpoConfigSchema.parse({});
  const ppo = ppoConfigSchema.parse({});
  for (const [name, update, epochs] of [
    [
      "GRPO",
      (b: Episode<NeuralStepRecord>[]) =>
        grpoUpdate(
          policy,
          undefined,
          Array.from({ length: 16 }, (_, t) => b.slice(t * 8, (t + 1) * 8)),
          grpo,
          new Rng(2),
        ),
      grpo.epochs,
    ],
    ["PPO", (b: Episode<NeuralStepRecord>[]) => ppoUpdate(policy, b, ppo, new Rng(2)), ppo.epochs],
  ] as const) {
    let n = 0;
    const t0 = performance.now();
    for (const b of batches) n += update(b).steps * epochs;
    const s = (performance.now() - t0) / 1000;
    report(
      `rl: ${name} update (${epochs} epochs)`,
      `${(n / s).toFixed(0)} step-epochs/s; ${((s / batches.length) * 1000).toFixed(0)} ms per iteration vs ${((seconds / batches.length) * 1000).toFixed(0)} ms of rollout`,
    );
  }

  // The network alone on a fixed workload (the one we measured tfjs on): 256 steps × 12 candidates
  // × 40 features, dim 32768, hidden 16; forward, backward and Adam.
  const r = new Rng(3);
  const vec = (): SparseVector => {
    const idx = new Set<number>();
    while (idx.size < 40) idx.add(r.randbelow(32768));
    return { idx: Int32Array.from([...idx].sort((a, b) => a - b)), val: Float32Array.from({ length: 40 }, () => (r.random() < 0.5 ? 1 : r.random())) };
  };
  const records: NeuralStepRecord[] = Array.from({ length: 256 }, () => ({
    features: { actions: Array.from({ length: 12 }, (_, i) => `a${i}`), candidates: Array.from({ length: 12 }, vec), state: vec() },
    choice: r.randbelow(12),
  }));
  const adv = Float64Array.from({ length: 256 }, () => r.uniform(-1, 1) / 256);
  const net = new NeuralPolicy({ seed: 4 });
  const stepTimes: number[] = [];
  for (let i = 0; i < 35; i++) {
    const t0 = performance.now();
    net.evaluate(records);
    net.backward({ logProbs: adv });
    net.step({ learningRate: 1e-3, maxGradNorm: 1 });
    if (i >= 5) stepTimes.push(performance.now() - t0);
  }
  const med = quantile(stepTimes, 0.5);
  const fwd: number[] = [];
  const one = records[0].features.candidates;
  const h = new Float64Array(16);
  for (let i = 0; i < 2000; i++) {
    const t0 = performance.now();
    for (const x of one) net.networks.actor.forward(x, h);
    fwd.push(performance.now() - t0);
  }
  report(
    "rl: net train step, 256×12×40 features (ours)",
    `${med.toFixed(1)} ms median → ${(256 / (med / 1000)).toFixed(0)} steps/s; one 12-candidate forward ${(quantile(fwd, 0.5) * 1000).toFixed(1)} µs`,
  );
}
