import { bucket, FeatureBuilder, type FeaturizedStep, type PolicyFeatures, type PolicyInput } from "../../core/index.ts";

/**
 * Features for ALFWorld's abstract states (issue 16, part 5), where the generic page-and-item features
 * do not fit: a command is read as a verb and the entity types it names ("take mug 2 from cabinet 1"
 * → take, mug, cabinet), and scored against the task's goal, parsed from its sentence: the object
 * type, the receptacle type (or lamp), the treatment (clean/heat/cool at sink basin / microwave /
 * fridge). The task's step — find (the object is not in sight), take (it is), transform (held, not
 * yet treated), place (held and ready; "use" for the lamp), or clear (holding something else) — comes
 * from what the agent holds, what is in sight (the observation and the listed take commands) and the
 * commands done so far. Each feature is conjoined with the step and the verb, so the same weights
 * serve every scene and object name. Only states in ALFWorld's abstract format come here (ALFWorld's
 * plug point `EnvSpec.features`); other states keep the generic features.
 */
export interface AlfGoal {
  kind: "simple" | "clean" | "heat" | "cool" | "two" | "look";
  object: string;
  /** Receptacle type, or the lamp type for "look". */
  target: string;
}

const APPLIANCE: Record<string, string> = { clean: "sinkbasin", heat: "microwave", cool: "fridge" };
const TREAT_VERB: Record<string, string> = { clean: "clean", heat: "heat", cool: "cool" };

/** The goal of an ALFWorld task sentence (its several phrasings), or undefined. */
export function alfGoal(task: string): AlfGoal | undefined {
  const t = task.toLowerCase().replace(/\.$/, "").trim();
  let m = /(?:look at|examine) (?:the |a |some )?(\w+) (?:under|with|using) (?:the |a )?(\w+)/.exec(t);
  if (m) return { kind: "look", object: m[1], target: m[2] };
  m =
    /(?:find )?two (\w+) and put them (?:in|on|into|onto|in\/on) (?:the |a )?(\w+)/.exec(t) ??
    /put two (\w+) (?:in|on|into|onto|in\/on) (?:the |a )?(\w+)/.exec(t);
  if (m) return { kind: "two", object: m[1], target: m[2] };
  m = /(clean|heat|cool) (?:a |an |some |the )?(\w+) and put it (?:in|on|into|onto|in\/on) (?:the |a )?(\w+)/.exec(t);
  if (m) return { kind: m[1] as "clean", object: m[2], target: m[3] };
  m = /put (?:a |an |some |the )?(clean|hot|cool|cold) (\w+) (?:in|on|into|onto|in\/on) (?:the |a )?(\w+)/.exec(t);
  if (m) return { kind: m[1] === "clean" ? "clean" : m[1] === "hot" ? "heat" : "cool", object: m[2], target: m[3] };
  m = /put (?:a |an |some |the )?(\w+) (?:in|on|into|onto|in\/on) (?:the |a )?(\w+)/.exec(t);
  if (m) return { kind: "simple", object: m[1], target: m[2] };
  return undefined;
}

interface AlfView {
  task: string;
  holding: string;
  observation: string;
  actions: string[];
}

/** The parts of an ALFWorld abstract state (see src/envs/alfworld/abstraction.ts), or undefined. */
export function alfView(text: string): AlfView | undefined {
  if (!text.startsWith("task: ")) return undefined;
  const lines = text.split("\n");
  if (lines.length < 5 || !lines[1].startsWith("at: ") || !lines[2].startsWith("holding: ") || !lines[3].startsWith("observation: ") || lines[4] !== "actions:")
    return undefined;
  const holding = lines[2].slice(9);
  return { task: lines[0].slice(6), holding: holding === "nothing" ? "" : holding, observation: lines[3].slice(13), actions: lines.slice(5).filter(Boolean) };
}

/** Entity types a command names, in order ("take mug 2 from cabinet 1" → ["mug", "cabinet"]). */
const entityTypes = (s: string) => [...s.matchAll(/([a-z]+) \d+/g)].map((m) => m[1]);
const verbOf = (command: string) => command.split(" ")[0];

export type AlfStep = "find" | "take" | "transform" | "place" | "clear";

