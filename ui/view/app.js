// dreamgym view: the shell (tabs, the open run, the episode or pair on screen).
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api, html } from "./lib.js";
import { RunsView } from "./runs.js";
import { EpisodesView, EpisodeView, PairView } from "./episodes.js";
import { AuditView, CurriculumView, SearchView } from "./panels.js";

const TABS = ["runs", "trajectories", "search", "curriculum", "audit"];

function App() {
  const [info, setInfo] = useState(null);
  const [runs, setRuns] = useState([]);
  const [tab, setTab] = useState("runs");
  const [run, setRun] = useState(null); // the open run: what the other tabs show
  const [selected, setSelected] = useState([]); // runs overlaid in the charts
  const [episode, setEpisode] = useState(null);
  const [pair, setPair] = useState(null);
  const [error, setError] = useState(null);
  const loadRuns = () =>
    api("runs").then(
      (r) => setRuns(r.runs),
      (e) => setError(e.message),
    );
  useEffect(() => {
    api("info").then(setInfo, (e) => setError(e.message));
    loadRuns();
    // The list itself is live too: new runs and the status of running ones.
    const t = setInterval(loadRuns, 5000);
    return () => clearInterval(t);
  }, []);
  const go = (t) => {
    setTab(t);
    setEpisode(null);
    setPair(null);
  };
  const openRun = (id) => {
    setRun(id);
    if (!selected.includes(id)) setSelected([...selected, id]);
  };
  if (error) return html`<p class="error">${error}</p>`;
  if (!info) return html`<p class="muted">loading…</p>`;
  let body;
  if (pair) body = html`<${PairView} at=${pair} back=${() => setPair(null)} />`;
  else if (episode) body = html`<${EpisodeView} at=${episode} back=${() => setEpisode(null)} openPair=${setPair} />`;
  else if (tab === "runs") body = html`<${RunsView} runs=${runs} selected=${selected} setSelected=${setSelected} openRun=${openRun} />`;
  else if (tab === "trajectories") body = html`<${EpisodesView} info=${info} run=${run} openEpisode=${setEpisode} />`;
  else if (tab === "search") body = html`<${SearchView} info=${info} run=${run} />`;
  else if (tab === "curriculum") body = html`<${CurriculumView} run=${run} />`;
  else body = html`<${AuditView} run=${run} openPair=${setPair} />`;
  return html`<header>
      <h1>dreamgym view</h1>
      <nav>${TABS.map((t) => html`<button class=${tab === t ? "active" : ""} data-tab=${t} onClick=${() => go(t)}>${t}</button>`)}</nav>
      <span class="muted" data-test="open-run">${run ? `run: ${run}` : `runs: ${info.runs}`}</span>
    </header>
    <main>${body}</main>`;
}

render(html`<${App} />`, document.getElementById("app"));
