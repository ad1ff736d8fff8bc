import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { lineChart, parseMetricsLine, readMetrics, thinned, writeReport } from "./report.ts";

const polylines = (svg: string) => [...svg.matchAll(/<polyline [^>]*points="([^"]*)"/g)].map((m) => m[1].split(" "));

test("a chart of a long run's every iteration: drawn with at most two points a pixel, its bounds from every point", () => {
  const n = 300_000; // past the ~125k arguments a spread into Math.max takes on Node 20
  const points: [number, number][] = Array.from({ length: n }, (_, i) => [i + 1, (i % 7) / 10]);
  points[123_457][1] = 3.5; // a spike the thinned line may miss: the y axis still reaches it
  const svg = lineChart("reward", "iteration", [{ name: "mean reward", color: "#000", points }], 520);
  const [line] = polylines(svg);
  assert.ok(line.length <= 2 * 520 + 1, `${line.length} points drawn`);
  assert.match(svg, />3\.50</, "the top tick is the spike's value");
  assert.match(svg, />300k</, "the x axis ends at the last iteration");

  assert.deepEqual(thinned(points.slice(0, 1040), 520), points.slice(0, 1040), "a short line is drawn whole");
  const kept = thinned(points.slice(0, 5001), 520);
  assert.deepEqual([kept[0], kept.at(-1)], [points[0], points[5000]], "the first and last points stay");
  assert.ok(kept.length <= 1040);
});

test("a thinned line keeps each run of points' lowest and highest: a lone spike or dip is drawn, in x order", () => {
  const points: [number, number][] = Array.from({ length: 300_000 }, (_, i) => [i + 1, 0.5 + (i % 7) / 100]);
  points[123_457][1] = 3.5;
  points[200_001][1] = -1;
  for (const width of [520, 97, 2]) {
    const kept = thinned(points, width);
    assert.ok(kept.length <= 2 * width, `${kept.length} points for ${width} pixels`);
    assert.ok(kept.length >= width, `${kept.length} points for ${width} pixels: a line that still shows its shape`);
    assert.ok(kept.includes(points[123_457]), "the spike");
    assert.ok(kept.includes(points[200_001]), "the dip");
    assert.deepEqual([kept[0], kept.at(-1)], [points[0], points.at(-1)], "the first and last points");
    assert.ok(
      kept.every((p, i) => i === 0 || p[0] > kept[i - 1][0]),
      "in x order, none twice",
    );
    assert.ok(
      kept.every((p) => points[p[0] - 1] === p),
      "points of the line, not made up",
    );
  }
  // The spike at the chart's top (y 46), the dip at its bottom (y 240), both drawn.
  const [line] = polylines(lineChart("reward", "iteration", [{ name: "mean reward", color: "#000", points }], 520));
  assert.ok(line.some((xy) => xy.endsWith(",46.0")) && line.some((xy) => xy.endsWith(",240.0")));
  // Short lines are drawn whole.
  for (const n of [0, 1, 2, 3, 1040]) assert.equal(thinned(points.slice(0, n), 520).length, n);
  assert.deepEqual(thinned(points.slice(0, 1040), 520), points.slice(0, 1040));
});

test("report.html of a run with many audits: its table shows the latest, and says so", () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-report-"));
  try {
    writeFileSync(join(dir, "config.json"), JSON.stringify({ env: "webshop", mode: "dreamgym", algo: "grpo", evalSplit: "dev" }));
    const audit = (i: number) => ({
      episodes: 8,
      skipped: 0,
      steps: 40,
      syntheticReturn: 0.5,
      realReturn: 0.25 + i / 1e6,
      syntheticSuccess: 0.5,
      realSuccess: 0.25,
      successAgreement: 0.75,
      exploitationRate: 0.5,
      divergence: { mean: 2, atStep: { 2: 8 } },
    });
    const lines = Array.from({ length: 1000 }, (_, k) => {
      const iteration = k + 1;
      return JSON.stringify({
        iteration,
        meanReward: 0.5,
        success: 0.25,
        episodes: 16,
        realInteractions: 0,
        syntheticInteractions: 100 * iteration,
        wallSeconds: iteration,
        ...(iteration % 4 === 0 ? { onPolicyAudit: audit(iteration) } : {}),
      });
    });
    writeFileSync(join(dir, "metrics.jsonl"), `${lines.join("\n")}\n`);
    writeReport(dir);
    const html = readFileSync(join(dir, "report.html"), "utf8");
    assert.match(html, /The last 200 of 250 audited iterations\./);
    const rows = [...html.matchAll(/<tr><td>(\d+)<\/td>/g)].map((m) => Number(m[1]));
    assert.deepEqual([rows.length, rows[0], rows.at(-1)], [200, 204, 1000]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("readMetrics reads what a file gained since the last read, and reads a file anew when it was replaced, cut or changed", () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-metrics-"));
  try {
    const file = join(dir, "metrics.jsonl");
    const line = (i: number, extra = "") => `${JSON.stringify({ iteration: i, meanReward: i / 10, note: extra })}\n`;
    const fresh = () =>
      readFileSync(file, "utf8")
        .split("\n")
        .flatMap((l) => parseMetricsLine(l) ?? []);
    const check = (what: string) => assert.deepEqual(readMetrics(dir), fresh(), what);
    assert.deepEqual(readMetrics(dir), [], "no file");
    writeFileSync(file, line(1) + line(2));
    check("first read");
    appendFileSync(file, line(3) + line(4).slice(0, 10));
    check("a line being written is left out");
    appendFileSync(file, line(4).slice(10) + line(5));
    check("its rest came");
    appendFileSync(file, `{"iteration": 6}`); // whole, but its newline not written yet: read, and read again later
    check("a last line without its newline");
    appendFileSync(file, `\n${line(7)}`);
    check("then its newline");
    writeFileSync(file, line(1, "resumed") + line(2, "resumed") + line(3, "resumed") + line(4, "resumed") + line(5, "resumed") + line(6, "x"));
    check("rewritten in place, as long as before");
    const renamed = join(dir, "metrics.next");
    writeFileSync(renamed, line(1) + line(8));
    renameSync(renamed, file);
    check("replaced, shorter");
    writeFileSync(renamed, line(1) + line(2) + line(3) + line(4) + line(9) + line(10) + line(11) + line(12));
    renameSync(renamed, file);
    check("replaced, longer");
    // Replaced by another file whose bytes just before where the last read stopped are the same (the
    // resume's case: its lines up to the checkpoint as they were), but not those earlier.
    const long = "y".repeat(80);
    writeFileSync(file, line(1, "first") + line(2, long));
    check("a file as long as the last 64 bytes");
    writeFileSync(renamed, line(1, "other") + line(2, long) + line(3));
    renameSync(renamed, file);
    check("replaced: its earlier line differs");
    // Rewritten in place at the same size, an early line changed (an editor saving in place).
    const text = readFileSync(file, "utf8");
    writeFileSync(file, text.replace('"other"', '"OTHER"'));
    utimesSync(file, new Date(), new Date(Date.now() + 5000));
    check("rewritten at its size");
    const before = readMetrics(dir);
    before.pop();
    assert.equal(readMetrics(dir).length, 3, "a caller's array is its own");
    rmSync(file);
    assert.deepEqual(readMetrics(dir), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
