// Shared by the views: the API client, number formats, and a line diff.
import { h } from "preact";
import htm from "htm";

export const html = htm.bind(h);

/** GET /api/<path>?<params> as JSON; a non-2xx answer throws its error line. */
export async function api(path, params = {}) {
  const q = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ""));
  const res = await fetch(`/api/${path}${q.size ? `?${q}` : ""}`);
  const body = await res.json();
  if (!res.ok) throw new Error(body.error ?? `HTTP ${res.status}`);
  return body;
}

export const pct = (x) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(1)}%`);
export const num = (x, d = 3) => (x === null || x === undefined || Number.isNaN(x) ? "–" : Number(x).toFixed(d));

/** Colours of overlaid runs, in order. */
export const COLORS = ["#2f6fd6", "#d9622b", "#23864a", "#8e44ad", "#c2413b", "#0f8b8d", "#b8860b", "#555"];

/**
 * A line diff of two texts (longest common subsequence of lines): [{ kind: "same" | "del" | "add", line }].
 * States are short (tens of lines), so the quadratic table is small.
 */
export function lineDiff(a, b) {
  const x = a.split("\n");
  const y = b.split("\n");
  const n = x.length;
  const m = y.length;
  const L = Array.from({ length: n + 1 }, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) out.push({ kind: "same", line: x[i++] }), j++;
    else if (L[i + 1][j] >= L[i][j + 1]) out.push({ kind: "del", line: x[i++] });
    else out.push({ kind: "add", line: y[j++] });
  }
  while (i < n) out.push({ kind: "del", line: x[i++] });
  while (j < m) out.push({ kind: "add", line: y[j++] });
  return out;
}

export function Diff({ a, b }) {
  return html`<pre class="diff" data-test="diff">${lineDiff(a, b).map((d) => html`<span class=${d.kind}>${d.kind === "del" ? "− " : d.kind === "add" ? "+ " : "  "}${d.line}</span>`)}</pre>`;
}

export function Badge({ kind }) {
  return html`<span class=${`badge ${kind}`}>${kind}</span>`;
}
