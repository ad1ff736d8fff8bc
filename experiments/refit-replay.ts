// Refit (Dyna) replayed offline on a finished WebShop run's audits: the run's learned model is refit
// after each audit, as `--refit` would, and the next audit's synthetic episodes are paid again by the
// refit model (their ending steps; the policy stays the one that played them). Prints the return gap
// and the order agreement within GRPO groups (both on the model's returns before any pessimism
// penalty) over the last quarter of the audits, as recorded and as refit. How `--refit`'s candidates were picked before they ran live on dev (docs/results.md).
//
//   node --import tsx experiments/refit-replay.ts --run RUN_DIR --model MODEL_FILE [--epochs 2] [--rate 0.01] [--all]
// --all: each refit learns from every audit so far, not only the latest.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { join } from "node:path";
import { deriveSeed, type HistoryStep, type Trajectory } from "../src/core/index.ts";
import { WebShopEnv, webshopAbstraction } from "../src/envs/webshop/index.ts";
import { loadLearnedModel, realTrajectories, type AuditPair } from "../src/experience/index.ts";
import { auditFiles } from "../src/train/index.ts";

const { values: args } = parseArgs({
  options: {
    run: { type: "string" },
    model: { type: "string" },
    epochs: { type: "string", default: "2" },
    rate: { type: "string", default: "0.01" },
    all: { type: "boolean", default: false },
  },
});
if (!args.run || !args.model) {
  console.error("error: --run RUN_DIR and --model MODEL_FILE are needed");
  process.exit(2);
}
const epochs = Number(args.epochs);
const learningRate = Number(args.rate);

const env = new WebShopEnv({ split: "train" });
const model = loadLearnedModel(args.model, webshopAbstraction(env.catalogue));
const files = auditFiles(args.run);
// The seeds a live run with --refit would use (its config's seed).
const runSeed = (JSON.parse(readFileSync(join(args.run, "config.json"), "utf8")) as { seed: number }).seed;
if (files.length === 0) {
  console.error(`error: ${args.run} holds no audit files`);
  process.exit(2);
}

/** The synthetic return the current model pays for an audited episode: its ending step estimated again. */
function repaid(p: AuditPair): number {
  const history: HistoryStep[] = [];
  let state = p.synthetic.observation;
  let total = 0;
  for (const s of p.synthetic.steps) {
    total += s.terminated ? model.estimate({ task: p.task, history, state, action: s.action }).reward : s.reward;
    history.push({ state, action: s.action, nextState: s.nextObservation, reward: s.reward });
    state = s.nextObservation;
  }
  return total;
}

/** Pairs of one group ordered alike by the two returns (one side tied counts half; tied on both left out). */
function agreement(items: { group: string; synthetic: number; real: number }[]): { agree: number; pairs: number } {
  let agree = 0;
  let pairs = 0;
  const sign = (x: number) => Math.sign(Math.round(x * 1e6));
  for (let i = 0; i < items.length; i++)
    for (let j = i + 1; j < items.length; j++) {
      if (items[i].group !== items[j].group) continue;
      const ds = sign(items[i].synthetic - items[j].synthetic);
      const dr = sign(items[i].real - items[j].real);
      if (ds === 0 && dr === 0) continue;
      pairs++;
      agree += ds === dr ? 1 : ds === 0 || dr === 0 ? 0.5 : 0;
    }
  return { agree, pairs };
}

const rows: { gap: [number, number]; agree: [number, number]; pairs: number }[] = [];
const seen: Trajectory[] = [];
for (const f of files) {
  const pairs = readFileSync(f.file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as AuditPair);
  const now = pairs.map(repaid);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const recorded = agreement(pairs.map((p) => ({ group: p.group ?? String(p.index), synthetic: p.syntheticReturn, real: p.realReturn })));
  const refit = agreement(pairs.map((p, i) => ({ group: p.group ?? String(p.index), synthetic: now[i], real: p.realReturn })));
  rows.push({
    gap: [mean(pairs.map((p) => p.syntheticReturn - p.realReturn)), mean(pairs.map((p, i) => now[i] - p.realReturn))],
    agree: [recorded.agree, refit.agree],
    pairs: recorded.pairs,
  });
  const fresh = realTrajectories(pairs, "webshop");
  seen.push(...fresh);
  model.refit(args.all ? seen : fresh, deriveSeed(runSeed, "refit", f.iteration), { epochs, learningRate });
}
const tail = rows.slice(-Math.max(1, Math.ceil(rows.length / 4)));
const avg = (k: 0 | 1) => tail.reduce((s, r) => s + r.gap[k], 0) / tail.length;
const order = (k: 0 | 1) =>
  tail.reduce((s, r) => s + r.agree[k], 0) /
  Math.max(
    1,
    tail.reduce((s, r) => s + r.pairs, 0),
  );
console.log(
  `${files.length} audits; ${args.all ? "every audit so far" : "the latest audit"}, ${epochs} passes at ${learningRate}: over the last quarter, return gap ${avg(0).toFixed(3)} as recorded → ${avg(1).toFixed(3)} refit; order agreement ${order(0).toFixed(3)} → ${order(1).toFixed(3)}`,
);
await env.close();
