import { Command, CommanderError } from "commander";
import { registerAudit } from "./audit-command.ts";
import { registerModel } from "./model-command.ts";
import { registerBufferCommands } from "./buffer-commands.ts";
import { registerCollect } from "./collect.ts";
import { describeError } from "./errors.ts";
import { type CliIo, withCliRun } from "./io.ts";
import { registerSft } from "./sft-command.ts";
import { registerTrain } from "./train-command.ts";
import { registerRollout } from "./rollout-command.ts";
import { registerDemo } from "./demo-command.ts";
import { registerEnvCommands } from "./env-commands.ts";
import { registerServe } from "./serve-command.ts";
import { registerView } from "./view-command.ts";
import { registerServeSite } from "./serve-site-command.ts";
import { registerOracleModel } from "./oracle-command.ts";
import { registerWebArena } from "./webarena-command.ts";
import { loadEnvModules } from "../envs/index.ts";
import { PACKAGE_VERSION as version } from "../core/index.ts";

/** The `dreamgym` program, made anew for each run (commander keeps the parsed options on it). */
function buildProgram(io: Required<Pick<CliIo, "stdout" | "stderr">>): Command {
  const program = new Command();
  // A terminal's width, as commander's default does for the process's streams (undefined: its default, 80).
  const width = (s: NodeJS.WritableStream) => ((s as NodeJS.WriteStream).isTTY ? (s as NodeJS.WriteStream).columns : undefined) as number;
  program
    .name("dreamgym")
    .description("Train LLM agents with RL on synthetic experience (DreamGym).")
    .version(version, "-V, --version", "print the version")
    .option(
      "--env-module <file>",
      "load a module that registers environments (registerEnv); repeatable; a dreamgym.config.{js,mjs,ts,mts} in the working folder is loaded too",
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .exitOverride()
    // Help, usage errors and --version go to the run's streams (the subcommands inherit this).
    .configureOutput({
      writeOut: (str) => io.stdout.write(str),
      writeErr: (str) => io.stderr.write(str),
      getOutHelpWidth: () => width(io.stdout),
      getErrHelpWidth: () => width(io.stderr),
    });
  registerEnvCommands(program);
  registerCollect(program);
  registerBufferCommands(program);
  registerAudit(program);
  registerModel(program);
  registerSft(program);
  registerTrain(program);
  registerRollout(program);
  registerDemo(program);
  registerServe(program);
  registerView(program);
  registerServeSite(program);
  registerOracleModel(program);
  registerWebArena(program);

  // A usage error is one line that points to the command's help (not the whole help text).
  const withHelpHint = (cmd: Command, path: string): void => {
    cmd.configureOutput({ outputError: (str, write) => write(`${str.trimEnd()} (see: ${path} --help)\n`) });
    for (const sub of cmd.commands) withHelpHint(sub, `${path} ${sub.name()}`);
  };
  withHelpHint(program, "dreamgym");
  return program;
}

/** `--env-module` values, wherever they stand: envs must be registered before any command runs. */
function envModules(argv: readonly string[]): string[] {
  const files: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--") break;
    if (argv[i] === "--env-module" && i + 1 < argv.length) files.push(argv[++i]);
    else if (argv[i].startsWith("--env-module=")) files.push(argv[i].slice("--env-module=".length));
  }
  return files;
}

/**
 * Runs `dreamgym <argv>` (the arguments after the program's name) with its output on `io`, and
 * resolves with the exit code: 0 when the command (or help, --version) ran to its end, 130 when it
 * was stopped by a signal and kept what it had done (collect), 2 when it refused a usage error or a
 * bad input, which it reports as one `error: …` line on `io.stderr` with no stack trace. An error
 * that is a bug rejects the promise (its stack trace is what to report). The binary (`main.ts`)
 * is this with the process's streams; tests run it in-process.
 *
 * Signal handlers a command installs (Ctrl-C in collect, servers waiting to be stopped) are the
 * process's: they are removed when the command ends, and a second signal exits the process (130).
 */
export async function runCli(argv: readonly string[], io: CliIo = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin }): Promise<number> {
  return withCliRun(io, async (run) => {
    try {
      await loadEnvModules(envModules(argv));
      await buildProgram(io).parseAsync([...argv], { from: "user" });
      return run.exitCode;
    } catch (e) {
      // Help and --version exit 0; a usage error is an input error: 2, as for every bad input.
      if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
      const line = describeError(e);
      if (line === null) throw e; // a bug: keep its stack trace
      run.console.error(`error: ${line}`);
      return 2;
    }
  });
}
