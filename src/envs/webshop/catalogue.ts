import { join } from "node:path";
import { DataError, describeValue, InvalidConfigError, readJsonFile, Rng } from "../../core/index.ts";
import { cacheFile, readCache, sourceDigest, writeCache } from "../cache-folder.ts";
import { resolveDataDir } from "../data-dir.ts";
import { ANALYZER_MODULE, analyzeCorpus, type CorpusAnalysis, isAnalysis, TextSearchIndex } from "./text-search.ts";

/** A product as WebShop's loader shapes it (the reference's field names are kept). */
export interface Product {
  asin: string;
  name: string;
  category: string;
  query: string;
  product_category: string;
  Title: string;
  Description: string;
  BulletPoints: string[];
  /** One price, or a [low, high] range. */
  pricing: number[];
  /** "$19.99" or "$19.99 to $27.99". */
  Price: string;
  /** Option name (lower-cased) → values (lower-cased, "/" → " | "), in the scraped order. */
  options: Record<string, string[]>;
  Attributes: string[];
  Reviews: { title?: string; score: number; body: string }[];
  Rating: string;
  MainImage: string | null;
  instruction_text: string | null;
  instruction_attributes: string[] | null;
}

/** A goal as WebShop's `get_synthetic_goals` builds it. */
export interface Goal {
  asin: string;
  category: string;
  query: string;
  name: string;
  product_category: string;
  instruction_text: string;
  attributes: string[];
  price_upper: number;
  /** Option name → value for synthetic goals (a list of values for human-style goals). */
  goal_options: Record<string, string> | string[];
  weight: number;
}

export type WebShopSplit = "test" | "dev" | "train" | "all";
export const WEBSHOP_SPLITS: readonly WebShopSplit[] = ["test", "dev", "train", "all"];
/** Goal-index ranges of WebShop's baseline: test = first 500, dev = next 1,000, train = the rest. */
export function splitRange(split: WebShopSplit, total: number): [number, number] {
  switch (split) {
    case "test":
      return [0, Math.min(500, total)];
    case "dev":
      return [Math.min(500, total), Math.min(1500, total)];
    case "train":
      return [Math.min(1500, total), total];
    case "all":
      return [0, total];
    default:
      throw new InvalidConfigError(`unknown WebShop split "${String(split)}" (known: ${WEBSHOP_SPLITS.join(", ")})`);
  }
}

export const PRODUCTS_FILE = "products_1000.json";
export const ATTRIBUTES_FILE = "items_ins_v2_1000.json";
/** The reference seeds Python's `random` with 42 when it imports goal.py, then draws prices and price bounds. */
export const DEFAULT_CATALOGUE_SEED = 42;
/** The reference shuffles the goal list with `random.seed(233)`. */
export const GOAL_SHUFFLE_SEED = 233;
const PRICE_RANGE = Array.from({ length: 99 }, (_, i) => 10 * (i + 1));

/** Python's `repr(float)`, as the reference's f-strings print prices. */
export function pyFloat(x: number): string {
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return x.toFixed(1);
  return String(x);
}

type RawRecord = Record<string, unknown>;

function str(v: unknown): string {
  return typeof v === "string" ? v : v == null ? "" : String(v);
}

/** The reference's price parsing: "$19.99 - $27.99" → [19.99, 27.99]; an already-parsed list passes. */
function parsePricing(raw: unknown): number[] {
  if (Array.isArray(raw))
    return raw
      .map(Number)
      .filter((x) => Number.isFinite(x))
      .slice(0, 2);
  const s = str(raw);
  if (!s) return [];
  return s
    .split("$")
    .slice(1)
    .map((p) => Number.parseFloat(p.replace(/[^\d.]/g, "")))
    .filter((x) => Number.isFinite(x))
    .slice(0, 2);
}

