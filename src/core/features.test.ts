import { test } from "node:test";
import assert from "node:assert/strict";
import { FeatureBuilder } from "./features.ts";

test("a feature named by a template hashes as the name the template makes, numbers and non-ASCII alike", () => {
  for (const dim of [16, 1024, 32768]) {
    const byName = new FeatureBuilder(dim);
    const byTemplate = new FeatureBuilder(dim);
    const kinds = ["results", "item", "page", "ünïcode"];
    kinds.forEach((kind, i) => {
      const k = `${kind}|click`;
      byName.add(`bias|${k}`);
      byTemplate.named`bias|${k}`;
      byName.add(`label-steps|${k}|<id>|${i}`);
      byTemplate.named`label-steps|${k}|<id>|${i}`;
      byName.add(`${i}`);
      byTemplate.named`${i}`;
      byName.add(`rank-overlap|${k}|${Math.min(i, 2)}|${0.5 * i}|`);
      byTemplate.named`rank-overlap|${k}|${Math.min(i, 2)}|${0.5 * i}|`;
    });
    byName.add("");
    byTemplate.named``;
    assert.deepEqual(byTemplate.build(), byName.build(), `dim ${dim}`);
  }
});

test("a built vector's indices come sorted with their values, and a name's values add up", () => {
  const b = new FeatureBuilder(1 << 20);
  b.add("x", 2);
  b.add("y", 0.5);
  b.add("x", 1);
  b.add("z", 0);
  const v = b.build();
  assert.equal(v.idx.length, 2);
  assert.ok(v.idx[0] < v.idx[1]);
  assert.deepEqual([...v.val].sort(), [0.5, 3]);
  const many = new FeatureBuilder(4096);
  for (let i = 0; i < 200; i++) many.add(`f${i % 150}`, i + 1);
  const w = many.build();
  assert.ok(
    w.idx.every((x, i) => i === 0 || w.idx[i - 1] < x),
    "sorted, unique",
  );
  assert.equal(Math.round(w.val.reduce((a, x) => a + x, 0)), (200 * 201) / 2, "every value kept");
});

test("added vectors sum per index, as adding their names would", () => {
  const a = new FeatureBuilder(64);
  const b = new FeatureBuilder(64);
  const both = new FeatureBuilder(64);
  for (let i = 0; i < 20; i++) {
    a.add(`a${i}`, 0.25);
    both.add(`a${i}`, 0.25);
  }
  for (let i = 0; i < 20; i++) {
    b.add(`b${i}`, 2);
    both.add(`b${i}`, 2);
  }
  const merged = new FeatureBuilder(64);
  merged.addVector(a.build());
  merged.addVector(b.build());
  assert.deepEqual(merged.build(), both.build());
});

test("a name's index is its 32-bit FNV-1a over UTF-16 code units modulo dim, whatever kind of string holds it", () => {
  // Trained policies and the results tables depend on these indices: they must not move.
  const fnv1a = (s: string) => {
    const units = Buffer.from(s, "utf16le");
    let h = 0x811c9dc5;
    for (let i = 0; i < units.length; i += 2) h = Math.imul(h ^ units.readUInt16LE(i), 0x01000193);
    return h >>> 0;
  };
  const page = `page: item\n${"[b0123] a shirt → 12.99 ".repeat(30)}`;
  const names = [
    "bias|item|click", // a literal
    ["bias", "item", "click"].join("|"), // joined
    `${"bias|"}${String(Date.now()).slice(0, 0)}item|click`, // concatenated
    page.slice(11, 260), // a slice of a longer, two-byte string
    JSON.parse('"t-chosen|ünïcode|x"') as string, // parsed
    "x|😀|y", // a surrogate pair: two code units
    `label-steps|${0.5 * 3}|<id>`,
    page,
    "",
  ];
  for (const dim of [16, 1 << 17])
    for (const name of names) {
      const byName = new FeatureBuilder(dim);
      byName.add(name);
      const byTemplate = new FeatureBuilder(dim);
      byTemplate.named`${name}`;
      assert.deepEqual([...byName.build().idx], [fnv1a(name) % dim], `add, dim ${dim}: ${name.slice(0, 30)}`);
      assert.deepEqual([...byTemplate.build().idx], [fnv1a(name) % dim], `named, dim ${dim}: ${name.slice(0, 30)}`);
    }
});
