import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { mkdtempSync, writeFileSync, copyFileSync, readdirSync, readFileSync, truncateSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { createHash } from "node:crypto";
import { Catalogue, indexedText, loadCatalogue, splitRange, PRODUCTS_FILE, ATTRIBUTES_FILE } from "./catalogue.ts";
import { readJsonFile, DataError } from "../../core/index.ts";
import { createEnv, syntheticSupport } from "../index.ts";
import { isAnalysis } from "./text-search.ts";

const c = loadCatalogue();
type Entry = { id: string; contents: string; product: Record<string, unknown> };
const entries = readJsonFile<Entry[]>(join(c.dir, PRODUCTS_FILE));

test("products are processed from the raw fields exactly as WebShop's loader derived them", () => {
  assert.equal(c.products.length, 1000);
  for (const e of entries) {
    const p = c.byAsin.get(e.id)!;
    const d = e.product;
    assert.equal(p.Title, d.Title, e.id);
    assert.equal(p.Description, d.Description, e.id);
    assert.deepEqual(p.BulletPoints, d.BulletPoints, e.id);
    assert.equal(p.Price, d.Price, e.id);
    assert.deepEqual(p.pricing, d.pricing, e.id);
    assert.deepEqual(p.options, d.options, e.id);
    assert.deepEqual(p.Attributes, d.Attributes, e.id);
    assert.equal(p.query, d.query, e.id);
  }
});

test("the indexed text equals the text WebShop's search index holds", () => {
  for (const e of entries) assert.equal(indexedText(c.byAsin.get(e.id)!), e.contents, e.id);
});

test("6,910 synthetic goals in the reference's shuffled order, split 500 / 1,000 / 5,410", () => {
  assert.equal(c.goals.length, 6910);
  assert.deepEqual(splitRange("test", 6910), [0, 500]);
  assert.deepEqual(splitRange("dev", 6910), [500, 1500]);
  assert.deepEqual(splitRange("train", 6910), [1500, 6910]);
  assert.equal(c.splitIndexes("train").length, 5410);
  // Goal 0 as the reference WebShop serves it (seen in published runs of the 1,000-product setting).
  assert.equal(
    c.goals[0].instruction_text,
    'Find me double sided, machine washable decorative pillows with printing technology with size: 28" x 28", and price lower than 30.00 dollars',
  );
  assert.equal(c.goals[0].asin, "B0743JKHBV");
});

test("goals made at first use are those made at load: every goal and price as dc16267 drew them", () => {
  // A fresh catalogue (not the shared one, whose goals the tests above already made): the goals' draws
  // take up the price draws' generator where the prices left it, however late they are asked for.
  const fresh = new Catalogue(c.dir, 42);
  const digest = (v: unknown) => createHash("sha256").update(JSON.stringify(v)).digest("hex").slice(0, 16);
  assert.equal(digest([...fresh.prices]), "e7f9eeb48215e251");
  fresh.search.search("pillow", 5); // other work first changes nothing
  assert.equal(digest(fresh.goals), "5678f345c072c6ca");
  assert.equal(fresh.goals, fresh.goals, "made once");
  assert.equal(fresh.goalCount, fresh.goals.length);
});

test("an env made for its state abstraction (an import's) makes no goals; its tasks do", () => {
  const env = createEnv("webshop", { seed: 9001 }); // a seed of its own: a catalogue no other test loaded
  const made = () => (env.catalogue as unknown as { goalList?: unknown }).goalList !== undefined;
  syntheticSupport("webshop", env).abstraction.abstract("WebShop [SEP] Instruction: [SEP] find a lamp [SEP] Search");
  assert.equal(made(), false);
  assert.equal(env.tasks().length, 5410);
  assert.equal(made(), true);
});

test("every goal is a purchasable combination of its product's options, under its price bound", () => {
  for (const g of c.goals) {
    const p = c.byAsin.get(g.asin)!;
    assert.ok(p, g.asin);
    for (const [name, value] of Object.entries(g.goal_options as Record<string, string>)) assert.ok(p.options[name].includes(value));
    assert.ok(c.prices.get(g.asin)! < g.price_upper);
    assert.ok(g.weight > 0);
  }
  const range = c.products.filter((p) => p.pricing.length === 2);
  for (const p of range) {
    const price = c.prices.get(p.asin)!;
    // Some scraped ranges run high to low ("$379.99 to $219.84"); the draw lies between the two.
    assert.ok(price >= Math.min(...p.pricing) && price <= Math.max(...p.pricing));
  }
});

test("the catalogue seed moves prices and price bounds, not the goal order", () => {
  const other = loadCatalogue({ seed: 7 });
  assert.notEqual(other, c);
  assert.equal(loadCatalogue(), c, "catalogues are shared");
  assert.deepEqual(
    other.goals.map((g) => g.asin),
    c.goals.map((g) => g.asin),
  );
  assert.ok(other.goals.some((g, i) => g.price_upper !== c.goals[i].price_upper));
});

test("a corrupt or missing data file names the file and the position", () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-webshop-"));
  copyFileSync(join(c.dir, ATTRIBUTES_FILE), join(dir, ATTRIBUTES_FILE));
  writeFileSync(join(dir, PRODUCTS_FILE), '[{"id": "X", "product": {"asin": "X"}}, {oops}]');
  assert.throws(
    () => new Catalogue(dir, 42),
    (e: unknown) => e instanceof DataError && e.file!.endsWith(PRODUCTS_FILE) && e.line === 1 && /position/.test(e.message),
  );
  // A product it cannot make goals of fails the load, though goals are made at first use.
  const noAttributes = mkdtempSync(join(tmpdir(), "dreamgym-webshop-"));
  const attributes = readJsonFile<Record<string, { instruction?: string; instruction_attributes?: string[] }>>(join(c.dir, ATTRIBUTES_FILE));
  Object.values(attributes).find((a) => typeof a.instruction === "string")!.instruction_attributes = [];
  writeFileSync(join(noAttributes, ATTRIBUTES_FILE), JSON.stringify(attributes));
  copyFileSync(join(c.dir, PRODUCTS_FILE), join(noAttributes, PRODUCTS_FILE));
  assert.throws(
    () => new Catalogue(noAttributes, 42),
    (e: unknown) => e instanceof DataError && /has an instruction but no instruction_attributes/.test(e.message),
  );
  // An option entry that is not an object (the scrape's { value, image }) names the product and its group.
  const badOption = mkdtempSync(join(tmpdir(), "dreamgym-webshop-"));
  const withOptions = entries.find((e) => Object.keys((e.product.customization_options as object | null) ?? {}).length > 0)!;
  const [group] = Object.keys(withOptions.product.customization_options as object);
  const broken = entries.map((e) =>
    e === withOptions ? { ...e, product: { ...e.product, customization_options: { ...(e.product.customization_options as object), [group]: [null] } } } : e,
  );
  writeFileSync(join(badOption, PRODUCTS_FILE), JSON.stringify(broken));
  copyFileSync(join(c.dir, ATTRIBUTES_FILE), join(badOption, ATTRIBUTES_FILE));
  assert.throws(
    () => new Catalogue(badOption, 42),
    (e: unknown) =>
      e instanceof DataError &&
      e.file!.endsWith(PRODUCTS_FILE) &&
      e.message.endsWith(`: product ${withOptions.id}: option "${group}" has an entry that is not an object with a value`),
  );
  const empty = mkdtempSync(join(tmpdir(), "dreamgym-empty-"));
  assert.throws(
    () => loadCatalogue({ dataDir: empty }),
    (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.match(e.message, /webshop is missing entirely/);
      assert.match(e.message, /products_1000\.json, items_ins_v2_1000\.json/);
      return true;
    },
  );
});

