import type { StateAbstraction } from "../../core/index.ts";
import { listActions } from "./actions.ts";
import { parseElements } from "./page-state.ts";

export interface WebAbstractionOptions {
  /** The env's name. */
  env: string;
  /** Whether a state ends the episode by its kind (WebShop: the done page). @default never */
  isTerminal?: (state: string) => boolean;
  /** Whether `stop [answer]` is among the actions. @default true */
  stop?: boolean;
  /** The site in a few lines, for prompts; the state format and action grammar are added. */
  site?: string;
}

export const WEB_PROFILE = `A state is a web page in reading order: each element the agent can act on is a line "[id] role \\"name\\"" (then "checked", value="…", or options: "a" | "b" selected "a"); other lines are the page's text.
Actions: click [id] (button, link, radio, checkbox); type [id] [text] (fills a text box and presses Enter); select [id] [option]; go_back; stop [answer] where the site takes an answer. An action on an id the page does not list, or of the wrong kind, is invalid and changes nothing.`;

/**
 * The browser env's state abstraction: its observations already are abstract states (the page
 * state of `page-state.ts`), and the actions a state offers are those its elements afford, exactly
 * as the browser env lists them, so a policy trained on synthetic states acts the same in the browser.
 */
export function webAbstraction(o: WebAbstractionOptions): StateAbstraction {
  const isTerminal = o.isTerminal ?? (() => false);
  const stop = o.stop ?? true;
  return {
    env: o.env,
    abstract: (observation) => observation,
    actions: (state) => (isTerminal(state) ? [] : listActions(parseElements(state), { stop })),
    isState: (state) => isTerminal(state) || parseElements(state).length > 0,
    isTerminal,
    profile: o.site ? `${o.site}\n${WEB_PROFILE}` : WEB_PROFILE,
  };
}
