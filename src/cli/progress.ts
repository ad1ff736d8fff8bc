import cliProgress from "cli-progress";

/** A progress bar on stderr (silent when stderr is not a terminal). */
export function progressBar(label: string, total: number, extra: Record<string, string | number> = {}) {
  const fields = Object.keys(extra)
    .map((k) => `${k} {${k}}`)
    .join(" | ");
  const bar = new cliProgress.SingleBar(
    { format: `${label} [{bar}] {value}/{total} | {duration_formatted}${fields ? ` | ${fields}` : ""}`, hideCursor: true, stream: process.stderr },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0, extra);
  return bar;
}
