import { test } from "node:test";
import assert from "node:assert/strict";
import { AnnIndex, ExactIndex, type RowTags, TopK } from "./vector-index.ts";
import { dot, dotAt, l2Normalize } from "./embedder.ts";
import { Rng } from "../core/index.ts";

function randomVectors(n: number, dims: number, seed: number): Float32Array[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => l2Normalize(Float32Array.from({ length: dims }, () => rng.random() - 0.5)));
}
const naive = (vs: Float32Array[], ids: number[], q: Float32Array, k: number, keep: (i: number) => boolean = () => true) =>
  vs
    .map((v, i) => ({ id: ids[i], score: v.reduce((s, x, j) => s + x * q[j], 0), i }))
    .filter((x) => keep(x.i))
    .sort((a, b) => b.score - a.score || a.id - b.id)
    .slice(0, k)
    .map((x) => x.id);

test("dotAt: the sum of products from an offset, for any length (four running sums and the rest); dot is it from 0", () => {
  const rng = new Rng(3);
  for (let d = 1; d <= 13; d++) {
    const a = Float32Array.from({ length: 2 * d + 3 }, () => rng.random() - 0.5);
    const b = Float32Array.from({ length: d }, () => rng.random() - 0.5);
    for (const at of [0, 3, d + 3]) {
      let want = 0;
      for (let j = 0; j < d; j++) want += a[at + j] * b[j];
      assert.ok(Math.abs(dotAt(a, at, b, d) - want) < 1e-12, `d ${d} at ${at}: ${dotAt(a, at, b, d)} against ${want}`);
    }
    assert.equal(dot(a.subarray(0, d), b), dotAt(a, 0, b, d));
  }
});

test("exact search equals brute force, with and without filters, small and large", () => {
  for (const n of [100, 3000]) {
    const dims = 32;
    const vs = randomVectors(n, dims, n);
    const idx = new ExactIndex(dims, 16);
    const ids = vs.map((_, i) => 1000 + i);
    vs.forEach((v, i) => idx.add(ids[i], v, { env: (i % 3) + 1, source: (i % 2) + 1, task: (i % 5) + 1, action: (i % 4) + 1 }));
    for (const q of randomVectors(5, dims, 99)) {
      assert.deepEqual(
        idx.search(q, 5).map((c) => c.id),
        naive(vs, ids, q, 5),
      );
      assert.deepEqual(
        idx.search(q, 4, { env: 2, task: 3 }).map((c) => c.id),
        naive(vs, ids, q, 4, (i) => (i % 3) + 1 === 2 && (i % 5) + 1 === 3),
      );
      assert.deepEqual(
        idx.search(q, 3, { action: 2 }).map((c) => c.id),
        naive(vs, ids, q, 3, (i) => (i % 4) + 1 === 2),
      );
      // A filter keeping half the rows or more takes the SIMD path and filters afterwards.
      assert.deepEqual(
        idx.search(q, 6, { source: 1 }).map((c) => c.id),
        naive(vs, ids, q, 6, (i) => (i % 2) + 1 === 1),
      );
      assert.deepEqual(
        idx.search(q, 5, { env: 1, source: 2 }).map((c) => c.id),
        naive(vs, ids, q, 5, (i) => (i % 3) + 1 === 1 && (i % 2) + 1 === 2),
      );
    }
  }
});

test("removal keeps the index consistent", () => {
  const vs = randomVectors(50, 16, 1);
  const idx = new ExactIndex(16, 4);
  vs.forEach((v, i) => idx.add(i, v, { env: 1, source: 1, task: 1, action: 1 }));
  idx.remove([0, 10, 49, 12345]);
  assert.equal(idx.size, 47);
  const q = vs[10];
  const ids = vs.map((_, i) => i);
  assert.deepEqual(
    idx.search(q, 5).map((c) => c.id),
    naive(vs, ids, q, 5, (i) => ![0, 10, 49].includes(i)),
  );
});

test("TopK keeps the best k, ties by lower id", () => {
  const t = new TopK(3);
  for (const [id, s] of [
    [5, 0.1],
    [4, 0.9],
    [3, 0.5],
    [2, 0.9],
    [1, 0.2],
  ] as const)
    t.push(id, s);
  assert.deepEqual(
    t.sorted().map((c) => c.id),
    [2, 4, 3],
  );
});