/** A product's option groups; an entry that is not an object (`{ value, image }`) is a DataError naming the product and the group. */
function parseOptions(raw: unknown, asin: string, file: string): Record<string, string[]> {
  const options: Record<string, string[]> = {};
  if (!raw || typeof raw !== "object") return options;
  for (const [name, contents] of Object.entries(raw as Record<string, unknown>)) {
    if (contents == null || !Array.isArray(contents)) continue;
    if (!contents.every((c) => c !== null && typeof c === "object"))
      throw new DataError(`product ${asin}: option "${name}" has an entry that is not an object with a value`, { file });
    options[name.toLowerCase()] = contents.map((c) =>
      str((c as RawRecord).value)
        .trim()
        .replaceAll("/", " | ")
        .toLowerCase(),
    );
  }
  return options;
}

/** Shapes one raw scraped product as `load_products` does (human_goals = False). */
function toProduct(p: RawRecord, attrs: Record<string, RawRecord>, file: string): Product {
  const asin = str(p.asin);
  const small = p.small_description;
  const pricing = parsePricing(p.pricing);
  const prices = pricing.length === 0 ? [100.0] : pricing;
  const Price = prices.length === 1 ? `$${pyFloat(prices[0])}` : `$${pyFloat(prices[0])} to $${pyFloat(prices[1])}`;
  const a = attrs[asin];
  const images = Array.isArray(p.images) ? p.images : [];
  return {
    asin,
    name: str(p.name),
    category: str(p.category),
    query: str(p.query).toLowerCase().trim(),
    product_category: str(p.product_category),
    Title: str(p.name),
    Description: str(p.full_description),
    BulletPoints: Array.isArray(small) ? small.map(str) : [str(small)],
    pricing: prices,
    Price,
    options: parseOptions(p.customization_options, asin, file),
    Attributes: a && Array.isArray(a.attributes) ? (a.attributes as unknown[]).map(str) : ["DUMMY_ATTR"],
    Reviews: [],
    Rating: "N.A.",
    MainImage: images.length > 0 ? str(images[0]) : null,
    instruction_text: a && typeof a.instruction === "string" ? a.instruction : null,
    instruction_attributes: a && Array.isArray(a.instruction_attributes) ? (a.instruction_attributes as unknown[]).map(str) : null,
  };
}

/** The text WebShop indexes for a product (`convert_product_file_format.py`). */
export function indexedText(p: Product): string {
  const optionText = Object.entries(p.options)
    .map(([name, values]) => `${name}: ${values.join(", ")}`)
    .join(", and ");
  return [p.Title, p.Description, p.BulletPoints[0] ?? "", optionText].join(" ").toLowerCase();
}

/** `generate_product_prices`: one price per product, a uniform draw inside a range. */
function productPrices(products: Product[], rng: Rng): Map<string, number> {
  const prices = new Map<string, number>();
  for (const p of products) {
    const price = p.pricing.length === 0 ? 100.0 : p.pricing.length === 1 ? p.pricing[0] : rng.uniform(p.pricing[0], p.pricing[1]);
    prices.set(p.asin, price);
  }
  return prices;
}

/**
 * How many goals `syntheticGoals` makes (one per option combination of every product with an
 * instruction), without making them; a product it cannot make goals of is a DataError here, at load.
 */
function goalCount(products: Product[]): number {
  let n = 0;
  for (const p of products) {
    if (p.instruction_text == null) continue;
    if ((p.instruction_attributes ?? []).length === 0) throw new DataError(`product ${p.asin} has an instruction but no instruction_attributes`);
    n += Object.values(p.options).reduce((combos, values) => combos * values.length, 1);
  }
  return n;
}

