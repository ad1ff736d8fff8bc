import type { PredictedStep, StateAbstraction, StepInfo } from "../../core/index.ts";

/**
 * ALFWorld's abstract state: the task, where the agent is and what it holds, the observation as
 * AgentGym's ALFWorld server returns it (the opening text without TextWorld's banner and task line,
 * a go-to's feedback without "You arrive at loc N. "), and the admissible commands, one per line:
 *
 *   task: put a clean mug in coffeemachine
 *   at: countertop 1                       ("middle of the room" before the first go-to)
 *   holding: mug 1                         ("nothing")
 *   observation: You pick up the mug 1 from the countertop 1.
 *   actions:
 *   examine countertop 1
 *   examine mug 1
 *   go to cabinet 1
 *   …
 *
 * The real env's step info carries what the text alone does not (`admissible_commands`, `location`,
 * `holding`, `instruction`); the opening text holds all of it (every receptacle is a go-to).
 */
export interface AlfState {
  task: string;
  /** The receptacle of the last go-to; "" in the middle of the room. */
  at: string;
  /** The held object; "" for nothing. */
  holding: string;
  observation: string;
  actions: string[];
}

export const MID_ROOM = "middle of the room";
const NOTHING = "nothing";
const BANNER = "-= Welcome to TextWorld, ALFRED! =-";
const TASK_LINE = /\n*Your task is to: (.*?)\.?\s*$/s;

export function renderAlfState(s: AlfState): string {
  return `task: ${s.task}\nat: ${s.at || MID_ROOM}\nholding: ${s.holding || NOTHING}\nobservation: ${s.observation}\nactions:${s.actions.map((a) => `\n${a}`).join("")}`;
}

/** The parts of an abstract state, or undefined when the text is not one. */
export function parseAlfState(text: string): AlfState | undefined {
  if (!text.startsWith("task: ")) return undefined;
  const lines = text.split("\n");
  if (lines.length < 5 || !lines[1].startsWith("at: ") || !lines[2].startsWith("holding: ") || !lines[3].startsWith("observation: ") || lines[4] !== "actions:")
    return undefined;
  const at = lines[1].slice(4);
  const holding = lines[2].slice(9);
  return {
    task: lines[0].slice(6),
    at: at === MID_ROOM ? "" : at,
    holding: holding === NOTHING ? "" : holding,
    observation: lines[3].slice(13),
    actions: lines.slice(5).filter((l) => l !== ""),
  };
}

/** The receptacles an opening text lists ("… you see a bed 1, a desk 2, and a drawer 1."), in its order. */
export function listedEntities(list: string): string[] {
  return [...list.matchAll(/(?:^|, )(?:and )?a ([a-z]+ \d+)/g)].map((m) => m[1]);
}

/** The feedback as AgentGym's ALFWorld server shows it: no "You arrive at loc N. " prefix. */
export function agentgymFeedback(observation: string): string {
  return observation.startsWith("You arrive at loc ") ? observation.slice(observation.indexOf(". ") + 2) : observation;
}

