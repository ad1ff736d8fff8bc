import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import winkNLP from "wink-nlp";
import model from "wink-eng-lite-web-model";
import { PACKAGE_ROOT } from "../../core/index.ts";
import { loadCatalogue } from "./catalogue.ts";
import { tagNouns, titleNouns } from "./title-nouns.ts";

const catalogue = loadCatalogue();
const titles = catalogue.products.map((p) => p.name);

test("a title's nouns do not depend on the order titles are tagged in", () => {
  const forwards = titles.map((t) => tagNouns(t));
  const backwards = [...titles]
    .reverse()
    .map((t) => tagNouns(t))
    .reverse();
  for (let i = 0; i < titles.length; i++) assert.deepEqual(backwards[i], forwards[i], titles[i]);
  // The cached entry point gives the same.
  for (let i = 0; i < titles.length; i++) assert.deepEqual(titleNouns(titles[i]), forwards[i], titles[i]);
});

test("another process that read other text first, then the titles backwards, gives the same nouns", () => {
  const here = titles.map((t) => titleNouns(t));
  const modules = pathToFileURL(join(PACKAGE_ROOT, "src", "envs", "webshop")).href;
  const script = `
    import { loadCatalogue } from "${modules}/catalogue.ts";
    import { titleNouns } from "${modules}/title-nouns.ts";
    const c = loadCatalogue();
    for (const g of c.goals.slice(0, 2000)) titleNouns(g.instruction_text);
    const titles = c.products.map((p) => p.name);
    const nouns = [...titles].reverse().map((t) => titleNouns(t)).reverse();
    process.stdout.write(JSON.stringify(nouns));
  `;
  const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8", maxBuffer: 1 << 26 });
  assert.equal(child.status, 0, child.stderr);
  const there = JSON.parse(child.stdout) as string[][];
  assert.equal(there.length, titles.length);
  for (let i = 0; i < titles.length; i++) assert.deepEqual(there[i], here[i], titles[i]);
});

test("each title is tagged as a fresh wink-nlp instance tags it", () => {
  // A fresh instance has read nothing before. The model's `metaCER()` must be called once only (see title-nouns.ts).
  const cer = (model as unknown as { metaCER: () => unknown }).metaCER();
  for (let i = 0; i < titles.length; i += 100) {
    const nlp = winkNLP({ ...model, metaCER: () => cer } as typeof model);
    const tokens = nlp.readDoc(titles[i]).tokens();
    const pos = tokens.out(nlp.its.pos);
    const expected = tokens
      .out(nlp.its.value)
      .filter((_, k) => pos[k] === "NOUN" || pos[k] === "PROPN")
      .map((v) => v.toLowerCase());
    assert.deepEqual(tagNouns(titles[i]), expected, titles[i]);
  }
});
