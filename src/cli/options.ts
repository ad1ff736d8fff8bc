import { InvalidConfigError } from "../core/index.ts";

/**
 * The largest value each integer flag takes. A bound stops a typo (`--episodes 1e30`) from filling
 * the disk; the limits are far above any real use. Flags not listed get DEFAULT_MAX.
 */
const MAX: Record<string, number> = {
  episodes: 1_000_000,
  tasks: 100_000,
  group: 1_000,
  concurrency: 256,
  "max-steps": 10_000,
  "max-tokens": 1_000_000,
  budget: 1_000_000_000,
  "real-budget": 1_000_000_000,
  "max-seconds": 10_000_000,
  seed: 2 ** 31 - 1,
  start: 1_000_000_000,
  limit: 10_000_000,
  capacity: 1_000_000_000,
  k: 1_000,
  "tasks-per-iter": 10_000,
  "eval-every": 1_000_000,
  "eval-tasks": 100_000,
  "final-eval-tasks": 100_000,
  "checkpoint-every": 1_000_000,
  task: 1_000_000_000,
};
const DEFAULT_MAX = 1_000_000_000;

/** How a flag is written: `-k` for one letter, `--name` otherwise. */
export const flagName = (name: string) => (name.length === 1 ? `-${name}` : `--${name}`);

/** A commander parser for an integer flag in [min, max] (decimal digits only: no 1e3, 0x10 or 2.0). */
export function parseIntOption(name: string, min = 0, max = MAX[name] ?? DEFAULT_MAX) {
  return (value: string): number => {
    const n = /^\s*-?\d+\s*$/.test(value) ? Number(value) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidConfigError(`${flagName(name)} must be an integer from ${min} to ${max}, got "${value}"`);
    }
    return n;
  };
}

/** A commander parser for a number flag in [min, max] (`minOpen`/`maxOpen`: that end itself is excluded). */
export function parseNumberOption(name: string, min: number, max: number, opts: { minOpen?: boolean; maxOpen?: boolean } = {}) {
  return (value: string): number => {
    const n = value.trim() === "" ? NaN : Number(value);
    if (!Number.isFinite(n) || n < min || n > max || (opts.minOpen && n === min) || (opts.maxOpen && n === max)) {
      throw new InvalidConfigError(
        `${flagName(name)} must be a number in ${opts.minOpen ? "(" : "["}${min}, ${max}${opts.maxOpen ? ")" : "]"}, got "${value}"`,
      );
    }
    return n;
  };
}
