import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Rng } from "../core/index.ts";
import type { Episode } from "../core/index.ts";
import { batchTerms, groupAdvantages, grpoConfigSchema, grpoUpdate } from "./grpo.ts";
import { learnToy } from "../../test/fixtures/learn-toy.ts";
import { gae, ppoConfigSchema, ppoUpdate } from "./ppo.ts";
import type { Evaluation, OutputGradients, TrainablePolicy } from "./policy.ts";
import { BanditEnv, ChainEnv, ShopToyEnv } from "../testing/index.ts";

const close = (a: readonly number[], b: readonly number[], tol = 1e-9) =>
  assert.ok(a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) <= tol), `${JSON.stringify(a)} ≠ ${JSON.stringify(b)}`);

describe("advantages", () => {
  test("GRPO: (r − mean) / (std + ε) within a group, population std", () => {
    // mean 0.5, std sqrt(0.125)
    close(groupAdvantages([1, 0, 0.5, 0.5], 0), [Math.SQRT2, -Math.SQRT2, 0, 0]);
    close(groupAdvantages([1, 0, 0, 0], 0), [3 / Math.sqrt(3), -1 / Math.sqrt(3), -1 / Math.sqrt(3), -1 / Math.sqrt(3)]);
    close(groupAdvantages([0.7, 0.7, 0.7], 1e-6), [0, 0, 0]);
  });

  test("GRPO's std floor: returns a few thousandths apart (a model's noise) get small advantages, not ±1; wide groups are as before", () => {
    close(groupAdvantages([0.177, 0.18], 0), [-1, 1]);
    close(groupAdvantages([0.177, 0.18], 0, 0.1), [-0.015, 0.015]);
    close(groupAdvantages([1, 0, 0.5, 0.5], 0, 0.1), [Math.SQRT2, -Math.SQRT2, 0, 0]);
    assert.equal(grpoConfigSchema.parse({}).stdFloor, 0, "GRPO as published by default");
  });

  test("GRPO's batch term: λ·(group mean − batch mean)/(batch std + ε), 0 when λ is 0", () => {
    // Returns 1,1 | 0,0 | 0.5,0.5: batch mean 0.5, population std sqrt(1/6).
    const groups = [
      [1, 1],
      [0, 0],
      [0.5, 0.5],
    ];
    close(batchTerms(groups, 0.5, 0), [0.5 * 0.5 * Math.sqrt(6), -0.5 * 0.5 * Math.sqrt(6), 0]);
    close(batchTerms(groups, 0), [0, 0, 0]);
  });

  test("PPO: GAE by hand, terminated and truncated", () => {
    // γ 0.9, λ 0.8: δ2 = 1 − 0.8 = 0.2; δ1 = 0.9·0.8 − 0.6 = 0.12; δ0 = 0.9·0.6 − 0.5 = 0.04
    // A2 = 0.2; A1 = 0.12 + 0.72·0.2 = 0.264; A0 = 0.04 + 0.72·0.264 = 0.23008
    const g = gae([0, 0, 1], [0.5, 0.6, 0.8], 0, 0.9, 0.8);
    close(g.advantages, [0.23008, 0.264, 0.2], 1e-12);
    close(g.returns, [0.73008, 0.864, 1.0], 1e-12);
    // Cut off by the step limit: the last state's value is the bootstrap.
    close(gae([0, 0], [0.2, 0.4], 0.5, 1, 1).advantages, [0.3, 0.1], 1e-12);
    // λ = 0 is one-step TD.
    close(gae([1, 2], [0.5, 0.25], 0, 0.5, 0).advantages, [1 + 0.125 - 0.5, 2 - 0.25], 1e-12);
  });
});

/** A policy with one logit per step record, to check the gradients the algorithms hand back. */
class ProbePolicy implements TrainablePolicy<number> {
  readonly name = "probe";
  received: OutputGradients[] = [];
  constructor(
    private readonly logProbs: number[],
    private readonly values: number[] = [],
  ) {}
  async act(): Promise<never> {
    throw new Error("not used");
  }
  evaluate(records: readonly number[]): Evaluation {
    return {
      logProbs: Float64Array.from(records.map((r) => this.logProbs[r])),
      entropies: Float64Array.from(records.map(() => 1)),
      values: Float64Array.from(records.map((r) => this.values[r] ?? 0)),
    };
  }
  backward(grads: OutputGradients): void {
    this.received.push(grads);
  }
  step() {
    return { gradNorm: 0 };
  }
  value() {
    return 0;
  }
  clone() {
    return this;
  }
  save() {
    return new Uint8Array();
  }
  load() {}
}

const episode = (records: number[], rewards: number[], logProbs: number[]): Episode<number> => ({
  task: { id: "t", instruction: "" },
  steps: records.map((r, i) => ({
    observation: "",
    action: "",
    next_observation: "",
    reward: rewards[i],
    terminated: i === records.length - 1,
    truncated: false,
    logProb: logProbs[i],
    value: 0,
    record: r,
  })),
  totalReward: rewards.reduce((s, x) => s + x, 0),
  success: false,
});