test("HNSW search finds the exact neighbours on clustered data", () => {
  const dims = 32;
  const vs = randomVectors(2000, dims, 7);
  const ann = new AnnIndex(dims);
  const m = new Float32Array(vs.length * dims);
  vs.forEach((v, i) => m.set(v, i * dims));
  ann.add(
    vs.map((_, i) => i),
    m,
  );
  assert.equal(ann.size, 2000);
  let hits = 0;
  const ids = vs.map((_, i) => i);
  const queries = randomVectors(20, dims, 8);
  for (const q of queries) {
    const truth = new Set(naive(vs, ids, q, 5));
    hits += ann.search(q, 5).filter((c) => truth.has(c.id)).length;
  }
  assert.ok(hits / (queries.length * 5) >= 0.9, `recall ${hits / 100}`);
  ann.remove([0]);
  assert.equal(ann.size, 1999);
});

test("ties go to the lower id on the SIMD path too, whatever the storage order", () => {
  const dims = 16;
  const [a, b] = randomVectors(2, dims, 4);
  const idx = new ExactIndex(dims, 8);
  for (let i = 0; i < 3000; i++) idx.add(i, i % 3 === 0 ? a : b, { env: 1, source: 1, task: 1, action: 1 });
  idx.remove([0, 3, 6]); // moves the last rows into their places
  assert.deepEqual(
    idx.search(a, 5).map((c) => c.id),
    [9, 12, 15, 18, 21],
  );
  assert.deepEqual(
    idx.search(a, 3, { source: 1 }).map((c) => c.id),
    [9, 12, 15],
  );
});

test("exact search stays exact where int8 rounding cannot tell rows apart", () => {
  // 2,000 rows within a hair of one vector: the int8 first pass sees them all as ties, and only the
  // exact scores (ties: lower id) decide.
  const dims = 64;
  const [base] = randomVectors(1, dims, 11);
  const rng = new Rng(12);
  const vs = Array.from({ length: 2000 }, () => l2Normalize(base.map((x) => x + (rng.random() - 0.5) * 1e-3)));
  const idx = new ExactIndex(dims, 16);
  const ids = vs.map((_, i) => 5000 - i); // ids in reverse of storage order
  vs.forEach((v, i) => idx.add(ids[i], v, { env: 1, source: (i % 2) + 1, task: 1, action: 1 }));
  for (const q of [base, ...randomVectors(3, dims, 13)]) {
    assert.deepEqual(
      idx.search(q, 7).map((c) => c.id),
      naive(vs, ids, q, 7),
    );
    assert.deepEqual(
      idx.search(q, 4, { source: 2 }).map((c) => c.id),
      naive(vs, ids, q, 4, (i) => (i % 2) + 1 === 2),
    );
  }
});

test("filtered views follow the rows that come and go: hundreds of action views, synthetic rows added and removed among real ones", () => {
  const dims = 16;
  const n = 3000;
  const vs = randomVectors(n + 300, dims, 7);
  const tagsOf = (i: number) => ({ env: 1, source: i < n ? 1 : 2, task: (i % 7) + 1, action: (i % 300) + 1 });
  const idx = new ExactIndex(dims, 64);
  const live = new Set<number>();
  for (let i = 0; i < n; i++) {
    idx.add(i, vs[i], tagsOf(i));
    live.add(i);
  }
  const queries = randomVectors(2, dims, 8);
  // The expected answers from each query's scores, made once per query.
  const scores = queries.map((q) => vs.map((v) => v.reduce((s, x, j) => s + x * q[j], 0)));
  const check = (qi: number, action: number, source: number | undefined) => {
    const want = [...live]
      .filter((i) => tagsOf(i).action === action && (source === undefined || tagsOf(i).source === source))
      .sort((a, b) => scores[qi][b] - scores[qi][a] || a - b)
      .slice(0, 12); // an action's every row (at most 11): a row missing from a view shows
    assert.deepEqual(
      idx.search(queries[qi], 12, { env: 1, source, action }).map((c) => c.id),
      want,
    );
  };
  // Views of 300 actions (more than were once kept), real-only and any source.
  for (const qi of [0, 1]) for (let a = 1; a <= 300; a++) check(qi, a, 1);
  check(0, 5, undefined);
  check(0, 6, undefined);
  // Synthetic rows come (some of them in the actions searched) and some real and synthetic rows go.
  for (let i = n; i < n + 300; i++) {
    idx.add(i, vs[i], tagsOf(i));
    live.add(i);
  }
  const gone = [3, 301, 602, n + 4, n + 205, n + 299];
  idx.remove(gone);
  for (const g of gone) live.delete(g);
  for (const qi of [0, 1])
    for (let a = 1; a <= 300; a += 7) {
      check(qi, a, 1);
      check(qi, a, 2);
      check(qi, a, undefined);
    }
  for (const a of [4, 6, 300, 5]) check(1, a, undefined);
});

