// The `dreamgym` binary: `runCli` with the process's streams, and the process's exit code.
import { runCli } from "./run.ts";

// Output piped into a program that stops reading (`| head`) ends the command quietly, as Unix tools do.
for (const stream of [process.stdout, process.stderr]) stream.on("error", (e: NodeJS.ErrnoException) => (e.code === "EPIPE" ? process.exit(0) : undefined));

const code = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin });
// A refused command exits at once, leaving what it had in flight (requests, timers); one that ran
// to its end (0, or 130 when stopped by a signal) lets the process end when its work has drained.
if (code === 0 || code === 130) process.exitCode = code;
else process.exit(code);
