import type { Formula } from "./pddl.ts";

/**
 * ALFWorld task variants: a task type with its targets (ALFRED's `pddl_params`) played on a game's
 * scene in place of the game's own goal. The goal is ALFWorld's PDDL goal template for the task type
 * (the same formulas the games carry), the instruction its task sentence.
 */
export interface TaskSpec {
  taskType: string;
  /** ALFRED's object type, e.g. "Mug". */
  object: string;
  /** The receptacle type it goes in/on ("" for look_at_obj_in_light). */
  parent: string;
  /** The lamp type of look_at_obj_in_light ("" otherwise). */
  toggle: string;
}

const atom = (pred: string, ...args: string[]): Formula => ({ kind: "atom", pred, args });
const ex = (vars: [string, string][], body: Formula): Formula => ({ kind: "exists", vars: vars.map(([name, type]) => ({ name, type })), body });
const and = (...args: Formula[]): Formula => ({ kind: "and", args });
const typ = (t: string) => `${t.toLowerCase()}type`;

/** The PDDL goal of a task type with its targets, as ALFWorld's games state it (predicates lower-cased, as the parser keeps them). */
export function specGoal(spec: TaskSpec): Formula {
  const o = typ(spec.object);
  const r = typ(spec.parent);
  switch (spec.taskType) {
    case "pick_and_place_simple":
      return and(
        ex([["?r", "receptacle"]], ex([["?o", "object"]], and(atom("inreceptacle", "?o", "?r"), atom("objecttype", "?o", o), atom("receptacletype", "?r", r)))),
      );
    case "pick_clean_then_place_in_recep":
    case "pick_heat_then_place_in_recep":
    case "pick_cool_then_place_in_recep": {
      const [able, is] = {
        pick_clean_then_place_in_recep: ["cleanable", "isclean"],
        pick_heat_then_place_in_recep: ["heatable", "ishot"],
        pick_cool_then_place_in_recep: ["coolable", "iscool"],
      }[spec.taskType]!;
      return and(
        ex(
          [["?r", "receptacle"]],
          ex(
            [["?o", "object"]],
            and(atom(able, "?o"), atom("objecttype", "?o", o), atom("receptacletype", "?r", r), atom(is, "?o"), atom("inreceptacle", "?o", "?r")),
          ),
        ),
      );
    }
    case "pick_two_obj_and_place":
      return and(
        ex(
          [["?r", "receptacle"]],
          ex(
            [["?o1", "object"]],
            and(
              atom("objecttype", "?o1", o),
              atom("receptacletype", "?r", r),
              atom("inreceptacle", "?o1", "?r"),
              ex(
                [["?o2", "object"]],
                and(
                  { kind: "not", arg: { kind: "eq", a: "?o1", b: "?o2" } },
                  atom("objecttype", "?o2", o),
                  atom("receptacletype", "?r", r),
                  atom("inreceptacle", "?o2", "?r"),
                ),
              ),
            ),
          ),
        ),
      );
    case "look_at_obj_in_light":
      return and(
        ex(
          [
            ["?ot", "object"],
            ["?r", "receptacle"],
            ["?a", "agent"],
            ["?l", "location"],
          ],
          and(
            atom("objecttype", "?ot", typ(spec.toggle)),
            atom("toggleable", "?ot"),
            atom("istoggled", "?ot"),
            atom("receptacleatlocation", "?r", "?l"),
            atom("atlocation", "?a", "?l"),
            atom("inreceptacle", "?ot", "?r"),
          ),
        ),
        ex(
          [
            ["?o", "object"],
            ["?a", "agent"],
          ],
          and(atom("objecttype", "?o", o), atom("holds", "?a", "?o")),
        ),
      );
    default:
      throw new Error(`unknown ALFWorld task type ${spec.taskType}`);
  }
}

/** The task sentence of a spec, in ALFWorld's wording ("put a clean mug in coffeemachine"). */
export function specInstruction(spec: TaskSpec): string {
  const o = spec.object.toLowerCase();
  const r = spec.parent.toLowerCase();
  switch (spec.taskType) {
    case "pick_and_place_simple":
      return `put some ${o} on ${r}`;
    case "pick_clean_then_place_in_recep":
      return `put a clean ${o} in ${r}`;
    case "pick_heat_then_place_in_recep":
      return `heat some ${o} and put it in ${r}`;
    case "pick_cool_then_place_in_recep":
      return `cool some ${o} and put it in ${r}`;
    case "pick_two_obj_and_place":
      return `put two ${o} in ${r}`;
    case "look_at_obj_in_light":
      return `look at ${o} under the ${spec.toggle.toLowerCase()}`;
    default:
      throw new Error(`unknown ALFWorld task type ${spec.taskType}`);
  }
}

/** A spec's ALFRED parameters (as the index and the expert read them). */
export function specParams(spec: TaskSpec): Record<string, string | boolean> {
  return { mrecep_target: "", object_sliced: false, object_target: spec.object, parent_target: spec.parent, toggle_target: spec.toggle };
}

/** The spec of a task's type and parameters. */
export function taskSpec(taskType: string, params: Record<string, string | boolean>): TaskSpec {
  const s = (k: string) => (typeof params[k] === "string" ? (params[k] as string) : "");
  return {
    taskType,
    object: s("object_target"),
    parent: taskType === "look_at_obj_in_light" ? "" : s("parent_target"),
    toggle: taskType === "look_at_obj_in_light" ? s("toggle_target") : "",
  };
}

/** A spec as one lower-case key (types only). */
export const specKey = (s: TaskSpec) => `${s.taskType}|${s.object}|${s.parent}|${s.toggle}`.toLowerCase();

/** The scene (ALFRED floor plan) of a game path: `…/<type>-<Obj>-<Mrecep>-<Parent>-<scene>/trial_…`. */
export function sceneOf(game: string): string {
  const dir = game.split("/").find((p) => /-\d+$/.test(p) && p.includes("-"));
  return dir ? dir.slice(dir.lastIndexOf("-") + 1) : game;
}
