// Search (the buffer's retrieval), Curriculum (generated tasks as a tree) and Audit (the on-policy audit's tables).
import { useEffect, useState } from "preact/hooks";
import { api, Badge, html, num } from "./lib.js";

export function SearchView({ info, run }) {
  const sources = [...(run ? [{ key: "run", label: `run ${run}` }] : []), ...(info.buffer ? [{ key: "buffer", label: `buffer ${info.buffer}` }] : [])];
  const [src, setSrc] = useState(sources[0]?.key);
  const [q, setQ] = useState({ state: "", action: "", k: "5" });
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => setSrc(sources[0]?.key), [run]);
  if (!src) return html`<p class="muted">no buffer: give --buffer, or open a run whose folder has buffer.db</p>`;
  const search = (e) => {
    e.preventDefault();
    setError(null);
    api("search", { src, run: src === "run" ? run : undefined, ...q }).then(setResult, (x) => setError(x.message));
  };
  return html`<section data-test="search">
    <form class="card" onSubmit=${search}>
      <p class="muted" style="margin-top:0">The transitions the experience model is given for a (state, action): the k most similar (state, action) pairs, the k most similar states where the same action was taken, and the nearest real one (anchor), by cosine similarity of their embeddings.</p>
      <div class="controls">
        <label>buffer <select value=${src} onChange=${(e) => setSrc(e.target.value)}>${sources.map((s) => html`<option value=${s.key}>${s.label}</option>`)}</select></label>
        <label>k <input type="number" min="1" max="50" value=${q.k} style="width:60px" onInput=${(e) => setQ({ ...q, k: e.target.value })} /></label>
      </div>
      <textarea rows="5" style="width:100%" placeholder="state" data-test="search-state" value=${q.state} onInput=${(e) => setQ({ ...q, state: e.target.value })}></textarea>
      <div class="controls" style="margin-top:6px">
        <input style="flex:1" placeholder="action, e.g. click[buy now]" data-test="search-action" value=${q.action} onInput=${(e) => setQ({ ...q, action: e.target.value })} />
        <button class="primary" type="submit" data-test="search-go">retrieve</button>
      </div>
    </form>
    ${error && html`<p class="error">${error}</p>`}
    ${
      result &&
      html`<div class="card" data-test="search-results">
      <p class="muted">${result.demos.length} transitions of ${result.env ?? "no env"}</p>
      <table><thead><tr><th class="num">score</th><th>source</th><th>task</th><th>state</th><th>action</th><th>next state</th><th class="num">reward</th></tr></thead>
      <tbody>${result.demos.map(
        (d) => html`<tr data-test="demo">
        <td class="num">${num(d.score, 3)}${d.anchor ? html`<br /><span class="badge">anchor</span>` : ""}</td><td><${Badge} kind=${d.source} /></td>
        <td class="tree-task">${d.task.id}</td><td><pre class="state">${d.state}</pre></td><td class="tree-task">${d.action}</td>
        <td><pre class="state">${d.nextState}</pre></td><td class="num">${num(d.reward, 2)}${d.terminated ? " · end" : ""}</td>
      </tr>`,
      )}</tbody></table>
    </div>`
    }
  </section>`;
}

function TreeNode({ node }) {
  const v = node.uses.length ? Math.max(...node.uses.map((u) => u.variance)) : null;
  return html`<li data-test="task-node" data-task=${node.id}>
    <span class="tree-task">${node.id}</span> ${node.instruction || html`<span class="muted">(seed task)</span>`}
    <span class="muted"> · ${node.generation === 0 ? "seed" : `generation ${node.generation}`}</span>
    ${
      node.uses.length
        ? html`<span> · used in iteration ${node.uses.map((u) => u.iteration).join(", ")} · max V<sub>τ</sub> ${num(v, 3)}</span>
      <span class="muted"> (${node.uses.map((u) => `it ${u.iteration}: ${u.episodes} ep, mean ${num(u.meanReward, 2)}, V ${num(u.variance, 3)}`).join("; ")})</span>`
        : html`<span class="muted"> · not played yet</span>`
    }
    ${node.children.length > 0 && html`<ul class="tree">${node.children.map((c) => html`<${TreeNode} node=${c} />`)}</ul>`}
  </li>`;
}

