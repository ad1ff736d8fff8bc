import { deriveSeed, Rng, ScriptedPolicy, type PolicyInput } from "../../core/index.ts";
import type { Goal } from "./catalogue.ts";
import type { WebShopEnv } from "./webshop-env.ts";

const NAV = new Set(["click[back to search]", "click[next >]", "click[< prev]"]);

/** The page kind of an observation: from the real env's info, an abstract state's first line, or the text. */
export function webshopPageKind(observation: string, info: Record<string, unknown> = {}): string {
  if (typeof info.page === "string") return info.page;
  const abstract = /^page: (\S+)/.exec(observation);
  if (abstract) return abstract[1];
  if (observation.startsWith("WebShop [SEP] Instruction:")) return "search";
  if (observation.startsWith("Thank you for shopping")) return "done";
  if (/ \[SEP\] Page \d+ \(Total results: \d+\)/.test(observation)) return "results";
  if (observation.includes(" [SEP] Buy Now")) return "item";
  return "item_sub";
}
const PRICE_CLAUSE = /, and price lower than [\d.]+ dollars$/;

/** The option values a goal asks for (a list, or by option name). */
const goalOptionValues = (goal: Goal): string[] => (Array.isArray(goal.goal_options) ? goal.goal_options : Object.values(goal.goal_options));

/** The WebShop paper's rule baseline: search the instruction, click the first result, buy. */
export class RulePolicy extends ScriptedPolicy {
  readonly name = "rule";
  choose({ observation, actions, task, info }: PolicyInput): string {
    switch (webshopPageKind(observation, info)) {
      case "search":
        return `search[${task.instruction}]`;
      case "results": {
        const first = (actions ?? []).find((a) => !NAV.has(a));
        return first ?? "click[back to search]";
      }
      default:
        return "click[buy now]";
    }
  }
}

/**
 * Knows the goal: searches the instruction (then, if the product is not among the results, its
 * title), pages through the results to the goal product, picks the goal's options, buys.
 */
export class OraclePolicy extends ScriptedPolicy {
  readonly name = "oracle";
  private attempt = 0;
  private chosen = new Set<string>();
  constructor(private readonly env: WebShopEnv) {
    super();
  }

  override reset(): void {
    this.attempt = 0;
    this.chosen.clear();
  }

  choose({ observation, actions, info }: PolicyInput): string {
    const goal = this.env.goal;
    if (!goal) throw new Error("oracle: the env has no running episode");
    const listed = new Set(actions ?? []);
    const product = `click[${goal.asin.toLowerCase()}]`;
    switch (webshopPageKind(observation, info)) {
      case "search": {
        const query = this.attempt === 0 ? goal.instruction_text.replace(PRICE_CLAUSE, "") : goal.name.toLowerCase();
        this.attempt++;
        return `search[${query}]`;
      }
      case "results": {
        if (listed.has(product)) return product;
        const m = /Page (\d+) \(Total results: (\d+)\)/.exec(observation);
        if (m && Number(m[1]) * 10 < Number(m[2])) return "click[next >]";
        return "click[back to search]";
      }
      case "item": {
        // The oracle only ever opens the goal product, so this item page is the goal's.
        for (const v of goalOptionValues(goal)) {
          if (this.chosen.has(v) || !listed.has(`click[${v}]`)) continue;
          this.chosen.add(v);
          return `click[${v}]`;
        }
        return "click[buy now]";
      }
      default:
        return "click[< prev]";
    }
  }
}

/**
 * The oracle with a human's slips, for offline data that shows what a wrong purchase looks like (a
 * reward model trained only on perfect and random episodes has never seen a near miss): on a results
 * page it opens another listed product instead of the goal with probability `slip`, and then buys it
 * with the goal's option values where that product has them; on the goal's page each option it
 * should pick is, with probability `slip`, picked wrong (another value of the same group) or left
 * out. Its slips are seeded by the goal, so the data does not depend on how episodes are scheduled.
 */
export class NoisyOraclePolicy extends ScriptedPolicy {
  readonly name = "oracle-noisy";
  private readonly oracle: OraclePolicy;
  private rng: Rng | null = null;
  private wrongItem: string | undefined;
  private chosen = new Set<string>();
  constructor(
    private readonly env: WebShopEnv,
    private readonly slip = 0.3,
  ) {
    super();
    this.oracle = new OraclePolicy(env);
  }

  override reset(): void {
    this.oracle.reset();
    this.wrongItem = undefined;
    this.chosen.clear();
    this.rng = null;
  }

  choose(input: PolicyInput): string {
    const goal = this.env.goal;
    if (!goal) throw new Error("oracle-noisy: the env has no running episode");
    // Seeded by the goal at the episode's first step (the env has its goal by then).
    const rng = (this.rng ??= new Rng(deriveSeed("oracle-noisy", goal.asin, goal.instruction_text)));
    const listed = (input.actions ?? []).filter((a) => !NAV.has(a));
    const kind = webshopPageKind(input.observation, input.info);
    if (kind === "results" && this.wrongItem === undefined) {
      const goalItem = `click[${goal.asin.toLowerCase()}]`;
      const others = listed.filter((a) => a !== goalItem && /^click\[[a-z0-9]{10}\]$/.test(a));
      if (others.length > 0 && rng.random() < this.slip) return (this.wrongItem = rng.choice(others));
    }
    if (kind === "item") {
      const groups = Object.values(this.env.product?.options ?? {});
      for (const v of goalOptionValues(goal)) {
        if (this.chosen.has(v)) continue;
        this.chosen.add(v);
        const group = groups.find((g) => g.includes(v));
        if (!group) continue; // another product (a slip above) may not offer it
        if (this.wrongItem === undefined && rng.random() < this.slip) {
          const wrong = group.filter((x) => x !== v);
          if (wrong.length === 0 || rng.random() < 0.5) continue; // left out
          return `click[${rng.choice(wrong)}]`;
        }
        return `click[${v}]`;
      }
      return "click[buy now]";
    }
    return this.oracle.choose(input);
  }
}
