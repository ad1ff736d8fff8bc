import type { Task } from "../../core/index.ts";
import { resolveDataDir } from "../data-dir.ts";
import type { AgentGymSupport } from "../plug-points.ts";
import { parseAlfState } from "./abstraction.ts";
import { AGENTGYM_ALFWORLD_FIRST, AGENTGYM_ALFWORLD_GAMES, AGENTGYM_ALFWORLD_VALID_TRAIN } from "./agentgym-games.ts";
import { alfworldTask } from "./alfworld-env.ts";
import { alfworldGames } from "./game.ts";

/** The ALFWorld server's text: the first observation without TextWorld's banner paragraph, joined by one newline. */
function withoutBanner(observation: string): string {
  return observation.split("\n\n").slice(1).join("\n");
}

/** The ALFWorld server drops the "You arrive at loc N. " that TextWorld puts before a go-to's feedback. */
function withoutArrival(observation: string): string {
  return observation.startsWith("You arrive at loc ") ? observation.slice(observation.indexOf(". ") + 2) : observation;
}

/**
 * ALFWorld as AgentGym's ALFWorld server (`agentenv-alfworld`, as `AlfWorldEnvClient` calls it) serves
 * it: the id dialect, its game indexes (2420..2619 are the data pack's valid_train split), its task
 * types and its texts. docs/serving-agentgym.md lists where we differ from upstream.
 */
export const alfworldAgentGym: AgentGymSupport = {
  dialect: "id",
  greeting: "This is environment AlfWorld.",
  task(game, host): Task {
    if (game < -AGENTGYM_ALFWORLD_GAMES || game >= AGENTGYM_ALFWORLD_GAMES) {
      throw new RangeError(`game ${game} is out of range: AgentGym's ALFWorld games are 0..${AGENTGYM_ALFWORLD_GAMES - 1}`);
    }
    const k = game < 0 ? game + AGENTGYM_ALFWORLD_GAMES : game; // the upstream list takes Python's negative indexes
    if (k < AGENTGYM_ALFWORLD_FIRST) {
      throw new RangeError(
        `game ${game} is one of ALFWorld's train split (AgentGym's games 0..${AGENTGYM_ALFWORLD_FIRST - 1}), which the data pack does not hold; games ${AGENTGYM_ALFWORLD_FIRST}..${AGENTGYM_ALFWORLD_GAMES - 1} are served`,
      );
    }
    const name = AGENTGYM_ALFWORLD_VALID_TRAIN[k - AGENTGYM_ALFWORLD_FIRST];
    const own = host.indexOf(`alfworld:valid_train/${name}`);
    if (own !== undefined) return host.tasks[own];
    const root = resolveDataDir({ dataDir: host.dataDir, subdir: "alfworld", files: ["index.json", "games"] });
    const path = `games/valid_train/${name}/game.tw-pddl`;
    const entry = alfworldGames(root).find((g) => g.game === path);
    if (!entry) throw new RangeError(`game ${game} (${name}) is not in the ALFWorld data pack at ${root}`);
    return alfworldTask(entry);
  },
  taskType: (task) =>
    String((task as { game?: unknown }).game ?? task.id)
      .split("/")
      .slice(-3, -1)
      .join("/"),
  observation(observation, first) {
    // A synthetic session's abstract state: its observation as the server would show it (the task line after the room at reset).
    const abs = parseAlfState(observation);
    if (abs) return first ? `${abs.observation}\nYour task is to: ${abs.task}.` : abs.observation;
    return first ? withoutBanner(observation) : withoutArrival(observation);
  },
};
