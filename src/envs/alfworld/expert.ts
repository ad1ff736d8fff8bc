import { ScriptedPolicy, type PolicyInput } from "../../core/index.ts";
import type { AlfWorldEnv } from "./alfworld-env.ts";
import type { FactBase } from "./facts.ts";
import type { Game } from "./game.ts";

/**
 * An expert that plans from the game state (it knows where everything is), for the six ALFWorld task
 * types: find an object of the target type (opening what holds it), take it, clean/heat/cool it at
 * the sink basin / microwave / fridge, or carry it to a lit desk lamp, and put it in/on a receptacle
 * of the target type (twice for "put two"). Each step re-plans from the state and only ever sends
 * an admissible command.
 */
export class AlfWorldExpert extends ScriptedPolicy {
  readonly name = "expert";
  constructor(private readonly env: AlfWorldEnv) {
    super();
  }

  choose({ actions }: PolicyInput): string {
    const cur = this.env.current;
    if (!cur) throw new Error("expert: the env has no running episode");
    const listed = new Set(actions ?? []);
    const plan = nextCommand(cur.game, cur.state, cur.task.task_type, cur.task.params, listed);
    if (plan && listed.has(plan)) return plan;
    // Should not happen; a listed command keeps the episode going.
    return listed.has("look") ? "look" : [...listed][0];
  }
}

const typeOf = (name: unknown) => `${String(name).toLowerCase()}type`;

function nextCommand(game: Game, s: FactBase, taskType: string, params: Record<string, string | boolean>, listed: ReadonlySet<string>): string | undefined {
  const name = (id: string) => game.names.get(id) ?? id;
  const agent = s.tuples("atlocation")[0];
  const [a, here] = agent;
  const held = s.tuplesWith("holds", 0, a).map((t) => t[1]);
  const objectsOf = (type: string) =>
    s
      .tuples("objecttype")
      .filter((t) => t[1] === type)
      .map((t) => t[0]);
  const receptaclesOf = (type: string) =>
    s
      .tuples("receptacletype")
      .filter((t) => t[1] === type)
      .map((t) => t[0]);
  const locationOf = (r: string) => s.tuplesWith("receptacleatlocation", 0, r)[0]?.[1];
  const isOpenable = (r: string) => s.has(`openable ${r}`);
  const isOpen = (r: string) => s.has(`opened ${r}`);

  /** Go to r, open it if it is closed, then `then`. */
  const at = (r: string, then: string): string => {
    if (locationOf(r) !== here) return `go to ${name(r)}`;
    if (isOpenable(r) && !isOpen(r)) return `open ${name(r)}`;
    return then;
  };

  const targetType = typeOf(params.object_target);
  const parentType = typeOf(params.parent_target);
  const isTarget = (o: string) => s.has(`objecttype ${o} ${targetType}`);
  const fits = (r: string) => {
    const rt = s.tuplesWith("receptacletype", 0, r)[0]?.[1];
    return rt !== undefined && s.has(`cancontain ${rt} ${targetType}`);
  };
  // Where the object(s) go. "Put two": both into one receptacle — the one already holding the most.
  const targetsIn = (r: string) => s.tuplesWith("inreceptacle", 1, r).filter(([o]) => isTarget(o)).length;
  const destinations = receptaclesOf(parentType).filter(fits);
  const destination =
    taskType === "pick_two_obj_and_place"
      ? destinations.reduce<string | undefined>((best, r) => (best === undefined || targetsIn(r) > targetsIn(best) ? r : best), undefined)
      : undefined;
  const placedIn = (o: string) => destination !== undefined && targetsIn(destination) > 0 && s.has(`inreceptacle ${o} ${destination}`);
  const treated = (o: string) =>
    taskType === "pick_clean_then_place_in_recep"
      ? s.has(`isclean ${o}`)
      : taskType === "pick_heat_then_place_in_recep"
        ? s.has(`ishot ${o}`)
        : taskType === "pick_cool_then_place_in_recep"
          ? s.has(`iscool ${o}`)
          : true;

  // Holding something: treat it, light it, or put it where it belongs.
  const carried = held[0];
  if (carried !== undefined) {
    if (!isTarget(carried)) {
      // Not ours: put it down here if anything takes it, else carry it back where it came from.
      const here = [...listed].find((c) => c.startsWith(`put ${name(carried)} in/on `));
      if (here) return here;
      const from = s.tuples("not_inreceptacle").find(([o]) => o === carried)?.[1];
      return from ? at(from, `put ${name(carried)} in/on ${name(from)}`) : undefined;
    }
    if (taskType === "look_at_obj_in_light") {
      const lamp = objectsOf(typeOf(params.toggle_target)).find((l) => s.tuplesWith("inreceptacle", 0, l).length > 0);
      if (!lamp) return undefined;
      const r = s.tuplesWith("inreceptacle", 0, lamp)[0][1];
      return locationOf(r) !== here ? `go to ${name(r)}` : `use ${name(lamp)}`;
    }
    if (!treated(carried)) {
      const appliance = {
        pick_clean_then_place_in_recep: "sinkbasintype",
        pick_heat_then_place_in_recep: "microwavetype",
        pick_cool_then_place_in_recep: "fridgetype",
      }[taskType]!;
      const verb = { pick_clean_then_place_in_recep: "clean", pick_heat_then_place_in_recep: "heat", pick_cool_then_place_in_recep: "cool" }[taskType]!;
      const r = receptaclesOf(appliance)[0];
      if (!r) return undefined;
      return locationOf(r) !== here ? `go to ${name(r)}` : `${verb} ${name(carried)} with ${name(r)}`;
    }
    // A receptacle of the target type that can take the object (the shared one for "put two").
    const r =
      (destination !== undefined && targetsIn(destination) > 0 ? destination : undefined) ??
      destinations.find((x) => locationOf(x) === here) ??
      destinations[0] ??
      receptaclesOf(parentType)[0];
    if (!r) return undefined;
    return at(r, `put ${name(carried)} in/on ${name(r)}`);
  }

  // Empty-handed: fetch an object of the target type (for "put two", one not already placed).
  const needed = objectsOf(targetType).filter((o) => !(taskType === "pick_two_obj_and_place" && placedIn(o)));
  const reachable = needed.flatMap((o) => s.tuplesWith("inreceptacle", 0, o).map(([, r]) => ({ o, r }))).filter(({ o }) => s.has(`pickupable ${o}`));
  if (reachable.length === 0) return undefined;
  // Nearest first: one here, else the first in name order.
  const pick = reachable.find(({ r }) => locationOf(r) === here) ?? reachable[0];
  return at(pick.r, `take ${name(pick.o)} from ${name(pick.r)}`);
}
