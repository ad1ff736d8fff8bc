import type { MatchRules } from "./string-match.ts";

/**
 * WebArena's url_match (URLEvaluator). Canonical rules ("GOLD in PRED", the only note the task files
 * use): for the reference URLs (`a |OR| b`), some reference's host+path is a substring of the final
 * URL's host+path, and for every query key of the references, one of the values they give is among
 * the final URL's values of that key. URLs are compared as written (no normalising), trailing
 * slashes dropped, as Python's urlparse/parse_qs read them. VAB's rules: the whole reference URL is a
 * substring of the final one (or, with no note, equal to it), localhost read as 127.0.0.1.
 */
export function urlMatch(
  finalUrl: string,
  referenceUrl: string,
  urlNote: string | undefined,
  rules: MatchRules = "webarena",
): { score: number; detail: string } {
  const refs = referenceUrl.split(" |OR| ").map((u) => clean(u, rules));
  const pred = clean(finalUrl, rules);
  if (rules === "vab") {
    const note = urlNote ?? "EXACT";
    if (note === "EXACT") return verdict(refs.includes(pred) ? 1 : 0, pred);
    if (note === "GOLD in PRED") return verdict(refs.some((r) => pred.includes(r)) ? 1 : 0, pred);
    throw new Error(`unknown url_note "${note}"`);
  }
  const note = urlNote ?? "GOLD in PRED";
  if (note !== "GOLD in PRED") throw new Error(`unknown url_note "${note}"`);
  const p = parseUrl(pred);
  const refQueries = new Map<string, Set<string>>();
  for (const r of refs) {
    for (const [k, vs] of parseUrl(r).query) {
      const set = refQueries.get(k) ?? new Set<string>();
      for (const v of vs) set.add(v);
      refQueries.set(k, set);
    }
  }
  const base = refs.some((r) => p.basePath.includes(parseUrl(r).basePath)) ? 1 : 0;
  let query = 1;
  for (const [k, values] of refQueries) if (![...values].some((v) => (p.query.get(k) ?? []).includes(v))) query = 0;
  return verdict(base * query, pred);
}

const verdict = (score: number, pred: string) => ({ score, detail: `url_match ${score} (final URL ${pred})` });

function clean(url: string, rules: MatchRules): string {
  if (rules === "vab") {
    const u = url.replace("localhost", "127.0.0.1");
    return u.endsWith("/") ? u.slice(0, -1) : u;
  }
  return url.replace(/\/+$/, "");
}

/** netloc + path, and the query as parse_qs reads it (keys to their non-blank values, `+` a space). */
export function parseUrl(url: string): { basePath: string; query: Map<string, string[]> } {
  const m = /^(?:[A-Za-z][A-Za-z0-9+.-]*:)?(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?/.exec(url)!;
  const query = new Map<string, string[]>();
  for (const field of (m[3] ?? "").split("&")) {
    const eq = field.indexOf("=");
    if (eq < 0) continue;
    const k = unquotePlus(field.slice(0, eq));
    const v = unquotePlus(field.slice(eq + 1));
    if (v === "") continue;
    query.set(k, [...(query.get(k) ?? []), v]);
  }
  return { basePath: (m[1] ?? "") + m[2], query };
}

function unquotePlus(s: string): string {
  const t = s.replace(/\+/g, " ");
  try {
    return decodeURIComponent(t);
  } catch {
    return t; // a stray % stays as written, as Python's unquote leaves it
  }
}
