import { playEpisode, Rng, type Task, type TaskGenerator } from "../../core/index.ts";
import { AlfWorldEnv, type AlfWorldTask } from "./alfworld-env.ts";
import { AlfWorldExpert } from "./expert.ts";
import { alfworldGames, Game, type AlfWorldSplit, type GameEntry } from "./game.ts";
import { sceneOf, specGoal, specInstruction, specKey, specParams, taskSpec, type TaskSpec } from "./variants.ts";

/** What a game's scene offers a task: object types (and how many), their properties, receptacle types, lamps, appliances. */
interface Scene {
  objects: Map<string, number>;
  cleanable: Set<string>;
  heatable: Set<string>;
  coolable: Set<string>;
  receptacles: Set<string>;
  /** `rtype|otype` pairs the receptacle type can contain. */
  contain: Set<string>;
  lamps: Set<string>;
}

const TREAT: Record<string, { able: keyof Pick<Scene, "cleanable" | "heatable" | "coolable">; appliance: string }> = {
  pick_clean_then_place_in_recep: { able: "cleanable", appliance: "sinkbasin" },
  pick_heat_then_place_in_recep: { able: "heatable", appliance: "microwave" },
  pick_cool_then_place_in_recep: { able: "coolable", appliance: "fridge" },
};
const PLACE_TYPES = [
  "pick_and_place_simple",
  "pick_clean_then_place_in_recep",
  "pick_heat_then_place_in_recep",
  "pick_cool_then_place_in_recep",
  "pick_two_obj_and_place",
];
const LAMPS = new Set(["desklamp", "floorlamp"]);
const bare = (t: string) => t.replace(/type$/, "");

function sceneOfGame(game: Game): Scene {
  const s = game.initialState();
  const scene: Scene = {
    objects: new Map(),
    cleanable: new Set(),
    heatable: new Set(),
    coolable: new Set(),
    receptacles: new Set(),
    contain: new Set(),
    lamps: new Set(),
  };
  for (const [o, t] of s.tuples("objecttype")) {
    const type = bare(t);
    if (LAMPS.has(type) && s.has(`toggleable ${o}`) && s.tuplesWith("inreceptacle", 0, o).length > 0) scene.lamps.add(type);
    if (!s.has(`pickupable ${o}`) || s.tuplesWith("inreceptacle", 0, o).length === 0) continue;
    scene.objects.set(type, (scene.objects.get(type) ?? 0) + 1);
    for (const k of ["cleanable", "heatable", "coolable"] as const) if (s.has(`${k} ${o}`)) scene[k].add(type);
  }
  for (const [, t] of s.tuples("receptacletype")) scene.receptacles.add(bare(t));
  for (const [rt, ot] of s.tuples("cancontain")) scene.contain.add(`${bare(rt)}|${bare(ot)}`);
  return scene;
}

/** Whether a scene has what a spec needs (feasibility by construction; the expert then checks it in the game). */
export function sceneFits(scene: Scene, spec: TaskSpec): boolean {
  const o = spec.object.toLowerCase();
  const count = scene.objects.get(o) ?? 0;
  if (count < (spec.taskType === "pick_two_obj_and_place" ? 2 : 1)) return false;
  if (spec.taskType === "look_at_obj_in_light") return scene.lamps.has(spec.toggle.toLowerCase()) && !LAMPS.has(o);
  const r = spec.parent.toLowerCase();
  if (!scene.receptacles.has(r) || !scene.contain.has(`${r}|${o}`)) return false;
  const treat = TREAT[spec.taskType];
  return !treat || (scene[treat.able].has(o) && scene.receptacles.has(treat.appliance) && r !== treat.appliance);
}

