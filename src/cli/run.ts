import { Command, CommanderError } from "commander";
import { describeError } from "./errors.ts";
import { type CliIo, withCliRun } from "./io.ts";
import { loadEnvModules } from "../envs/index.ts";
import { PACKAGE_VERSION as version } from "../core/index.ts";
import { commandName } from "./command-name.ts";

type Register = (program: Command) => void;

/**
 * Each top-level command, in the order help lists them, and how to load the module that registers it.
 * A run loads only the module of the command it names: it skips the other commands' modules and what
 * only they import (the server, the trainer, the view: ~20 to ~90 of the project's ~200 modules, by
 * command). Help, `--version` and a name that is not here load them all, so that commander lists and
 * suggests every command.
 */
export const COMMANDS: Readonly<Record<string, () => Promise<Register>>> = {
  env: async () => (await import("./env-commands.ts")).registerEnvCommands,
  collect: async () => (await import("./collect.ts")).registerCollect,
  buffer: async () => (await import("./buffer-commands.ts")).registerBufferCommands,
  audit: async () => (await import("./audit-command.ts")).registerAudit,
  model: async () => (await import("./model-command.ts")).registerModel,
  sft: async () => (await import("./sft-command.ts")).registerSft,
  train: async () => (await import("./train-command.ts")).registerTrain,
  rollout: async () => (await import("./rollout-command.ts")).registerRollout,
  demo: async () => (await import("./demo-command.ts")).registerDemo,
  serve: async () => (await import("./serve-command.ts")).registerServe,
  view: async () => (await import("./view-command.ts")).registerView,
  "serve-site": async () => (await import("./serve-site-command.ts")).registerServeSite,
  "oracle-model": async () => (await import("./oracle-command.ts")).registerOracleModel,
  webarena: async () => (await import("./webarena-command.ts")).registerWebArena,
};

/** The commands whose modules a run loads: the one it names, or all of them (help, `--version`, an unknown name). */
export function commandsToLoad(argv: readonly string[]): string[] {
  const name = commandName(argv);
  return name !== undefined && Object.hasOwn(COMMANDS, name) ? [name] : Object.keys(COMMANDS);
}

/** The `dreamgym` program, made anew for each run (commander keeps the parsed options on it), with `registers`' commands. */
function buildProgram(io: Required<Pick<CliIo, "stdout" | "stderr">>, registers: readonly Register[]): Command {
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
  for (const register of registers) register(program);

  // A usage error is one line that points to the command's help (not the whole help text); commander's
  // "(Did you mean …?)" comes on a line of its own, joined here.
  const withHelpHint = (cmd: Command, path: string): void => {
    cmd.configureOutput({ outputError: (str, write) => write(`${str.trimEnd().replace(/\s*\n\s*/g, " ")} (see: ${path} --help)\n`) });
    for (const sub of cmd.commands) withHelpHint(sub, `${path} ${sub.name()}`);
  };
  withHelpHint(program, "dreamgym");
  return program;
}

/**
 * `help <name>` where <name> is none of the command's subcommands, as `<name>` alone: commander's help
 * command prints the whole help for it (exit 1), where `<name>` is the one-line "unknown command" error
 * with the nearest name. The walk stops at the first option other than `--env-module`.
 */
function unknownHelpAsCommand(program: Command, argv: readonly string[]): string[] {
  let cmd = program;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--env-module") i++;
    else if (arg.startsWith("--env-module=")) continue;
    else if (arg.startsWith("-")) break;
    else {
      const find = (name: string) => cmd.commands.find((c) => c.name() === name || c.aliases().includes(name));
      const sub = find(arg);
      const named = argv[i + 1];
      if (!sub && arg === "help" && cmd.commands.length > 0 && named !== undefined && !named.startsWith("-") && !find(named))
        return [...argv.slice(0, i), ...argv.slice(i + 1)];
      if (!sub) break;
      cmd = sub;
    }
  }
  return [...argv];
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

/** Whether `argv` asks for help or the version only (no command runs). */
function asksForHelp(argv: readonly string[]): boolean {
  const own = argv.indexOf("--") < 0 ? argv : argv.slice(0, argv.indexOf("--"));
  const command = commandName(own);
  return own.includes("--help") || own.includes("-h") || command === "help" || (command === undefined && own.some((a) => a === "--version" || a === "-V"));
}

/**
 * The user's env modules (`--env-module`, a dreamgym.config in the working folder). One that does not
 * load stops a command, but help and --version still answer: its error is a warning line then.
 */
async function loadUserEnvModules(argv: readonly string[], console: { error(line: string): void }): Promise<void> {
  try {
    await loadEnvModules(envModules(argv));
  } catch (e) {
    const line = describeError(e);
    if (line === null || !asksForHelp(argv)) throw e;
    console.error(`warning: ${line}`);
  }
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
 * process's: they are removed when the command ends, and a second signal exits the process (130);
 * `train`'s and `rollout`'s first one exits it at once (130), after their line (`exitOnSignal`).
 */
export async function runCli(argv: readonly string[], io: CliIo = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin }): Promise<number> {
  return withCliRun(io, async (run) => {
    try {
      // The commands' modules first, then the user's env modules, as when the commands were imported statically.
      const registers: Register[] = [];
      for (const name of commandsToLoad(argv)) registers.push(await COMMANDS[name]()); // one after another: the same order each run
      await loadUserEnvModules(argv, run.console);
      const program = buildProgram(io, registers);
      await program.parseAsync(unknownHelpAsCommand(program, argv), { from: "user" });
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
