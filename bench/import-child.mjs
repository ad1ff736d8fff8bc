// The child of bench/import.ts: one `dreamgym buffer import` by the compiled CLI of the checkout given,
// its printed rate and its CPU time. Plain JavaScript, run by plain node: under tsx (`--import tsx`, which
// a worker inherits) the import thread would load tsx at its start, which `dreamgym` does not.
// Usage: node bench/import-child.mjs <root> -- buffer import …
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const root = process.argv[2];
const entry = join(root, "dist", "cli", "run.js");
if (!existsSync(entry)) throw new Error(`${entry} is missing: run npm run build in ${root}`);
const { runCli } = await import(pathToFileURL(entry).href);

/** The main thread's CPU seconds (utime + stime in /proc, in clock ticks of 10 ms); NaN elsewhere. */
function mainThreadCpu() {
  const stat = `/proc/self/task/${process.pid}/stat`;
  if (!existsSync(stat)) return Number.NaN;
  const f = readFileSync(stat, "utf8").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

let out = "";
const sink = new Writable({
  write(chunk, _enc, done) {
    out += String(chunk);
    done();
  },
});
await runCli(["--version"], { stdout: sink, stderr: sink, stdin: process.stdin }); // the CLI's modules loaded before the clock
out = "";
const cpu = process.cpuUsage();
const main0 = mainThreadCpu();
const code = await runCli(process.argv.slice(process.argv.indexOf("--") + 1), { stdout: sink, stderr: sink, stdin: process.stdin });
const used = process.cpuUsage(cpu);
const main = mainThreadCpu() - main0;
const m = /(\d+) transitions in [\d.]+ s \((\d+)\/s\)/.exec(out);
if (code !== 0 || !m) throw new Error(`import failed (${code}):\n${out}`);
console.log(JSON.stringify({ transitions: Number(m[1]), rate: Number(m[2]), cpu: (used.user + used.system) / 1e6, main }));
process.exit(0);