/** Other specs of a scene reachable from `spec` by one change: the object, the receptacle (or lamp), or the task type. */
function neighbours(scene: Scene, spec: TaskSpec): { kind: string; spec: TaskSpec }[] {
  const out: { kind: string; spec: TaskSpec }[] = [];
  const o = spec.object.toLowerCase();
  for (const x of scene.objects.keys()) if (x !== o) out.push({ kind: "object", spec: { ...spec, object: x } });
  if (spec.taskType === "look_at_obj_in_light") {
    for (const l of scene.lamps) if (l !== spec.toggle.toLowerCase()) out.push({ kind: "receptacle", spec: { ...spec, toggle: l } });
  } else for (const r of scene.receptacles) if (r !== spec.parent.toLowerCase()) out.push({ kind: "receptacle", spec: { ...spec, parent: r } });
  // Another task type on the scene, with the same object (and receptacle, or some lamp / some receptacle when the parent has none).
  for (const t of [...PLACE_TYPES, "look_at_obj_in_light"]) {
    if (t === spec.taskType) continue;
    if (t === "look_at_obj_in_light") for (const l of scene.lamps) out.push({ kind: "type", spec: { taskType: t, object: o, parent: "", toggle: l } });
    else if (spec.parent) out.push({ kind: "type", spec: { taskType: t, object: o, parent: spec.parent.toLowerCase(), toggle: "" } });
    else for (const r of scene.receptacles) out.push({ kind: "type", spec: { taskType: t, object: o, parent: r, toggle: "" } });
  }
  return out.filter((n) => sceneFits(scene, n.spec));
}

/** The dedup key of an ALFWorld task: its game and what it asks (a seed game's own task or a variant). */
export function alfworldTaskKey(task: Task): string | undefined {
  const t = task as Partial<AlfWorldTask>;
  if (typeof t.game !== "string" || typeof t.task_type !== "string" || !t.params) return undefined;
  return `${t.game}|${specKey(taskSpec(t.task_type, t.params))}`;
}

export interface AlfWorldTaskGeneratorOptions {
  dataDir?: string;
  /** The split whose games the variants are played on. @default "valid_train" */
  trainSplit?: AlfWorldSplit;
  /** The expert's step limit when it checks a variant. @default 50 */
  maxSteps?: number;
  /** Tries per requested variant before it counts as infeasible. @default 4 */
  attempts?: number;
}

/**
 * ALFWorld task variation without an LLM (issue 16, part 4). A parent task (a seed game's own task or
 * an earlier variant) is varied into another task on a training game: another object type, another
 * receptacle type (another lamp), or another task type on the same scene, or the same task on another
 * training game's scene. A variant is feasible by construction — the scene has the object (two for
 * "put two"), the receptacle type can contain it, the treatment's appliance is there, the lamp is —
 * and is then checked by the expert in the real game: it is kept only when the expert, planning from
 * the game state for the variant's goal, wins within `maxSteps` (and the goal does not already hold
 * at the start). A variant whose (scene, task type, object, receptacle, lamp) equals an evaluation
 * game's task — any game outside the train split, valid_seen or valid_unseen — is never made.
 */
export class AlfWorldTaskGenerator implements TaskGenerator {
  readonly name = "alfworld-scenes";
  private readonly env: AlfWorldEnv;
  private readonly expert: AlfWorldExpert;
  private readonly seedGames: GameEntry[];
  private readonly evalKeys: Set<string>;
  private readonly scenes = new Map<string, Scene>();
  private readonly maxSteps: number;
  private readonly attempts: number;
  /** Expert checks run and passed (for reports and tests). */
  readonly checks = { run: 0, passed: 0 };

  constructor(opts: AlfWorldTaskGeneratorOptions = {}) {
    const trainSplit = opts.trainSplit ?? "valid_train";
    this.maxSteps = opts.maxSteps ?? 50;
    this.attempts = opts.attempts ?? 4;
    this.env = new AlfWorldEnv({ dataDir: opts.dataDir, split: trainSplit, maxSteps: this.maxSteps });
    this.expert = new AlfWorldExpert(this.env);
    const games = alfworldGames(this.env.root);
    this.seedGames = games.filter((g) => g.split === trainSplit);
    this.evalKeys = new Set(games.filter((g) => g.split !== trainSplit).map((g) => `${sceneOf(g.game)}|${specKey(taskSpec(g.taskType, g.params))}`));
  }

