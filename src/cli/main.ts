import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { registerAudit } from "./audit-command.ts";
import { registerModel } from "./model-command.ts";
import { registerBufferCommands } from "./buffer-commands.ts";
import { registerCollect } from "./collect.ts";
import { describeError } from "./errors.ts";
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

const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };

const program = new Command();
program
  .name("dreamgym")
  .description("Train LLM agents with RL on synthetic experience (DreamGym).")
  .version(version, "-V, --version", "print the version")
  .option(
    "--env-module <file>",
    "load a module that registers environments (registerEnv); repeatable; a dreamgym.config.{js,mjs,ts,mts} in the working folder is loaded too",
    (v: string, prev: string[] = []) => [...prev, v],
  )
  .exitOverride();
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

// Output piped into a program that stops reading (`| head`) ends the command quietly, as Unix tools do.
for (const stream of [process.stdout, process.stderr]) stream.on("error", (e: NodeJS.ErrnoException) => (e.code === "EPIPE" ? process.exit(0) : undefined));

try {
  await loadEnvModules(envModules(process.argv.slice(2)));
  await program.parseAsync(process.argv);
} catch (e) {
  // Help and --version exit 0; a usage error is an input error: 2, as for every bad input.
  if (e instanceof CommanderError) process.exit(e.exitCode === 0 ? 0 : 2);
  const line = describeError(e);
  if (line === null) throw e; // a bug: keep its stack trace
  console.error(`error: ${line}`);
  process.exit(2);
}
