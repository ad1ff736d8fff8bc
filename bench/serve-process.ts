// The server benchmarks run `dreamgym serve` in a child process (the built CLI), so the server and the
// benchmark's clients do not share one event loop: on 2 cores, one core each.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");

/** Brings dist/ up to date (incremental: about a second when it already is). */
export function buildCli(): void {
  execFileSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-b", "tsconfig.build.json"], { cwd: root, stdio: "inherit" });
}

export interface ServeProcess {
  readonly proc: ChildProcess;
  readonly pid: number;
  /** `http://127.0.0.1:port` */
  readonly url: string;
  readonly ws: string;
  /** What the server wrote to stderr so far. */
  stderr(): string;
  /** The server's resident set (VmRSS), in MB. */
  rssMB(): number;
  /** CPU seconds (user + system) the server used so far. */
  cpuSeconds(): number;
  /** SIGTERM, then waits for the exit (SIGKILL after 10 s). */
  stop(): Promise<number | null>;
}

/** Starts `dreamgym serve <args> --port 0` and waits for its "serving ..." line. `nodeArgs` go to node (e.g. --cpu-prof). */
export async function startServe(args: string[], o: { nodeArgs?: string[]; env?: NodeJS.ProcessEnv } = {}): Promise<ServeProcess> {
  const proc = spawn(process.execPath, [...(o.nodeArgs ?? []), join(root, "bin", "dreamgym"), "serve", ...args, "--port", "0"], {
    cwd: root,
    env: { ...process.env, ...o.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    proc.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = / on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    void exited.then((code) => reject(new Error(`dreamgym serve exited (${code}) before serving: ${err.trim()}`)));
  });
  const pid = proc.pid!;
  const hz = 100; // USER_HZ: clock ticks per second on Linux
  return {
    proc,
    pid,
    url,
    ws: `${url.replace(/^http/, "ws")}/ws`,
    stderr: () => err,
    rssMB: () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024,
    cpuSeconds: () => {
      // Fields after the command name (which may hold spaces) start at state; utime and stime are fields 14 and 15.
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return (Number(f[11]) + Number(f[12])) / hz;
    },
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}
