import { token_set_ratio } from "fuzzball";
import { normalizeColor, pyStr, type OptionPair, type OptionValue } from "./normalize.ts";
import { titleNouns } from "./title-nouns.ts";

/**
 * WebShop's reward (`web_agent_site/engine/goal.py`), with the reference's field names, return
 * shapes and quirks. Fuzzy matching is thefuzz's `token_set_ratio` (fuzzball), thresholded at 85.
 */

/** What the type reward reads of a product or a goal. */
export interface TypeFields {
  query: string;
  product_category: string;
  name: string;
}

export interface TypeReward {
  r_type: number;
  query_match: boolean;
  category_match: boolean;
  title_score: number;
}

/** What the attribute reward reads of the purchased product. `BulletPoints` may be a string (then joined char by char, as Python does). */
export interface AttributeFields {
  Attributes: string[];
  Title?: string;
  BulletPoints?: string[] | string;
  Description?: string;
}

export interface PurchasedProduct extends TypeFields, AttributeFields {}

export interface RewardGoal extends TypeFields {
  attributes: string[];
  price_upper: number;
  goal_options: Record<string, string> | string[];
}

export interface RewardInfo {
  r_type: number;
  r_att: number;
  w_att: number;
  query_match: boolean;
  category_match: boolean;
  title_score: number;
  r_option?: number;
  w_option?: number;
  r_price?: boolean;
  w_price?: number;
}

// thefuzz's full_process with force_ascii: drop U+0080–U+00FF, non-alphanumerics → space, lower case.
function fullProcess(s: string): string {
  return s
    .replace(/[\u0080-\u00ff]/g, "")
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .toLowerCase()
    .trim();
}

/** thefuzz `fuzz.token_set_ratio` (strings; a pair is compared as Python's `str(tuple)`). */
export function tokenSetRatio(a: OptionValue, b: OptionValue): number {
  const pa = fullProcess(pyStr(a));
  const pb = fullProcess(pyStr(b));
  if (pa === "" || pb === "") return 0;
  return token_set_ratio(pa, pb, { full_process: false });
}

export function getTypeReward(purchased: TypeFields, goal: TypeFields): TypeReward {
  const queryMatch = purchased.query === goal.query;
  const purchasedCats = new Set(purchased.product_category.split("›").map((x) => x.trim()));
  const goalCats = new Set(goal.product_category.split("›").map((x) => x.trim()));
  let common = 0;
  for (const c of purchasedCats) if (goalCats.has(c)) common++;
  const categoryMatch = common >= 2;

  const purchasedNouns = new Set(titleNouns(purchased.name));
  const desiredNouns = titleNouns(goal.name);
  const intersect = new Set(desiredNouns.filter((n) => purchasedNouns.has(n))).size;
  const titleScore = desiredNouns.length === 0 ? 0.2 : intersect / desiredNouns.length;

  let rType = 1.0;
  if (!(queryMatch || categoryMatch || titleScore > 0.2)) rType = 0.5;
  if (titleScore < 0.1) rType = 0.1;
  if (titleScore === 0.0) rType = 0.0;
  return { r_type: rType, query_match: queryMatch, category_match: categoryMatch, title_score: titleScore };
}

export function getAttributeReward(purchased: AttributeFields, goal: { attributes: string[] }): [number, number] {
  let matches = 0;
  for (const gAttr of goal.attributes) {
    let matched = false;
    for (const pAttr of purchased.Attributes) {
      if (tokenSetRatio(pAttr, gAttr) > 85) {
        matches++;
        matched = true;
        break;
      }
    }
    if (!matched) {
      const bullets = purchased.BulletPoints ?? [];
      const bulletText = typeof bullets === "string" ? Array.from(bullets).join(" ") : bullets.join(" ");
      if (
        (purchased.Title ?? "").toLowerCase().includes(gAttr) ||
        bulletText.toLowerCase().includes(gAttr) ||
        (purchased.Description ?? "").toLowerCase().includes(gAttr)
      ) {
        matches++;
      }
    }
  }
  return [matches / goal.attributes.length, matches];
}

export function getOptionReward(purchasedOptions: readonly OptionValue[], goalOptions: readonly OptionValue[]): [number | null, number] {
  const purchased = purchasedOptions.map(normalizeColor);
  const goals = goalOptions.map(normalizeColor);
  let matches = 0;
  for (const g of goals) {
    for (const p of purchased) {
      if (tokenSetRatio(p, g) > 85) {
        matches++;
        break;
      }
    }
  }
  return [goals.length > 0 ? matches / goals.length : null, matches];
}

export interface GetRewardOptions {
  /** Also return the score's parts, as the reference's `verbose=True`. */
  verbose?: boolean;
  /**
   * Compare goal option *values* instead of the reference's `(name, value)` pairs. The pairs make
   * some exact purchases score below 1 (see docs/webshop-fidelity.md); the default keeps the reference's rule.
   */
  goalOptionValues?: boolean;
}

/** The reference's `get_reward`: (attribute + option + price matches) / their count, times r_type. */
export function getReward(purchased: PurchasedProduct, goal: RewardGoal, price: number, options: Record<string, string>): number;
export function getReward(
  purchased: PurchasedProduct,
  goal: RewardGoal,
  price: number,
  options: Record<string, string>,
  opts: GetRewardOptions & { verbose: true },
): [number, RewardInfo];
export function getReward(
  purchased: PurchasedProduct,
  goal: RewardGoal,
  price: number,
  options: Record<string, string>,
  opts?: GetRewardOptions,
): number | [number, RewardInfo];
export function getReward(
  purchased: PurchasedProduct,
  goal: RewardGoal,
  price: number,
  options: Record<string, string>,
  opts: GetRewardOptions = {},
): number | [number, RewardInfo] {
  const type = getTypeReward(purchased, goal);
  const rPrice = goal.price_upper > 0 ? price <= goal.price_upper : null;
  const [rAtt, numAttr] = getAttributeReward(purchased, goal);
  const goalOptions: OptionValue[] = Array.isArray(goal.goal_options)
    ? goal.goal_options
    : opts.goalOptionValues
      ? Object.values(goal.goal_options)
      : Object.entries(goal.goal_options).map(([k, v]) => [k, v] as OptionPair);
  const [rOption, numOption] = getOptionReward(Object.values(options), goalOptions);
  const nGoalOptions = Array.isArray(goal.goal_options) ? goal.goal_options.length : Object.keys(goal.goal_options).length;
  const denom = goal.attributes.length + nGoalOptions + 1;
  const total = ((numAttr + numOption + (rPrice ? 1 : 0)) / denom) * type.r_type;
  if (!opts.verbose) return total;
  const info: RewardInfo = {
    r_type: type.r_type,
    r_att: rAtt,
    w_att: goal.attributes.length / denom,
    query_match: type.query_match,
    category_match: type.category_match,
    title_score: type.title_score,
  };
  if (rOption !== null) {
    info.r_option = rOption;
    info.w_option = nGoalOptions / denom;
  }
  if (rPrice !== null) {
    info.r_price = rPrice;
    info.w_price = 1 / denom;
  }
  return [total, info];
}
