import { createRequire } from "node:module";
import type winkNLPType from "wink-nlp";
import type modelType from "wink-eng-lite-web-model";
import { appendCache, cacheFile, readCache, removeCache, sourceDigest } from "../cache-folder.ts";

/**
 * The lower-cased nouns and proper nouns of a product title, as WebShop's `get_type_reward` takes
 * them from spaCy's `en_core_web_lg` (tags NOUN / PROPN). We use wink-nlp's English model, which
 * tags in the same Universal POS set; docs/webshop-fidelity.md lists how close it comes to spaCy.
 *
 * Tags must be a function of the title alone, whatever the process read before. wink-nlp (2.4.0)
 * adds every out-of-vocabulary token it meets to its model's lexicon, and its tokenizer looks a whole
 * word up there before splitting it: once a document had "Women's" as one token, every later
 * "Women's" stays one token instead of "Women" + "'s", and an unknown word keeps the features of
 * the token category it was first met with. So after each document we hide the words it added from
 * the lexicon's lookup table: each title is then tagged as by a fresh instance (a test compares).
 */

/** The part of the model's lexicon that wink-nlp grows (`features.lexeme` of the core model). */
interface Feature {
  list?: unknown[];
  maxIndex?: number;
}
interface Lexeme extends Feature {
  list: string[];
  hash: Record<string, number>;
}
interface CoreModel {
  features: Record<string, Feature> & { lexeme: Lexeme };
}

// A new instance costs ~100 ms; hidden words only cost memory, so rebuild rarely.
const REBUILD_AFTER_WORDS = 200_000;

let nlp: ReturnType<typeof winkNLPType>;
let core: CoreModel;
let intrinsicWords = 0;

type ModelParts = { core: () => CoreModel; metaCER: () => unknown };
// Both are CommonJS, loaded at the first title tagged: the model takes a fifth of the CLI's start-up,
// and most commands never score a purchase.
let winkNLP: typeof winkNLPType;
let model: typeof modelType;
// The model's `metaCER()` stringifies its module's copy again on each call (wink-eng-lite-web-model
// 1.8.1), so that a third instance overflows the string length: call it once for all instances.
let cerModel: unknown;

function build(): void {
  if (!model) {
    const require = createRequire(import.meta.url);
    winkNLP = require("wink-nlp") as typeof winkNLPType;
    model = require("wink-eng-lite-web-model") as typeof modelType;
    cerModel = (model as unknown as ModelParts).metaCER();
  }
  // wink-nlp builds its lexicon by calling `core()`, a fresh copy each time; keep a handle on it.
  const tracked = { ...model, metaCER: () => cerModel, core: () => (core = (model as unknown as ModelParts).core()) };
  // Part-of-speech tags read no other annotation (sentences, entities, negation, sentiment): skip them.
  nlp = winkNLP(tracked as unknown as typeof model, ["pos"]);
  intrinsicWords = core.features.lexeme.list.length;
}

// Other features an unknown word adds (prefix, suffix, shape) are bit fields of fixed width.
function nearlyFull(): boolean {
  if (core.features.lexeme.list.length - intrinsicWords > REBUILD_AFTER_WORDS) return true;
  for (const f of Object.values(core.features)) {
    if (f.maxIndex !== undefined && f.list !== undefined && f.list.length > f.maxIndex / 2) return true;
  }
  return false;
}

/** The nouns of `title`, uncached. */
export function tagNouns(title: string): string[] {
  if (!nlp || nearlyFull()) build();
  const its = nlp.its;
  const lexeme = core.features.lexeme;
  const known = lexeme.list.length;
  try {
    const tokens = nlp.readDoc(title).tokens();
    const values = tokens.out(its.value);
    const pos = tokens.out(its.pos);
    const nouns: string[] = [];
    for (let i = 0; i < values.length; i++) {
      if (pos[i] === "NOUN" || pos[i] === "PROPN") nouns.push(values[i].toLowerCase());
    }
    return nouns;
  } finally {
    // The list keeps the words (indexes stay valid); only lookups by text stop finding them.
    for (let i = known; i < lexeme.list.length; i++) {
      if (lexeme.hash[lexeme.list[i]] === i) delete lexeme.hash[lexeme.list[i]];
    }
  }
}

const MAX_TITLES = 50_000; // remembered in memory, tagged here
const MAX_KEPT_TITLES = 100_000; // read from the cache file; past it, the file starts anew
const cache = new Map<string, string[]>();
let tagged = 0;

/**
 * The nouns of `title`: remembered in this process, and kept on disk for the next ones. Loading the
 * tagger costs a process ~0.15–0.2 s of CPU at its first purchase, and a catalogue's titles are few
 * (1,000 in the data pack), so most processes never load it. Tags are a function of the title, this
 * module's code, the tagger's versions and the Unicode tables alone (above), so a file named by them in
 * the cache folder (`resolveCacheDir`) holds them; processes append to it as they tag.
 */
export function titleNouns(title: string): string[] {
  let nouns = cache.get(title);
  if (nouns === undefined) {
    const file = keptNouns();
    nouns = cache.get(title);
    if (nouns === undefined) {
      nouns = tagNouns(title);
      if (tagged < MAX_TITLES) {
        tagged++;
        cache.set(title, nouns);
        if (file) keep(file, title, nouns);
      }
    }
  }
  return nouns;
}

// Taken as the module loads, not at the first purchase: code rebuilt under a running process must not name its old output.
const TAGGER_DIGEST = sourceDigest(import.meta.url);
let diskFile: string | undefined;
let diskRead = false;

/** Reads the cache file into `cache`, once; its path, or undefined when there is none to keep to. */
function keptNouns(): string | undefined {
  if (diskRead) return diskFile;
  diskRead = true;
  diskFile = cacheFile("webshop-title-nouns", "jsonl", { code: TAGGER_DIGEST, packages: ["wink-nlp", "wink-eng-lite-web-model"] });
  if (!diskFile) return undefined;
  let kept = 0;
  for (const line of (readCache(diskFile) ?? "").split("\n")) {
    if (line === "") continue;
    if (++kept > MAX_KEPT_TITLES) {
      // Full (other catalogues' titles, duplicates): it starts anew with what this process tags.
      removeCache(diskFile);
      break;
    }
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      continue; // cut short
    }
    if (
      Array.isArray(record) &&
      record.length === 2 &&
      typeof record[0] === "string" &&
      Array.isArray(record[1]) &&
      record[1].every((n) => typeof n === "string")
    ) {
      cache.set(record[0], record[1] as string[]);
    }
  }
  return diskFile;
}

/** Appends one title's nouns; a cache that cannot be written is not tried again. */
function keep(file: string, title: string, nouns: string[]): void {
  if (!appendCache(file, JSON.stringify([title, nouns]))) diskFile = undefined;
}
