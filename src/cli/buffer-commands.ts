import type { Command } from "commander";
import { createReadStream, existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { createEmbedder, exportJsonl, importJsonl, refuseBufferFolder, ReplayBuffer, type SearchFilter } from "../buffer/index.ts";
import { DataError, InvalidConfigError, type ExperienceSource, type StateAbstraction, type StepInfo, type Trajectory } from "../core/index.ts";
import { createEnv, findEnv, hasSyntheticSupport, resolveDataDir, shippedDemos, syntheticSupport, trajectoryRules, unknownEnvError } from "../envs/index.ts";
import { abstractTrajectory } from "../experience/index.ts";
import { parseSeconds } from "./endpoint-options.ts";
import { parseIntOption } from "./episodes.ts";
import { inFile, safeText } from "./errors.ts";
import { checkOutputFile, isTextFile, printable } from "./output.ts";
import { progressBar } from "./progress.ts";
import { cliConsole as console } from "./io.ts";

/**
 * Abstracts each trajectory with its env's state abstraction. An env without one is an error (its
 * trajectories would be stored raw, where synthetic envs cannot read them). The envs it opens to
 * read their abstractions are closed at once.
 */
function abstractionTransform(data?: string): (t: Trajectory) => Trajectory {
  const cache = new Map<string, StateAbstraction>();
  return (t) => {
    let a = cache.get(t.env);
    if (!a) {
      if (!hasSyntheticSupport(t.env))
        throw new InvalidConfigError(`--abstract: ${t.env} has no state abstraction (its env spec has no synthetic(env)); import without --abstract`);
      const env = createEnv(t.env, { dataDir: data });
      try {
        a = syntheticSupport(t.env, env).abstraction;
      } finally {
        void env.close();
      }
      cache.set(t.env, (a = rememberingAbstraction(a)));
    }
    return abstractTrajectory(t, a);
  };
}

/**
 * An abstraction whose `abstract` remembers its last few thousand answers: an import's pages recur
 * (a task's search page, the pages an episode goes back to; half of a WebShop file's pages are seen
 * before). Abstractions are functions of the observation and its info, which come from JSON here.
 */
function rememberingAbstraction(a: StateAbstraction): StateAbstraction {
  let seen = new Map<string, Map<string, string>>(); // page → its info as JSON → abstract state
  const abstract = (observation: string, info?: StepInfo): string => {
    const key = info === undefined ? "" : JSON.stringify(info);
    let byInfo = seen.get(observation);
    let state = byInfo?.get(key);
    if (state === undefined) {
      state = a.abstract(observation, info);
      if (!byInfo) {
        if (seen.size >= 4096) seen = new Map();
        seen.set(observation, (byInfo = new Map()));
      }
      byInfo.set(key, state);
    }
    return state;
  };
  return Object.assign(Object.create(a) as StateAbstraction, { abstract });
}

function openBuffer(o: { buffer: string; embedder?: string; capacity?: number; requestTimeout?: number }, readonly = false): Promise<ReplayBuffer> {
  refuseBufferFolder(o.buffer);
  if (!readonly) checkOutputFile(o.buffer, "--buffer");
  return inFile(o.buffer, () =>
    ReplayBuffer.open(o.buffer, {
      embedder: o.embedder ? createEmbedder(o.embedder, { timeoutMs: o.requestTimeout === undefined ? undefined : 1000 * o.requestTimeout }) : undefined,
      capacity: o.capacity,
      readonly,
    }),
  );
}

/** Refuses a file to import that is not there, not a file, or not text (its bytes would only come back as errors). */
function checkImportFile(file: string): void {
  if (!existsSync(file)) throw new DataError("no such file to import", { file });
  if (!statSync(file).isFile()) throw new DataError("not a file; give trajectory JSONL files", { file });
  if (!isTextFile(file)) throw new DataError("not a text file (binary bytes); give trajectory JSONL files", { file });
}

/** An embedder endpoint's failure already stops the command (after its client's retries); this bounds each attempt. */
const REQUEST_TIMEOUT = [
  "--request-timeout <seconds>",
  "with an http/openai embedder: how long one HTTP attempt may take (default 30; 4 retries)",
  parseSeconds("request-timeout"),
] as const;

function filterOf(o: { env?: string; source?: string; task?: string }): SearchFilter {
  if (o.source !== undefined && o.source !== "real" && o.source !== "synthetic")
    throw new InvalidConfigError(`--source must be real or synthetic, got "${o.source}"`);
  return { env: o.env, source: o.source as ExperienceSource | undefined, task: o.task };
}

/**
 * Refuses an --env filter that names neither a registered env nor one the buffer holds: a typo would
 * match nothing and exit 0 (an empty export). An env the buffer holds passes unregistered: reading a
 * user's env's trajectories needs no --env-module.
 */
function checkEnvFilter(b: ReplayBuffer, env: string | undefined): void {
  if (env === undefined || findEnv(env) || b.count({ env }) > 0) return;
  const held = [...new Set(b.stats().groups.map((g) => g.env))].filter((e) => !findEnv(e));
  const e = unknownEnvError(env);
  throw held.length > 0 ? new InvalidConfigError(`${e.message}; this buffer also holds ${held.join(", ")}`) : e;
}

/**
 * What the data folder ships for `--few-shot`. Nothing at all is a folder without the envs' data (a
 * wrong --data): refused with the missing-data error the envs give, not imported as nothing into a
 * new, empty buffer.
 */
function fewShotDemos(data?: string): ReturnType<typeof shippedDemos> {
  const root = resolveDataDir({ dataDir: data });
  const shipped = shippedDemos(root);
  if (shipped.jsonl.length > 0 || shipped.parsed.length > 0) return shipped;
  // WebShop's folder, the data pack's first env: the error names it and the file it lacks.
  resolveDataDir({ dataDir: data, subdir: "webshop", files: ["react_trajectories.jsonl"] });
  throw new DataError("--few-shot: the data folder ships no demonstrations for the registered envs", { file: root });
}

/** Lines of a file, counted in chunks (for the progress bar). */
async function countLines(file: string): Promise<number> {
  let n = 0;
  let last = 10;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) n++;
    if (chunk.length > 0) last = chunk[chunk.length - 1];
  }
  return n + (last !== 10 ? 1 : 0);
}