/** `get_synthetic_goals`: one goal per option combination of every product with an instruction (checked by `goalCount`). */
function syntheticGoals(products: Product[], prices: Map<string, number>, rng: Rng): Goal[] {
  const goals: Goal[] = [];
  const attrCount = new Map<string, number>();
  for (const p of products) {
    if (p.instruction_text == null) continue;
    const attributes = p.instruction_attributes!;
    const price = prices.get(p.asin) ?? 100;
    const range = PRICE_RANGE.filter((x) => x > price).slice(0, 4);
    let priceUpper = 1000000;
    let priceText = "";
    if (range.length >= 2) {
      priceUpper = Math.max(...rng.sample(range, 2));
      priceText = `, and price lower than ${priceUpper.toFixed(2)} dollars`;
    }
    const names = Object.keys(p.options).sort();
    let combos: string[][] = [[]];
    for (const name of names) combos = combos.flatMap((c) => p.options[name].map((v) => [...c, v]));
    for (const combo of combos) {
      const goalOptions: Record<string, string> = {};
      names.forEach((n, i) => (goalOptions[n] = combo[i]));
      const optionText = Object.entries(goalOptions)
        .map(([k, v]) => `${k}: ${v}`)
        .join(", and ");
      goals.push({
        asin: p.asin,
        category: p.category,
        query: p.query,
        name: p.Title,
        product_category: p.product_category,
        instruction_text: `${p.instruction_text}${optionText ? ` with ${optionText}` : ""}${priceText}`,
        attributes,
        price_upper: priceUpper,
        goal_options: goalOptions,
        weight: 0,
      });
      for (const a of attributes) attrCount.set(a, (attrCount.get(a) ?? 0) + 1);
    }
  }
  for (const g of goals) g.weight = g.attributes.reduce((s, a) => s + 1 / (attrCount.get(a) ?? 1), 0) / g.attributes.length;
  return goals;
}

export interface CatalogueOptions {
  /** The data root (holding `webshop/`) or the `webshop/` folder itself; see resolveDataDir. */
  dataDir?: string;
  /** Seed of the price draws and price bounds. @default 42 (the reference's) */
  seed?: number;
}

/** Products, per-catalogue prices, goals and the search index: loaded once, shared by every env. */
export class Catalogue {
  readonly dir: string;
  readonly seed: number;
  readonly products: Product[];
  readonly byAsin: Map<string, Product>;
  readonly prices: Map<string, number>;
  /** How many goals there are (`goals.length`, known without making them). */
  readonly goalCount: number;
  private goalList: Goal[] | undefined;
  /** The price draws' generator, left where the goals' draws take it up (they are made at first use). */
  private goalRng: Rng | undefined;
  private searchIndex: TextSearchIndex | undefined;
  readonly attributeToAsins: Map<string, Set<string>>;

  constructor(dir: string, seed: number) {
    this.dir = dir;
    this.seed = seed;
    const productsFile = join(dir, PRODUCTS_FILE);
    const attrsFile = join(dir, ATTRIBUTES_FILE);
    const entries = readJsonFile<unknown>(productsFile);
    if (!Array.isArray(entries)) throw new DataError("expected a JSON array of products", { file: productsFile });
    const attrs = readJsonFile<Record<string, RawRecord>>(attrsFile);
    if (typeof attrs !== "object" || attrs === null || Array.isArray(attrs)) {
      throw new DataError("expected a JSON object mapping ASIN → attributes", { file: attrsFile });
    }
    const seen = new Set<string>();
    this.products = [];
    entries.forEach((entry, i) => {
      const raw = (entry && typeof entry === "object" && "product" in entry ? (entry as RawRecord).product : entry) as RawRecord;
      if (!raw || typeof raw !== "object" || typeof raw.asin !== "string") {
        throw new DataError(`entry ${i} has no product with an "asin" string`, { file: productsFile });
      }
      const asin = raw.asin;
      if (asin === "nan" || asin.length > 10 || seen.has(asin)) return;
      seen.add(asin);
      this.products.push(toProduct(raw, attrs, productsFile));
    });
    this.byAsin = new Map(this.products.map((p) => [p.asin, p]));
    this.attributeToAsins = new Map();
    for (const p of this.products) {
      for (const a of p.Attributes) {
        if (!this.attributeToAsins.has(a)) this.attributeToAsins.set(a, new Set());
        this.attributeToAsins.get(a)!.add(p.asin);
      }
    }
    this.goalRng = new Rng(seed);
    this.prices = productPrices(this.products, this.goalRng);
    this.goalCount = goalCount(this.products);
  }

