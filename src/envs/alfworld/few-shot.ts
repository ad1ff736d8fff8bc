import { existsSync, readdirSync } from "node:fs";
import { basename, join } from "node:path";
import { parseTranscript } from "../../buffer/index.ts";
import { DataError, readJsonFile, type Trajectory } from "../../core/index.ts";

/** ALFWorld's ReAct prompts in a data folder (`alfworld/few_shot/*.json`), parsed into trajectories, by file. */
export function alfworldFewShot(dataDir: string): { file: string; trajectories: Trajectory[] }[] {
  const out: { file: string; trajectories: Trajectory[] }[] = [];
  const dir = join(dataDir, "alfworld", "few_shot");
  if (!existsSync(dir)) return out;
  for (const f of readdirSync(dir)
    .filter((x) => x.endsWith(".json"))
    .sort()) {
    const file = join(dir, f);
    const dict = readJsonFile<Record<string, unknown>>(file);
    if (typeof dict !== "object" || dict === null || Array.isArray(dict)) throw new DataError("expected an object of transcripts", { file });
    const trajectories: Trajectory[] = [];
    for (const [key, value] of Object.entries(dict)) {
      if (typeof value !== "string") throw new DataError(`transcript "${key}" is not a string`, { file });
      const policy = key.startsWith("react_") ? "react-fewshot" : key.startsWith("act_") ? "act-fewshot" : "fewshot";
      trajectories.push(parseTranscript(value, { env: "alfworld", id: `alfworld-fewshot:${basename(f, ".json")}:${key}`, policy }));
    }
    out.push({ file, trajectories });
  }
  return out;
}