test("views searched by SIMD take rows as they come, at their int8 scale, or make their int8 copy again for a row beyond it", () => {
  const dims = 32;
  const vs = randomVectors(1400, dims, 11);
  // A row that fits no scale made of the others: all of its length on one axis.
  vs[1300] = Float32Array.from({ length: dims }, (_, j) => (j === 3 ? 1 : 0));
  const ids = vs.map((_, i) => 10 + i);
  const idx = new ExactIndex(dims, 16);
  const tagsOf = (i: number) => ({ env: 1, source: i % 3 === 0 ? 2 : 1, task: 1, action: (i % 2) + 1 });
  const queries = randomVectors(4, dims, 12);
  queries.push(vs[1300]);
  let added = 0;
  const addUpTo = (m: number) => {
    for (; added < m; added++) idx.add(ids[added], vs[added], tagsOf(added));
  };
  const check = () => {
    for (const q of queries) {
      const live = (i: number) => i < added;
      assert.deepEqual(
        idx.search(q, 6).map((c) => c.id),
        naive(vs, ids, q, 6, live),
      );
      assert.deepEqual(
        idx.search(q, 5, { env: 1 }).map((c) => c.id),
        naive(vs, ids, q, 5, live),
      );
      assert.deepEqual(
        idx.search(q, 5, { source: 1, action: 2 }).map((c) => c.id),
        naive(vs, ids, q, 5, (i) => live(i) && tagsOf(i).source === 1 && tagsOf(i).action === 2),
      );
    }
  };
  addUpTo(1000);
  check(); // the views and their int8 copies are made
  for (const m of [1001, 1002, 1100, 1299, 1301, 1400]) {
    addUpTo(m); // one row, a few, many; then the row beyond the scale
    check();
  }
});

