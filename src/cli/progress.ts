import cliProgress from "cli-progress";
import { cliIo } from "./io.ts";

/** A progress bar on the run's stderr (silent when it is not a terminal). */
export function progressBar(label: string, total: number, extra: Record<string, string | number> = {}) {
  const fields = Object.keys(extra)
    .map((k) => `${k} {${k}}`)
    .join(" | ");
  const bar = new cliProgress.SingleBar(
    { format: `${label} [{bar}] {value}/{total} | {duration_formatted}${fields ? ` | ${fields}` : ""}`, hideCursor: true, stream: cliIo().stderr },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0, extra);
  return bar;
}
