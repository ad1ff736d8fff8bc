/** WebShop's colour vocabulary (`engine/normalize.py`), in its order: the first contained wins. */
const COLOR_SET = [
  "alabaster",
  "apricot",
  "aqua",
  "ash",
  "asphalt",
  "azure",
  "banana",
  "beige",
  "black",
  "blue",
  "blush",
  "bordeaux",
  "bronze",
  "brown",
  "burgundy",
  "camel",
  "camo",
  "caramel",
  "champagne",
  "charcoal",
  "cheetah",
  "chestnut",
  "chocolate",
  "christmas",
  "coffee",
  "cognac",
  "copper",
  "coral",
  "cranberry",
  "cream",
  "crystal",
  "dark",
  "denim",
  "eggplant",
  "elephant",
  "espresso",
  "fuchsia",
  "gold",
  "granite",
  "grape",
  "graphite",
  "grass",
  "gray",
  "green",
  "grey",
  "heather",
  "indigo",
  "ivory",
  "ivy",
  "khaki",
  "lavender",
  "lemon",
  "leopard",
  "light",
  "lilac",
  "lime",
  "magenta",
  "maroon",
  "mauve",
  "merlot",
  "midnight",
  "mint",
  "mocha",
  "multicolor",
  "mushroom",
  "mustard",
  "natural",
  "navy",
  "nude",
  "olive",
  "orange",
  "peach",
  "pewter",
  "pink",
  "plum",
  "purple",
  "rainbow",
  "red",
  "rose",
  "royal",
  "rust",
  "sand",
  "sapphire",
  "seashell",
  "silver",
  "skull",
  "slate",
  "steel",
  "stone",
  "stonewash",
  "sunflower",
  "tan",
  "taupe",
  "teal",
  "tiger",
  "turquoise",
  "violet",
  "walnut",
  "wheat",
  "white",
  "wine",
  "yellow",
] as const;

/**
 * A goal option as the reference passes it for synthetic goals: a `(name, value)` pair. Python's
 * `in` tests membership on a tuple but substring on a str, and thefuzz compares `str(tuple)`; we
 * keep both behaviours because they change rewards.
 */
export type OptionPair = readonly [string, string];
export type OptionValue = string | OptionPair;

/** `normalize_color`: the first colour of the set contained in the string (a pair: equal to an element). */
export function normalizeColor(value: OptionValue): OptionValue {
  for (const color of COLOR_SET) {
    if (typeof value === "string" ? value.includes(color) : value[0] === color || value[1] === color) return color;
  }
  return value;
}

/** Python's `str()` of a value, as thefuzz sees it. */
export function pyStr(value: OptionValue): string {
  if (typeof value === "string") return value;
  return `(${value.map(pyRepr).join(", ")})`;
}

/** Python's `repr(str)`. */
function pyRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  const body = s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t");
  return quote + (quote === "'" ? body.replace(/'/g, "\\'") : body) + quote;
}