test("a query asked again is answered from its kept answer and the rows added since, as a fresh search would be", () => {
  const dims = 32;
  // 600 rows: the int8 pass first, the 3 rows that come then scored in JS; 2,000: the 300 that come by an int8 pass too.
  for (const [n, more] of [
    [600, 3],
    [2000, 300],
  ]) {
    const vs = randomVectors(n + more, dims, 21);
    const ids = vs.map((_, i) => 5 + i);
    const idx = new ExactIndex(dims, 16);
    const tags = (i: number) => ({ env: 1, source: 1, task: 1, action: (i % 2) + 1 });
    for (let i = 0; i < n; i++) idx.add(ids[i], vs[i], tags(i));
    const [q] = randomVectors(1, dims, 22);
    const live = new Set(Array.from({ length: n }, (_, i) => i));
    const expect = (k: number, action?: number) => naive(vs, ids, q, k, (i) => live.has(i) && (action === undefined || tags(i).action === action));
    const ask = (k: number, action?: number) => idx.search(Float32Array.from(q), k, action === undefined ? {} : { env: 1, action }).map((c) => c.id);
    assert.deepEqual(ask(5), expect(5));
    assert.deepEqual(ask(4, 2), expect(4, 2));
    const recalled = idx.recalled;
    assert.deepEqual(ask(5), expect(5));
    assert.equal(idx.recalled, recalled + 1, "answered from the kept answer");
    // Rows come: the query itself (the best of all), a copy of the kept best (a tie: the lower id stays first), one far off, then others.
    const best = naive(vs, ids, q, 1)[0] - 5;
    vs[n] = Float32Array.from(q);
    vs[n + 1] = Float32Array.from(vs[best]);
    vs[n + 2] = Float32Array.from(q, (x) => -x);
    for (let i = n; i < n + more; i++) {
      idx.add(ids[i], vs[i], tags(i));
      live.add(i);
    }
    assert.deepEqual(ask(5), expect(5));
    assert.deepEqual(ask(4, 2), expect(4, 2));
    assert.equal(idx.recalled, recalled + 3);
    assert.ok(ask(5).includes(ids[n]) && ask(5).includes(ids[n + 1]));
    // Another k is another search; a row that goes makes the view new, and the search fresh.
    assert.deepEqual(ask(3), expect(3));
    assert.equal(idx.recalled, recalled + 5, "the two asks of k = 5 above");
    idx.remove([ids[n]]);
    live.delete(n);
    assert.deepEqual(ask(5), expect(5));
    assert.equal(idx.recalled, recalled + 5);
    // The action's view holds no row that went (it keeps its answer) or held one (a fresh search).
    assert.deepEqual(ask(4, 2), expect(4, 2));
    assert.equal(idx.recalled, recalled + (tags(n).action === 2 ? 5 : 6));
    // A k in the hundreds (a search widened over copies of one step) is not kept.
    const before = idx.recalled;
    assert.deepEqual(ask(400), expect(400));
    assert.deepEqual(ask(400), expect(400));
    assert.equal(idx.recalled, before);
  }
  // A view of fewer rows than an int8 pass takes is scored in JS each time: nothing kept.
  const vs = randomVectors(100, dims, 23);
  const small = new ExactIndex(dims, 16);
  vs.forEach((v, i) => small.add(i, v, { env: 1, source: 1, task: 1, action: 1 }));
  small.search(vs[0], 5);
  assert.deepEqual(
    small.search(vs[0], 5).map((c) => c.id),
    naive(
      vs,
      vs.map((_, i) => i),
      vs[0],
      5,
    ),
  );
  assert.equal(small.recalled, 0);
});

test("kept answers, randomized: rows added and removed, copies, rows beyond the int8 scale, queries at an offset or changed after asking; every search as brute force", () => {
  let recalled = 0;
  for (let seed = 1; seed <= 8; seed++) {
    const rng = new Rng(seed);
    // Seeds 7 and 8: lengths that are not a multiple of four (the sums' tail).
    const dims = seed <= 6 ? 8 + rng.randbelow(3) * 8 : [13, 29][seed - 7];
    const idx = new ExactIndex(dims, 16);
    const rows = new Map<number, { v: Float32Array; t: RowTags }>();
    let nextId = 1;
    const rand = () => l2Normalize(Float32Array.from({ length: dims }, () => rng.random() - 0.5));
    // Queries asked again and again: six of their own, four subarrays of one buffer at an offset.
    const queries = Array.from({ length: 6 }, rand);
    const shared = new Float32Array(dims * 8);
    for (let i = 0; i < 4; i++) {
      const q = shared.subarray(i * dims + 1, (i + 1) * dims + 1);
      q.set(rand());
      queries.push(q);
    }
    const added: Float32Array[] = [];
    const addRow = () => {
      const r = rng.random();
      const v =
        r < 0.2 && added.length > 0
          ? Float32Array.from(added[rng.randbelow(added.length)]) // a copy: exact ties
          : r < 0.25
            ? Float32Array.from(queries[rng.randbelow(queries.length)])
            : r < 0.3
              ? Float32Array.from(rand(), (x) => x * (1 + 4 * rng.random())) // beyond the int8 scale
              : rand();
      added.push(v);
      const t: RowTags = { env: 1 + rng.randbelow(2), source: 1 + rng.randbelow(2), task: 1 + rng.randbelow(3), action: 1 + rng.randbelow(3) };
      rows.set(nextId, { v, t });
      idx.add(nextId++, v, t);
    };
    const filters: Partial<RowTags>[] = [{}, { env: 1 }, { source: 1 }, { env: 2, source: 2 }, { action: 1 }, { env: 1, action: 2 }, { source: 1, action: 3 }];
    for (let step = 0; step < 400; step++) {
      const op = rng.random();
      if (op < 0.25) {
        const n = rng.random() < 0.3 ? 1 + rng.randbelow(400) : 1 + rng.randbelow(4);
        for (let i = 0; i < n; i++) addRow();
      } else if (op < 0.3 && rows.size > 0) {
        const ids = [...rows.keys()];
        const gone = Array.from({ length: 1 + rng.randbelow(5) }, () => ids[rng.randbelow(ids.length)]);
        idx.remove(gone);
        for (const id of gone) rows.delete(id);
      } else if (op < 0.32) {
        queries[rng.randbelow(queries.length)][rng.randbelow(dims)] += 0.01; // a query changed after it was asked
      } else {
        const q = queries[rng.randbelow(queries.length)];
        const k = [1, 3, 5, 20, 80, 320, 1280][rng.randbelow(7)];
        const f = filters[rng.randbelow(filters.length)];
        const want = [...rows]
          .filter(
            ([, r]) =>
              (f.env === undefined || r.t.env === f.env) &&
              (f.source === undefined || r.t.source === f.source) &&
              (f.action === undefined || r.t.action === f.action),
          )
          .map(([id, r]) => ({ id, score: dotAt(r.v, 0, q, dims) })) // the index's own sum, so that ties are ties
          .sort((a, b) => b.score - a.score || a.id - b.id)
          .slice(0, k);
        assert.deepEqual(idx.search(q, k, f), want, `seed ${seed} step ${step} k ${k} filter ${JSON.stringify(f)}`);
      }
    }
    recalled += idx.recalled;
  }
  assert.ok(recalled > 20, `${recalled} searches answered from kept answers`);
});

