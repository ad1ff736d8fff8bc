import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReplayBuffer } from "../buffer/index.ts";
import { runEpisode } from "../envs/index.ts";
import { AlfWorldEnv, AlfWorldExpert, alfworldAbstraction } from "../envs/alfworld/index.ts";
import { WebShopEnv, webshopTask } from "../envs/webshop/index.ts";
import { abstractTrajectory } from "../experience/index.ts";
import { agentGymRoutes, clickablesOf, pyFloatRepr } from "./agentgym.ts";
import { AGENTGYM_PREFIX, createServeApp, startServer as startServeApp } from "./app.ts";
import { EnvHost } from "./env-host.ts";
import { SessionManager } from "./sessions.ts";

/** A real server on loopback: the whole app, with the AgentGym routes where it mounts them. */
async function startServer(host: EnvHost, maxSessions = 16) {
  const manager = new SessionManager(host, { maxSessions, idleTimeout: 300 }); // reaped by the tests' own reapIdle calls
  const running = await startServeApp({ app: createServeApp({ manager }), port: 0, host: "127.0.0.1" });
  const base = `${running.url}${AGENTGYM_PREFIX}`;
  /** One call as the Python clients make it: `requests.post(f"{base}/{path}", json=...)` or a GET with the id in the query. */
  const call = async (method: "GET" | "POST", path: string, body?: unknown) => {
    const res = await fetch(path === "" ? base : `${base}/${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, text, json: json as any };
  };
  return { manager, base, call, close: () => running.close() };
}

type Server = Awaited<ReturnType<typeof startServer>>;

/** An error in AgentGym's style: `{"error": message, "code": CODE}` with the status. */
function assertError(r: { status: number; json: any }, status: number, code: string, message?: RegExp) {
  assert.equal(r.status, status, JSON.stringify(r.json));
  assert.deepEqual(Object.keys(r.json), ["error", "code"]);
  assert.equal(r.json.code, code);
  assert.equal(typeof r.json.error, "string");
  assert.ok(!r.json.error.includes("\n    at "), "no stack trace");
  if (message) assert.match(r.json.error, message);
}

test("pyFloatRepr writes floats as Python's repr does (FastAPI's JSON)", () => {
  const cases: [number, string][] = [
    [0, "0.0"],
    [1, "1.0"],
    [0.5, "0.5"],
    [1 / 3, "0.3333333333333333"],
    [123.25, "123.25"],
    [1e-5, "1e-05"],
    [1.5e-7, "1.5e-07"],
    [0.0001, "0.0001"],
    [1e16, "1e+16"],
    [-2, "-2.0"],
    [12345678901234.5, "12345678901234.5"],
  ];
  for (const [x, want] of cases) assert.equal(pyFloatRepr(x), want, String(x));
});

test("clickablesOf: WebShop's available actions from our action list", () => {
  assert.deepEqual(clickablesOf(["search[<query>]"]), { has_search_bar: true, clickables: ["search"] });
  assert.deepEqual(clickablesOf(["click[back to search]", "click[next >]", "click[b0x]"]), {
    has_search_bar: false,
    clickables: ["back to search", "next >", "b0x"],
  });
  assert.deepEqual(clickablesOf(["go north"]), { has_search_bar: false, clickables: ["go north"] });
});

describe("AgentGym WebShop protocol", () => {
  let s: Server;
  const local = new WebShopEnv({ split: "test" });
  const c = local.catalogue;
  before(async () => {
    s = await startServer(await EnvHost.open({ env: "webshop" }), 6);
  });
  after(() => s.close());

  test("WebshopEnvClient's calls: create, reset(idx), observe, step, available_actions, instruction_text, close; exact shapes and texts", async () => {
    // __init__: POST /create, no body → a bare int.
    const created = await s.call("POST", "create");
    assert.equal(created.status, 200);
    assert.match(created.text, /^\d+$/);
    const id = created.json as number;

    // reset(idx) → POST /reset {"session_id", "env_idx"} → [observation, null]; then observe(). Goal 4000 is outside the host's (test) split.
    for (const goal of [3, 4000]) {
      const reset = await s.call("POST", "reset", { session_id: goal, env_idx: id });
      assert.equal(reset.status, 200);
      assert.ok(Array.isArray(reset.json) && reset.json.length === 2 && reset.json[1] === null && typeof reset.json[0] === "string");
      assert.ok(reset.text.endsWith(",null]"));
      const want = (await local.reset({ task: webshopTask(c, goal) })).observation;
      assert.equal(reset.json[0], want);
      assert.equal(want, `WebShop [SEP] Instruction: [SEP] ${c.goals[goal].instruction_text} [SEP] Search`);
      const observed = await s.call("GET", `observation?env_idx=${id}`);
      assert.equal(observed.status, 200);
      assert.equal(observed.json, want);
    }
    assert.deepEqual((await s.call("GET", `available_actions?env_idx=${id}`)).json, { has_search_bar: true, clickables: ["search"] });
    assert.equal((await s.call("GET", `instruction_text?env_idx=${id}`)).json, `Instruction: ${c.goals[4000].instruction_text}`);

    // step(action) → POST /step {"action", "env_idx"} → {state, reward, done, info: null}, the reward a Python float.
    const steps = ["search[" + c.goals[4000].query + "]"];
    const searched = await s.call("POST", "step", { action: steps[0], env_idx: id });
    assert.equal(searched.status, 200);
    assert.deepEqual(Object.keys(searched.json), ["state", "reward", "done", "info"]);
    assert.match(searched.text, /"reward":0\.0,"done":false,"info":null\}$/);
    assert.equal(searched.json.state, (await local.step(steps[0])).observation);

    const actions = await s.call("GET", `available_actions?env_idx=${id}`);
    assert.deepEqual(Object.keys(actions.json), ["has_search_bar", "clickables"]);
    assert.equal(actions.json.has_search_bar, false);
    assert.deepEqual(
      actions.json.clickables,
      local.availableActions()!.map((a) => a.slice("click[".length, -1)),
    );
    assert.equal(actions.json.clickables[0], "back to search");
    assert.equal((await s.call("GET", `instruction_text?env_idx=${id}`)).json, `Instruction:${c.goals[4000].instruction_text}`);

    // Click the first product, then buy: done, and WebShop's reward, as the local env gives it.
    const asin = actions.json.clickables.find((x: string) => /^b0/.test(x));
    for (const action of [`click[${asin}]`, "click[buy now]"]) {
      const r = await s.call("POST", "step", { action, env_idx: id });
      const l = await local.step(action);
      assert.equal(r.json.state, l.observation);
      assert.equal(r.json.reward, l.reward);
      assert.equal(r.json.done, l.terminated);
      assert.ok(r.text.includes(`"reward":${pyFloatRepr(l.reward)},`));
    }
    assert.ok((await s.call("GET", "list_envs")).json.includes(id));

    // close() → POST /close {"env_idx"}: the route AgentGym's WebShop server lacks; the env is gone after it.
    const closed = await s.call("POST", "close", { env_idx: id });
    assert.equal(closed.status, 200);
    assert.equal(closed.text, "true");
    assert.ok(!(await s.call("GET", "list_envs")).json.includes(id));
    assertError(await s.call("GET", `observation?env_idx=${id}`), 404, "SESSION_ERROR", /closed by the client/);
    assertError(await s.call("POST", "step", { env_idx: id, action: "search[x]" }), 404, "SESSION_ERROR");
    assert.equal((await s.call("POST", "close", { env_idx: id })).text, "false");
  });

  test("GET / answers as AgentGym's WebShop server does", async () => {
    const r = await s.call("GET", "");
    assert.equal(r.status, 200);
    assert.equal(r.text, '"ok"');
  });

  test("errors: unknown id, malformed JSON, missing fields, step before reset, bad session_id, oversized body", async () => {
    assertError(await s.call("POST", "step", { env_idx: 999999, action: "search[x]" }), 404, "SESSION_ERROR", /env_idx 999999 is not valid/);
    assertError(await s.call("GET", "observation?env_idx=999999"), 404, "SESSION_ERROR");
    assertError(await s.call("POST", "reset", "{not json"), 400, "INVALID_JSON");
    assertError(await s.call("POST", "reset", ""), 400, "INVALID_JSON");
    assertError(await s.call("POST", "reset", [1, 2]), 422, "VALIDATION_ERROR");
    assertError(await s.call("POST", "reset", {}), 422, "VALIDATION_ERROR", /"env_idx" is required/);
    assertError(await s.call("GET", "observation"), 422, "VALIDATION_ERROR", /"env_idx"/);
    assertError(await s.call("GET", "observation?env_idx=abc"), 422, "VALIDATION_ERROR");
    const id = (await s.call("POST", "create")).json as number;
    try {
      assertError(await s.call("POST", "step", { env_idx: id }), 422, "VALIDATION_ERROR", /"action" is required/);
      assertError(await s.call("POST", "step", { env_idx: id, action: 7 }), 422, "VALIDATION_ERROR");
      assertError(await s.call("POST", "step", { env_idx: id, action: "search[x]" }), 409, "SESSION_ERROR", /reset first/);
      assertError(await s.call("GET", `observation?env_idx=${id}`), 409, "SESSION_ERROR", /reset first/);
      assertError(await s.call("POST", "reset", { env_idx: id, session_id: c.goals.length }), 422, "VALIDATION_ERROR", /out of range/);
      assertError(await s.call("POST", "reset", { env_idx: id, session_id: "x" }), 422, "VALIDATION_ERROR");
      assertError(await s.call("POST", "step", { env_idx: id, action: "x".repeat((1 << 20) + 1024) }), 413, "PAYLOAD_TOO_LARGE");
      // Pydantic reads "5" as 5; a null session_id is a random goal.
      assert.equal(
        (await s.call("POST", "reset", { env_idx: String(id), session_id: "5" })).json[0],
        (await local.reset({ task: webshopTask(c, 5) })).observation,
      );
      const random = await s.call("POST", "reset", { env_idx: id, session_id: null });
      assert.match(random.json[0], /^WebShop \[SEP\] Instruction: \[SEP\] /);
      // Another protocol's session is not reachable by its index.
      const other = s.manager.open("abstract");
      assertError(await s.call("POST", "step", { env_idx: other.index, action: "search[x]" }), 404, "SESSION_ERROR", /no AgentGym env/);
      await other.close();
    } finally {
      await s.call("POST", "close", { env_idx: id });
    }
  });

  test("capacity: past max sessions /create is a 503 JSON error; /close frees a place", async () => {
    const ids: number[] = [];
    for (let i = s.manager.size; i < s.manager.maxSessions; i++) {
      const r = await s.call("POST", "create");
      assert.equal(r.status, 200);
      ids.push(r.json);
    }
    assertError(await s.call("POST", "create"), 503, "CAPACITY_REACHED", /capacity/);
    assert.equal((await s.call("POST", "close", { env_idx: ids.pop() })).json, true);
    const again = await s.call("POST", "create");
    assert.equal(again.status, 200);
    assert.ok(!ids.includes(again.json), "indexes are never reused");
    ids.push(again.json);
    for (const id of ids) assert.equal((await s.call("POST", "close", { env_idx: id })).json, true);
    assert.equal(s.manager.size, 0);
  });

  test("two steps in flight on one env are serialised: each answer is its own search's page", async () => {
    const id = (await s.call("POST", "create")).json as number;
    await s.call("POST", "reset", { env_idx: id, session_id: 11 });
    const queries = ["red pillow", "wireless earbuds", "mens running shoes", "coffee table", "usb c cable", "face cream"];
    const answers = await Promise.all(queries.map((q) => s.call("POST", "step", { env_idx: id, action: `search[${q}]` })));
    for (const [i, q] of queries.entries()) {
      await local.reset({ task: webshopTask(c, 11) });
      assert.equal(answers[i].status, 200);
      assert.equal(answers[i].json.state, (await local.step(`search[${q}]`)).observation, q);
    }
    assert.equal(s.manager.get(id).stepCount, queries.length);
    await s.call("POST", "close", { env_idx: id });
  });

  test("an env reaped while idle answers 404 with the reason", async () => {
    const id = (await s.call("POST", "create")).json as number;
    await s.manager.reapIdle(Date.now() + 301_000);
    assertError(await s.call("POST", "reset", { env_idx: id, session_id: 1 }), 404, "SESSION_ERROR", /idle/);
  });
});

describe("AgentGym ALFWorld protocol", () => {
  let s: Server;
  const local = new AlfWorldEnv({ split: "valid_train" });
  before(async () => {
    s = await startServer(await EnvHost.open({ env: "alfworld" }), 4); // the host's split is valid_unseen
  });
  after(() => s.close());

  test("AlfWorldEnvClient's calls: create, reset(game), step to the goal, close; exact shapes and texts", async () => {
    const created = await s.call("POST", "create");
    assert.equal(created.status, 200);
    assert.deepEqual(Object.keys(created.json), ["id"]);
    const id = created.json.id as number;

    // reset(game, world_type="Text") → POST /reset {"game", "world_type", "id"}. AgentGym's game 2420 is this valid_train game.
    const reset = await s.call("POST", "reset", { game: 2420, world_type: "Text", id });
    assert.equal(reset.status, 200);
    assert.deepEqual(Object.keys(reset.json), ["id", "observation", "available_actions", "task_type"]);
    assert.equal(reset.json.id, id);
    assert.equal(reset.json.task_type, "pick_cool_then_place_in_recep-Mug-None-CoffeeMachine-23/trial_T20190908_143209_571893");
    const task = local.tasks().find((t) => t.game.includes(reset.json.task_type))!;
    const intro = (await local.reset({ task })).observation;
    assert.ok(intro.startsWith("-= Welcome to TextWorld, ALFRED! =-\n\n"));
    // The server drops the banner paragraph and joins the rest with one newline.
    assert.equal(reset.json.observation, intro.split("\n\n").slice(1).join("\n"));
    assert.match(reset.json.observation, /^You are in the middle of a room\. .*\nYour task is to: cool some mug and put it in coffeemachine\.$/s);
    assert.deepEqual(reset.json.available_actions, local.availableActions());
    assert.deepEqual((await s.call("GET", `available_actions?id=${id}`)).json, reset.json.available_actions);
    assert.equal((await s.call("GET", `observation?id=${id}`)).json, reset.json.observation);

    // The expert's episode on the same game, replayed as AlfWorldEnvClient.step calls: POST /step {"action", "id"}.
    const player = new AlfWorldEnv({ split: "valid_train" });
    const episode = await runEpisode(player, new AlfWorldExpert(player), { envName: "alfworld", task, seed: 0 });
    assert.ok(episode.success);
    await local.reset({ task });
    for (const [i, t] of episode.steps.entries()) {
      const r = await s.call("POST", "step", { action: t.action, id });
      const l = await local.step(t.action);
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.json), ["observation", "reward", "available_actions", "done"]);
      // The server strips TextWorld's "You arrive at loc N. " from a go-to's feedback.
      assert.equal(r.json.observation, l.observation.replace(/^You arrive at loc \d+\. /, ""));
      assert.ok(!r.json.observation.startsWith("You arrive at loc "));
      assert.deepEqual(r.json.available_actions, local.availableActions());
      const last = i === episode.steps.length - 1;
      assert.match(r.text, last ? /"reward":1\.0,/ : /"reward":0\.0,/);
      assert.equal(r.json.done, last);
    }
    const detail = await s.call("GET", `detail?id=${id}`);
    assert.deepEqual(Object.keys(detail.json), ["world_type", "game", "observation", "available_actions", "done", "reward", "deleted"]);
    assert.equal(detail.json.game, 2420);
    assert.equal(detail.json.done, true);
    assert.match(detail.text, /"reward":1\.0,"deleted":false\}$/);
    assertError(await s.call("POST", "step", { action: "look", id }), 409, "SESSION_ERROR", /The task with environment \d+ has finished/);

    // Python's negative index: game -200 is 2420 again.
    assert.equal((await s.call("POST", "reset", { game: -200, world_type: "Embody", id })).json.task_type, reset.json.task_type);

    assert.equal((await s.call("POST", "close", { id })).text, "true");
    assertError(await s.call("POST", "step", { action: "look", id }), 404, "SESSION_ERROR", /The id \d+ is not valid/);
    assert.equal((await s.call("POST", "close", { id })).text, "false");
  });

  test("every AgentGym game we have (2420..2619) resets; the train split's indexes and others are clear errors", async () => {
    const {
      json: { id },
    } = await s.call("POST", "create");
    try {
      assert.deepEqual((await s.call("GET", `detail?id=${id}`)).json, { done: false, reward: 0, deleted: false });
      const seen = new Set<string>();
      for (let game = 2420; game < 2620; game++) {
        const r = await s.call("POST", "reset", { game, world_type: "Text", id });
        assert.equal(r.status, 200, `game ${game}: ${r.text}`);
        seen.add(r.json.task_type);
      }
      assert.equal(seen.size, 200);
      assertError(await s.call("POST", "reset", { game: 0, world_type: "Text", id }), 422, "VALIDATION_ERROR", /train split/);
      assertError(await s.call("POST", "reset", { game: 2620, world_type: "Text", id }), 422, "VALIDATION_ERROR", /out of range/);
      assertError(await s.call("POST", "reset", { game: 2420, world_type: "Thor", id }), 422, "VALIDATION_ERROR", /world_type must be one of/);
      assertError(await s.call("POST", "reset", { game: 2420, id }), 422, "VALIDATION_ERROR", /"world_type" is required/);
      assertError(await s.call("POST", "reset", { game: 2420, world_type: "Text", id: 424242 }), 404, "SESSION_ERROR", /The id 424242 is not valid/);
      assertError(await s.call("POST", "step", "{"), 400, "INVALID_JSON");
    } finally {
      await s.call("POST", "close", { id });
    }
  });

  test("GET / answers as AgentGym's ALFWorld server does", async () => {
    assert.equal((await s.call("GET", "")).text, '"This is environment AlfWorld."');
  });
});

describe("AgentGym protocol over a synthetic env", () => {
  let s: Server;
  before(async () => {
    // A buffer of the expert's real ALFWorld episodes grounds the embedded experience model.
    const path = join(mkdtempSync(join(tmpdir(), "dreamgym-agentgym-")), "alfworld.db");
    const real = new AlfWorldEnv({ split: "valid_train" });
    const expert = new AlfWorldExpert(real);
    const tasks = real.tasks().slice(0, 8);
    const trajectories = [];
    for (const [i, task] of tasks.entries())
      trajectories.push(abstractTrajectory(await runEpisode(real, expert, { envName: "alfworld", task, seed: i }), alfworldAbstraction));
    const buffer = ReplayBuffer.open(path);
    await buffer.appendTrajectories(trajectories, { seed: true });
    buffer.close();
    s = await startServer(await EnvHost.open({ env: "alfworld", mode: "synthetic", buffer: path }), 4);
  });
  after(() => s.close());

  test("the same routes serve a synthetic session: AgentGym's game index, abstract states, the same shapes", async () => {
    const {
      json: { id },
    } = await s.call("POST", "create");
    const reset = await s.call("POST", "reset", { game: 2420, world_type: "Text", id });
    assert.equal(reset.status, 200, reset.text);
    assert.deepEqual(Object.keys(reset.json), ["id", "observation", "available_actions", "task_type"]);
    assert.match(reset.json.observation, /^You are in the middle of a room\. .*\nYour task is to: /s);
    const r = await s.call("POST", "step", { action: "look", id });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.json), ["observation", "reward", "available_actions", "done"]);
    assert.equal(typeof r.json.observation, "string");
    assert.equal(typeof r.json.done, "boolean");
    assert.match(r.text, /"reward":\d+\.\d+/);
    assert.equal((await s.call("POST", "close", { id })).json, true);
  });
});