  /** Whether a (game, spec) is an evaluation game's task (same scene, same task). */
  isEvalTask(game: string, spec: TaskSpec): boolean {
    return this.evalKeys.has(`${sceneOf(game)}|${specKey(spec)}`);
  }

  key(task: Task): string | undefined {
    return alfworldTaskKey(task);
  }

  private scene(game: string): Scene {
    let s = this.scenes.get(game);
    if (!s) {
      s = sceneOfGame(Game.load(this.env.root, game));
      this.scenes.set(game, s);
    }
    return s;
  }

  /** A variant task of a spec on a game. */
  variantTask(parent: Task, game: GameEntry, spec: TaskSpec, kind: string): AlfWorldTask {
    return {
      id: `${parent.id}~${kind}:${specKey(spec).replace(/\|/g, "-")}`,
      instruction: specInstruction(spec),
      game: game.game,
      split: game.split,
      task_type: spec.taskType,
      params: specParams(spec),
      variant: true,
    };
  }

  /** Plays a task with the expert in the real game: true when it wins (and the goal did not hold at the start). */
  async expertSolves(task: AlfWorldTask): Promise<boolean> {
    this.checks.run++;
    const cur = () => this.env.current!;
    await this.env.reset({ task });
    if (cur().game.satisfies(specGoal(taskSpec(task.task_type, task.params)), cur().state)) return false;
    const ep = await playEpisode(this.env, this.expert, { task, seed: 0, rng: new Rng(0), isSuccess: (r) => r >= 1 });
    const won = ep.success;
    if (won) this.checks.passed++;
    return won;
  }

  async generate(parent: Task, count: number, rng: Rng): Promise<{ tasks: Task[]; infeasible: number }> {
    const p = parent as Partial<AlfWorldTask>;
    if (typeof p.game !== "string" || typeof p.task_type !== "string" || !p.params) return { tasks: [], infeasible: count };
    const home = this.seedGames.find((g) => g.game === p.game) ?? alfworldGames(this.env.root).find((g) => g.game === p.game);
    if (!home) return { tasks: [], infeasible: count };
    const spec = taskSpec(p.task_type, p.params);
    const parentKey = alfworldTaskKey(parent);
    const tasks: Task[] = [];
    const made = new Set<string>();
    let infeasible = 0;
    for (let i = 0; i < count; i++) {
      let found: AlfWorldTask | undefined;
      for (let a = 0; a < this.attempts && !found; a++) {
        const candidate = this.propose(home, spec, rng);
        if (!candidate || this.isEvalTask(candidate.game.game, candidate.spec)) continue;
        const task = this.variantTask(parent, candidate.game, candidate.spec, candidate.kind);
        const key = alfworldTaskKey(task)!;
        if (key === parentKey || made.has(key)) continue;
        if (await this.expertSolves(task)) {
          found = task;
          made.add(key);
        }
      }
      if (found) tasks.push(found);
      else infeasible++;
    }
    return { tasks, infeasible };
  }

  /** One candidate: a change on the parent's scene (object, receptacle, type), or the same task on another seed game's scene. */
  private propose(home: GameEntry, spec: TaskSpec, rng: Rng): { game: GameEntry; spec: TaskSpec; kind: string } | undefined {
    if (rng.random() < 0.25) {
      const others = this.seedGames.filter((g) => g.game !== home.game && sceneFits(this.scene(g.game), spec));
      if (others.length > 0)
        return {
          game: rng.choice(others),
          spec: { ...spec, object: spec.object.toLowerCase(), parent: spec.parent.toLowerCase(), toggle: spec.toggle.toLowerCase() },
          kind: "scene",
        };
    }
    const near = neighbours(this.scene(home.game), spec);
    if (near.length === 0) return undefined;
    // A kind first (object, receptacle, type), then one of its changes: no kind crowds out the others.
    const kinds = [...new Set(near.map((n) => n.kind))];
    const kind = rng.choice(kinds);
    const pick = rng.choice(near.filter((n) => n.kind === kind));
    return { game: home, spec: pick.spec, kind: pick.kind };
  }
}