describe("loss gradients", () => {
  test("GRPO: −A·ratio/n inside the clip range, 0 where the clipped branch is the minimum", () => {
    // Two episodes of one group: rewards 1 and 0 → A = +1, −1 (ε = 0).
    // Step records 0..3, current log-probs vs old: ratio 1 (in range), e^0.5 (above 1+ε), 1, e^−0.5 (below 1−ε).
    const policy = new ProbePolicy([0, 0.5, 0, -0.5]);
    const group = [episode([0, 1], [0, 1], [0, 0]), episode([2, 3], [0, 0], [0, 0])];
    const config = grpoConfigSchema.parse({ epochs: 1, minibatchSize: 4, entropyCoef: 0, advantageEps: 1e-12 });
    const stats = grpoUpdate(policy, undefined, [group], config, new Rng(0));
    // The minibatch order is shuffled; map gradients back by log-prob.
    const order = new Rng(0);
    const idx = [0, 1, 2, 3];
    order.shuffle(idx);
    const grads = policy.received[0].logProbs;
    const byRecord = new Map(idx.map((r, j) => [r, grads[j]]));
    assert.ok(Math.abs(byRecord.get(0)! - -1 / 4) < 1e-6); // A = +1, ratio 1
    assert.equal(byRecord.get(1), 0); // A = +1, ratio above 1.2: clipped
    assert.ok(Math.abs(byRecord.get(2)! - 1 / 4) < 1e-6); // A = −1, ratio 1
    assert.equal(byRecord.get(3), 0); // A = −1, ratio below 0.8: clipped
    assert.equal(stats.clipFraction, 0.5);
  });

  test("GRPO with a batch term: a group of equal returns below the batch is pushed down; with λ 0 it is not", () => {
    // Group 1 returns 0, 0 (no group-relative gradient); group 2 returns 1, 1. Batch mean 0.5, std 0.5.
    const groups = [
      [episode([0], [0], [0]), episode([1], [0], [0])],
      [episode([2], [1], [0]), episode([3], [1], [0])],
    ];
    const grad = (lambda: number) => {
      const policy = new ProbePolicy([0, 0, 0, 0]);
      grpoUpdate(
        policy,
        undefined,
        groups,
        grpoConfigSchema.parse({ epochs: 1, minibatchSize: 4, entropyCoef: 0, advantageEps: 1e-12, batchAdvantage: lambda }),
        new Rng(0),
      );
      const idx = [0, 1, 2, 3];
      new Rng(0).shuffle(idx);
      const g = policy.received[0].logProbs;
      return idx.map((_, r) => g[idx.indexOf(r)]);
    };
    // A = λ·(0 − 0.5)/0.5 = −λ for group 1, +λ for group 2; the gradient in log π is −A/n.
    close(grad(0.5), [0.5 / 4, 0.5 / 4, -0.5 / 4, -0.5 / 4], 1e-9);
    close(grad(0), [0, 0, 0, 0]);
  });

  test("PPO: the value loss gradient is c_v (V − R)/n", () => {
    const policy = new ProbePolicy([0, 0], [0.25, 0.5]);
    const e = episode([0, 1], [0, 1], [0, 0]);
    e.steps[0].value = 0.25;
    e.steps[1].value = 0.5;
    const config = ppoConfigSchema.parse({ epochs: 1, minibatchSize: 2, gamma: 1, gaeLambda: 1, valueCoef: 0.5 });
    ppoUpdate(policy, [e], config, new Rng(0));
    const idx = [0, 1];
    new Rng(0).shuffle(idx);
    const dv = policy.received[0].values!;
    // Returns: 1 and 1 (γ = λ = 1); V = 0.25, 0.5 → 0.5·(V − 1)/2.
    const expected = new Map([
      [0, (0.5 * (0.25 - 1)) / 2],
      [1, (0.5 * (0.5 - 1)) / 2],
    ]);
    idx.forEach((r, j) => assert.ok(Math.abs(dv[j] - expected.get(r)!) < 1e-12));
  });
});

describe("learning on envs with a known optimum (fixed seeds)", () => {
  const cases = [
    { name: "bandit (5 arms)", env: () => new BanditEnv(), iterations: 30, chance: 0.4 },
    { name: "chain (6 steps right)", env: () => new ChainEnv(), iterations: 15, chance: 0.3 },
    { name: "shop toy (search, pick, size, buy)", env: () => new ShopToyEnv(), iterations: 30, chance: 0.1 },
  ];
  for (const algo of ["grpo", "ppo"] as const) {
    for (const c of cases) {
      test(`${algo}: ${c.name} goes from chance to ≥ 0.9 success`, async () => {
        const run = await learnToy({ env: c.env(), algo, iterations: c.iterations, seed: 1 });
        assert.ok(run.initialSuccess <= c.chance, `initial success ${run.initialSuccess} is not near chance`);
        assert.ok(run.updatesToTarget !== undefined, `never reached 0.9 in ${c.iterations} updates: ${run.evalSuccess.join(" ")}`);
        assert.ok(run.evalSuccess.at(-1)! >= 0.9, `final greedy success ${run.evalSuccess.at(-1)}`);
      });
    }
  }
});
