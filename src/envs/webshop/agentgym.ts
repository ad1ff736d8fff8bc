import type { AgentGymSupport } from "../plug-points.ts";
import { loadCatalogue } from "./catalogue.ts";
import { webshopTask } from "./webshop-env.ts";

/**
 * WebShop as AgentGym's WebShop server (`agentenv-webshop`, as `WebshopEnvClient` calls it) serves it:
 * a reset's `session_id` is the goal index in the reference's shuffled goal list, which our catalogue
 * keeps (`webshop:<index>`), over every split; its instruction text as its pages write it.
 */
export const webshopAgentGym: AgentGymSupport = {
  task(k, host) {
    const catalogue = loadCatalogue({ dataDir: host.dataDir });
    if (k < 0 || k >= catalogue.goalCount) throw new RangeError(`session_id ${k} is out of range: WebShop has goals 0..${catalogue.goalCount - 1}`);
    const own = host.indexOf(`webshop:${k}`);
    return own === undefined ? webshopTask(catalogue, k) : host.tasks[own];
  },
  instructionText(v) {
    // WebShop's search page writes "Instruction: <br>", its other pages "Instruction:<br>".
    const searchPage = v.info.page === undefined ? v.observation.startsWith("WebShop [SEP]") : v.info.page === "search";
    return `Instruction:${searchPage ? " " : ""}${v.task.instruction}`;
  },
};
