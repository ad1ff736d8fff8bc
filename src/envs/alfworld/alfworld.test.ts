import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { checkEnv, DataError, InvalidConfigError, Rng } from "../../core/index.ts";
import { runEpisode } from "../rollout.ts";
import { AlfWorldEnv, LoadedGames } from "./alfworld-env.ts";
import { AlfWorldExpert } from "./expert.ts";
import { Game, loaderKeeps } from "./game.ts";
import { displayNames } from "./names.ts";

const env0 = new AlfWorldEnv({ split: "valid_unseen" });
const root = env0.root;

test("ALFWorld's loader rule picks exactly the pack's 134 + 140 + 200 games", () => {
  const index = JSON.parse(readFileSync(join(root, "index.json"), "utf8")) as { games: { game: string; in_alfworld_loader_set: boolean }[] };
  let kept = 0;
  for (const g of index.games) {
    const dir = join(root, g.game, "..");
    const game = JSON.parse(readFileSync(join(root, g.game), "utf8"));
    const taskType = existsSync(join(dir, "traj_data.json"))
      ? (JSON.parse(readFileSync(join(dir, "traj_data.json"), "utf8")) as { task_type: string }).task_type
      : "";
    const keep = loaderKeeps(dir, game, taskType);
    assert.equal(keep, g.in_alfworld_loader_set, g.game);
    if (keep) kept++;
  }
  assert.equal(kept, 474);
  assert.deepEqual(
    ["valid_unseen", "valid_seen", "valid_train"].map((split) => new AlfWorldEnv({ split: split as "valid_seen" }).tasks().length),
    [134, 140, 200],
  );
});

test("loaded games are kept up to a bound, the least lately used let go first", () => {
  const [a, b, c] = env0
    .tasks()
    .slice(0, 3)
    .map((t) => t.game);
  const loads: string[] = [];
  const games = new LoadedGames(2);
  const get = (game: string) => games.get(join(root, game), () => (loads.push(game), Game.load(root, game)));
  const first = get(a);
  get(b);
  assert.equal(get(a), first, "a game met again is the one kept");
  get(c); // lets b go: a was used after it
  assert.equal(games.size, 2);
  assert.equal(get(a), first);
  const again = get(b); // lets c go
  get(c); // lets a go
  assert.deepEqual(loads, [a, b, c, b, c]);
  assert.equal(games.size, 2);
  assert.equal(again.file, b);
  assert.notEqual(get(a), first, "a game let go is loaded anew");
});

test("display names: grouped by class, the smallest id gets the highest number, basins named apart", () => {
  const names = displayNames(["desk_bar__minus_01_dot_58", "desk_bar__minus_00_dot_57", "sink_bar__plus_01_bar_sinkbasin", "sink_bar__plus_01", "agent1"]);
  assert.equal(names.get("desk_bar__minus_00_dot_57"), "desk 2");
  assert.equal(names.get("desk_bar__minus_01_dot_58"), "desk 1");
  assert.equal(names.get("sink_bar__plus_01_bar_sinkbasin"), "sinkbasin 1");
  assert.equal(names.get("sink_bar__plus_01"), "sink 1");
  assert.equal(names.get("agent1"), "agent1 ");
});

