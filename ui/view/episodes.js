// Trajectories: a buffer's episodes, filtered and paged on the server; one episode's steps; and a
// synthetic episode beside its replay in the real env, the first divergence marked.
import { useEffect, useState } from "preact/hooks";
import { api, Badge, Diff, html, num } from "./lib.js";

const PAGE = 25;

export function EpisodesView({ info, run, openEpisode }) {
  const sources = [...(run ? [{ key: "run", label: `run ${run}` }] : []), ...(info.buffer ? [{ key: "buffer", label: `buffer ${info.buffer}` }] : [])];
  const [src, setSrc] = useState(sources[0]?.key);
  const [filter, setFilter] = useState({ env: "", origin: "", task: "", success: "", minReward: "", own: false });
  const [cursors, setCursors] = useState([undefined]); // `after` of each page seen: back is a pop
  const [page, setPage] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => setSrc(sources[0]?.key), [run]);
  useEffect(() => setCursors([undefined]), [src, run, JSON.stringify(filter)]);
  useEffect(() => {
    if (!src) return;
    setError(null);
    api("episodes", { src, run: src === "run" ? run : undefined, ...filter, own: filter.own ? "true" : undefined, after: cursors.at(-1), limit: PAGE }).then(
      setPage,
      (e) => setError(e.message),
    );
  }, [src, run, JSON.stringify(filter), cursors.join(",")]);
  if (!src) return html`<p class="muted">no buffer: give --buffer, or open a run (Runs) whose folder has buffer.db</p>`;
  const set = (k) => (e) => setFilter({ ...filter, [k]: e.target.type === "checkbox" ? e.target.checked : e.target.value });
  const first = (cursors.length - 1) * PAGE;
  return html`<section data-test="episodes">
    <div class="controls">
      <label>source <select value=${src} onChange=${(e) => setSrc(e.target.value)}>${sources.map((s) => html`<option value=${s.key}>${s.label}</option>`)}</select></label>
      <label>env <select value=${filter.env} onChange=${set("env")}><option value="">any</option>${(page?.envs ?? []).map((e) => html`<option>${e}</option>`)}</select></label>
      <label>origin <select value=${filter.origin} onChange=${set("origin")} data-test="origin"><option value="">any</option><option>offline</option><option>real</option><option>synthetic</option></select></label>
      <label>success <select value=${filter.success} onChange=${set("success")}><option value="">any</option><option value="true">yes</option><option value="false">no</option></select></label>
      <label>reward ≥ <input type="number" step="0.1" style="width:70px" value=${filter.minReward} onChange=${set("minReward")} /></label>
      <label>task <input value=${filter.task} onChange=${set("task")} placeholder="text in the task" /></label>
      ${src === "run" && html`<label><input type="checkbox" checked=${filter.own} onChange=${set("own")} /> this run's episodes only</label>`}
    </div>
    ${error && html`<p class="error">${error}</p>`}
    ${
      page &&
      html`<div class="card">
      <p class="muted" data-test="episode-count">${page.total} episodes${page.total ? `, ${first + 1}–${first + page.episodes.length}` : ""}</p>
      <table data-test="episodes-table">
        <thead><tr><th class="num">#</th><th>env</th><th>origin</th><th>task</th><th>policy</th><th class="num">steps</th><th class="num">reward</th><th>success</th></tr></thead>
        <tbody>${page.episodes.map(
          (
            e,
          ) => html`<tr class="clickable" data-episode=${e.id} data-origin=${e.origin} onClick=${() => openEpisode({ src, run: src === "run" ? run : undefined, id: e.id })}>
          <td class="num">${e.id}</td><td>${e.env}</td><td><${Badge} kind=${e.origin} /></td>
          <td><span class="tree-task">${e.task.id}</span> ${e.task.instruction}</td><td class="muted">${e.policy ?? ""}</td>
          <td class="num">${e.steps}</td><td class="num">${num(e.totalReward, 2)}</td><td class=${e.success ? "ok" : "fail"}>${e.success ? "yes" : "no"}</td>
        </tr>`,
        )}</tbody>
      </table>
      <div class="controls" style="margin-top:8px">
        <button disabled=${cursors.length === 1} onClick=${() => setCursors(cursors.slice(0, -1))}>← previous</button>
        <button disabled=${page.next === null} data-test="next-page" onClick=${() => setCursors([...cursors, page.next])}>next →</button>
      </div>
    </div>`
    }
  </section>`;
}

export function EpisodeView({ at, back, openPair }) {
  const [ep, setEp] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => void api("episode", at).then(setEp, (e) => setError(e.message)), [at.src, at.run, at.id]);
  if (error) return html`<p class="error">${error}</p>`;
  if (!ep) return html`<p class="muted">loading…</p>`;
  const e = ep.episode;
  return html`<section data-test="episode">
    <button class="link" onClick=${back}>← episodes</button>
    <div class="card">
      <h2 style="margin:0 0 4px;font-size:16px">episode ${e.id} <${Badge} kind=${e.origin} /></h2>
      <div><span class="tree-task">${e.task.id}</span> ${e.task.instruction}</div>
      <div class="muted">${e.env} · ${e.steps} steps · reward ${num(e.totalReward, 2)} · ${e.success ? "success" : "no success"}${e.policy ? ` · ${e.policy}` : ""}</div>
      ${
        ep.replayed &&
        html`<p><button class="primary" data-test="compare" onClick=${() => openPair({ run: at.run, ...ep.replayed })}>
        replayed in the real env (audit of iteration ${ep.replayed.iteration}): compare side by side</button></p>`
      }
    </div>
    <div class="card">
      ${ep.steps.map(
        (s, i) => html`<div class="step" data-test="step">
        ${i === 0 && html`<pre class="state">${s.state}</pre>`}
        <div class="head"><span class="muted">step ${s.step + 1}</span><span class="action">${s.action}</span>
          <span>reward ${num(s.reward, 2)}</span>${s.terminated ? html`<strong>end</strong>` : s.truncated ? html`<strong>truncated</strong>` : ""}</div>
        ${s.reasoning && html`<div class="reasoning" data-test="reasoning">${s.reasoning}</div>`}
        <pre class="state">${s.nextState}</pre>
      </div>`,
      )}
    </div>
  </section>`;
}

/** A synthetic episode and its real replay, step by step; states differ → a diff; the first divergence marked. */
export function PairView({ at, back }) {
  const [p, setP] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => void api("run/audit-pair", at).then(setP, (e) => setError(e.message)), [at.run, at.iteration, at.index]);
  if (error) return html`<p class="error">${error}</p>`;
  if (!p) return html`<p class="muted">loading…</p>`;
  const rows = p.synthetic.steps.map((s, i) => ({ s, r: p.real.steps[i] }));
  const mark = (n) => (p.divergedAt === n ? "pair-step diverged" : "pair-step");
  const sameStart = p.synthetic.observation === p.real.observation;
  return html`<section data-test="pair">
    <button class="link" onClick=${back}>← back</button>
    <div class="card">
      <h2 style="margin:0 0 4px;font-size:16px">synthetic episode vs. its real replay — audit of iteration ${p.iteration}, episode ${p.index}</h2>
      <div><span class="tree-task">${p.task.id}</span> ${p.task.instruction}</div>
      <div>return synthetic ${num(p.syntheticReturn, 2)} (${p.syntheticSuccess ? "success" : "no success"}) · real ${num(p.realReturn, 2)} (${p.realSuccess ? "success" : "no success"})</div>
      <div data-test="divergence-summary" class=${p.divergedAt === null ? "ok" : "divergence"}>${p.divergedAt === null ? "the states never diverge" : p.divergedAt === 0 ? "the start states differ" : `first divergence at step ${p.divergedAt}`}</div>
    </div>
    <div class="card">
      <div class="pair"><strong>synthetic (experience model)</strong><strong>real env (same actions)</strong></div>
      <div class=${mark(0)}>
        <div class="muted">start${p.divergedAt === 0 ? html` <span class="divergence">◆ first divergence</span>` : ""}</div>
        ${sameStart ? html`<pre class="state">${p.synthetic.observation}</pre>` : html`<div class="pair"><pre class="state">${p.synthetic.observation}</pre><${Diff} a=${p.synthetic.observation} b=${p.real.observation} /></div>`}
      </div>
      ${rows.map(({ s, r }, i) => {
        const n = i + 1;
        const same = r && r.observation === s.nextObservation && r.terminated === s.terminated;
        return html`<div class=${mark(n)} data-test="pair-step" data-step=${n}>
          <div class="head"><span class="muted">step ${n}</span> <span class="action">${s.action}</span>
            ${p.divergedAt === n ? html` <span class="divergence" data-test="first-divergence">◆ first divergence</span>` : ""}</div>
          ${s.reasoning && html`<div class="reasoning">${s.reasoning}</div>`}
          <div class="pair">
            <div><div class="muted">reward ${num(s.reward, 2)}${s.terminated ? " · end" : ""}</div><pre class="state" data-test="synthetic-state">${s.nextObservation}</pre></div>
            ${
              r
                ? html`<div><div class="muted">reward ${num(r.reward, 2)}${r.terminated ? " · end" : r.truncated ? " · truncated" : ""}</div>
              ${same ? html`<pre class="state" data-test="real-state">${r.observation}</pre>` : html`<${Diff} a=${s.nextObservation} b=${r.observation} />`}</div>`
                : html`<div class="muted">the real episode had ended</div>`
            }
          </div>
        </div>`;
      })}
    </div>
  </section>`;
}
