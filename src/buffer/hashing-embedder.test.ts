import { test } from "node:test";
import { createHash } from "node:crypto";
import assert from "node:assert/strict";
import { HashingEmbedder } from "./hashing-embedder.ts";
import { dot } from "./embedder.ts";
import { transitionText } from "./transition-text.ts";
import { InvalidConfigError, Rng } from "../core/index.ts";

const norm = (v: Float32Array) => Math.sqrt(dot(v, v));

test("vectors are unit length, deterministic, of the configured size", async () => {
  const e = new HashingEmbedder({ dims: 64 });
  const [a, b] = await e.embed(["red running shoes", "red running shoes"]);
  assert.equal(a.length, 64);
  assert.ok(Math.abs(norm(a) - 1) < 1e-6);
  assert.deepEqual(a, b);
  const [empty] = await e.embed([""]);
  assert.equal(norm(empty), 0);
  assert.throws(() => new HashingEmbedder({ dims: 4 }), InvalidConfigError);
});

test("similar texts are closer than unrelated ones (words, bigrams, sub-words)", () => {
  const e = new HashingEmbedder();
  const q = e.embedOne("men's running shoes size 10 black");
  const near = e.embedOne("black running shoe for men, size 10");
  const far = e.embedOne("stainless steel kitchen cabinet knob");
  assert.ok(dot(q, near) > dot(q, far) + 0.2, `${dot(q, near)} vs ${dot(q, far)}`);
});

test("the action is hashed apart from the state", () => {
  const e = new HashingEmbedder();
  const a = e.embedOne(transitionText("a page that says buy now", "click[back]"));
  const b = e.embedOne(transitionText("a page that says back", "click[buy now]"));
  const c = e.embedOne(transitionText("a page that says back", "click[buy now]"));
  assert.deepEqual(b, c);
  assert.ok(dot(a, b) < 0.9);
});

test("IDF fitted on a corpus down-weights common features and names the embedder", () => {
  const corpus = Array.from({ length: 200 }, (_, i) => `Instruction [SEP] common header [SEP] product ${i} ${i % 3 === 0 ? "walnut table" : "cotton shirt"}`);
  const plain = new HashingEmbedder();
  const fitted = plain.fit(corpus);
  assert.notEqual(fitted.id, plain.id);
  assert.match(fitted.id, /^hashing-v3:dims=256:idf=[0-9a-f]{12}$/);
  assert.equal(fitted.fit(corpus).id, fitted.id, "fitting is deterministic");
  // With IDF the shared header matters less, so two different products are further apart.
  const x = "Instruction [SEP] common header [SEP] walnut table";
  const y = "Instruction [SEP] common header [SEP] cotton shirt";
  assert.ok(dot(fitted.embedOne(x), fitted.embedOne(y)) < dot(plain.embedOne(x), plain.embedOne(y)));
});

test("signs are independent of buckets: unrelated texts are near orthogonal", () => {
  const e = new HashingEmbedder();
  const rng = new Rng(11);
  const word = () => Array.from({ length: 6 }, () => String.fromCharCode(97 + rng.randbelow(26))).join("");
  const texts = Array.from({ length: 60 }, () => Array.from({ length: 30 }, word).join(" "));
  const vs = texts.map((t) => e.embedOne(t));
  let sum = 0;
  let n = 0;
  for (let i = 0; i < vs.length; i++) for (let j = i + 1; j < vs.length; j++) (sum += dot(vs[i], vs[j])), n++;
  assert.ok(Math.abs(sum / n) < 0.05, `mean cosine of unrelated texts ${sum / n}`);
});

test("embedPair gives embedOne's vector of the transition text, bit for bit", () => {
  const e = new HashingEmbedder({ dims: 64 }).fit(["a red mug\n>>> take mug", "a blue lamp on the desk\n>>> go to desk 1"]);
  const cases: [string, string][] = [
    ["a red mug on the shelf", "take mug"],
    ["", "look"],
    [`${"a long page ".repeat(200)}end`, "click[next >]"], // beyond the 2,000 characters embedded
    ["a state\n>>> with the mark", "go"],
    ["a state", "an action\n>>> holding the mark"],
    ["a state", ""],
  ];
  for (const [state, action] of cases) {
    assert.deepEqual(
      e.embedPair(state, action),
      new HashingEmbedder({ dims: 64, idf: e.idf! }).embedOne(transitionText(state, action)),
      `${state} / ${action}`,
    );
  }
});

test("vectors stay bit for bit what they were (float32 digest taken at 1c54596, fitted and unfitted, non-ASCII text)", async () => {
  const words = ["Mug", "apple", "İstanbul", "naïve", "straße", "ĲSSEL", "$39.99", "b07xtk3p89", "[buy now]", "click[next >]", "日本語", "ok"];
  const texts: string[] = [];
  for (let i = 0; i < 300; i++) {
    const n = 1 + ((i * 7) % 40);
    const state = Array.from({ length: n }, (_, j) => words[(i * 13 + j * 5) % words.length]).join(i % 3 ? " " : " [SEP] ");
    texts.push(`${state}\n>>> ${words[i % words.length]} ${i}`);
  }
  const h = createHash("sha256");
  for (const e of [new HashingEmbedder({ dims: 256 }), new HashingEmbedder({ dims: 100 }).fit(texts.slice(0, 150))]) {
    for (const v of await e.embed(texts)) h.update(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
  }
  assert.equal(h.digest("hex"), "be7fbf1d7a71d164eecc460ff75612db5cdfdf6a00dfb56be7b071c920db082b");
});