test("the search index's analysis is kept in the cache folder and read back by the next process; a file that does not read back whole is made again", () => {
  const ts = import.meta.url.endsWith(".ts");
  const script = `
    import { loadCatalogue } from ${JSON.stringify(new URL(`./catalogue.${ts ? "ts" : "js"}`, import.meta.url).href)};
    process.stdout.write(JSON.stringify(loadCatalogue().search.search("long sleeve shirt for men", 10)));
  `;
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-search-cache-"));
  const hits = () => {
    const child = spawnSync(process.execPath, [...(ts ? ["--import", "tsx"] : []), "--input-type=module", "-e", script], {
      encoding: "utf8",
      env: { ...process.env, DREAMGYM_CACHE: dir },
    });
    assert.equal(child.status, 0, child.stderr);
    return JSON.parse(child.stdout) as unknown;
  };
  const expected = c.search.search("long sleeve shirt for men", 10);
  assert.deepEqual(hits(), expected);
  const [name] = readdirSync(dir);
  assert.match(name, /^webshop-search-[0-9a-f]{16}\.json$/);
  const file = join(dir, name);
  const kept = JSON.parse(readFileSync(file, "utf8")) as { terms: string[] };
  assert.ok(isAnalysis(kept, c.products.length));
  // Read back, not made again: with "shirt" renamed in the file (still whole and consistent), the query misses it.
  kept.terms[kept.terms.indexOf("shirt")] = "shirt-renamed";
  writeFileSync(file, JSON.stringify(kept));
  assert.notDeepEqual(hits(), expected);
  // Cut short (a full disk, or a file from elsewhere): made again, and kept whole.
  truncateSync(file, 1000);
  assert.deepEqual(hits(), expected);
  assert.ok(isAnalysis(JSON.parse(readFileSync(file, "utf8")), c.products.length));
});
