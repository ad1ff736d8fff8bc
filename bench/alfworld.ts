import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { AlfWorldEnv, Game } from "../src/envs/alfworld/index.ts";
import { quantile } from "./stats.ts";

type Report = (name: string, value: string) => void;

/** ALFWorld: game load, steps/s of one env, memory of 64 envs. */
export async function benchAlfworld(report: Report): Promise<void> {
  const env = new AlfWorldEnv({ split: "valid_seen" });
  const tasks = env.tasks();
  // Load (parse PDDL + grammar, names) of every game, cold in this process.
  const loads: number[] = [];
  for (const t of tasks) {
    const t0 = performance.now();
    Game.load(env.root, t.game);
    loads.push(performance.now() - t0);
  }
  report("alfworld: load a game p50 / p99", `${quantile(loads, 0.5).toFixed(2)} / ${quantile(loads, 0.99).toFixed(2)} ms (140 games)`);
  for (const t of tasks) await env.reset({ task: t }); // games cached for the stepping figure
  // Steps: a fixed walk over the listed commands (goes, opens, takes, looks), across games.
  let steps = 0;
  let i = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < 3000) {
    await env.reset({ task: tasks[i++ % tasks.length] });
    for (let k = 0; k < 50; k++) {
      const listed = env.availableActions();
      const r = await env.step(listed[(k * 7) % listed.length]);
      steps++;
      if (r.terminated || r.truncated) break;
    }
  }
  report("alfworld: steps/s, one env (admissible commands after each)", `${(steps / ((performance.now() - t0) / 1000)).toFixed(0)}`);
  const memory = (n: number) =>
    JSON.parse(
      execFileSync(process.execPath, ["--expose-gc", "--import", "tsx", join(import.meta.dirname, "alfworld-memory.ts"), String(n)], { encoding: "utf8" }),
    ) as { rssDeltaMB: number; heapDeltaMB: number };
  const one = memory(1);
  const many = memory(64);
  report("alfworld: memory, 1 env (RSS / heap, delta)", `${one.rssDeltaMB.toFixed(1)} MB / ${one.heapDeltaMB.toFixed(1)} MB`);
  report("alfworld: memory, 64 envs in 64 games (RSS / heap, delta)", `${many.rssDeltaMB.toFixed(1)} MB / ${many.heapDeltaMB.toFixed(1)} MB`);
}
