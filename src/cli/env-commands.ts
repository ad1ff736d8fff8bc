import { createInterface } from "node:readline";
import type { Command } from "commander";
import { createEnv, defaultSplits, envEntry, envTasks, listEnvs, listPolicies } from "../envs/index.ts";
import { checkEnv, FREE_TEXT_SLOT, InvalidConfigError } from "../core/index.ts";
import { parseIntOption, playScriptedEpisodes } from "./episodes.ts";
import { ENV_OR_URL, withEnvOption } from "./env-option.ts";
import { cliConsole as console, cliIo } from "./io.ts";

export function registerEnvCommands(program: Command): void {
  const env = program.command("env").description("work with the real environments");

  env
    .command("list")
    .description("list the environments and their scripted policies")
    .action(() => {
      for (const e of listEnvs()) console.log(`${e.name}\t${e.description}\tpolicies: ${listPolicies(e.name).join(", ")}`);
    });

  env
    .command("check")
    .description("check that an env keeps the Env contract (types, determinism under a seed, invalid actions as no-ops, close)")
    .requiredOption("--env <name>", "environment")
    .option("--split <split>", "task split (default: the env's training split)")
    .option("--steps <n>", "steps per determinism rollout", parseIntOption("steps", 1), 5)
    .option("--seed <n>", "seed of the determinism rollouts", parseIntOption("seed"), 0)
    .option("--data <dir>", "data folder")
    .action(async (o) => {
      const entry = envEntry(o.env);
      const split = o.split ?? entry.splits.train;
      await checkEnv(createEnv(o.env, { split, dataDir: o.data }), { ...entry.spec.check, steps: o.steps, seed: o.seed });
      console.log(`${o.env} (${split}): checkEnv passed (reset/step types, determinism under seed ${o.seed}, invalid actions as no-ops, close)`);
    });

  env
    .command("eval")
    .description("evaluate a scripted policy on a split: mean score ×100 and success rate")
    .requiredOption("--env <name>", ENV_OR_URL)
    .requiredOption("--policy <name>", "scripted policy (webshop: oracle | oracle-noisy | rule | random; alfworld: expert | random)")
    .option("--split <split>", "task split (default: webshop test, alfworld valid_unseen)")
    .option("--episodes <n>", "episodes (default: every task of the split once)", parseIntOption("episodes", 1))
    .option("--start <n>", "first task index within the split", parseIntOption("start"), 0)
    .option("--seed <n>", "seed of stochastic policies", parseIntOption("seed"), 0)
    .option("--max-steps <n>", "steps before truncation", parseIntOption("max-steps", 1))
    .option("--actions-from <buffer>", "an env that lists no actions: random picks among the commands this buffer recorded")
    .option("--data <dir>", "data folder")
    .option("--json", "print the result as JSON")
    .action(async (o) => {
      await withEnvOption(o, async () => {
        const split = o.split ?? defaultSplits(o.env).eval;
        // Success per task type, where tasks have one (ALFWorld's six).
        const byType = new Map<string, [number, number]>();
        const r = await playScriptedEpisodes({ ...o, split, env: o.env, policy: o.policy }, `eval ${o.policy}`, (t) => {
          if (typeof t.task.task_type !== "string") return;
          const c = byType.get(t.task.task_type) ?? [0, 0];
          byType.set(t.task.task_type, [c[0] + (t.success ? 1 : 0), c[1] + 1]);
        });
        const types = Object.fromEntries([...byType].sort().map(([k, [ok, n]]) => [k, { success: ok, episodes: n }]));
        const out = {
          env: o.env,
          policy: o.policy,
          split,
          episodes: r.episodes,
          score: 100 * r.score,
          success_rate: 100 * r.success,
          ...(byType.size ? { by_type: types } : {}),
        };
        if (o.json) console.log(JSON.stringify(out));
        else {
          console.log(`${o.env} ${split} (${r.episodes} episodes), policy ${o.policy}: score ${out.score.toFixed(1)}, success ${out.success_rate.toFixed(1)}%`);
          for (const [k, v] of Object.entries(types)) console.log(`  ${k}: ${v.success}/${v.episodes} (${((100 * v.success) / v.episodes).toFixed(1)}%)`);
        }
      });
    });

  env
    .command("play")
    .description("play an environment in the terminal")
    .argument("<env>", "environment")
    .option("--split <split>", "task split (default: webshop test, alfworld valid_unseen)")
    .option("--task <index>", "index of the task within the split", parseIntOption("task"))
    .option("--seed <n>", "seed for picking a task", parseIntOption("seed"), 0)
    .option("--data <dir>", "data folder")
    .action(async (name: string, o) => {
      o.split ??= defaultSplits(name).eval;
      const e = createEnv(name, { dataDir: o.data, split: o.split });
      const tasks = envTasks(name, e);
      const task = o.task === undefined ? undefined : tasks[o.task];
      if (o.task !== undefined && !task) {
        await e.close();
        throw new InvalidConfigError(`--task ${o.task} is out of range for split ${o.split} (0..${tasks.length - 1})`);
      }
      // Read lines through one iterator: with piped input, lines that arrive before a prompt are kept.
      const rl = createInterface({ input: cliIo().stdin, terminal: false });
      const lines = rl[Symbol.asyncIterator]();
      const ask = async (prompt: string): Promise<string | null> => {
        cliIo().stdout.write(prompt);
        const next = await lines.next();
        return next.done ? null : next.value;
      };
      let { observation } = await e.reset({ seed: o.seed, task });
      let total = 0;
      let step = 0;
      const maxSteps = (e as unknown as { maxSteps?: number }).maxSteps;
      console.log(name === "webshop" ? "Type an action (search[words] or click[label]), its number, or 'quit'." : "Type a command, its number, or 'quit'.");
      for (;;) {
        console.log(`\n${observation.split(" [SEP] ").join("\n  ")}`);
        const actions = e.availableActions() ?? [];
        actions.forEach((a, i) => console.log(`  ${i + 1}. ${a}`));
        let line: string | null;
        // An empty Enter is not an action: ask again without spending a step.
        do line = await ask(`step ${step + 1}${maxSteps ? `/${maxSteps}` : ""} > `);
        while (line !== null && line.trim() === "");
        if (line === null || line.trim() === "quit") break;
        let action = line.trim();
        const n = Number(action);
        if (Number.isInteger(n) && n >= 1 && n <= actions.length) {
          action = actions[n - 1];
          if (action.includes(FREE_TEXT_SLOT)) {
            const text = await ask("search for: ");
            if (text === null) break;
            action = action.replace(FREE_TEXT_SLOT, text.trim());
          }
        }
        const r = await e.step(action);
        step++;
        total += r.reward;
        observation = r.observation;
        if (r.info.invalid) console.log(`(invalid action: ${action})`);
        if (r.terminated || r.truncated) {
          console.log(`\n${observation.split(" [SEP] ").join("\n  ")}`);
          console.log(`\nEpisode over (${r.terminated ? "bought" : "step limit"}): reward ${total.toFixed(3)}`);
          break;
        }
      }
      rl.close();
      await e.close();
    });
}
