import type { Rng, Task, TaskGenerator } from "../../core/index.ts";
import type { Catalogue, Goal, Product } from "./catalogue.ts";
import { getReward } from "./reward.ts";
import { webshopGoalOf } from "./synthetic-support.ts";

const PRICE_STEPS = Array.from({ length: 99 }, (_, i) => 10 * (i + 1));

/**
 * WebShop task variation without an LLM: new goals recombined from real catalogue products — the
 * parent's product or another product of the same category, with another combination of its options
 * and a tighter price bound (the lowest $10 step above its price). A goal is kept only when some
 * product satisfies it completely: WebShop's own reward of buying that product with those options
 * must be 1. Goals whose (product, options) an excluded split uses (the test goals) are never made.
 */
export class WebShopTaskGenerator implements TaskGenerator {
  readonly name = "webshop-catalogue";
  private readonly excluded: Set<string>;
  private readonly byCategory = new Map<string, Product[]>();

  constructor(
    private readonly catalogue: Catalogue,
    opts: { excludeGoals?: readonly Goal[] } = {},
  ) {
    this.excluded = new Set((opts.excludeGoals ?? []).map(goalKey));
    for (const p of catalogue.products) {
      if (!p.instruction_text || !p.instruction_attributes?.length) continue;
      const list = this.byCategory.get(p.product_category) ?? [];
      list.push(p);
      this.byCategory.set(p.product_category, list);
    }
  }

  async generate(parent: Task, count: number, rng: Rng): Promise<{ tasks: Task[]; infeasible: number }> {
    const goal = webshopGoalOf(this.catalogue, parent);
    if (!goal) return { tasks: [], infeasible: count };
    const parentProduct = this.catalogue.byAsin.get(goal.asin);
    const siblings = this.byCategory.get(goal.product_category) ?? [];
    const tasks: Task[] = [];
    let infeasible = 0;
    for (let i = 0; i < count; i++) {
      // Half the variants keep the product (new options, tighter price); half move to a sibling.
      const product = rng.random() < 0.5 || siblings.length === 0 || !parentProduct ? parentProduct : rng.choice(siblings);
      if (!product) {
        infeasible++;
        continue;
      }
      const options: Record<string, string> = {};
      for (const name of Object.keys(product.options).sort()) options[name] = rng.choice(product.options[name]);
      const price = this.catalogue.prices.get(product.asin) ?? 100;
      const bound = PRICE_STEPS.find((x) => x > price) ?? 1_000_000;
      const optionText = Object.entries(options)
        .map(([k, v]) => `${k}: ${v}`)
        .join(", and ");
      const next: Goal = {
        asin: product.asin,
        category: product.category,
        query: product.query,
        name: product.Title,
        product_category: product.product_category,
        instruction_text: `${product.instruction_text}${optionText ? ` with ${optionText}` : ""}${bound < 1_000_000 ? `, and price lower than ${bound.toFixed(2)} dollars` : ""}`,
        attributes: product.instruction_attributes ?? [],
        price_upper: bound,
        goal_options: options,
        weight: goal.weight,
      };
      if (this.excluded.has(goalKey(next)) || getReward(product, next, price, options) < 1 - 1e-9) {
        infeasible++;
        continue;
      }
      tasks.push({ id: `${parent.id}~${product.asin}`, instruction: next.instruction_text, goal: next });
    }
    return { tasks, infeasible };
  }
}

function goalKey(g: Goal): string {
  const options = Array.isArray(g.goal_options)
    ? [...g.goal_options].sort()
    : Object.entries(g.goal_options)
        .sort()
        .map(([k, v]) => `${k}=${v}`);
  return `${g.asin}|${options.join(",")}`;
}

/** WebShop's plug point for the curriculum (any form of WebShop: text, the site, its pages): goals of its catalogue, none an evaluation task's. */
export function catalogueTaskGenerator(catalogue: Catalogue, context: { evalTasks: readonly Task[] }): WebShopTaskGenerator {
  return new WebShopTaskGenerator(catalogue, { excludeGoals: context.evalTasks.map((t) => catalogue.goal(t.goal_index as number)) });
}