const sortCommands = (xs: string[]) => [...new Set(xs)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

/** The abstract state of a game's opening text: mid-room, empty-handed, a go-to for every receptacle. */
export function introState(intro: string): AlfState | undefined {
  if (!intro.startsWith(BANNER)) return undefined;
  const body = intro.slice(BANNER.length).trim();
  const task = TASK_LINE.exec(body)?.[1] ?? "";
  const look = body.replace(TASK_LINE, "").trim();
  const list = /you see (.*)\.$/s.exec(look)?.[1] ?? "";
  const receptacles = listedEntities(list);
  return { task, at: "", holding: "", observation: look, actions: sortCommands([...receptacles.map((r) => `go to ${r}`), "inventory", "look"]) };
}

/** The abstract state of a real observation, with the real env's step info. */
export function alfworldAbstract(observation: string, info?: StepInfo): string {
  if (parseAlfState(observation)) return observation; // already abstract
  const intro = introState(observation);
  if (intro) return renderAlfState(intro);
  const i = (info ?? {}) as { admissible_commands?: unknown; location?: unknown; holding?: unknown; instruction?: unknown };
  return renderAlfState({
    task: typeof i.instruction === "string" ? i.instruction : "",
    at: typeof i.location === "string" ? i.location : "",
    holding: typeof i.holding === "string" ? i.holding : "",
    observation: agentgymFeedback(observation),
    actions: Array.isArray(i.admissible_commands) ? i.admissible_commands.map(String) : [],
  });
}

const PROFILE = `ALFWorld, a household in text. A state is five headed lines and the admissible commands: "task: put a clean mug in coffeemachine", "at: <the receptacle the agent went to last>" ("middle of the room" at the start), "holding: <object>" or "nothing", "observation: <the feedback of the last command>" (the first state describes the room: "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, …"), then "actions:" and one admissible command per line.
Commands: go to <receptacle>, open/close <receptacle>, take <object> from <receptacle>, put <object> in/on <receptacle>, clean/heat/cool <object> with <sinkbasin/microwave/fridge>, use <lamp>, examine <thing>, look, inventory. Only the listed commands can be done. The reward is 1 when the task is done (which ends the episode), else 0.`;

const REWARD_RULE = `Rewards and ends: the reward is 1 on the step that completes the task, and that step ends the episode (terminated true); every other step has reward 0 and terminated false (an episode never ends without the task done; the step cap is not yours to judge). A command that does nothing answers "Nothing happens." and changes nothing else. The task line never changes; "at" changes only with a go to; "holding" changes with take and put; the commands listed are those admissible in the new state.`;

/** One admissible command of ALFWorld's grammar (entities are a name and a number: "mug 1"). */
const COMMAND =
  /^(?:look|inventory|(?:go to|open|close|examine|use) [a-z]+ \d+|take [a-z]+ \d+ from [a-z]+ \d+|put [a-z]+ \d+ in\/on [a-z]+ \d+|(?:clean|heat|cool|slice) [a-z]+ \d+ with [a-z]+ \d+)$/;

/**
 * A predicted ALFWorld step held to the game's rules. Repaired where the intent is clear: the task
 * line is the episode's (it never changes), commands lose list markers and repeats, and a reward of 1
 * ends the episode. Refused: a state that lists no command of ALFWorld's grammar, a reward other than
 * 0 or 1, and an end without the task done.
 */
export function checkAlfStep(step: PredictedStep, state: string): PredictedStep | { error: string } {
  const next = parseAlfState(step.nextState);
  if (!next) return { error: "next_state is not an ALFWorld state (task, at, holding, observation lines, then actions:)" };
  const actions = [
    ...new Set(
      next.actions.map((a) =>
        a
          .trim()
          .replace(/^(?:[-*•]|\d+[.)])\s+/, "")
          .replace(/\s+/g, " "),
      ),
    ),
  ];
  const bad = actions.filter((a) => !COMMAND.test(a));
  if (bad.length > 0)
    return {
      error: `next_state lists ${bad.length === 1 ? "a command" : "commands"} ALFWorld does not have: ${bad
        .slice(0, 3)
        .map((a) => JSON.stringify(a))
        .join(", ")} (one admissible command a line, e.g. "go to cabinet 1", "take mug 1 from countertop 1")`,
    };
  if (actions.length === 0) return { error: 'next_state lists no admissible commands (after "actions:", one command a line)' };
  if (step.reward !== 0 && step.reward !== 1) return { error: `reward ${step.reward}: in ALFWorld a step's reward is 1 (the task is done) or 0` };
  if (step.terminated && step.reward === 0) return { error: "terminated with reward 0: in ALFWorld an episode ends only when its task is done (reward 1)" };
  const task = parseAlfState(state)?.task ?? next.task;
  return { nextState: renderAlfState({ ...next, task, actions }), reward: step.reward, terminated: step.reward === 1 };
}

/** An ALFWorld state in one line for a prompt's history: where, what is held, and the feedback. */
function summarizeAlfState(state: string): string {
  const s = parseAlfState(state);
  return s ? `[at ${s.at || MID_ROOM}, holding ${s.holding || NOTHING}] ${s.observation}` : state.split("\n")[0];
}

/** ALFWorld's state abstraction (see {@link AlfState}). */
export const alfworldAbstraction: StateAbstraction = {
  env: "alfworld",
  abstract: alfworldAbstract,
  actions: (state) => parseAlfState(state)?.actions,
  isState: (state) => parseAlfState(state) !== undefined,
  isTerminal: () => false,
  profile: PROFILE,
  rewardRule: REWARD_RULE,
  summarize: summarizeAlfState,
  checkStep: checkAlfStep,
};