test("the opening text of all 134 unseen games equals ALFWorld's (alfworld_tasks_suffix.json)", async () => {
  const suffix = JSON.parse(readFileSync(join(root, "alfworld_tasks_suffix.json"), "utf8")) as { gamefile: string; goal: string }[];
  let same = 0;
  for (const [i, s] of suffix.entries()) {
    const id = s.gamefile.replace(/^data\/alfworld\/json_2\.1\.1\//, "").replace(/\/$/, "");
    const env = new AlfWorldEnv({ split: "valid_unseen", game: id });
    const { observation } = await env.reset();
    assert.ok(observation.startsWith("-= Welcome to TextWorld, ALFRED! =-\n\n"));
    if (`${observation.slice(37)}___${i}` === s.goal) same++;
  }
  assert.equal(same, 134);
});

test("commands and feedback read as ALFWorld's (and ReAct's transcripts) do; a command that is not admissible changes nothing", async () => {
  const env = new AlfWorldEnv({ split: "valid_unseen", game: "look_at_obj_in_light-Bowl-None-DeskLamp-308/trial_T20190907_133919_856963" });
  await env.reset();
  const start = env.availableActions();
  assert.deepEqual(start, [...start].sort());
  assert.ok(start.includes("look") && start.includes("inventory") && start.includes("go to desk 2"));
  const play = async (cmd: string) => (await env.step(cmd)).observation;
  assert.equal(await play("go to desk 2"), "You arrive at loc 23. On the desk 2, you see a alarmclock 1, a bowl 1, and a cd 3.");
  assert.ok(!env.availableActions().includes("go to desk 2"), "no go-to for where the agent stands");
  assert.ok(env.availableActions().includes("take bowl 1 from desk 2"));
  const bad = await env.step("take bowl 7 from desk 2");
  assert.deepEqual([bad.observation, bad.reward, bad.info.invalid], ["Nothing happens.", 0, true]);
  assert.equal(await play("take bowl 1 from desk 2"), "You pick up the bowl 1 from the desk 2.");
  assert.equal(await play("go to drawer 6"), "You arrive at loc 19. The drawer 6 is closed.");
  assert.equal(await play("open drawer 6"), "You open the drawer 6. The drawer 6 is open. In it, you see nothing.");
  assert.equal(await play("examine bowl 1"), "This is a normal bowl 1. In it, you see nothing.");
  assert.equal(await play("close drawer 6"), "You close the drawer 6.");
  assert.equal(await play("look"), "You are facing the drawer 6. Next to it, you see nothing.");
  assert.equal(await play("inventory"), "You are carrying: a bowl 1.");
  assert.equal(
    await play("go to desk 1"),
    "You arrive at loc 14. On the desk 1, you see a desklamp 1, a keychain 3, a mug 2, a pen 2, a pen 1, and a pencil 2.",
  );
  const won = await env.step("use desklamp 1");
  assert.deepEqual([won.observation, won.reward, won.terminated], ["You turn on the desklamp 1.", 1, true]);
});

test("the env contract holds; episodes truncate at 50 steps", async () => {
  await checkEnv(new AlfWorldEnv({ split: "valid_seen" }), { seed: 3, invalidFeedback: "Nothing happens." });
  const env = new AlfWorldEnv({ split: "valid_seen", maxSteps: 50 });
  await env.reset({ seed: 1 });
  let r;
  for (let i = 0; i < 50; i++) r = await env.step("look");
  assert.equal(r!.truncated, true);
});

test("the expert solves ≥ 99% of the 134 + 140 evaluation games, every task type", async () => {
  for (const split of ["valid_unseen", "valid_seen"] as const) {
    const env = new AlfWorldEnv({ split });
    const expert = new AlfWorldExpert(env);
    const byType = new Map<string, [number, number]>();
    for (const task of env.tasks()) {
      const t = await runEpisode(env, expert, { envName: "alfworld", task });
      const c = byType.get(task.task_type) ?? [0, 0];
      byType.set(task.task_type, [c[0] + (t.success ? 1 : 0), c[1] + 1]);
    }
    const solved = [...byType.values()].reduce((s, [k]) => s + k, 0);
    assert.ok(solved >= Math.ceil(0.99 * env.tasks().length), `${split}: ${solved}/${env.tasks().length}`);
    assert.equal(byType.size, 6);
  }
});

test("bad input: a malformed game names the file and the problem; unknown split or game names the known ones", () => {
  const dir = mkdtempSync(join(tmpdir(), "alfworld-bad-"));
  mkdirSync(join(dir, "g"), { recursive: true });
  writeFileSync(join(dir, "g", "game.tw-pddl"), JSON.stringify({ pddl_domain: "(define (domain x))", grammar: "nothing" }));
  assert.throws(
    () => Game.load(dir, "g/game.tw-pddl"),
    (e: Error) => DataError.isInstance(e) && /g\/game\.tw-pddl: "pddl_problem" is missing/.test(e.message),
  );
  writeFileSync(join(dir, "g", "game.tw-pddl"), "{ not json");
  assert.throws(() => Game.load(dir, "g/game.tw-pddl"), /game\.tw-pddl is not valid JSON/);
  assert.throws(() => Game.load(dir, "missing/game.tw-pddl"), /ALFWorld game .*missing\/game\.tw-pddl is missing/);
  assert.throws(
    () => new AlfWorldEnv({ split: "test" as "valid_seen" }),
    (e: Error) => e instanceof InvalidConfigError && /unknown ALFWorld split "test" \(known: valid_unseen, valid_seen, valid_train\)/.test(e.message),
  );
  assert.throws(() => new AlfWorldEnv({ game: "no-such-game" }), /unknown ALFWorld game "no-such-game" in split valid_unseen .*alfworld:valid_unseen\//);
});

/** The feedback of each command kind, as ReAct's transcripts show it (they drop "You arrive at loc N. "). */
const FEEDBACK: [RegExp, RegExp][] = [
  [/^go to (\w+ \d+)$/, /^(On the \w+ \d+, you see (nothing|(a \w+ \d+(, (and )?)?)+)\.|The \w+ \d+ is (closed|open\. In it, you see .*)\.)$/],
  [/^open (\w+ \d+)$/, /^You open the \w+ \d+\. The \w+ \d+ is open\. In it, you see (nothing|(a \w+ \d+(, (and )?)?)+)\.$/],
  [/^close (\w+ \d+)$/, /^You close the \w+ \d+\.$/],
  [/^take (\w+ \d+) from (\w+ \d+)$/, /^You pick up the \w+ \d+ from the \w+ \d+\.$/],
  [/^put (\w+ \d+) in\/on (\w+ \d+)$/, /^You put the \w+ \d+ in\/on the \w+ \d+\.$/],
  [/^clean (\w+ \d+) with (\w+ \d+)$/, /^You clean the \w+ \d+ using the \w+ \d+\.$/],
  [/^heat (\w+ \d+) with (\w+ \d+)$/, /^You heat the \w+ \d+ using the \w+ \d+\.$/],
  [/^cool (\w+ \d+) with (\w+ \d+)$/, /^You cool the \w+ \d+ using the \w+ \d+\.$/],
  [/^use (\w+ \d+)$/, /^You turn on the \w+ \d+\.$/],
];

test("every command kind reads as in ReAct's transcripts (the expert plays all six task types)", async () => {
  const shots = JSON.parse(readFileSync(join(root, "few_shot", "alfworld.json"), "utf8")) as Record<string, string>;
  const seen = new Map<string, number>();
  const check = (cmd: string, feedback: string, where: string) => {
    for (const [command, text] of FEEDBACK) {
      if (!command.test(cmd)) continue;
      assert.match(feedback, text, `${where}: "${cmd}" → "${feedback}"`);
      seen.set(command.source, (seen.get(command.source) ?? 0) + 1);
    }
  };
  // The transcripts themselves. ReAct's four examine transcripts end with a slip of their editing: a
  // "put … in/on …" answered "You turn on the desklamp 1." (a "use" command's text); those are skipped.
  for (const [key, text] of Object.entries(shots)) {
    const lines = text.split("\n");
    for (let i = 0; i < lines.length - 1; i++) {
      if (!lines[i].startsWith("> ") || lines[i].startsWith("> think")) continue;
      if (key.includes("examine") && lines[i].startsWith("> put") && lines[i + 1] === "You turn on the desklamp 1.") continue;
      check(lines[i].slice(2), lines[i + 1], key);
    }
  }
  const fromTranscripts = new Map(seen);
  seen.clear();
  // Our env, stripped of "You arrive at loc N. " as the transcripts are.
  const env = new AlfWorldEnv({ split: "valid_unseen" });
  const expert = new AlfWorldExpert(env);
  const byType = new Map<string, number>();
  for (const task of env.tasks()) {
    if ((byType.get(task.task_type) ?? 0) >= 3) continue;
    byType.set(task.task_type, (byType.get(task.task_type) ?? 0) + 1);
    const t = await runEpisode(env, expert, { envName: "alfworld", task });
    for (const s of t.steps) check(s.action, s.next_observation.replace(/^You arrive at loc \d+\. /, ""), task.id);
  }
  for (const [command] of FEEDBACK) {
    // The transcripts never close anything (the reference's close text is checked above).
    if (!command.source.startsWith("^close")) assert.ok((fromTranscripts.get(command.source) ?? 0) > 0, `the transcripts have no "${command.source}"`);
    if (!command.source.startsWith("^close")) assert.ok((seen.get(command.source) ?? 0) > 0, `the expert never sent "${command.source}"`);
  }
});

test("the expert also finishes games it did not start: after 10–29 random commands it still solves ≥ 95%", async () => {
  const env = new AlfWorldEnv({ split: "valid_seen" });
  const expert = new AlfWorldExpert(env);
  let solved = 0;
  for (const [i, task] of env.tasks().entries()) {
    const rng = new Rng(i);
    const { observation, info } = await env.reset({ task });
    let done = false;
    let won = false;
    const prefix = 10 + rng.randbelow(20);
    for (let j = 0; j < prefix && !done; j++) {
      const listed = env.availableActions();
      const r = await env.step(listed[rng.randbelow(listed.length)]);
      done = r.terminated || r.truncated;
      won = r.terminated;
    }
    while (!done) {
      const r = await env.step(expert.choose({ observation, actions: env.availableActions(), task, info, history: [] }));
      done = r.terminated || r.truncated;
      won = r.terminated;
    }
    if (won) solved++;
  }
  assert.ok(solved >= 0.95 * env.tasks().length, `${solved}/${env.tasks().length}`);
});