export function registerBufferCommands(program: Command): void {
  const buffer = program.command("buffer").description("the experience replay buffer (SQLite)");

  buffer
    .command("import")
    .description("import trajectory JSONL files (malformed lines are reported and skipped; re-imports do not duplicate)")
    .argument("[files...]", "trajectory JSONL files")
    .requiredOption("--buffer <file>", "buffer file (created if missing)")
    .option("--few-shot", "also import the demonstrations the data folder ships for the registered envs (ALFWorld few-shot, WebShop ReAct episodes)")
    .option("--data <dir>", "data folder (for --few-shot)")
    .option("--online", "mark as online experience, which capacity may evict (default: offline seed, never evicted)")
    .option("--abstract", "store observations as the env's abstract states (what synthetic envs read and write)")
    .option("--embedder <spec>", "hashing[:dims] | http://host/v1#model | openai:model (default: the buffer's, else hashing)")
    .option(...REQUEST_TIMEOUT)
    .option("--capacity <n>", "most transitions to keep", parseIntOption("capacity", 1))
    .action(async (files: string[], o) => {
      if (files.length === 0 && !o.fewShot) throw new InvalidConfigError("give trajectory JSONL files to import, or --few-shot");
      for (const f of files) checkImportFile(f); // before the buffer is created
      const shipped = o.fewShot ? fewShotDemos(o.data) : { jsonl: [], parsed: [] };
      const created = !existsSync(o.buffer);
      const b = await openBuffer(o);
      const seed = !o.online;
      const transform = o.abstract ? abstractionTransform(o.data) : undefined;
      const rules = trajectoryRules();
      let ok = false;
      let said = false; // a file's "added" line is out
      try {
        const started = performance.now();
        let transitions = 0;
        const jsonl = [...files, ...shipped.jsonl];
        for (const file of jsonl) {
          const bar = progressBar(`import ${file}`, await countLines(file));
          const r = await inFile(o.buffer, () => importJsonl(b, file, { seed, transform, rules, onProgress: (line) => bar.update(line) })).finally(() =>
            bar.stop(),
          );
          // A file of which no line is a trajectory is the wrong file, not a file with a few bad lines.
          if (r.added + r.duplicates === 0) {
            const first = r.malformed[0];
            throw new DataError(
              first
                ? `no line is a trajectory (${r.malformed.length} malformed; line ${first.line}: ${safeText(first.message, 160)})`
                : "no trajectories (the file is empty)",
              { file },
            );
          }
          transitions += r.transitions;
          said = true;
          console.log(
            `${file}: ${r.added} trajectories added (${r.transitions} transitions), ${r.duplicates} already present, ${r.malformed.length} malformed lines${r.evicted ? `, ${r.evicted} transitions evicted` : ""}`,
          );
          for (const m of r.malformed.slice(0, 20)) console.log(`  line ${m.line}: ${safeText(m.message)}`);
          if (r.malformed.length > 20) console.log(`  … and ${r.malformed.length - 20} more`);
          if (r.corrected.length > 0) console.log(`${file}: ${r.corrected.length} trajectories imported with a field set right:`);
          for (const m of r.corrected.slice(0, 20)) console.log(`  line ${m.line}: ${safeText(m.message)}`);
          if (r.corrected.length > 20) console.log(`  … and ${r.corrected.length - 20} more`);
        }
        for (const { file, trajectories } of shipped.parsed) {
          const r = await b.appendTrajectories(transform ? trajectories.map(transform) : trajectories, { seed });
          transitions += r.transitions;
          said = true;
          console.log(`${file}: ${r.added} transcripts added (${r.transitions} transitions), ${r.duplicates} already present`);
        }
        await inFile(o.buffer, () => b.buildIndex()); // large buffers: build and save the HNSW index now, not at the first search
        const secs = (performance.now() - started) / 1000;
        console.log(
          `${transitions} transitions in ${secs.toFixed(1)} s (${Math.round(transitions / Math.max(secs, 1e-9))}/s); buffer holds ${b.count()} transitions`,
        );
        ok = true;
      } catch (e) {
        // Files said "added" above: say that the new buffer holding them goes too.
        if (created && said && e instanceof Error) e.message += `; nothing is kept: the new buffer ${o.buffer} is removed (import again once this is fixed)`;
        throw e;
      } finally {
        b.close();
        // A buffer this command created and could not fill goes (a rerun imports again; re-imports do not duplicate).
        if (!ok && created) ReplayBuffer.remove(o.buffer);
      }
    });

  buffer
    .command("export")
    .description("export trajectories as JSONL")
    .requiredOption("--buffer <file>", "buffer file")
    .requiredOption("--out <file>", "output JSONL file")
    .option("--env <name>", "only this env")
    .option("--source <source>", "real | synthetic")
    .action(async (o) => {
      if (resolve(o.out) === resolve(o.buffer)) throw new InvalidConfigError("--out is the buffer file itself; choose another file");
      const f = filterOf(o);
      checkOutputFile(o.out);
      const b = await openBuffer(o, true);
      try {
        await inFile(o.buffer, () => checkEnvFilter(b, f.env));
        const n = await inFile(o.buffer, () => inFile(o.out, () => exportJsonl(b, o.out, { env: f.env, source: f.source }), "fs"));
        console.log(`wrote ${n} trajectories to ${o.out}`);
      } finally {
        b.close();
      }
    });

  buffer
    .command("stats")
    .description("counts by env, source, reward and success")
    .requiredOption("--buffer <file>", "buffer file")
    .option("--json", "print as JSON")
    .action(async (o) => {
      const b = await openBuffer(o, true);
      try {
        // Corrupt pages show only when read: check every page before saying anything about the file.
        const problems = b.integrityProblems();
        if (problems.length > 0) {
          throw new DataError(
            `the buffer is corrupt: the integrity check found ${problems.length === 1 ? "a problem" : `${problems.length}${problems.length >= 100 ? "+" : ""} problems`} (first: ${safeText(problems[0], 160)}); restore it from a copy or rebuild it with buffer import`,
            { file: o.buffer },
          );
        }
        const s = { ...(await inFile(o.buffer, () => b.stats())), integrity: "ok" };
        if (o.json) return console.log(JSON.stringify(s, null, 2));
        console.log(
          `${s.path}: ${s.trajectories} trajectories, ${s.transitions} transitions (${s.seedTrajectories} seed trajectories), ${(s.fileBytes / 2 ** 20).toFixed(1)} MB`,
        );
        console.log(`embedder: ${s.embedder ?? "(none yet)"}${s.dims ? `, ${s.dims} dims` : ""}; search: ${s.index}; integrity check: ok`);
        console.log("env\tsource\ttrajectories\ttransitions\tsuccess\tmean reward\treward=0\t0<reward<1\treward≥1");
        for (const g of s.groups) {
          console.log(
            `${g.env}\t${g.source}\t${g.trajectories}\t${g.transitions}\t${((100 * g.successes) / g.trajectories).toFixed(1)}%\t${g.meanReward.toFixed(3)}\t${g.rewardZero}\t${g.rewardPartial}\t${g.rewardFull}`,
          );
        }
      } finally {
        b.close();
      }
    });

  buffer
    .command("search")
    .description("the k transitions most similar to a state or action text")
    .argument("<text>", "state or action text")
    .requiredOption("--buffer <file>", "buffer file")
    .option("-k <n>", "how many", parseIntOption("k", 1), 5)
    .option("--env <name>", "only this env")
    .option("--source <source>", "real | synthetic")
    .option("--task <id>", "only this task id")
    .option("--exact", "exact search even for large buffers")
    .option("--embedder <spec>", "the buffer's embedder, when it is not the default")
    .option(...REQUEST_TIMEOUT)
    .option("--json", "print as JSON")
    .action(async (text: string, o) => {
      // An empty text embeds to nothing: every transition would score 0, in no order that means anything.
      if (text.trim() === "") throw new InvalidConfigError("buffer search needs a text to search for (a state or an action), not an empty one");
      const filter = filterOf(o);
      const b = await openBuffer(o, true);
      try {
        await inFile(o.buffer, () => checkEnvFilter(b, filter.env));
        const results = await inFile(o.buffer, () => b.search(text, { k: o.k, filter, exact: Boolean(o.exact) }));
        if (o.json) return console.log(JSON.stringify(results, null, 2));
        if (results.length === 0) console.log("no transitions match");
        for (const [i, r] of results.entries()) {
          const t = r.transition;
          // Texts from the data go through `printable`: a trajectory must not drive the terminal.
          const clip = (x: string) => printable(`${x.slice(0, 160).replace(/\s+/g, " ")}${x.length > 160 ? "…" : ""}`);
          console.log(
            `${i + 1}. score ${r.score.toFixed(3)}  #${t.id} ${printable(t.env)} ${t.source} task ${printable(t.task.id)} step ${t.step}  reward ${t.reward}${t.terminated ? " (terminated)" : ""}`,
          );
          console.log(`   state:  ${clip(t.state)}`);
          console.log(`   action: ${printable(t.action)}`);
          console.log(`   next:   ${clip(t.nextState)}`);
        }
      } finally {
        b.close();
      }
    });
}
