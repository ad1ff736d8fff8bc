import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createEnv, createPolicy, listEnvs, listPolicies, resolveDataDir } from "./index.ts";
import { DataError, InvalidConfigError } from "../core/index.ts";
import { WebShopEnv } from "./webshop/index.ts";
import { AlfWorldEnv } from "./alfworld/index.ts";

test("the registry creates envs by name and lists them", async () => {
  assert.deepEqual(
    listEnvs().map((e) => e.name),
    ["webshop", "alfworld", "webarena", "webshop-browser", "webshop-pages"],
  );
  const env = createEnv("webshop", { split: "dev" });
  assert.ok(env instanceof WebShopEnv);
  assert.equal(env.tasks().length, 1000);
  assert.throws(
    () => createEnv("nope" as "webshop"),
    (e: unknown) => e instanceof InvalidConfigError && /known: webshop/.test(e.message),
  );
  assert.deepEqual(listPolicies("webshop"), ["oracle", "oracle-noisy", "rule", "random"]);
  assert.equal(createPolicy("webshop", "rule", env).name, "rule");
  assert.throws(() => createPolicy("webshop", "expert", env), /unknown policy "expert"/);
  await env.close();
  const alf = createEnv("alfworld", { split: "valid_seen", game: "look_at_obj_in_light-AlarmClock-None-DeskLamp-323/trial_T20190909_044715_250790" });
  assert.ok(alf instanceof AlfWorldEnv);
  assert.equal(alf.tasks().length, 1);
  assert.deepEqual(listPolicies("alfworld"), ["expert", "random"]);
  assert.equal(createPolicy("alfworld", "expert", alf).name, "expert");
});

test("the data folder: explicit, then DREAMGYM_DATA, with errors that say where and what", () => {
  const root = mkdtempSync(join(tmpdir(), "dreamgym-data-"));
  mkdirSync(join(root, "webshop"));
  assert.equal(resolveDataDir({ dataDir: root }), root);
  assert.throws(
    () => resolveDataDir({ dataDir: root, subdir: "webshop", files: ["products_1000.json"] }),
    (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.match(e.message, new RegExp(`${join(root, "webshop")} is missing products_1000\\.json`));
      return true;
    },
  );
  const saved = process.env.DREAMGYM_DATA;
  try {
    process.env.DREAMGYM_DATA = join(root, "nowhere");
    assert.throws(() => resolveDataDir(), /looked in .*nowhere; from DREAMGYM_DATA/);
    process.env.DREAMGYM_DATA = root;
    assert.equal(resolveDataDir(), root);
  } finally {
    if (saved === undefined) delete process.env.DREAMGYM_DATA;
    else process.env.DREAMGYM_DATA = saved;
  }
});

test("a step that is not a string and a seed that is not a number are refused in words that say so (issue 34, item 18)", async () => {
  for (const name of ["webshop", "alfworld"]) {
    const env = createEnv(name, {});
    await env.reset({ seed: 0 });
    await assert.rejects(
      env.step(42 as unknown as string),
      (e: Error) => e instanceof InvalidConfigError && e.message === "an action is a string, got 42 (a number)",
    );
    await assert.rejects(env.reset({ seed: "3" as unknown as number }), (e: Error) => /got "3" \(a string\)/.test(e.message), name);
    await env.close();
  }
});
