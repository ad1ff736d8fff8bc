import { basename } from "node:path";
import type { Command } from "commander";
import { DataError, writeJsonlAtomic } from "../core/index.ts";
import { checkSites, importWebArenaResults, loadWebArenaTasks, type WebArenaSplit } from "../envs/webarena/index.ts";
import { InvalidConfigError } from "../core/index.ts";
import { checkOutputFile } from "./output.ts";
import { cliConsole as console } from "./io.ts";

/** `dreamgym webarena …`: the task files, and WebArena's published traces as trajectory JSONL. */
export function registerWebArena(program: Command): void {
  const wa = program.command("webarena").description("WebArena(-Lite): check the task files; convert WebArena's published traces to trajectories");
  wa.command("tasks")
    .description("load and check a task file (all: 812, lite: 165); print the tasks per site")
    .option("--split <split>", "all | lite", "lite")
    .option("--data <dir>", "data folder")
    .action((o: { split: string; data?: string }) => {
      const tasks = loadWebArenaTasks(o.split, o.data);
      const perSite = new Map<string, number>();
      for (const t of tasks) perSite.set(t.sites.join("+"), (perSite.get(t.sites.join("+")) ?? 0) + 1);
      console.log(`${tasks.length} tasks in webarena split ${o.split}`);
      for (const [s, n] of [...perSite].sort((a, b) => b[1] - a[1])) console.log(`  ${s}: ${n}`);
    });
  wa.command("import-traces")
    .description("convert a WebArena result folder (render_<id>.html + merged_log.txt) to trajectory JSONL; then: dreamgym buffer import FILE --buffer B.db")
    .argument("<folder>", "the result folder")
    .requiredOption("--out <file>", "trajectory JSONL to write")
    .option("--split <split>", "the task file the traces ran on: all | lite", "all")
    .option("--sites <json>", "the traced deployment's URLs, e.g. '{\"shopping\":\"http://host:7770\"}' (default: recognised by WebArena's ports)")
    .option("--policy <name>", "the trajectories' policy label", "webarena-trace")
    .option("--data <dir>", "data folder")
    .action((folder: string, o: { out: string; split: string; sites?: string; policy: string; data?: string }) => {
      if (o.split !== "all" && o.split !== "lite") throw new InvalidConfigError(`--split must be all or lite, got "${o.split}"`);
      let sites;
      if (o.sites !== undefined) {
        try {
          sites = checkSites(JSON.parse(o.sites));
        } catch (e) {
          throw e instanceof SyntaxError ? new InvalidConfigError(`--sites is not JSON: ${e.message}`) : e;
        }
      }
      checkOutputFile(o.out, "--out");
      const r = importWebArenaResults(folder, { split: o.split as WebArenaSplit, sites, policy: o.policy, dataDir: o.data });
      // Traces that are all skipped would leave an empty --out: said as the input error it is, nothing written.
      if (r.trajectories.length === 0) {
        const [first] = r.skipped;
        throw new DataError(
          `${r.skipped.length === 1 ? "its one trace cannot" : `none of its ${r.skipped.length} traces can`} be imported (${basename(first.file)}: ${first.reason}${r.skipped.length > 1 ? "; …" : ""})`,
          { file: folder },
        );
      }
      writeJsonlAtomic(o.out, (out) => r.trajectories.forEach((t) => out.write(t)));
      const passed = r.trajectories.filter((t) => t.success).length;
      console.log(`${r.trajectories.length} trajectories (${passed} passed), ${r.trajectories.reduce((s, t) => s + t.steps.length, 0)} steps → ${o.out}`);
      for (const s of r.skipped) console.log(`skipped ${s.file}: ${s.reason}`);
    });
}
