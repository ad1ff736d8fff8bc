import { readdirSync, readFileSync } from "node:fs";

/** Linux /proc readings for the browser pool: its processes and their memory. Empty off Linux. */

function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (comm) state ppid …": comm may hold spaces and parentheses, so read after the last ")".
    const after = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(after[1]);
  } catch {
    return null;
  }
}

function allPids(): number[] {
  try {
    return readdirSync("/proc")
      .filter((d) => /^\d+$/.test(d))
      .map(Number);
  } catch {
    return [];
  }
}

/** The direct children of `pid`. */
export function childPids(pid: number): number[] {
  return allPids().filter((p) => parentOf(p) === pid);
}

/** `root` and every process below it. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const p of allPids()) {
    const parent = parentOf(p);
    if (parent === null) continue;
    (children.get(parent) ?? children.set(parent, []).get(parent)!).push(p);
  }
  const out: number[] = [];
  const stack = [root];
  while (stack.length) {
    const p = stack.pop()!;
    out.push(p);
    stack.push(...(children.get(p) ?? []));
  }
  return out;
}

export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ").trim();
  } catch {
    return "";
  }
}

/** Resident memory (VmRSS) and proportional share (Pss, shared pages split among sharers) in bytes. */
export function memoryOf(pid: number): { rss: number; pss: number } {
  let rss = 0;
  let pss = 0;
  try {
    rss = 1024 * Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  } catch {
    /* gone */
  }
  try {
    pss = 1024 * Number(/Pss:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? 0);
  } catch {
    /* gone or not readable */
  }
  return { rss, pss };
}