  /**
   * Goals in the reference's shuffled order; splits are index ranges into this list. Made at first use
   * with the draws after the prices', as if at load: an env made for its state abstraction (an import's)
   * reads products only.
   */
  get goals(): Goal[] {
    if (!this.goalList) {
      const goals = syntheticGoals(this.products, this.prices, this.goalRng!);
      new Rng(GOAL_SHUFFLE_SEED).shuffle(goals);
      this.goalList = goals;
      this.goalRng = undefined;
    }
    return this.goalList;
  }

  /** The search index, built at the first search (an import's state abstraction reads products only). */
  get search(): TextSearchIndex {
    this.searchIndex ??= new TextSearchIndex(keptAnalysis(this.products.map(indexedText)));
    return this.searchIndex;
  }

  /** Goal indexes of a split. */
  splitIndexes(split: WebShopSplit): number[] {
    const [lo, hi] = splitRange(split, this.goalCount);
    return Array.from({ length: hi - lo }, (_, i) => lo + i);
  }

  goal(index: number): Goal {
    if (!Number.isInteger(index) || index < 0 || index >= this.goalCount) {
      throw new InvalidConfigError(`goal index ${index} is out of range (0..${this.goalCount - 1})`);
    }
    return this.goals[index];
  }
}

const cache = new Map<string, Catalogue>();

// Taken as the modules load, not at the first search: code rebuilt under a running process must not name its old output.
const ANALYZER_DIGEST = sourceDigest(ANALYZER_MODULE);

/**
 * The search index's analysis of `texts`, kept in the cache folder for the next process: analysing the
 * data pack's 1,000 products costs each process that searches them ~0.15 s of CPU, reading it back and
 * checking it ~15–30 ms. The file is named by the texts, the analyzer's code, the stemmer's version and the
 * Unicode tables, so it cannot be stale; one that does not read back whole and consistent is made again.
 */
function keptAnalysis(texts: string[]): CorpusAnalysis {
  const file = cacheFile("webshop-search", "json", { code: ANALYZER_DIGEST, packages: ["stemmer"], input: texts });
  if (!file) return analyzeCorpus(texts);
  const text = readCache(file);
  if (text !== undefined) {
    try {
      const kept: unknown = JSON.parse(text);
      if (isAnalysis(kept, texts.length)) return kept;
    } catch {
      // Not JSON: made again below.
    }
  }
  const analysis = analyzeCorpus(texts);
  try {
    writeCache(file, JSON.stringify(analysis));
  } catch {
    // Too large to write as one string: worked without.
  }
  return analysis;
}

/** Loads (once per folder and seed) the shared catalogue. */
export function loadCatalogue(opts: CatalogueOptions = {}): Catalogue {
  const seed = opts.seed ?? DEFAULT_CATALOGUE_SEED;
  if (!Number.isSafeInteger(seed)) throw new InvalidConfigError(`WebShop seed must be an integer, got ${describeValue(seed)}`);
  const dir = resolveWebShopDir(opts.dataDir);
  const key = `${dir}\0${seed}`;
  let c = cache.get(key);
  if (!c) {
    c = new Catalogue(dir, seed);
    cache.set(key, c);
  }
  return c;
}

function resolveWebShopDir(dataDir?: string): string {
  const files = [PRODUCTS_FILE, ATTRIBUTES_FILE];
  // Accept the webshop folder itself as well as the data root.
  if (dataDir) {
    try {
      return resolveDataDir({ dataDir, subdir: ".", files });
    } catch {
      /* fall through to <dataDir>/webshop */
    }
  }
  return resolveDataDir({ dataDir, subdir: "webshop", files });
}
