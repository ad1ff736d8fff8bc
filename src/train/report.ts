import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from "node:fs";
import { writeFileAtomic } from "../core/index.ts";
import { join } from "node:path";
import { auditTable } from "../experience/index.ts";
import type { IterationMetrics } from "./config.ts";

/** Audited iterations the report's table shows, the latest. */
const AUDIT_ROWS = 200;

/**
 * report.html for a run folder: self-contained (inline SVG, no scripts, no network) so it opens
 * anywhere. Plots training reward and success, and evaluation score and success, against
 * iterations and against real interactions.
 */
export function writeReport(runDir: string): void {
  const metrics = readMetrics(runDir);
  const config = JSON.parse(readFileSync(join(runDir, "config.json"), "utf8")) as Record<string, unknown>;
  const summaryFile = join(runDir, "summary.json");
  const summary = existsSync(summaryFile) ? (JSON.parse(readFileSync(summaryFile, "utf8")) as Record<string, unknown>) : undefined;
  const evals = metrics.filter((m) => m.eval);

  const axes =
    config.mode === "bc"
      ? (["iteration"] as const)
      : config.mode === "real" || config.mode === undefined
        ? (["iteration", "realInteractions"] as const)
        : (["iteration", "realInteractions", "syntheticInteractions"] as const);
  const LABELS = { iteration: "iteration", realInteractions: "real interactions", syntheticInteractions: "synthetic interactions" };
  const charts = axes.map((x) => {
    const xLabel = LABELS[x];
    return [
      config.mode === "bc"
        ? lineChart("Behaviour cloning: the demonstrated action's probability vs epoch", xLabel, [
            { name: "mean π(a*|s)", color: "#1f77b4", points: metrics.filter((m) => m.bc).map((m) => [m[x], m.bc!.meanProb]) },
          ])
        : lineChart(`Training reward and success vs ${xLabel}`, xLabel, [
            { name: "mean reward", color: "#1f77b4", points: metrics.map((m) => [m[x], m.meanReward]) },
            { name: "success", color: "#2ca02c", points: metrics.map((m) => [m[x], m.success]) },
          ]),
      lineChart(`Evaluation (${config.evalSplit ?? "eval"} split, greedy) vs ${xLabel}`, xLabel, [
        { name: "score / 100", color: "#d62728", points: evals.map((m) => [m[x], m.eval!.score / 100]) },
        { name: "success", color: "#9467bd", points: evals.map((m) => [m[x], m.eval!.success]) },
      ]),
    ].join("\n");
  });
  const audited = metrics.filter((m) => m.onPolicyAudit);
  const withU = metrics.filter((m) => m.uncertainty);
  // The table's rows: the latest audits (every one is in metrics.jsonl and in `dreamgym view`).
  const tableRows = audited.slice(-AUDIT_ROWS);
  const table = auditTable(tableRows.map((m) => ({ iteration: m.iteration, summary: m.onPolicyAudit! })));
  const auditSection =
    audited.length === 0
      ? ""
      : `<h2>On-policy audit</h2>
<p>Whole groups of the audited iterations' synthetic episodes replayed action by action in the real env (same tasks and seeds). Exploitation rate: the share of synthetic successes that fail for real. Order agreement: the share of a group's pairs of episodes that the synthetic returns order as the real ones do (one side tied: half), which is what GRPO learns from; advantage correlation: of the group-normalised synthetic and real returns.</p>
<div class="grid">${lineChart("Synthetic vs real, audited episodes", "iteration", [
          { name: "synthetic success", color: "#1f77b4", points: audited.map((m) => [m.iteration, m.onPolicyAudit!.syntheticSuccess]) },
          { name: "real success", color: "#2ca02c", points: audited.map((m) => [m.iteration, m.onPolicyAudit!.realSuccess]) },
          {
            name: "exploitation rate",
            color: "#d62728",
            points: audited.filter((m) => m.onPolicyAudit!.exploitationRate !== null).map((m) => [m.iteration, m.onPolicyAudit!.exploitationRate!]),
          },
          { name: "success agreement", color: "#9467bd", points: audited.map((m) => [m.iteration, m.onPolicyAudit!.successAgreement]) },
        ])}${lineChart("What GRPO learns from: order within groups", "iteration", [
          {
            name: "order agreement",
            color: "#1f77b4",
            points: audited
              .filter((m) => m.onPolicyAudit!.advantage?.orderAgreement != null)
              .map((m) => [m.iteration, m.onPolicyAudit!.advantage!.orderAgreement!]),
          },
          {
            name: "advantage correlation",
            color: "#ff7f0e",
            points: audited.filter((m) => m.onPolicyAudit!.advantage?.correlation != null).map((m) => [m.iteration, m.onPolicyAudit!.advantage!.correlation!]),
          },
          {
            name: "return gap (synthetic − real)",
            color: "#d62728",
            points: audited.map((m) => [m.iteration, m.onPolicyAudit!.returnGap ?? m.onPolicyAudit!.syntheticReturn - m.onPolicyAudit!.realReturn]),
          },
        ])}</div>
${audited.length > tableRows.length ? `<p>The last ${tableRows.length} of ${audited.length} audited iterations.</p>` : ""}<table class="rows"><tr>${table.header.map((h) => `<th>${escape(h)}</th>`).join("")}</tr>
${table.lines.map((l) => `<tr>${l.map((c) => `<td>${escape(c)}</td>`).join("")}</tr>`).join("\n")}</table>`;
  const uncertaintySection =
    withU.length === 0
      ? ""
      : `<h2>Model uncertainty</h2><div class="grid">${lineChart("Experience model's uncertainty u per step", "iteration", [
          { name: "mean u", color: "#ff7f0e", points: withU.map((m) => [m.iteration, m.uncertainty!.mean]) },
          { name: "halted episodes share", color: "#8c564b", points: withU.map((m) => [m.iteration, m.uncertainty!.halts / Math.max(1, m.episodes)]) },
        ])}</div>`;
  const last = metrics.at(-1);
  const final = summary?.final as { score: number; success: number; tasks: number } | undefined;
  const rows: [string, string][] = [
    ["env / mode / algorithm", `${config.env} / ${config.mode} / ${config.algo}`],
    ["iterations", String(last?.iteration ?? 0)],
    ["real interactions (training)", String(last?.realInteractions ?? 0)],
    ["synthetic interactions (training)", String(last?.syntheticInteractions ?? 0)],
    ["real interactions (evaluation)", String(last?.evalInteractions ?? 0)],
    ["real interactions (on-policy audit)", String(last?.auditInteractions ?? 0)],
    ["wall time", `${(last?.wallSeconds ?? 0).toFixed(1)} s`],
    [
      "final evaluation",
      final?.tasks === 0
        ? "none (synthetic only)"
        : final
          ? `score ${final.score.toFixed(1)}, success ${(100 * final.success).toFixed(1)}% on ${final.tasks} tasks`
          : "not yet",
    ],
  ];
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>dreamgym run ${escape(runDir)}</title>
<style>body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse}td{padding:2px 12px 2px 0}
table.rows td,table.rows th{padding:2px 10px;border-bottom:1px solid #eee;text-align:right}svg{margin:8px 16px 8px 0;background:#fff;border:1px solid #ddd}.grid{display:flex;flex-wrap:wrap}pre{background:#f6f6f6;padding:8px;overflow:auto}</style></head>
<body><h1>dreamgym run</h1><p>${escape(runDir)}</p>
<table>${rows.map(([k, v]) => `<tr><td>${escape(k)}</td><td><b>${escape(v)}</b></td></tr>`).join("")}</table>
${axes.map((x, i) => `<h2>Against ${x === "iteration" ? "iterations" : LABELS[x]}</h2><div class="grid">${charts[i]}</div>`).join("\n")}
${auditSection}
${uncertaintySection}
<h2>Config</h2><pre>${escape(JSON.stringify(config, null, 2))}</pre>
</body></html>
`;
  writeFileAtomic(join(runDir, "report.html"), html);
}

/**
 * The metrics of a run folder, in order. A line that is not an iteration's record (a torn last line
 * left by a kill, or a damaged one: `null`, a number, an object without its iteration) is skipped, so
 * a resume and `dreamgym view` read the rest. The array is the caller's; its records are shared with
 * later reads of the same file, so they are read, not changed.
 */
export function readMetrics(runDir: string): IterationMetrics[] {
  const file = join(runDir, "metrics.jsonl");
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch {
    readSoFar.delete(file);
    return [];
  }
  try {
    // The lines read before are kept (a run's report is written at each checkpoint, and `dreamgym view`
    // polls): a file that only grew since is read from where the last read stopped. A file replaced (a
    // resume rewrites it: another inode or birth time), cut, rewritten at its size, or changed in the 64
    // bytes before that point is read again whole. One open file for all of it: a rename meanwhile
    // does not mix two files.
    const st = fstatSync(fd);
    let kept = readSoFar.get(file);
    readSoFar.delete(file);
    const grewOnly =
      kept !== undefined &&
      kept.ino === st.ino &&
      kept.born === st.birthtimeMs &&
      (st.size > kept.size || (st.size === kept.size && st.mtimeMs === kept.mtimeMs)) &&
      readBytes(fd, kept.offset - kept.end.length, kept.end.length).equals(kept.end);
    if (!grewOnly || !kept) kept = { ino: st.ino, born: st.birthtimeMs, size: 0, mtimeMs: 0, offset: 0, end: Buffer.alloc(0), metrics: [] };
    if (readSoFar.size >= FILES_KEPT) readSoFar.delete(readSoFar.keys().next().value!); // the least lately read
    readSoFar.set(file, kept);
    const added = readBytes(fd, kept.offset, st.size - kept.offset);
    // Whole lines are taken in; a last line without its newline (one being written) is read, not kept.
    const whole = added.lastIndexOf(10) + 1;
    for (const l of added.toString("utf8", 0, whole).split("\n")) {
      const m = parseMetricsLine(l);
      if (m) kept.metrics.push(m);
    }
    if (whole > 0) kept.end = Buffer.concat([kept.end, added.subarray(0, whole)]).subarray(-64);
    kept.offset += whole;
    kept.size = st.size;
    kept.mtimeMs = st.mtimeMs;
    const torn = parseMetricsLine(added.toString("utf8", whole));
    return torn ? [...kept.metrics, torn] : kept.metrics.slice();
  } finally {
    closeSync(fd);
  }
}
/** What `readMetrics` has read of each file (at most FILES_KEPT files: the records stay in memory). */
const readSoFar = new Map<string, { ino: number; born: number; size: number; mtimeMs: number; offset: number; end: Buffer; metrics: IterationMetrics[] }>();
const FILES_KEPT = 8;

function readBytes(fd: number, at: number, length: number): Buffer {
  const buf = Buffer.alloc(Math.max(0, length));
  return buf.length === 0 ? buf : buf.subarray(0, readSync(fd, buf, 0, buf.length, at));
}

/** One line of metrics.jsonl as an iteration's record; undefined for anything else (blank, damaged, not a record). */
export function parseMetricsLine(line: string): IterationMetrics | undefined {
  if (line.trim() === "") return undefined;
  try {
    const m = JSON.parse(line) as unknown;
    return typeof m === "object" && m !== null && !Array.isArray(m) && Number.isInteger((m as IterationMetrics).iteration)
      ? (m as IterationMetrics)
      : undefined;
  } catch {
    return undefined;
  }
}

interface Series {
  name: string;
  color: string;
  points: [number, number][];
}

/** A line chart as inline SVG, y from min(0, lowest) to max(1, highest) (a correlation or a gap may be negative). */
export function lineChart(title: string, xLabel: string, series: Series[], width = 520, height = 280): string {
  const pad = { l: 44, r: 12, t: 46, b: 40 };
  // Bounds by a loop: a long run's points are too many to spread into Math.max's arguments.
  let [xLow, xMax, yMin, yMax] = [Infinity, 1, 0, 1];
  for (const s of series)
    for (const [x, y] of s.points) {
      xLow = Math.min(xLow, x);
      xMax = Math.max(xMax, x);
      yMin = Math.min(yMin, y);
      yMax = Math.max(yMax, y);
    }
  const xMin = Math.min(xMax - 1, xLow);
  const sx = (x: number) => pad.l + ((x - xMin) / (xMax - xMin)) * (width - pad.l - pad.r);
  const sy = (y: number) => height - pad.b - ((y - yMin) / (yMax - yMin)) * (height - pad.t - pad.b);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => yMin + f * (yMax - yMin));
  const xTicks = [0, 0.25, 0.5, 0.75, 1].map((f) => xMin + f * (xMax - xMin));
  const fmt = (v: number) => (Math.abs(v) >= 1000 ? `${(v / 1000).toFixed(v >= 10000 ? 0 : 1)}k` : Number.isInteger(v) ? String(v) : v.toFixed(2));
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" role="img" aria-label="${escape(title)}">`,
    `<text x="${pad.l}" y="18" font-size="13" font-weight="600">${escape(title)}</text>`,
    ...ticks.map(
      (t) =>
        `<line x1="${pad.l}" x2="${width - pad.r}" y1="${sy(t)}" y2="${sy(t)}" stroke="#eee"/><text x="${pad.l - 6}" y="${sy(t) + 4}" font-size="11" text-anchor="end">${fmt(t)}</text>`,
    ),
    ...xTicks.map((t) => `<text x="${sx(t)}" y="${height - pad.b + 16}" font-size="11" text-anchor="middle">${fmt(Math.round(t))}</text>`),
    `<text x="${(pad.l + width - pad.r) / 2}" y="${height - 6}" font-size="12" text-anchor="middle">${escape(xLabel)}</text>`,
    `<line x1="${pad.l}" x2="${width - pad.r}" y1="${sy(0)}" y2="${sy(0)}" stroke="#999"/>`,
  ];
  series.forEach((s, i) => {
    if (s.points.length > 0) {
      const d = thinned(s.points, width)
        .map((p) => `${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`)
        .join(" ");
      parts.push(`<polyline fill="none" stroke="${s.color}" stroke-width="1.8" points="${d}"/>`);
      if (s.points.length <= 40)
        for (const p of s.points) parts.push(`<circle cx="${sx(p[0]).toFixed(1)}" cy="${sy(p[1]).toFixed(1)}" r="2.5" fill="${s.color}"/>`);
    }
    const lx = pad.l + 8 + i * 130;
    parts.push(
      `<rect x="${lx}" y="26" width="10" height="10" fill="${s.color}"/><text x="${lx + 14}" y="35" font-size="11">${escape(s.name)}${s.points.length === 0 ? " (none yet)" : ""}</text>`,
    );
  });
  parts.push("</svg>");
  return parts.join("\n");
}

/**
 * At most two points a pixel of the chart's width, so a line of a long run's every iteration draws no
 * more (each point costs the file ~14 bytes): the first and last points, and of the points between, in
 * width − 1 runs of consecutive points, each run's lowest and highest, in their order. A spike or a dip
 * is always drawn; a line of 2 × width points or fewer is drawn whole.
 */
export function thinned(points: readonly [number, number][], width: number): readonly [number, number][] {
  const buckets = Math.max(1, Math.floor(width) - 1);
  const n = points.length;
  if (n <= 2 * buckets + 2) return points;
  const kept: [number, number][] = [points[0]];
  const inner = n - 2;
  for (let b = 0; b < buckets; b++) {
    const lo = 1 + Math.floor((b * inner) / buckets);
    const hi = 1 + Math.floor(((b + 1) * inner) / buckets);
    let low = lo;
    let high = lo;
    for (let i = lo + 1; i < hi; i++) {
      if (points[i][1] < points[low][1]) low = i;
      if (points[i][1] > points[high][1]) high = i;
    }
    if (low === high) kept.push(points[low]);
    else kept.push(points[Math.min(low, high)], points[Math.max(low, high)]);
  }
  kept.push(points[n - 1]);
  return kept;
}

function escape(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
}
