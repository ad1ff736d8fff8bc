import { join } from "node:path";
import type { Command } from "commander";
import { InvalidConfigError, readJsonFile } from "../core/index.ts";
import {
  checkpointedIteration,
  resolveTrainConfig,
  resumeTraining,
  train,
  type IterationMetrics,
  type TrainConfig,
  type TrainSummary,
} from "../train/index.ts";
import { endpointOptions } from "./endpoint-options.ts";
import { withEnvOption } from "./env-option.ts";
import { parseIntOption } from "./episodes.ts";
import { parseNumberOption } from "./options.ts";
import { checkInputFile } from "./output.ts";
import { progressBar } from "./progress.ts";
import { exitOnSignal } from "./signals.ts";
import { cliConsole as console } from "./io.ts";

/** `--set a.b=value` → { a: { b: value } } (value read as JSON when it parses, else a string). */
export function applySet(target: Record<string, unknown>, assignment: string): void {
  const eq = assignment.indexOf("=");
  if (eq <= 0) throw new InvalidConfigError(`--set expects key=value, got "${assignment}"`);
  const path = assignment.slice(0, eq).split(".");
  const raw = assignment.slice(eq + 1);
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    // a plain string
  }
  let node = target;
  for (const key of path.slice(0, -1)) {
    if (typeof node[key] !== "object" || node[key] === null) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path.at(-1)!] = value;
}

/**
 * A --config file's value as the object the flags are set on. Anything else (null, a number, an
 * array) is refused here, before a flag is set on it, in the words the schema refuses it with.
 */
function configObject(value: unknown): Record<string, unknown> {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  resolveTrainConfig(value); // throws: "(top level): … expected object"
  throw new InvalidConfigError("invalid training config: (top level): expected an object");
}

export function printSummary(s: TrainSummary): void {
  const f = s.final;
  if (s.config.mode === "bc") {
    console.log(
      `${s.config.env} bc: ${s.iterations} epochs of behaviour cloning on ${s.config.buffer}'s successful real episodes, 0 real interactions, ${s.wallSeconds.toFixed(1)} s` +
        (s.resumedFrom !== undefined ? ` (resumed from epoch ${s.resumedFrom})` : ""),
    );
  } else
    console.log(
      `${s.config.env}${s.config.remote ? ` at ${s.config.remote}` : ""} ${s.config.mode} ${s.config.algo}: ${s.iterations} iterations, ${s.realInteractions} real interactions` +
        (s.config.realTasks === "server"
          ? `, ${s.syntheticInteractions} synthetic (played on the served run)`
          : s.config.mode === "real"
            ? ""
            : `, ${s.syntheticInteractions} synthetic (${s.droppedEpisodes} episodes dropped), ${s.auditInteractions} audit`) +
        `, ${s.wallSeconds.toFixed(1)} s` +
        (s.resumedFrom !== undefined ? ` (resumed from iteration ${s.resumedFrom})` : ""),
    );
  if (f.tasks === 0) console.log(`no evaluation (synthetic only): evaluate the checkpoint in the real ${s.config.env} env`);
  else console.log(`final evaluation on ${f.tasks} ${s.config.evalSplit} tasks: score ${f.score.toFixed(1)}, success ${(100 * f.success).toFixed(1)}%`);
  console.log(`run folder: ${s.runDir} (config.json, metrics.jsonl, checkpoints/, report.html)`);
}

export function progressHook() {
  let bar: ReturnType<typeof progressBar> | undefined;
  let lastEval = "-";
  let started: string | undefined;
  return {
    /** The folder of the run once it has started (a stop from then on leaves a run to resume). */
    get runDir() {
      return started;
    },
    onStart(runDir: string) {
      started = runDir;
    },
    onIteration(m: IterationMetrics, config: TrainConfig) {
      // A served run's trainer (realTasks "server") plays its synthetic budget, then its real one, as S2R does.
      const both = config.mode === "s2r" || config.realTasks === "server";
      const total = config.mode === "bc" ? config.bc.epochs : both ? config.budget + config.realBudget : config.budget;
      bar ??= progressBar(`train ${config.mode}`, total, { reward: "-", success: "-", eval: "-" });
      if (m.eval) lastEval = `${m.eval.score.toFixed(1)}/${(100 * m.eval.success).toFixed(0)}%`;
      const done =
        config.mode === "bc"
          ? m.iteration
          : both
            ? m.syntheticInteractions + m.realInteractions
            : config.mode === "real"
              ? m.realInteractions
              : m.syntheticInteractions;
      bar.update(Math.min(done, total), {
        reward: m.bc ? `loss ${m.bc.loss.toFixed(3)}` : m.meanReward.toFixed(3),
        success: m.bc ? `p(a*) ${m.bc.meanProb.toFixed(2)}` : `${(100 * m.success).toFixed(0)}%`,
        eval: lastEval,
      });
    },
    onWarning(message: string) {
      console.error(`warning: ${message}`);
    },
    stop() {
      bar?.stop();
      bar = undefined;
    },
  };
}

