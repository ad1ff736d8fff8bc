import { test } from "node:test";
import assert from "node:assert/strict";
import { makeTrajectory, tempFile } from "../testing/index.ts";
import { ReplayBuffer } from "./index.ts";

test("episodes: keyset pages over a filter, each episode once; origin, success, reward and task text", async () => {
  const b = ReplayBuffer.open(tempFile("pages.db"));
  try {
    await b.appendTrajectories(
      Array.from({ length: 10 }, (_, i) => makeTrajectory(i, { source: "real" })),
      { seed: true },
    );
    await b.appendTrajectories(
      Array.from({ length: 20 }, (_, i) =>
        makeTrajectory(100 + i, { source: i % 2 ? "synthetic" : "real", policy: `neural@r1#${1 + (i % 3)}`, task: i === 0 ? "50%_off" : undefined }),
      ),
    );
    const ids: number[] = [];
    for (let after: number | undefined, n = 0; ; n++) {
      const p = b.episodes({ after, limit: 7 });
      assert.equal(p.total, 30);
      ids.push(...p.episodes.map((e) => e.id));
      if (p.next === null) break;
      after = p.next;
      assert.ok(n < 10);
    }
    assert.equal(ids.length, 30);
    assert.equal(new Set(ids).size, 30);
    assert.equal(b.episodes({ origin: "offline", limit: 100 }).total, 10);
    assert.equal(b.episodes({ origin: "real", limit: 100 }).total, 10, "real experience added after the seed");
    assert.equal(b.episodes({ origin: "synthetic", limit: 100 }).total, 10);
    const won = b.episodes({ success: true, limit: 100 });
    assert.ok(won.total > 0 && won.episodes.every((e) => e.success));
    assert.deepEqual(
      b.episodes({ minReward: 1, limit: 100 }).episodes.map((e) => e.id),
      won.episodes.map((e) => e.id),
    );
    assert.equal(b.episodes({ maxReward: 0, limit: 100 }).total, 30 - won.total);
    assert.equal(b.episodes({ policyPrefix: "neural@r1#", limit: 100 }).total, 20);
    // Wildcards in the text are matched as text.
    assert.deepEqual(
      b.episodes({ task: "50%_", limit: 100 }).episodes.map((e) => e.task.id),
      ["50%_off"],
    );
    assert.equal(b.episodes({ task: "5_%", limit: 100 }).total, 0);
    assert.throws(() => b.episodes({ limit: 0 }), /limit/);

    const one = b.episode(ids[12])!;
    assert.equal(one.steps.length, one.episode.steps);
    assert.deepEqual(
      one.steps.map((s) => s.step),
      [0, 1, 2],
    );
    assert.equal(b.episode(99_999), undefined);
    // Rewards by task and label: a run's episodes by iteration.
    const groups = b.rewardsByTask("neural@r1#");
    assert.equal(
      groups.reduce((n, g) => n + g.rewards.length, 0),
      20,
    );
    assert.ok(groups.every((g) => /^neural@r1#[123]$/.test(g.policy)));
  } finally {
    b.close();
  }
});
