import { createHash } from "node:crypto";
import { test } from "node:test";
import assert from "node:assert/strict";
import { analyze, analyzeCorpus, decodeLength, encodeLength, isAnalysis, TextSearchIndex } from "./text-search.ts";
import { loadCatalogue } from "./catalogue.ts";

test("analysis: Lucene-style tokens, possessives, stop words, Porter stems", () => {
  assert.deepEqual(analyze("The Women's Running Shoes, and 6.76 fl oz D.O.N."), ["women", "run", "shoe", "6.76", "fl", "oz", "d.o.n"]);
  assert.deepEqual(analyze("wi-fi 1,200 l'eau"), ["wi", "fi", "1,200", "l'eau"]);
  assert.deepEqual(analyze("the and of"), []);
  // A token's term is remembered: the same tokens again, in any case, give the same terms.
  for (let i = 0; i < 2; i++) assert.deepEqual(analyze("Shoe's SHOES shoes The THE"), ["shoe", "shoe", "shoe"]);
});

test("a term's frequency in a document counts every occurrence, adjacent or not", () => {
  const index = new TextSearchIndex(["red shoe red", "red red shoe", "red shoe hat"]);
  const hits = index.search("red", 10);
  assert.deepEqual(
    hits.map((h) => h.doc),
    [0, 1, 2],
  );
  assert.equal(hits[0].score, hits[1].score);
  assert.ok(hits[1].score > hits[2].score);
});

test("document lengths are stored as Lucene stores them: exact below 24, lossy above", () => {
  for (let i = 0; i < 24; i++) assert.equal(decodeLength(encodeLength(i)), i);
  assert.equal(decodeLength(encodeLength(100)), 96);
  for (let i = 24; i < 5000; i += 37) {
    const d = decodeLength(encodeLength(i));
    assert.ok(d <= i && d > i * 0.85, `${i} → ${d}`);
  }
});

test("BM25 ranks by term weight, repeats in the query count, ties go to document order", () => {
  const index = new TextSearchIndex(["red shoe", "blue shoe", "red red hat", "shoe shoe shoe"]);
  assert.deepEqual(
    index.search("hat", 10).map((h) => h.doc),
    [2],
  );
  assert.deepEqual(
    index.search("red", 10).map((h) => h.doc),
    [2, 0],
  );
  const blue = index.search("blue shoe", 10).map((h) => h.doc);
  assert.equal(blue[0], 1);
  assert.deepEqual(index.search("unknownword", 10), []);
  assert.deepEqual(index.search("", 10), []);
  // Two identical documents tie; the earlier wins.
  const tie = new TextSearchIndex(["green", "green"]);
  assert.deepEqual(
    tie.search("green", 1).map((h) => h.doc),
    [0],
  );
  const once = index.search("red", 10)[1].score;
  const twice = index.search("red red", 10)[1].score;
  assert.ok(Math.abs(twice - 2 * once) < 1e-5);
});

test("WebShop's own index returns the reference's top results", () => {
  // Observed from the reference WebShop (1,000 products) for this query: B07XTK3P89, B08K7LDM7Q, B08QVDNJC7.
  const c = loadCatalogue();
  const hits = c.search.search("double sided machine washable decorative pillows 28x28 printing technology under 50 dollars", 50);
  assert.equal(hits.length, 50);
  assert.deepEqual(
    hits.slice(0, 3).map((h) => c.products[h.doc].asin),
    ["B07XTK3P89", "B08K7LDM7Q", "B08QVDNJC7"],
  );
  // The scores to the bit, as the index gave them before its k best came from a heap (4ad8080), here and
  // over the first 150 goals' top 50s (a digest: any rounding changed on the way shows in some score).
  assert.deepEqual([hits[0].score, hits[1].score, hits[49].score], [12.268683433532715, 9.884474754333496, 3.67677640914917]);
  const digest = createHash("sha256");
  for (const g of c.goals.slice(0, 150)) digest.update(JSON.stringify(c.search.search(g.instruction_text, 50)));
  assert.equal(digest.digest("hex").slice(0, 16), "2597ca45d17ef79e");
});

