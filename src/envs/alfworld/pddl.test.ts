import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { resolveDataDir } from "../data-dir.ts";
import { applyEffect, forEachBinding, holds, objectsByType, parseDomain, parseProblem, parseSExpr } from "./pddl.ts";

const root = join(resolveDataDir(), "alfworld");
const index = JSON.parse(readFileSync(join(root, "index.json"), "utf8")) as { games: { game: string; in_alfworld_loader_set: boolean }[] };

test("s-expressions: lower-cased, comments dropped, a comma stays in its token (as Fast Downward reads it); unbalanced input is an error", () => {
  assert.deepEqual(parseSExpr("(a (B, c) ; note\n d)"), [["a", ["b,", "c"], "d"]]);
  assert.throws(() => parseSExpr("(a (b)", "x.pddl"), /x\.pddl: unbalanced parentheses/);
  assert.throws(() => parseSExpr("a)", "x.pddl"), /unexpected "\)"/);
});

test("every evaluation game's domain and problem parse; goals are false at the start and reachable facts are well-typed", () => {
  const games = index.games.filter((g) => g.in_alfworld_loader_set);
  assert.equal(games.length, 474);
  const first = JSON.parse(readFileSync(join(root, games[0].game), "utf8"));
  const domain = parseDomain(first.pddl_domain, games[0].game);
  assert.deepEqual([...domain.actions.keys()].slice(0, 5), ["look", "inventory", "examinereceptacle", "examineobject", "gotolocation"]);
  for (const g of games) {
    const game = JSON.parse(readFileSync(join(root, g.game), "utf8"));
    const problem = parseProblem(game.pddl_problem, g.game);
    const byType = objectsByType(domain, problem.objects);
    assert.equal(byType.get("agent")?.length, 1, g.game);
    assert.ok((byType.get("receptacle")?.length ?? 0) > 3, g.game);
    const facts = new Set(problem.init);
    assert.equal(holds(problem.goal, facts, new Map(), byType), false, `${g.game}: goal holds at the start`);
  }
});

test("actions ground, check preconditions and apply effects (go to a receptacle, then look)", () => {
  const g = index.games.find((x) => x.in_alfworld_loader_set)!;
  const game = JSON.parse(readFileSync(join(root, g.game), "utf8"));
  const domain = parseDomain(game.pddl_domain);
  const problem = parseProblem(game.pddl_problem);
  const byType = objectsByType(domain, problem.objects);
  let facts: Set<string> = new Set(problem.init);
  const go = domain.actions.get("gotolocation")!;
  const moves: Map<string, string>[] = [];
  forEachBinding(go.params, new Map(), byType, (b) => {
    if (holds(go.precondition, facts, b, byType)) moves.push(new Map(b));
    return true;
  });
  assert.ok(moves.length >= 4);
  const m = moves.find((b) => b.get("?lstart") !== b.get("?lend"))!;
  facts = applyEffect(go.effect, facts, m, byType);
  assert.ok(facts.has(`atlocation ${m.get("?a")} ${m.get("?lend")}`));
  assert.ok(!facts.has(`atlocation ${m.get("?a")} ${m.get("?lstart")}`));
});
