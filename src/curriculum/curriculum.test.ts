import assert from "node:assert/strict";
import { test } from "node:test";
import { Rng, type Task } from "../core/index.ts";
import { OpenAIChatModel } from "../llm/index.ts";
import { chatServer } from "../testing/index.ts";
import { Curriculum, curriculumConfigSchema, LlmTaskGenerator, rewardVariance, type TaskGenerator } from "./index.ts";

test("V_τ is the population variance of a group's rewards", () => {
  assert.equal(rewardVariance([1, 0, 1, 0]), 0.25);
  assert.equal(rewardVariance([0.5, 0.5]), 0);
  assert.ok(Math.abs(rewardVariance([1, 0, 0]) - 2 / 9) < 1e-12);
});

/** Makes `count` variants "<parent> harder k"; the ones with "bad" are infeasible. */
const echo: TaskGenerator = {
  name: "echo",
  async generate(parent, count) {
    const tasks = Array.from({ length: count }, (_, k) => ({ id: `${parent.id}-${k}`, instruction: `${parent.instruction} harder ${k}` }));
    return { tasks: tasks.filter((t) => !t.instruction.includes("bad")), infeasible: tasks.filter((t) => t.instruction.includes("bad")).length };
  },
};

test("the highest-variance tasks above the threshold are varied; lineage, duplicates and λ", async () => {
  const seed: Task[] = ["alpha", "beta", "gamma", "bad delta"].map((w, i) => ({ id: `t${i}`, instruction: `find the ${w} item` }));
  const config = curriculumConfigSchema.parse({ lambda: 0.25, varianceThreshold: 0.1, parentsPerIteration: 2, variantsPerParent: 2 });
  const c = new Curriculum(config, echo, seed);
  const r = await c.update(
    [
      { task: seed[0], rewards: [1, 0, 1, 0] }, // 0.25
      { task: seed[1], rewards: [1, 1, 1, 1] }, // 0: never
      { task: seed[2], rewards: [1, 0, 0, 0] }, // 0.1875
      { task: seed[3], rewards: [1, 0, 1, 0] }, // 0.25, but its variants are infeasible
    ],
    new Rng(0),
  );
  assert.equal(r.selected, 2);
  assert.deepEqual(
    c.tasks.map((t) => t.lineage),
    [
      { parent: "t0", generation: 1 },
      { parent: "t0", generation: 1 },
    ],
  );
  assert.equal(r.infeasible, 2);
  assert.equal(r.added, 2);
  // A grandchild is generation 2; an identical instruction is dropped as a duplicate.
  const child = c.tasks[0];
  const again = await c.update(
    [
      { task: child, rewards: [0, 1] },
      { task: seed[0], rewards: [0, 1] },
    ],
    new Rng(1),
  );
  assert.ok(c.tasks.some((t) => t.lineage.generation === 2 && t.lineage.parent === child.id));
  // t0's variants exist already, and "… harder 0 harder 0" has the same words as "… harder 0".
  assert.equal(again.duplicates, 3);
  // λ = 0.25 of 8 tasks: 2 generated at most.
  const batch = c.sample(seed, 8, new Rng(3));
  assert.equal(batch.filter((t) => "lineage" in t).length, 2);
  // Disabled: seed tasks only, nothing generated.
  const off = new Curriculum({ ...config, enabled: false }, echo, seed);
  assert.equal((await off.update([{ task: seed[0], rewards: [1, 0] }], new Rng(0))).added, 0);
  assert.equal(off.sample(seed, 4, new Rng(0)).filter((t) => "lineage" in t).length, 0);
  // State round-trips for checkpoints.
  const restored = new Curriculum(config, echo, seed);
  restored.restore(JSON.parse(JSON.stringify(c.toJSON())));
  assert.deepEqual(restored.tasks, c.tasks);
});

test("a generator that throws costs the iteration its new tasks, not the run", async () => {
  const failing: TaskGenerator = {
    name: "down",
    generate: async () => {
      throw new Error("model down");
    },
  };
  const seed: Task[] = [{ id: "t0", instruction: "find the alpha item" }];
  const c = new Curriculum(curriculumConfigSchema.parse({}), failing, seed);
  const r = await c.update([{ task: seed[0], rewards: [1, 0] }], new Rng(0));
  assert.deepEqual([r.selected, r.added, r.generatorFailures, r.lastFailure], [1, 0, 1, "model down"]);
});

test("the LLM generator asks for structured variations, retries malformed replies, filters infeasible ones", async () => {
  let calls = 0;
  const s = await chatServer({
    reply: () =>
      ++calls === 1
        ? "not json"
        : JSON.stringify({ tasks: [{ instruction: "find a red wool hat under 20 dollars" }, { instruction: "find a unicorn saddle" }] }),
  });
  try {
    const gen = new LlmTaskGenerator({
      chat: new OpenAIChatModel({ baseURL: s.url, model: "m", maxRetries: 0 }),
      profile: "a shop",
      feasible: (t) => !t.instruction.includes("unicorn"),
    });
    const r = await gen.generate({ id: "p", instruction: "find a wool hat" }, 2, new Rng(0));
    assert.equal(calls, 2);
    assert.deepEqual(
      r.tasks.map((t) => t.instruction),
      ["find a red wool hat under 20 dollars"],
    );
    assert.equal(r.infeasible, 1);
    const req = s.requests.at(-1)! as { messages: { content: string }[]; response_format?: unknown };
    assert.match(req.messages[1].content, /Task: find a wool hat/);
    assert.ok(req.response_format, "structured output was requested");
  } finally {
    await s.close();
  }
});

