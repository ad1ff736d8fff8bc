export { WebShopEnv, parseAction, webshopTask, searchProducts, resultsPage } from "./webshop-env.ts";
export type { WebShopOptions, WebShopTask } from "./webshop-env.ts";
export {
  Catalogue,
  loadCatalogue,
  splitRange,
  indexedText,
  pyFloat,
  WEBSHOP_SPLITS,
  DEFAULT_CATALOGUE_SEED,
  GOAL_SHUFFLE_SEED,
} from "./catalogue.ts";
export type { Product, Goal, WebShopSplit, CatalogueOptions } from "./catalogue.ts";
export { getTypeReward, getAttributeReward, getOptionReward, getReward, tokenSetRatio } from "./reward.ts";
export type { TypeReward, RewardInfo, RewardGoal, PurchasedProduct, GetRewardOptions } from "./reward.ts";
export { normalizeColor } from "./normalize.ts";
export type { OptionPair, OptionValue } from "./normalize.ts";
export { titleNouns } from "./title-nouns.ts";
export { TextSearchIndex, analyze } from "./text-search.ts";
export type { SearchHit } from "./text-search.ts";
export { NoisyOraclePolicy, OraclePolicy, RulePolicy, webshopPageKind } from "./policies.ts";
export type { PageKind } from "./pages.ts";
export { webshopAbstraction } from "./state-abstraction.ts";
export { webshopStartPage, webshopVerifier, webshopGoalOf } from "./synthetic-support.ts";
export { WebShopTaskGenerator, catalogueTaskGenerator } from "./task-generator.ts";
export { WebShopOracle } from "./oracle.ts";
export type { WebShopOracleOptions } from "./oracle.ts";
export { webshopAgentGym } from "./agentgym.ts";
export { webshopReactFiles } from "./shipped-demos.ts";
export { pageText, renderItemPage, renderSearchPage, renderResultsPage, renderSubPage, renderDonePage, pyJsonDumps, SUB_PAGES } from "./pages.ts";
export type { Page, SubPage } from "./pages.ts";
