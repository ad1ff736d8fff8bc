import type { Task } from "../../core/index.ts";
import { pyFloat, type Catalogue, type Goal } from "./catalogue.ts";
import { getReward } from "./reward.ts";
import type { WebShopTask } from "./webshop-env.ts";

/** What a synthetic WebShop episode needs from the real one: its start state and its purchase verifier. */

/** The search page a task starts on, as the real env shows it. */
export function webshopStartPage(task: Task): string {
  return `WebShop [SEP] Instruction: [SEP] ${task.instruction} [SEP] Search`;
}

/** The goal behind a WebShop task: its own `goal`, else its goal index or `webshop:<n>` id. */
export function webshopGoalOf(catalogue: Catalogue, task: Task): Goal | null {
  const t = task as WebShopTask;
  if (t.goal) return t.goal;
  if (typeof t.goal_index === "number") return catalogue.goal(t.goal_index);
  const m = /^webshop:(\d+)$/.exec(task.id);
  return m ? catalogue.goal(Number(m[1])) : null;
}

/**
 * Hybrid mode for WebShop: when a synthetic episode clicks "buy now" on an item page of a catalogue
 * product, its reward is WebShop's own reward of that product with the options clicked on that page
 * (abstract states; see `webshopAbstraction`). Other steps, and products the catalogue does not
 * know, are left to the experience model (null).
 */
export function webshopVerifier(catalogue: Catalogue) {
  const byTitle = new Map(catalogue.products.map((p) => [p.Title.trim(), p] as const));
  return (
    task: Task,
    history: readonly { state: string; action: string }[],
    state: string,
    action: string,
  ): { reward: number; terminated: boolean; nextState: string } | null => {
    if (action.trim().toLowerCase() !== "click[buy now]" || !state.startsWith("page: item\n")) return null;
    const goal = webshopGoalOf(catalogue, task);
    const title = state.split("\n").find((l) => byTitle.has(l.trim()));
    const product = title ? byTitle.get(title.trim()) : undefined;
    if (!goal || !product) return null;
    // Replay the history as the real env keeps options: clicks on this product's page (and its
    // sub-pages) set them; a results or search page, or another product, clears them.
    const titleOf = (st: string) =>
      st
        .split("\n")
        .find((l) => byTitle.has(l.trim()))
        ?.trim();
    let options: Record<string, string> = {};
    for (const h of history) {
      const kind = /^page: (\S+)/.exec(h.state)?.[1];
      if (kind === "results" || kind === "search" || (kind === "item" && titleOf(h.state) !== product.Title.trim())) {
        options = {};
        continue;
      }
      if (kind !== "item") continue;
      const value = /^click\[(.*)\]$/i.exec(h.action.trim())?.[1]?.toLowerCase();
      if (!value) continue;
      let group: string | undefined;
      for (const [name, values] of Object.entries(product.options)) if (values.includes(value)) group = name; // the last group holding the value, as the reference's clickables map
      if (group) options[group] = value;
    }
    const reward = getReward(product, goal, catalogue.prices.get(product.asin) ?? 100, options);
    // The done page as the abstraction renders the real one, so stored transitions agree with the reward.
    return { reward, terminated: true, nextState: `page: done\ninstruction: \nbought ${product.asin}\nscore: ${pyFloat(reward)}` };
  };
}
