import winkNLP from "wink-nlp";
import model from "wink-eng-lite-web-model";

/**
 * The lower-cased nouns and proper nouns of a product title, as WebShop's `get_type_reward` takes
 * them from spaCy's `en_core_web_lg` (tags NOUN / PROPN). We use wink-nlp's English model, which
 * tags in the same Universal POS set; the README lists how close it comes to spaCy.
 */
const nlp = winkNLP(model);
const its = nlp.its;
const cache = new Map<string, string[]>();

export function titleNouns(title: string): string[] {
  let nouns = cache.get(title);
  if (nouns === undefined) {
    const tokens = nlp.readDoc(title).tokens();
    const values = tokens.out(its.value);
    const pos = tokens.out(its.pos);
    nouns = [];
    for (let i = 0; i < values.length; i++) {
      if (pos[i] === "NOUN" || pos[i] === "PROPN") nouns.push(values[i].toLowerCase());
    }
    if (cache.size < 50_000) cache.set(title, nouns);
  }
  return nouns;
}
