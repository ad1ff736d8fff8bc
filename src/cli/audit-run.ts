import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { DataError, deriveSeed, InvalidConfigError, readJsonFile, Rng, type Trajectory } from "../core/index.ts";
import { ReplayBuffer } from "../buffer/index.ts";
import { envEntry } from "../envs/index.ts";
import { auditTable, replayInRealEnv, summarizeReplays, type OnPolicyAuditSummary, type SyntheticRecord } from "../experience/index.ts";
import { candidateSource, makeEnvPool, resolveTrainConfig, type TrainConfig } from "../train/index.ts";
import { inFile } from "./errors.ts";
import { cliConsole as console } from "./io.ts";

/**
 * A finished (or running) run's config and the synthetic episodes of the run in its `buffer.db`, by
 * iteration (what `bufferCapacity` kept). `dataDir` overrides the config's data folder.
 */
export async function runSyntheticEpisodes(dir: string, dataDir?: string): Promise<{ config: TrainConfig; byIteration: Map<number, Trajectory[]> }> {
  const configFile = join(dir, "config.json");
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new InvalidConfigError(`--run ${dir}: no such run folder`);
  if (!existsSync(configFile)) throw new InvalidConfigError(`--run ${dir} holds no run (no config.json)`);
  const raw = readJsonFile<Record<string, unknown>>(configFile);
  if (typeof raw !== "object" || raw === null || Array.isArray(raw) || typeof raw.runId !== "string")
    throw new DataError("not a run's config (no runId)", { file: configFile });
  const { runId, createdAt: _, ...stored } = raw as Record<string, unknown> & { runId: string };
  const config = resolveTrainConfig({ ...stored, ...(dataDir ? { dataDir } : {}) }, `config of ${configFile}`);
  if (config.mode === "real" || config.mode === "bc") throw new InvalidConfigError(`--run ${dir} is a ${config.mode}-mode run: it has no synthetic episodes`);
  const bufferFile = join(dir, "buffer.db");
  if (!existsSync(bufferFile)) throw new DataError("the run's buffer is missing", { file: bufferFile });

  // The run's synthetic episodes by iteration (their policy label is `neural@<runId>#<iteration>`).
  const byIteration = new Map<number, Trajectory[]>();
  await inFile(bufferFile, () => {
    const buffer = ReplayBuffer.open(bufferFile, { readonly: true });
    try {
      for (const t of buffer.trajectories({ env: config.env, source: "synthetic" })) {
        const m = /^[^@]*@(.+)#(\d+)$/.exec(t.policy ?? "");
        if (!m || m[1] !== runId || t.steps.length === 0) continue;
        const it = Number(m[2]);
        byIteration.set(it, [...(byIteration.get(it) ?? []), t]);
      }
    } finally {
      buffer.close();
    }
  });
  if (byIteration.size === 0) throw new InvalidConfigError(`--run ${dir}: its buffer holds no synthetic episodes of the run (a --no-replay run stores none)`);

  return { config, byIteration };
}

/**
 * `dreamgym audit --run DIR`: the on-policy audit of a run after the fact. It reads the run's
 * `config.json` (env, splits, data folder, seed) and the synthetic episodes in its `buffer.db`
 * (labelled by iteration; what `bufferCapacity` kept, so the oldest iterations of a long run are gone,
 * and a `--no-replay` run stored none), replays whole groups of each iteration's episodes in the real env
 * (train split, abstracted as in training) and prints one table row per iteration and one for all.
 * The buffer keeps no env seeds: episodes are replayed with seed 0 (WebShop does not use the seed
 * when given a task).
 */
export async function auditRun(dir: string, opts: { episodes: number; dataDir?: string; json?: boolean }): Promise<void> {
  const { config, byIteration } = await runSyntheticEpisodes(dir, opts.dataDir);
  const bufferFile = join(dir, "buffer.db");
  const pool = makeEnvPool(config, config.trainSplit, candidateSource(config, bufferFile));
  const isSuccess = envEntry(config.env).success;
  const rows: { iteration: number | "all"; summary: OnPolicyAuditSummary }[] = [];
  const all: Awaited<ReturnType<typeof replayInRealEnv>> = [];
  try {
    for (const iteration of [...byIteration.keys()].sort((a, b) => a - b)) {
      const episodes = byIteration.get(iteration)!;
      // The same kind of sample as training's audit: whole groups (an iteration's episodes of one
      // task), in an order fixed by the run's seed and the iteration, until `episodes` are taken.
      const byTask = new Map<string, Trajectory[]>();
      for (const t of episodes) byTask.set(t.task.id, [...(byTask.get(t.task.id) ?? []), t]);
      const groups = [...byTask.values()];
      const sample: { t: Trajectory; group: string }[] = [];
      for (const g of new Rng(deriveSeed(config.seed, "audit", iteration)).shuffle(groups.map((_, i) => i))) {
        if (sample.length >= opts.episodes) break;
        sample.push(...groups[g].map((t) => ({ t, group: `${iteration}/${g}` })));
      }
      const records: SyntheticRecord[] = sample.map(({ t, group }) => ({
        task: t.task,
        seed: 0,
        observation: t.steps[0].observation,
        group,
        steps: t.steps.map((s) => ({ action: s.action, nextObservation: s.next_observation, terminated: s.terminated, reward: s.reward })),
      }));
      const results = await replayInRealEnv(pool.envs, records, isSuccess);
      all.push(...results);
      rows.push({ iteration, summary: summarizeReplays(results) });
    }
  } finally {
    await Promise.all(pool.envs.map((e) => e.close()));
  }
  rows.push({ iteration: "all", summary: summarizeReplays(all) });
  if (opts.json) return void console.log(JSON.stringify(rows, null, 2));
  const { header, lines } = auditTable(rows);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  // The policy that played the episodes is gone: after the fact, only their actions can be replayed.
  const closedLoop =
    config.onPolicyAudit.replay !== "actions"
      ? " (open loop: the actions; the run's own audits may have let its policy play, closed loop, and read otherwise)"
      : "";
  console.log(
    `on-policy audit of ${dir}: ${config.env}, synthetic episodes replayed in the real env (${config.trainSplit} split), ${all.filter((r) => r !== null).length} episodes${closedLoop}`,
  );
  for (const l of [header, ...lines])
    console.log(
      l
        .map((c, i) => c.padEnd(widths[i]))
        .join("  ")
        .trimEnd(),
    );
}
