// The `dreamgym` binary: `runCli` with the process's streams, and the process's exit code. `serve`
// runs in a thread of its own (`serve-thread.ts`: a larger young generation for the server); its help
// is printed here, where the terminal's width is known (a thread's stdout is not a terminal).
import { isMainThread } from "node:worker_threads";
import { commandName } from "./command-name.ts";
import { runInServeThread, takeSignalsFromMainThread } from "./serve-thread.ts";

// Output piped into a program that stops reading (`| head`) ends the command quietly, as Unix tools do.
for (const stream of [process.stdout, process.stderr]) stream.on("error", (e: NodeJS.ErrnoException) => (e.code === "EPIPE" ? process.exit(0) : undefined));

const argv = process.argv.slice(2);
let code: number;
if (isMainThread && commandName(argv) === "serve" && !argv.some((a) => a === "--help" || a === "-h")) {
  code = await runInServeThread(new URL(import.meta.url), argv);
} else {
  if (!isMainThread) takeSignalsFromMainThread();
  const { runCli } = await import("./run.ts");
  code = await runCli(argv, { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin });
}
// A refused command exits at once, leaving what it had in flight (requests, timers); one that ran
// to its end (0, or 130 when stopped by a signal) lets the process end when its work has drained.
if (code === 0 || code === 130) process.exitCode = code;
else process.exit(code);
