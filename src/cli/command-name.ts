// Which command a `dreamgym` argv names, without loading any command: the binary (`main.ts`) asks it
// before it loads the CLI, and `runCli` to load only that command's module.

/** The command `argv` names: its first argument that is not the program's own option (or that option's value). */
export function commandName(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--env-module") i++;
    else if (!argv[i].startsWith("-")) return argv[i];
    else if (!argv[i].startsWith("--env-module=")) return undefined; // --help, --version or a usage error: all commands
  }
  return undefined;
}
