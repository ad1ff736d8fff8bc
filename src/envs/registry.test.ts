import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ClosedEnvironmentError, InvalidConfigError, type Env, type StepResult, type Task } from "../core/index.ts";
import {
  actionVocabulary,
  createEnv,
  createPolicy,
  envTasks,
  listEnvs,
  listPolicies,
  loadEnvModules,
  registerEnv,
  runEpisode,
  syntheticSupport,
  unregisterEnv,
} from "./index.ts";
import { loadFailure } from "./env-modules.ts";

/** A counter game: "add" earns 1 each time, "stop" ends; free text, no action list. */
class CounterEnv implements Env {
  n = 0;
  closed = false;
  async reset() {
    if (this.closed) throw new ClosedEnvironmentError();
    this.n = 0;
    return { observation: "count 0", info: { task: { id: "c:0", instruction: "count" } } };
  }
  async step(action: string): Promise<StepResult> {
    if (action === "add") return { observation: `count ${++this.n}`, reward: 1, terminated: false, truncated: this.n >= 3, info: {} };
    if (action === "stop") return { observation: `stopped at ${this.n}`, reward: 0, terminated: true, truncated: false, info: {} };
    return { observation: `count ${this.n}`, reward: 0, terminated: false, truncated: false, info: { invalid: true } };
  }
  availableActions() {
    return undefined;
  }
  tasks(): Task[] {
    return [{ id: "c:0", instruction: "count" }];
  }
  async close() {
    this.closed = true;
  }
}

test("registerEnv: a user's env is created, listed, played and checked by name like the built-in ones", async () => {
  const spec = {
    description: "counter",
    create: () => new CounterEnv(),
    rewards: { min: 0, max: 1, dense: true },
    success: (total: number) => total >= 3,
    candidateActions: () => ["add", "stop"],
  };
  registerEnv("counter", spec);
  try {
    registerEnv("counter", spec); // the same spec again (a module loaded twice) is fine
    assert.throws(() => registerEnv("counter", { ...spec }), /already registered/);
    assert.throws(() => registerEnv("webshop", spec), /built in/);
    assert.throws(() => registerEnv("Bad Name", spec), /not valid/);
    assert.deepEqual(
      listEnvs().map((e) => e.name),
      ["webshop", "alfworld", "webarena", "webshop-browser", "webshop-pages", "counter"],
    );
    assert.deepEqual(listPolicies("counter"), ["random"]);
    const env = createEnv("counter");
    assert.equal(envTasks("counter", env).length, 1);
    // random picks among the spec's candidates, since the env lists none; success follows the spec's rule
    const t = await runEpisode(env, createPolicy("counter", "random", env, { seed: 3 }), { envName: "counter" });
    assert.equal(t.success, t.total_reward >= 3);
    assert.ok(t.steps.every((s) => s.action === "add" || s.action === "stop"));
    assert.throws(() => syntheticSupport("counter", env), /no synthetic support/);
  } finally {
    unregisterEnv("counter");
  }
  assert.throws(
    () => createEnv("counter"),
    (e: unknown) =>
      e instanceof InvalidConfigError && /unknown environment "counter" \(known: webshop, alfworld, webarena, webshop-browser, webshop-pages\)/.test(e.message),
  );
});

test("env modules: --env-module files and dreamgym.config.js register their envs (side effect or an `envs` export)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-envmod-"));
  writeFileSync(join(dir, "by-export.mjs"), `export const envs = { "exported-env": { create: () => ({}) , description: "from envs" } };\n`);
  // The default-export form is handed the wrappers a checked env needs, so it imports nothing (issue 34).
  writeFileSync(
    join(dir, "dreamgym.config.mjs"),
    `export default ({ registerEnv, orderEnforcing, withTimeLimit, withActions }) => {
  if (![orderEnforcing, withTimeLimit, withActions].every((f) => typeof f === "function")) throw new Error("no wrappers");
  registerEnv("configured-env", { create: () => orderEnforcing({}) });
};\n`,
  );
  writeFileSync(join(dir, "broken.mjs"), `throw new Error("boom");\n`);
  try {
    const loaded = await loadEnvModules(["by-export.mjs"], { cwd: dir });
    assert.deepEqual(loaded, [join(dir, "by-export.mjs"), join(dir, "dreamgym.config.mjs")]);
    assert.ok(listEnvs().some((e) => e.name === "exported-env" && e.description === "from envs"));
    assert.ok(listEnvs().some((e) => e.name === "configured-env"));
    await assert.rejects(loadEnvModules(["missing.mjs"], { cwd: dir, config: false }), /missing\.mjs: env module not found/);
    await assert.rejects(loadEnvModules(["broken.mjs"], { cwd: dir, config: false }), /broken\.mjs: env module failed to load: boom/);
  } finally {
    unregisterEnv("exported-env");
    unregisterEnv("configured-env");
  }
});

test("actionVocabulary: recorded commands, and recorded verbs × objects the state shows", () => {
  const vocab = actionVocabulary(["go north", "take gem", "take key", "open chest", "look", "put key in chest", "go north"]);
  const task = { id: "t", instruction: "open the chest" };
  const a = vocab("You are in the hall. Exits: north. You see: a key.", task);
  assert.deepEqual(a, vocab("You are in the hall. Exits: north. You see: a key.", task), "deterministic");
  for (const x of ["look", "go north", "take key", "open key", "go key", "open chest", "put key in chest"]) assert.ok(a.includes(x), x);
  assert.ok(!a.includes("take gem"), "no gem in the state");
  assert.deepEqual(vocab("nothing known", { id: "t", instruction: "" }), ["look"]);
  assert.deepEqual(actionVocabulary(["take gem"])("empty", task), ["take gem"], "never nothing to pick from");
});

test("an env module that Node loads as CommonJS though it is an ES module: the failure says what to do", () => {
  // Node's words differ between versions (20.19+: a require() cycle; earlier: require() of an ES module); the module's own load depends on the folders above it.
  for (const node of [
    "Cannot require() ES Module /m/esm.ts in a cycle. A cycle involving require(esm) is not allowed\nmore",
    "require() of ES Module /m/esm.ts not supported.",
  ]) {
    assert.equal(
      loadFailure("/m/esm.ts", node),
      `env module failed to load: ${node.split("\n")[0]} (it is an ES module that Node loads as CommonJS here: name it esm.mts, or add "type": "module" to the package.json of its folder)`,
    );
  }
  assert.match(loadFailure("/m/c.js", "require() of ES Module /m/c.js not supported."), /name it c\.mjs,/);
  assert.equal(loadFailure("/m/b.mjs", "boom\nstack"), "env module failed to load: boom");
});
