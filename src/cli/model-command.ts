import type { Command } from "commander";
import { closing, writeFileAtomic } from "../core/index.ts";
import { checkBufferEnv, ReplayBuffer } from "../buffer/index.ts";
import { createEnv, syntheticSupport } from "../envs/index.ts";
import { trainLearnedModel } from "../experience/index.ts";
import { parseIntOption } from "./episodes.ts";
import { withEnvOption } from "./env-option.ts";
import { inFile } from "./errors.ts";
import { parseNumberOption } from "./options.ts";
import { checkInputFile, checkOutputFile } from "./output.ts";
import { progressBar } from "./progress.ts";
import { cliConsole as console } from "./io.ts";

export function registerModel(program: Command): void {
  const model = program.command("model").description("the learned experience model (an ensemble of small CPU networks; --experience learned:FILE)");
  model
    .command("train")
    .description("train it on a buffer's real transitions (abstract states): reward and end of each step; validation on held-out tasks")
    .requiredOption("--buffer <file>", "the buffer of offline trajectories (dreamgym buffer import F.jsonl --abstract)")
    .requiredOption("--env <name>", "environment")
    .requiredOption("--out <file>", "the model file to write")
    .option("--epochs <n>", "passes over each member's training sample (the best epoch on the held-out tasks is kept)", parseIntOption("epochs", 1, 1000), 12)
    .option("--seed <n>", "seed (same buffer and seed: same model, byte for byte)", parseIntOption("seed"), 0)
    .option("--members <n>", "ensemble members (their disagreement is u)", parseIntOption("members", 1, 64), 5)
    .option("--val <fraction>", "share of tasks held out for validation", parseNumberOption("val", 0, 1, { maxOpen: true }), 0.1)
    .option("--data <dir>", "data folder")
    .option("--json", "print the validation report as JSON")
    .action(async (o) => {
      checkInputFile(o.buffer, "buffer file", "give the buffer file");
      checkOutputFile(o.out);
      await withEnvOption(o, async () => {
        const support = await closing(createEnv(o.env, { dataDir: o.data }), (env) => syntheticSupport(o.env, env));
        const buffer = await inFile(o.buffer, () => ReplayBuffer.open(o.buffer, { readonly: true }));
        try {
          checkBufferEnv(buffer, o.buffer, o.env);
        } catch (e) {
          buffer.close();
          throw e;
        }
        const bar = progressBar("model train", o.members * o.epochs, { val: "-" });
        try {
          const { model: trained, validation } = await inFile(o.buffer, () =>
            trainLearnedModel(buffer, {
              abstraction: support.abstraction,
              rewards: support.rewards,
              epochs: o.epochs,
              seed: o.seed,
              members: o.members,
              valFraction: o.val,
              onEpoch: (e) =>
                bar.update((e.member - 1) * o.epochs + e.epoch, { val: e.valLoss === null ? "-" : `member ${e.member} loss ${e.valLoss.toFixed(4)}` }),
            }),
          );
          bar.stop();
          writeFileAtomic(o.out, trained.save());
          if (o.json) return console.log(JSON.stringify({ model: o.out, training: trained.info.training, validation }, null, 2));
          const t = trained.info.training;
          console.log(`trained ${o.members} members on ${t.transitions} real transitions (${t.trajectories} trajectories, ${t.tasks} tasks); wrote ${o.out}`);
          if (!validation) return console.log("no validation: no task fell into the held-out share (--val)");
          const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
          const rows: [string, string][] = [
            ["held-out tasks / steps", `${validation.tasks} / ${validation.steps}`],
            ["validation loss (mean of members)", validation.loss.toFixed(4)],
            ["termination accuracy", pct(validation.terminationAccuracy)],
            ["ε_R: reward error rate (|Δr| > 0.01)", pct(validation.rewardErrorRate)],
            ["reward MAE, ending steps", validation.endingRewardMAE.toFixed(3)],
            ["best epoch per member", validation.members.map((m) => m.bestEpoch).join(" ")],
          ];
          for (const [k, v] of rows) console.log(`${k.padEnd(40)} ${v}`);
        } finally {
          bar.stop();
          buffer.close();
        }
      });
    });
}
