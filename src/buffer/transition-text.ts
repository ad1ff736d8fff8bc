/** How many characters of a state the embedding reads. */
export const EMBED_STATE_CHARS = 2000;

/**
 * The text whose embedding stands for a (state, action) pair — the one function both indexing and
 * querying use. The state's first 2,000 characters (where pages put the instruction and the first
 * elements), a newline, then `>>> ` and the action.
 */
export function transitionText(state: string, action: string): string {
  const s = state.length > EMBED_STATE_CHARS ? state.slice(0, EMBED_STATE_CHARS) : state;
  return `${s}\n>>> ${action}`;
}
