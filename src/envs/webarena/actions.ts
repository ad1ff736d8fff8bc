/**
 * WebArena's id-based action grammar (browser_env/actions.py, create_id_based_action), the syntax its
 * agents and published trajectories use: `click [12]`, `type [12] [text]` (a trailing `[0]` types
 * without pressing Enter; Enter is the default), `hover [12]`, `press [Control+v]`, `scroll [down]`,
 * `goto [url]`, `new_tab`, `tab_focus [1]`, `close_tab`, `go_back`, `go_forward`, and `stop [answer]`.
 */

/**
 * `stop [answer]` ends the episode with that answer, which string_match grades. As WebArena reads
 * it: the answer is everything between the first `[` and the last `]` (so brackets inside it
 * survive); `stop` without brackets is an empty answer. Null when the action is not a stop.
 */
export function parseStopAction(action: string): { answer: string } | null {
  const a = action.trim();
  const head = a.includes("[") ? a.split("[")[0].trim() : a.split(/\s+/)[0];
  if (head !== "stop") return null;
  const m = /stop ?\[(.+)\]/s.exec(a);
  return { answer: m ? m[1] : "" };
}

/** The action kinds of the grammar; `null` for text that is none of them. */
export function actionKind(action: string): string | null {
  const a = action.trim();
  const head = a.includes("[") ? a.split("[")[0].trim() : (a.split(/\s+/)[0] ?? "");
  return KINDS.has(head) ? head : null;
}

const KINDS = new Set(["click", "type", "hover", "press", "scroll", "goto", "new_tab", "tab_focus", "close_tab", "go_back", "go_forward", "stop", "select"]);