test("a generated task is a near duplicate exactly when its words' Jaccard similarity to a known task's is at least 0.95", async () => {
  // Known tasks of 19 to 41 words; candidates that drop, add or swap a few words of one of them.
  const rng = new Rng(7);
  const word = () => `w${rng.randbelow(400)}`;
  const words = (s: string) => new Set(s.split(" "));
  const jaccard = (a: Set<string>, b: Set<string>) => {
    let inter = 0;
    for (const w of a) if (b.has(w)) inter++;
    return inter / (a.size + b.size - inter || 1);
  };
  const reserved: Task[] = Array.from({ length: 60 }, (_, i) => ({
    id: `r${i}`,
    instruction: [...new Set(Array.from({ length: 19 + rng.randbelow(23) }, word))].join(" "),
  }));
  const candidates = Array.from({ length: 300 }, (_, i) => {
    const base = [...words(reserved[rng.randbelow(reserved.length)].instruction)];
    for (let k = rng.randbelow(3); k > 0; k--) base.splice(rng.randbelow(base.length), 1);
    for (let k = rng.randbelow(3); k > 0; k--) base.push(word());
    return { id: `c${i}`, instruction: [...new Set(base)].join(" ") };
  });
  let next = 0;
  const oneAtATime: TaskGenerator = { name: "list", generate: async () => ({ tasks: [candidates[next++]], infeasible: 0 }) };
  const config = curriculumConfigSchema.parse({ varianceThreshold: 0, parentsPerIteration: 1, variantsPerParent: 1, maxGenerated: 1000 });
  const c = new Curriculum(config, oneAtATime, reserved);
  const known = reserved.map((t) => words(t.instruction));
  let near = 0;
  for (const cand of candidates) {
    const w = words(cand.instruction);
    const expected = known.some((k) => jaccard(k, w) >= 0.95);
    const r = await c.update([{ task: reserved[0], rewards: [0, 1] }], new Rng(0));
    assert.equal(r.duplicates, expected ? 1 : 0, cand.instruction);
    if (expected) near++;
    else known.push(w);
  }
  assert.ok(near > 30 && near < 270, `${near} of 300 near duplicates: both answers are tested`);
});

/** Whether each of `candidates`, generated one an update in order, was dropped as a duplicate. */
async function duplicates(reserved: Task[], candidates: Task[]): Promise<boolean[]> {
  let next = 0;
  const oneAtATime: TaskGenerator = { name: "list", generate: async () => ({ tasks: [candidates[next++]], infeasible: 0 }) };
  const config = curriculumConfigSchema.parse({ varianceThreshold: 0, parentsPerIteration: 1, variantsPerParent: 1, maxGenerated: 5000 });
  const c = new Curriculum(config, oneAtATime, reserved);
  const out: boolean[] = [];
  for (let i = 0; i < candidates.length; i++) out.push((await c.update([{ task: reserved[0], rewards: [0, 1] }], new Rng(0))).duplicates === 1);
  return out;
}

test("a task one word short of another at exactly Jaccard 0.95 (20 and 19 words) is a near duplicate, whichever comes first", async () => {
  const words = Array.from({ length: 19 }, (_, i) => `b${String(i).padStart(2, "0")}`);
  const longer = ["a", ...words].join(" ");
  const shorter = words.join(" ");
  assert.deepEqual(await duplicates([{ id: "r", instruction: longer }], [{ id: "c", instruction: shorter }]), [true]);
  assert.deepEqual(
    await duplicates(
      [{ id: "r", instruction: "unrelated" }],
      [
        { id: "c1", instruction: shorter },
        { id: "c2", instruction: longer },
      ],
    ),
    [false, true],
  );
});

test("near duplicates at Jaccard ≥ 0.95 for word sets of 0 to 80 words in any order, up to the threshold's edge", async () => {
  const rng = new Rng(11);
  const word = () => `w${rng.randbelow(300)}`;
  const words = (s: string) => new Set(s.split(" ").filter(Boolean));
  const near = (a: Set<string>, b: Set<string>) => {
    let inter = 0;
    for (const w of a) if (b.has(w)) inter++;
    const union = a.size + b.size - inter;
    return union > 0 && 20 * inter >= 19 * union; // in integers: no rounding at the edge
  };
  const shuffled = <T>(xs: T[]) => {
    for (let i = xs.length - 1; i > 0; i--) {
      const j = rng.randbelow(i + 1);
      [xs[i], xs[j]] = [xs[j], xs[i]];
    }
    return xs;
  };
  const reserved: Task[] = Array.from({ length: 60 }, (_, i) => ({
    id: `r${i}`,
    instruction: [...new Set(Array.from({ length: rng.randbelow(81) }, word))].join(" "),
  }));
  // Each candidate drops and adds up to ⌊n/19⌋ + 1 words of a known task, then shuffles them.
  const candidates: Task[] = Array.from({ length: 600 }, (_, i) => {
    const base = [...words(reserved[rng.randbelow(reserved.length)].instruction)];
    const most = Math.floor(base.length / 19) + 1;
    for (let k = rng.randbelow(most + 1); k > 0 && base.length > 0; k--) base.splice(rng.randbelow(base.length), 1);
    for (let k = rng.randbelow(most + 1); k > 0; k--) base.push(word());
    return { id: `c${i}`, instruction: shuffled([...new Set(base)]).join(" ") };
  });
  const got = await duplicates(reserved, candidates);
  const known = reserved.map((t) => words(t.instruction));
  let dropped = 0;
  candidates.forEach((t, i) => {
    const w = words(t.instruction);
    const expected = known.some((k) => near(k, w));
    assert.equal(got[i], expected, t.instruction);
    if (expected) dropped++;
    else known.push(w);
  });
  assert.ok(dropped > 60 && dropped < 540, `${dropped} of 600 dropped: both answers are tested`);
});
