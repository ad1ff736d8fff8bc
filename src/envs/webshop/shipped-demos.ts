import { existsSync, statSync } from "node:fs";
import { join } from "node:path";

/** WebShop's ReAct episodes in a data folder (`webshop/react_trajectories.jsonl`, already trajectory JSONL), where present. */
export function webshopReactFiles(dataDir: string): string[] {
  return [join(dataDir, "webshop", "react_trajectories.jsonl")].filter((f) => existsSync(f) && statSync(f).size > 0);
}
