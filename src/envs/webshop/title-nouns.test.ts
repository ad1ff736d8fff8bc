import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, truncateSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import winkNLP from "wink-nlp";
import model from "wink-eng-lite-web-model";
import { loadCatalogue } from "./catalogue.ts";
import { tagNouns, titleNouns } from "./title-nouns.ts";

const catalogue = loadCatalogue();
// The other processes import the modules as this file runs them: compiled, or from source under tsx.
const ts = import.meta.url.endsWith(".ts");
const module = (name: string) => JSON.stringify(new URL(`./${name}.${ts ? "ts" : "js"}`, import.meta.url).href);
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
  const script = `
    import { loadCatalogue } from ${module("catalogue")};
    import { titleNouns } from ${module("title-nouns")};
    const c = loadCatalogue();
    for (const g of c.goals.slice(0, 2000)) titleNouns(g.instruction_text);
    const titles = c.products.map((p) => p.name);
    const nouns = [...titles].reverse().map((t) => titleNouns(t)).reverse();
    process.stdout.write(JSON.stringify(nouns));
  `;
  // Without the cache folder, which would hand it this process's nouns untagged.
  const child = spawnSync(process.execPath, [...(ts ? ["--import", "tsx"] : []), "--input-type=module", "-e", script], {
    encoding: "utf8",
    maxBuffer: 1 << 26,
    env: { ...process.env, DREAMGYM_CACHE: "off" },
  });
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

test("titles tagged in one process are read by the next from the cache folder, which then never loads the tagger; a record cut short is tagged again", () => {
  const some = titles.filter((_, i) => i % 50 === 7);
  const expected = some.map((t) => tagNouns(t));
  // A process of its own each time (this one's memory would answer).
  const script = `
    import { createRequire } from "node:module";
    import { titleNouns } from ${module("title-nouns")};
    const nouns = JSON.parse(process.argv[1]).map((t) => titleNouns(t));
    const tagger = Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes("wink-eng-lite-web-model/dist"));
    process.stdout.write(JSON.stringify({ nouns, tagger }));
  `;
  const tag = (env: NodeJS.ProcessEnv) => {
    const child = spawnSync(process.execPath, [...(ts ? ["--import", "tsx"] : []), "--input-type=module", "-e", script, JSON.stringify(some)], {
      encoding: "utf8",
      env: { ...process.env, ...env },
    });
    assert.equal(child.status, 0, child.stderr);
    return JSON.parse(child.stdout) as { nouns: string[][]; tagger: boolean };
  };
  const dir = join(mkdtempSync(join(tmpdir(), "dreamgym-nouns-")), "cache");
  const first = tag({ DREAMGYM_CACHE: dir });
  assert.deepEqual(first, { nouns: expected, tagger: true });
  const [name] = readdirSync(dir);
  const file = join(dir, name);
  assert.match(name, /^webshop-title-nouns-[0-9a-f]{16}\.jsonl$/);
  assert.equal(readFileSync(file, "utf8").split("\n").filter(Boolean).length, some.length);
  assert.deepEqual(tag({ DREAMGYM_CACHE: dir }), { nouns: expected, tagger: false });
  // The last record cut short (a full disk, a process killed mid-write): its title is tagged again, and kept whole after it.
  truncateSync(file, statSync(file).size - 3);
  assert.deepEqual(tag({ DREAMGYM_CACHE: dir }), { nouns: expected, tagger: true });
  assert.deepEqual(tag({ DREAMGYM_CACHE: dir }), { nouns: expected, tagger: false });
  // Lines that are not records are skipped.
  appendFileSync(file, '\n{"not":"a record"}\n[1,2]\n\u0000');
  assert.deepEqual(tag({ DREAMGYM_CACHE: dir }), { nouns: expected, tagger: false });
  // Other catalogues' titles in the file do not crowd this one's out of it: more of them than a process
  // remembers of its own (50,000), and its titles are still kept, and read back.
  const crowded = join(mkdtempSync(join(tmpdir(), "dreamgym-nouns-")), "cache");
  tag({ DREAMGYM_CACHE: crowded });
  const crowdedFile = join(crowded, name);
  writeFileSync(crowdedFile, Array.from({ length: 60_000 }, (_, i) => `\n["another catalogue's title ${i}",["title"]]`).join(""));
  assert.deepEqual(tag({ DREAMGYM_CACHE: crowded }), { nouns: expected, tagger: true });
  assert.deepEqual(tag({ DREAMGYM_CACHE: crowded }), { nouns: expected, tagger: false });
  // A file past 100,000 titles starts anew, with what the next process tags.
  writeFileSync(crowdedFile, Array.from({ length: 100_001 }, (_, i) => `\n["another catalogue's title ${i}",["title"]]`).join(""));
  assert.deepEqual(tag({ DREAMGYM_CACHE: crowded }), { nouns: expected, tagger: true });
  assert.equal(readFileSync(crowdedFile, "utf8").split("\n").filter(Boolean).length, some.length);
  // DREAMGYM_CACHE=off keeps nothing, anywhere; a folder that cannot be made (under a file) is worked without.
  const xdg = mkdtempSync(join(tmpdir(), "dreamgym-xdg-"));
  assert.deepEqual(tag({ DREAMGYM_CACHE: "off", XDG_CACHE_HOME: xdg }), { nouns: expected, tagger: true });
  assert.deepEqual(readdirSync(xdg), []);
  assert.deepEqual(tag({ DREAMGYM_CACHE: join(file, "below-a-file") }), { nouns: expected, tagger: true });
  // Without DREAMGYM_CACHE (undefined: unset for the child), the folder is $XDG_CACHE_HOME/dreamgym.
  tag({ DREAMGYM_CACHE: undefined, XDG_CACHE_HOME: xdg });
  assert.ok(existsSync(join(xdg, "dreamgym", name)), "kept under $XDG_CACHE_HOME/dreamgym");
});