test("the k best hits are the first k of all of them, ties included", () => {
  // search(q, all) keeps every touched document and sorts them; a smaller k goes through the heap's
  // replacements, which must keep the same k in the same order.
  const c = loadCatalogue();
  const queries = c.goals.slice(0, 150).map((g) => g.instruction_text);
  const ties = new TextSearchIndex(Array.from({ length: 400 }, (_, i) => ["red hat", "blue hat", "red shoe", "green", "red red hat"][i % 5]));
  for (const [index, qs] of [
    [c.search, queries],
    [ties, ["red", "hat", "red hat", "shoe red red", "green blue"]],
  ] as const) {
    for (const q of qs) {
      const all = index.search(q, Number.POSITIVE_INFINITY);
      for (const k of [1, 3, 10, 50, all.length - 1]) assert.deepEqual(index.search(q, k), all.slice(0, Math.max(k, 0)), `${q} at k = ${k}`);
      // k as slice took it: NaN keeps all, a fraction is cut; none below 1.
      assert.deepEqual(index.search(q, Number.NaN), all);
      assert.deepEqual(index.search(q, 2.5), all.slice(0, 2));
      for (const k of [0, -1]) assert.deepEqual(index.search(q, k), []);
    }
  }
});

test("BM25's k1 and b are checked; a term that adds nothing still lists its document once", () => {
  for (const opts of [{ k1: -1 }, { k1: Number.POSITIVE_INFINITY }, { b: 1.5 }, { b: Number.NaN }])
    assert.throws(() => new TextSearchIndex(["red"], opts), RangeError);
  // With a huge k1 a term's share rounds to 0: each document is still a hit once.
  const flat = new TextSearchIndex(["red hat", "red hat"], { k1: 1e17 });
  assert.deepEqual(flat.search("red hat", 10), [
    { doc: 0, score: 0 },
    { doc: 1, score: 0 },
  ]);
});

test("an index made from its texts' analysis, read back from JSON, ranks as one made from the texts; a damaged analysis is not trusted", () => {
  const c = loadCatalogue();
  const texts = c.products.map((p) => `${p.Title} ${p.Description}`);
  const analysis = analyzeCorpus(texts);
  const kept: unknown = JSON.parse(JSON.stringify(analysis));
  assert.ok(isAnalysis(kept, texts.length));
  const fromTexts = new TextSearchIndex(texts);
  const fromKept = new TextSearchIndex(kept);
  for (const g of c.goals.slice(0, 100)) {
    assert.deepEqual(fromKept.search(g.instruction_text, 50), fromTexts.search(g.instruction_text, 50), g.instruction_text);
    for (const t of analyze(g.instruction_text)) assert.equal(fromKept.idf(t), fromTexts.idf(t), t);
  }
  // Each way a file can be damaged or belong to other texts.
  const damaged = (change: (a: ReturnType<typeof analyzeCorpus>) => void) => {
    const a = structuredClone(analysis);
    change(a);
    return isAnalysis(a, texts.length);
  };
  assert.equal(isAnalysis(kept, texts.length + 1), false, "another number of documents");
  assert.equal(isAnalysis([analysis], texts.length), false);
  assert.equal(
    damaged((a) => a.freqs[7]++),
    false,
    "a count that does not sum to its document's length",
  );
  assert.equal(
    damaged((a) => a.lengths[3]++),
    false,
    "a length its counts do not sum to",
  );
  assert.equal(
    damaged((a) => {
      const t = a.terms.findIndex((_, i) => a.offsets[i + 1] - a.offsets[i] >= 2);
      const i = a.offsets[t];
      [a.docs[i], a.docs[i + 1]] = [a.docs[i + 1], a.docs[i]];
    }),
    false,
    "documents out of order",
  );
  assert.equal(
    damaged((a) => a.docs.pop()),
    false,
    "cut short",
  );
  assert.equal(
    damaged((a) => (a.terms[1] = a.terms[0])),
    false,
    "a term twice",
  );
  assert.equal(
    damaged((a) => (a.offsets[2] = a.offsets[1])),
    false,
    "a term with no documents",
  );
  assert.equal(
    damaged((a) => (a.docs[5] = 1.5)),
    false,
    "a document that is not a number of one",
  );
  assert.equal(
    damaged(() => {}),
    true,
  );
});
