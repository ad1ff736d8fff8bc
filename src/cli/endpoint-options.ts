import type { Command } from "commander";
import { parseIntOption } from "./episodes.ts";
import { parseNumberOption } from "./options.ts";

/** The defaults, shared with the training config. */
export const DEFAULT_REQUEST_TIMEOUT_S = 60;
export const DEFAULT_MAX_FAILURES = 10;

/** Seconds in (0, 86400]. */
export const parseSeconds = (name: string) => parseNumberOption(name, 0, 86_400, { minOpen: true });

/** `--request-timeout` and `--max-failures`, for every command that calls an LLM or embedder endpoint. */
export function endpointOptions(cmd: Command): Command {
  return cmd
    .option(
      "--request-timeout <seconds>",
      `an LLM/embedder HTTP attempt gets this long to answer; a timed-out attempt is not retried (default: ${DEFAULT_REQUEST_TIMEOUT_S})`,
      parseSeconds("request-timeout"),
    )
    .option(
      "--max-failures <n>",
      `stop (exit 2) after this many failed LLM calls in a row, or failed steps on this many tasks with no good step between (default: ${DEFAULT_MAX_FAILURES})`,
      parseIntOption("max-failures", 1),
    );
}

/** The chat model options from those flags. */
export function endpointSettings(o: { requestTimeout?: number; maxFailures?: number }): { timeoutMs: number; maxFailures: number } {
  return { timeoutMs: 1000 * (o.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_S), maxFailures: o.maxFailures ?? DEFAULT_MAX_FAILURES };
}