export function registerTrain(program: Command): void {
  const cmd = program
    .command("train")
    .description("train the neural policy with GRPO or PPO; writes a run folder (config, metrics, checkpoints, report)")
    .option(
      "--env <name>",
      "environment (default webshop), or an env server's URL (ws://host:port; dreamgym serve): real steps and evaluations run there, and --resume reconnects",
    )
    .option(
      "--mode <mode>",
      "real (default): RL in the real env | dreamgym: in the synthetic env | s2r: dreamgym, then the real env | bc: behaviour cloning on the --buffer's successful real episodes (no RL)",
    )
    .option("--algo <algo>", "grpo (default) | ppo")
    .option("--budget <n>", "training interactions: real env steps (real), synthetic steps (dreamgym, s2r's first phase)", parseIntOption("budget", 1))
    .option("--real-budget <n>", "s2r: real env steps of the second phase", parseIntOption("real-budget"))
    .option(
      "--real-screen <n>",
      "s2r: draw n× each real iteration's tasks, play them in the synthetic env, and spend the real steps on those whose returns vary most (default 1: no screening)",
      parseIntOption("real-screen", 1, 64),
    )
    .option(
      "--real-batch-advantage <λ>",
      "s2r: GRPO's batch term in the real phase (grpo.batchAdvantage there): each group's mean return against the batch's, added to its advantages (default: grpo.batchAdvantage, 0)",
      parseNumberOption("real-batch-advantage", 0, 100),
    )
    .option("--max-seconds <n>", "also stop after this much training wall time", parseIntOption("max-seconds"))
    .option(
      "--buffer <file>",
      "dreamgym/s2r: replay buffer with offline trajectories (abstract states); the run works on a copy. bc: the buffer whose successful real episodes are cloned",
    )
    .option("--epochs <n>", "bc: passes over the demonstrations (default 8)", parseIntOption("epochs", 1))
    .option(
      "--experience <model>",
      "dreamgym/s2r: default (embedded kNN model), learned:FILE (dreamgym model train) or a chat model (http://host/v1#model, openai:model, gguf:file)",
    )
    .option(
      "--cold-start",
      "dreamgym/s2r with no offline trajectories: an empty buffer, the reasoning model (--experience <chat model>) plays from the env's profile",
    )
    .option(
      "--synthetic-only",
      "dreamgym: no real env steps at all (no evaluation, no on-policy audit), for an env with no reachable deployment (WebArena here)",
    )
    .option(
      "--hybrid",
      "rewards and ends from the real env's verifier instead of the model's, where it can tell (WebShop: purchases scored by its reward; ALFWorld: the episode replayed in the real game)",
    )
    .option(
      "--refit",
      "dreamgym/s2r with --experience learned:FILE (Dyna): after each on-policy audit the model learns from its real replays, which then count as real training steps",
    )
    .option("--no-replay", "ablation: no retrieved demos for the model, and the buffer does not grow")
    .option("--no-curriculum", "ablation: seed tasks only")
    .option("--no-pessimism", "ablation: no penalty for the experience model's uncertainty, no halt, no std floor or KL penalty in the synthetic phase")
    .option("--cache <file>", "a chat model's response cache (SQLite)")
    .option("--seed <n>", "seed", parseIntOption("seed"))
    .option("--tasks-per-iter <n>", "tasks per iteration", parseIntOption("tasks-per-iter", 1))
    .option("--group <n>", "rollouts per task (GRPO's G)", parseIntOption("group", 2))
    .option("--concurrency <n>", "episodes at once (at least 128 in the synthetic env over an in-process model)", parseIntOption("concurrency", 1))
    .option("--eval-every <n>", "evaluate every n iterations (0: only at the end)", parseIntOption("eval-every"))
    .option("--eval-tasks <n>", "tasks in an interval evaluation", parseIntOption("eval-tasks", 1))
    .option("--final-eval-tasks <n>", "tasks in the final evaluation", parseIntOption("final-eval-tasks", 1))
    .option("--checkpoint-every <n>", "checkpoint every n iterations", parseIntOption("checkpoint-every", 1))
    .option("--config <file>", "a JSON training config (flags override it)")
    .option("--set <key=value>", "set any config key, e.g. --set grpo.klCoef=0.05 (repeatable)", (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option("--out <dir>", "run folder (default runs/<env>-<mode>-<algo>-<time>)")
    .option(
      "--resume <dir>",
      "continue the run in this folder from its last checkpoint (with --budget N: for N training steps in all; with --mode s2r --real-budget N: a dreamgym run goes on in the real env)",
    )
    .option("--data <dir>", "data folder");
  // Allowed with --resume too: they decide when a run stops, not what it computes (and --budget
  // extends the run; --mode s2r with --real-budget continues a DreamGym run in the real env).
  endpointOptions(cmd).action(async (o, cmd: Command) => {
    const hook = progressHook();
    // Ctrl-C or SIGTERM: the run stops at once and says where it stands (exit 130; see exitOnSignal).
    const releaseSignals = exitOnSignal((signal) => {
      hook.stop();
      const dir = hook.runDir ?? (o.resume || undefined);
      if (dir === undefined) return console.error(`stopped by ${signal} before the run started: nothing is kept`);
      let at: number | undefined;
      try {
        at = checkpointedIteration(dir);
      } catch {
        // A damaged checkpoint record (the resume had not read it yet): the resume will say what is wrong with it.
      }
      const kept =
        at === undefined
          ? "the run is kept to its last checkpoint"
          : at > 0
            ? `the run is kept to its checkpoint of iteration ${at}`
            : "the run has no checkpoint yet";
      console.error(`stopped by ${signal}: ${kept}; continue it with dreamgym train --resume ${dir}`);
    });
    try {
      if (o.resume === "") throw new InvalidConfigError("--resume needs the folder of the run to continue");
      if (o.resume) {
        const others = Object.keys(o).filter(
          (k) =>
            !["resume", "set", "requestTimeout", "maxFailures", "budget", "mode", "realBudget", "realScreen", "realBatchAdvantage"].includes(k) &&
            cmd.getOptionValueSource(k) === "cli",
        );
        if (others.length > 0 || (o.set as string[]).length > 0) {
          throw new InvalidConfigError(
            `--resume continues a run with its own config; drop ${[...others.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`), ...((o.set as string[]).length ? ["--set"] : [])].join(", ")}`,
          );
        }
        // --mode s2r --real-budget N: a DreamGym run goes on in the real env (sim-to-real).
        const s2r =
          cmd.getOptionValueSource("mode") === "cli" ||
          cmd.getOptionValueSource("realBudget") === "cli" ||
          cmd.getOptionValueSource("realScreen") === "cli" ||
          cmd.getOptionValueSource("realBatchAdvantage") === "cli"
            ? { mode: o.mode, realBudget: o.realBudget, realScreen: o.realScreen, realBatchAdvantage: o.realBatchAdvantage }
            : {};
        // --budget N: more training interactions of the first phase (the run goes on as if given N from the start).
        const budget = cmd.getOptionValueSource("budget") === "cli" ? { budget: o.budget } : {};
        const summary = await resumeTraining(o.resume, hook, { requestTimeout: o.requestTimeout, maxFailures: o.maxFailures, ...budget, ...s2r });
        hook.stop(); // the summary goes below the progress bar, not onto its line
        printSummary(summary);
        return;
      }
      // A missing file or a folder is said as the other commands say their inputs (not as a bare ENOENT, EISDIR).
      if (o.config) checkInputFile(o.config, "config file", "give a JSON training config file");
      const input = o.config ? configObject(readJsonFile(o.config)) : {};
      // Flags given on the command line override the file; the schema supplies the rest.
      const FLAG_KEYS: Record<string, string> = {
        env: "env",
        mode: "mode",
        algo: "algo",
        budget: "budget",
        realBudget: "realBudget",
        realScreen: "realScreen",
        realBatchAdvantage: "realBatchAdvantage",
        maxSeconds: "maxSeconds",
        seed: "seed",
        tasksPerIter: "tasksPerIteration",
        group: "rolloutsPerTask",
        concurrency: "concurrency",
        evalEvery: "evalEvery",
        evalTasks: "evalTasks",
        finalEvalTasks: "finalEvalTasks",
        checkpointEvery: "checkpointEvery",
        data: "dataDir",
        buffer: "buffer",
        experience: "experience",
        hybrid: "hybrid",
        coldStart: "coldStart",
        syntheticOnly: "syntheticOnly",
        replay: "replay",
        cache: "cache",
        requestTimeout: "requestTimeout",
        maxFailures: "maxFailures",
      };
      if (cmd.getOptionValueSource("epochs") === "cli") applySet(input, `bc.epochs=${o.epochs}`);
      for (const [flag, key] of Object.entries(FLAG_KEYS)) if (cmd.getOptionValueSource(flag) === "cli") input[key] = o[flag];
      if (cmd.getOptionValueSource("curriculum") === "cli") applySet(input, `curriculum.enabled=${o.curriculum}`);
      if (cmd.getOptionValueSource("pessimism") === "cli") input.pessimism = { beta: 0, kl: 0, stdFloor: 0 };
      if (o.refit) applySet(input, "onPolicyAudit.refit=true");
      for (const s of o.set as string[]) applySet(input, s);
      // --env ws://…: the server's env under its own name, and the URL in the config (a resume reconnects).
      const env = { env: typeof input.env === "string" ? input.env : "webshop", data: typeof input.dataDir === "string" ? input.dataDir : undefined };
      await withEnvOption(env, async (url) => {
        if (url) Object.assign(input, { env: env.env, remote: url });
        const out =
          o.out ?? join("runs", `${input.env ?? "webshop"}-${input.mode ?? "real"}-${input.algo ?? "grpo"}-${new Date().toISOString().replace(/[:.]/g, "-")}`);
        const summary = await train(out, input, hook);
        hook.stop();
        printSummary(summary);
      });
    } finally {
      hook.stop();
      releaseSignals();
    }
  });
}