export function CurriculumView({ run }) {
  const [tree, setTree] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    if (run) api("run/curriculum", { run }).then(setTree, (e) => setError(e.message));
  }, [run]);
  if (!run) return html`<p class="muted">open a run (Runs) to see its curriculum</p>`;
  if (error) return html`<p class="error">${error}</p>`;
  if (!tree) return html`<p class="muted">loading…</p>`;
  return html`<section class="card" data-test="curriculum">
    <p class="muted" style="margin-top:0">${tree.generated} generated tasks from ${tree.seedsVaried} seed tasks (the last checkpoint's pool). V<sub>τ</sub>: the reward variance of the task's episodes in an iteration, from the run's buffer (the model's rewards; the buffer keeps identical episodes once, so this is over distinct episodes).</p>
    ${tree.roots.length === 0 ? html`<p class="muted">the curriculum generated no tasks in this run</p>` : html`<ul class="tree" style="padding-left:0">${tree.roots.map((n) => html`<${TreeNode} node=${n} />`)}</ul>`}
  </section>`;
}

/** Audited episodes a page shows (the server's default page). */
const AUDIT_PAGE = 200;
/** Each run's page of audited episodes, kept while the page is open: back from a pair, the list is where it was. */
const auditOffsets = new Map();

export function AuditView({ run, openPair }) {
  const [audit, setAudit] = useState(null);
  const [error, setError] = useState(null);
  const [offset, setOffsetState] = useState(() => auditOffsets.get(run) ?? 0);
  const setOffset = (o) => {
    auditOffsets.set(run, o);
    setOffsetState(o);
  };
  useEffect(() => setOffsetState(auditOffsets.get(run) ?? 0), [run]);
  useEffect(() => {
    if (!run) return;
    let live = true; // an answer to a page asked before another is not shown
    setError(null);
    api("run/audit", { run, offset, limit: AUDIT_PAGE }).then(
      (a) => {
        if (!live) return;
        // Fewer episodes than the page starts at (a resume dropped audits): the last page.
        if (a.pairsTotal > 0 && offset >= a.pairsTotal) setOffset(Math.floor((a.pairsTotal - 1) / AUDIT_PAGE) * AUDIT_PAGE);
        else setAudit(a);
      },
      (e) => live && setError(e.message),
    );
    return () => {
      live = false;
    };
  }, [run, offset]);
  if (!run) return html`<p class="muted">open a run (Runs) to see its audits</p>`;
  if (error && !audit) return html`<p class="error">${error}</p>`;
  if (!audit) return html`<p class="muted">loading…</p>`;
  return html`<section data-test="audit">
    <div class="card">
      <h3 style="margin-top:0">on-policy audit: synthetic episodes replayed in the real env</h3>
      ${
        audit.lines.length === 0
          ? html`<p class="muted">this run has no on-policy audit (a real or bc run, or onPolicyAudit.every = 0)</p>`
          : html`
      <table data-test="audit-table"><thead><tr>${audit.header.map((h) => html`<th>${h}</th>`)}</tr></thead>
      <tbody>${audit.lines.map((l) => html`<tr>${l.map((c) => html`<td>${c}</td>`)}</tr>`)}</tbody></table>
      <p class="muted">as <code>dreamgym audit --run</code> prints it; exploitation: synthetic successes that fail for real.</p>`
      }
    </div>
    ${
      audit.pairsTotal > 0 &&
      html`<div class="card">
      <h3 style="margin-top:0">audited episodes</h3>
      ${
        audit.pairsTotal > AUDIT_PAGE &&
        html`<div class="controls" data-test="pairs-pager">
        <span class="muted">${audit.offset + 1}–${audit.offset + audit.pairs.length} of ${audit.pairsTotal}</span>
        <button disabled=${offset === 0} onClick=${() => setOffset(Math.max(0, offset - AUDIT_PAGE))}>← previous</button>
        <button disabled=${offset + AUDIT_PAGE >= audit.pairsTotal} data-test="pairs-next" onClick=${() => setOffset(offset + AUDIT_PAGE)}>next →</button>
        ${error && html`<span class="error">${error}</span>`}
      </div>`
      }
      <table data-test="pairs-table"><thead><tr><th class="num">iteration</th><th class="num">#</th><th>task</th><th class="num">return syn / real</th><th>success syn / real</th><th>first divergence</th></tr></thead>
      <tbody>${audit.pairs.map(
        (p) => html`<tr class="clickable" onClick=${() => openPair({ run, iteration: p.iteration, index: p.index })}>
        <td class="num">${p.iteration}</td><td class="num">${p.index}</td><td><span class="tree-task">${p.task.id}</span> ${p.task.instruction}</td>
        <td class="num">${num(p.syntheticReturn, 2)} / ${num(p.realReturn, 2)}</td>
        <td class=${p.syntheticSuccess && !p.realSuccess ? "fail" : ""}>${p.syntheticSuccess ? "yes" : "no"} / ${p.realSuccess ? "yes" : "no"}</td>
        <td>${p.divergedAt === null ? "never" : p.divergedAt === 0 ? "start" : `step ${p.divergedAt}`}</td>
      </tr>`,
      )}</tbody></table>
    </div>`
    }
  </section>`;
}