/** The step of the task and what it rests on. */
export function alfStep(
  goal: AlfGoal | undefined,
  view: AlfView,
  history: readonly string[],
): { step: AlfStep; treated: boolean; placed: number; inSight: boolean } {
  const heldType = entityTypes(view.holding)[0];
  const obj = goal?.object;
  const treatVerb = goal ? TREAT_VERB[goal.kind] : undefined;
  const treated = treatVerb !== undefined && view.holding !== "" && history.some((a) => a.startsWith(`${treatVerb} ${view.holding} with `));
  const placed = obj ? history.filter((a) => a.startsWith(`put ${obj} `)).length : 0;
  const inSight = obj !== undefined && (view.actions.some((a) => a.startsWith(`take ${obj} `)) || new RegExp(`\\b${obj} \\d+`).test(view.observation));
  let step: AlfStep;
  if (heldType !== undefined && heldType !== obj) step = "clear";
  else if (heldType !== undefined) step = treatVerb !== undefined && !treated ? "transform" : "place";
  else step = inSight ? "take" : "find";
  return { step, treated, placed, inSight };
}

export function featurizeAlfworld(input: PolicyInput, view: AlfView, dim: number): FeaturizedStep {
  const goal = alfGoal(input.task.instruction || view.task) ?? alfGoal(view.task);
  const kind = goal?.kind ?? "unknown";
  const { step, placed } = alfStep(goal, view, input.history);
  const actions = [...new Set(input.actions ?? view.actions)];
  const steps = input.history.length;
  const taken = new Map<string, number>();
  for (const a of input.history) taken.set(a, (taken.get(a) ?? 0) + 1);
  const prevVerb = input.history.length > 0 ? verbOf(input.history[input.history.length - 1]) : "none";
  const lastGoTo = [...input.history].reverse().find((a) => a.startsWith("go to "));
  const visitedTypes = new Set(input.history.filter((a) => a.startsWith("go to ")).map((a) => entityTypes(a)[0]));
  const appliance = goal ? APPLIANCE[goal.kind] : undefined;
  const closedHere = actions.some((a) => a.startsWith("open "));
  const s = `${kind}|${step}`;

  const candidates = actions.map((a) => {
    const b = new FeatureBuilder(dim);
    const verb = verbOf(a);
    const types = entityTypes(a);
    const k = `alf|${s}|${verb}`;
    b.add(`${k}|bias`);
    b.add(`alf|${step}|${verb}`);
    b.add(`alf|prev|${prevVerb}|${verb}`);
    const namesObject = goal !== undefined && types[0] === goal.object;
    const namesTarget = goal !== undefined && types.includes(goal.target);
    const namesAppliance = appliance !== undefined && types.includes(appliance);
    // Does the command name the goal object, the goal receptacle (or lamp) type, the appliance?
    b.add(`${k}|object|${namesObject}`);
    b.add(`${k}|target|${namesTarget}`);
    if (appliance) b.add(`${k}|appliance|${namesAppliance}`);
    if (verb === "put" && goal) b.add(`${k}|put-into-target|${types[1] === goal.target}`);
    if (verb === "take" || verb === "put") b.add(`${k}|first-type|${namesObject ? "goal" : "other"}`);
    if (verb === "go") {
      const rt = types[0] ?? "";
      // Where the object tends to be: receptacle type × object type (and × step).
      if (goal) b.add(`alf|where|${goal.object}|${rt}|${step}`);
      b.add(`alf|go|${rt}|${step}`);
      b.add(`${k}|visited-type|${visitedTypes.has(rt)}`);
      b.add(`${k}|went-here|${Math.min(taken.get(a) ?? 0, 2)}`);
      b.add(`${k}|last|${a === lastGoTo}`);
    }
    if (verb === "open") b.add(`${k}|open-target|${namesTarget}`);
    if (verb === "use") b.add(`${k}|use-lamp|${namesTarget}`);
    if (TREAT_VERB[verb]) b.add(`${k}|treat-matches|${goal !== undefined && TREAT_VERB[goal.kind] === verb && namesAppliance}`);
    b.add(`${k}|repeat|${Math.min(taken.get(a) ?? 0, 3)}`);
    b.add(`${k}|closed-here|${closedHere}`);
    if (kind === "two") b.add(`${k}|placed|${Math.min(placed, 2)}`);
    b.add(`${k}|steps|${bucket(steps, [2, 5, 10, 20, 35])}`);
    return b.build();
  });

  const st = new FeatureBuilder(dim);
  st.add(`alf-state|${s}`);
  st.add(`alf-state-steps|${s}|${bucket(steps, [2, 5, 10, 20, 35])}`);
  if (kind === "two") st.add(`alf-state-placed|${Math.min(placed, 2)}`);
  return { actions, candidates, state: st.build() };
}

/** ALFWorld's plug point for the neural policy: these features for its abstract states, none for any other state. */
export const alfworldFeatures: PolicyFeatures = {
  name: "alfworld-features",
  featurize(input, dim) {
    const view = alfView(input.observation);
    return view ? featurizeAlfworld(input, view, dim) : undefined;
  },
};