test("rows that go leave the views they were in, in place (int8 copies and action lists too): no view is made again, every search as brute force", () => {
  const dims = 24;
  const n = 1200; // views of hundreds of rows: the int8 pass
  const vs = randomVectors(n, dims, 31);
  const ids = vs.map((_, i) => 7 + i);
  const tagsOf = (i: number) => ({ env: (i % 2) + 1, source: i < 300 ? 1 : 2, task: (i % 3) + 1, action: (i % 5) + 1 });
  const idx = new ExactIndex(dims, 64);
  vs.forEach((v, i) => idx.add(ids[i], v, tagsOf(i)));
  const live = new Set(vs.map((_, i) => i));
  const filters: Partial<RowTags>[] = [
    {},
    { env: 1 },
    { source: 1 },
    { source: 2 },
    { env: 2, source: 2 },
    { action: 3 },
    { env: 1, action: 2 },
    { source: 1, action: 4 },
  ];
  const queries = randomVectors(3, dims, 32);
  const check = (label: string, asked = filters) => {
    for (const q of queries)
      for (const f of asked)
        for (const k of [1, 7, 40, 1200]) // the last: every row of the view, so that one missing shows
          assert.deepEqual(
            idx.search(q, k, f).map((c) => c.id),
            naive(vs, ids, q, k, (i) => live.has(i) && Object.entries(f).every(([key, want]) => tagsOf(i)[key as keyof RowTags] === want)),
            `${label}: k ${k} filter ${JSON.stringify(f)}`,
          );
  };
  check("before");
  const made = idx.viewsMade;
  assert.equal(made, filters.length);
  // Synthetic rows go a few at a time (the oldest, as a bounded buffer evicts them), then the last
  // row, a real one, and rows whose place the last row took just before.
  const rounds = [[300, 301, 302], [303, 304, 305, 306, 307], [n - 1], [0], [n - 2, 1, 150], [299, 298, 600, 601, 602, 603]];
  for (const gone of rounds) {
    idx.remove(gone.map((i) => ids[i]));
    for (const i of gone) live.delete(i);
    check(`after removing ${gone.join(", ")}`);
    assert.equal(idx.viewsMade, made, "the views lost their rows in place");
  }
  // Views made after rows went: of an action, through the action lists that followed the rows' moves.
  check("new views", [{ action: 1 }, { env: 2, action: 5 }, { source: 2, action: 2 }, { source: 1, action: 1 }]);
  // Rows come after rows went: the views take them as before.
  for (const i of [300, 0, n - 1]) {
    idx.add(ids[i], vs[i], tagsOf(i));
    live.add(i);
  }
  check("after adding back");
  assert.equal(idx.viewsMade, made + 4);
  check(
    "new views after adding back",
    [1, 2, 3].flatMap((task) => [1, 2, 3, 4, 5].map((action) => ({ task, action }))),
  );
  assert.equal(idx.size, live.size);
});
