// Runs: the list of run folders, and the curves of the chosen ones overlaid (live while they train).
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import { api, Badge, COLORS, html, num, pct } from "./lib.js";

/** The curves: what each plots from a metrics line. */
const CURVES = [
  { key: "reward", title: "mean reward (training episodes)", y: (m) => m.meanReward },
  { key: "success", title: "success (training episodes)", y: (m) => m.success },
  { key: "eval", title: "eval score (real eval split)", y: (m) => (m.eval ? m.eval.score : null) },
  { key: "entropy", title: "policy entropy", y: (m) => m.entropy },
  { key: "kl", title: "KL to the reference (approx KL where absent)", y: (m) => m.kl ?? m.approxKl },
  { key: "exploitation", title: "exploitation rate (on-policy audit)", y: (m) => m.onPolicyAudit?.exploitationRate ?? null },
  { key: "order", title: "order agreement within GRPO groups (on-policy audit)", y: (m) => m.onPolicyAudit?.advantage?.orderAgreement ?? null },
  { key: "gap", title: "return gap, synthetic − real (on-policy audit)", y: (m) => m.onPolicyAudit?.returnGap ?? null },
];
const AXES = {
  iteration: { label: "iteration", x: (m) => m.iteration },
  real: { label: "real interactions", x: (m) => m.realInteractions },
  synthetic: { label: "synthetic interactions", x: (m) => m.syntheticInteractions },
};

function Chart({ curve, series, axis }) {
  const ref = useRef(null);
  useEffect(() => {
    const tables = series.map((s) => {
      const pts = s.metrics.map((m) => [AXES[axis].x(m), curve.y(m)]).filter(([, y]) => y !== null && y !== undefined);
      // uPlot wants strictly increasing x: the last point of an x wins (an axis that stands still in a phase).
      const byX = new Map(pts);
      const xs = [...byX.keys()].sort((a, b) => a - b);
      return [xs, xs.map((x) => byX.get(x))];
    });
    const nonEmpty = tables.some((t) => t[0].length > 0);
    if (!nonEmpty) return;
    const data = uPlot.join(tables);
    const plot = new uPlot(
      {
        width: 370,
        height: 190,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: false } },
        axes: [{ size: 36 }, { size: 50 }],
        series: [{}, ...series.map((s, i) => ({ label: s.id, stroke: COLORS[i % COLORS.length], width: 2, spanGaps: true, points: { size: 4 } }))],
      },
      data,
      ref.current,
    );
    return () => plot.destroy();
  }, [series, axis, curve]);
  const empty = series.every((s) => s.metrics.every((m) => curve.y(m) === null || curve.y(m) === undefined));
  const points = series.reduce((n, s) => n + s.metrics.filter((m) => curve.y(m) !== null && curve.y(m) !== undefined).length, 0);
  return html`<div class="card chart" data-test=${`chart-${curve.key}`} data-points=${points}>
    <h3>${curve.title}</h3>
    ${empty ? html`<p class="muted">not in these runs' metrics</p>` : html`<div ref=${ref}></div><div class="muted axis-label" data-test="axis-label">against ${AXES[axis].label}</div>`}
  </div>`;
}

export function RunsView({ runs, selected, setSelected, openRun }) {
  const [axis, setAxis] = useState("iteration");
  const [series, setSeries] = useState([]);
  // Metrics of the selected runs, kept across renders; while one of them is training, only its new
  // lines are fetched, every 2 s.
  const have = useRef(new Map());
  const live = runs
    .filter((r) => selected.includes(r.id) && r.status === "running")
    .map((r) => r.id)
    .join("\n");
  useEffect(() => {
    let stop = false;
    let timer;
    let first = true;
    const load = async () => {
      const out = [];
      let changed = first;
      first = false;
      for (const id of selected) {
        const prev = have.current.get(id);
        if (prev && !live.split("\n").includes(id)) {
          out.push({ id, metrics: prev });
          continue;
        }
        const r = await api("run/metrics", { run: id, since: prev?.length ?? 0 });
        const all = r.metrics.length || !prev ? (prev ?? []).concat(r.metrics) : prev;
        if (all !== prev) changed = true;
        have.current.set(id, all);
        out.push({ id, metrics: all });
      }
      if (stop) return;
      if (changed) setSeries(out); // the charts are drawn again only when a line came
      if (live) timer = setTimeout(load, 2000);
    };
    load().catch((e) => console.error(e));
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [selected.join("\n"), live]);

  const toggle = (id) => setSelected(selected.includes(id) ? selected.filter((x) => x !== id) : [...selected, id]);
  // An experiment folder's rows, overlaid in one click.
  const groups = [...new Set(runs.map((r) => r.group).filter((g) => g !== ""))];
  return html`<section data-test="runs">
    <div class="card">
      <table data-test="runs-table">
        <thead><tr><th></th><th>run</th><th>mode</th><th>env</th><th>algo</th><th class="num">budget</th><th class="num">iterations</th><th class="num">eval score</th><th class="num">eval success</th><th>status</th><th></th></tr></thead>
        <tbody>${runs.map(
          (r) => html`<tr class=${selected.includes(r.id) ? "selected" : ""} data-run=${r.id}>
          <td><input type="checkbox" checked=${selected.includes(r.id)} onChange=${() => toggle(r.id)} aria-label=${`overlay ${r.id}`} /></td>
          <td><button class="link" data-test="run-link" onClick=${() => openRun(r.id)}>${r.id}</button>${selected.includes(r.id) ? html` <span class="legend-swatch" style=${`background:${COLORS[selected.indexOf(r.id) % COLORS.length]}`}></span>` : ""}</td>
          <td>${r.mode}</td><td>${r.env}</td><td>${r.algo}</td>
          <td class="num">${r.budget}${r.realBudget ? ` + ${r.realBudget} real` : ""}</td>
          <td class="num">${r.iterations}</td>
          <td class="num">${r.eval ? num(r.eval.score, 1) : "–"}${r.eval && !r.finalEval ? "*" : ""}</td>
          <td class="num">${r.eval ? pct(r.eval.success) : "–"}</td>
          <td><${Badge} kind=${r.status} /></td>
          <td>${r.audited ? html`<span class="muted">audited</span>` : ""}</td>
        </tr>`,
        )}</tbody>
      </table>
      ${
        groups.length > 0 &&
        html`<div class="controls" style="margin-top:8px">overlay a folder's runs:
        ${groups.map((g) => html`<button data-test="overlay-group" onClick=${() => setSelected(runs.filter((r) => r.group === g).map((r) => r.id))}>${g}/ (${runs.filter((r) => r.group === g).length})</button>`)}
        ${selected.length > 0 && html`<button onClick=${() => setSelected([])}>clear</button>`}
      </div>`
      }
      ${runs.length === 0 ? html`<p class="muted">no run folders here (a run folder holds config.json)</p>` : html`<p class="muted">* the last interval evaluation: the run has not finished. Tick runs to overlay their curves.</p>`}
    </div>
    ${
      selected.length > 0 &&
      html`<div class="controls">
      <strong data-test="overlaid">${selected.length} run${selected.length === 1 ? "" : "s"}</strong>
      <label>against <select value=${axis} onChange=${(e) => setAxis(e.target.value)} data-test="axis">
        ${Object.entries(AXES).map(([k, a]) => html`<option value=${k}>${a.label}</option>`)}
      </select></label>
    </div>
    <div class="charts">${CURVES.map((c) => html`<${Chart} key=${c.key} curve=${c} series=${series} axis=${axis} />`)}</div>`
    }
  </section>`;
}
