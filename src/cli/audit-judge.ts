import { closing, InvalidConfigError, readJsonlAll, Rng, type Trajectory } from "../core/index.ts";
import { parseTrajectory, ReplayBuffer } from "../buffer/index.ts";
import { createEnv, findEnv, syntheticSupport, trajectoryRules } from "../envs/index.ts";
import { JUDGE_DIMENSIONS, TrajectoryJudge, type JudgeReport } from "../experience/index.ts";
import { createChatModel, parseModelSpec } from "../llm/index.ts";
import { endpointSettings } from "./endpoint-options.ts";
import { inFile } from "./errors.ts";
import { checkInputFile, checkTrajectoryFile } from "./output.ts";
import { progressBar } from "./progress.ts";
import { runSyntheticEpisodes } from "./audit-run.ts";
import { cliConsole as console } from "./io.ts";

export interface JudgeCommandOptions {
  judge: string;
  run?: string;
  buffer?: string;
  trajectories?: string;
  env?: string;
  limit: number;
  seed: number;
  context: number;
  cache?: string;
  data?: string;
  json?: boolean;
  requestTimeout?: number;
  maxFailures?: number;
}

/**
 * `dreamgym audit --judge MODEL`: a chat model scores a sample of synthetic trajectories — a run's
 * (`--run DIR`, from its buffer), a buffer's (`--buffer B.db`) or a file's (`--trajectories F`, those
 * with source synthetic) — for consistency, diversity, informativeness and hallucination, and prints
 * the mean of each, how many were judged and how many failed.
 */
export async function auditJudge(o: JudgeCommandOptions): Promise<void> {
  const sources = (["run", "buffer", "trajectories"] as const).filter((k) => o[k] !== undefined);
  if (sources.length !== 1)
    throw new InvalidConfigError(
      `--judge scores synthetic trajectories from one source: give one of --run DIR, --buffer B.db or --trajectories F.jsonl${sources.length > 1 ? ` (got ${sources.map((k) => `--${k}`).join(", ")})` : ""}`,
    );
  parseModelSpec(o.judge); // a malformed model string fails before anything is read
  let all: Trajectory[];
  let from: string;
  let dataDir = o.data;
  if (o.run) {
    if (o.env) throw new InvalidConfigError("--run judges the run's own env: drop --env");
    const { config, byIteration } = await runSyntheticEpisodes(o.run, o.data);
    all = [...byIteration.keys()].sort((a, b) => a - b).flatMap((it) => byIteration.get(it)!);
    from = `run ${o.run}`;
    dataDir = config.dataDir;
  } else if (o.buffer) {
    checkInputFile(o.buffer, "buffer file", "give the buffer file");
    all = await inFile(o.buffer, () =>
      closing(ReplayBuffer.open(o.buffer!, { readonly: true }), (b) => [...b.trajectories({ env: o.env, source: "synthetic" })]),
    );
    from = `buffer ${o.buffer}`;
  } else {
    checkTrajectoryFile(o.trajectories!);
    const read = await readJsonlAll<Trajectory>(o.trajectories!, { parse: (v) => parseTrajectory(v, trajectoryRules()) });
    all = read.filter((t) => t.source === "synthetic" && (o.env === undefined || t.env === o.env));
    from = `file ${o.trajectories}`;
  }
  all = all.filter((t) => t.steps.length > 0);
  if (all.length === 0) throw new InvalidConfigError(`${from} holds no synthetic ${o.env ? `${o.env} ` : ""}trajectories to judge`);
  const envs = [...new Set(all.map((t) => t.env))];
  if (envs.length > 1) throw new InvalidConfigError(`${from} holds synthetic trajectories of several envs (${envs.join(", ")}): choose one with --env`);
  // A sample fixed by the seed, in the source's order.
  const picked =
    all.length <= o.limit
      ? all
      : (() => {
          const chosen = new Set(
            new Rng(o.seed).sample(
              all.map((_, i) => i),
              o.limit,
            ),
          );
          return all.filter((_, i) => chosen.has(i));
        })();
  // The env's state format, where there is one, so the judge knows what its states look like.
  const entry = findEnv(envs[0]);
  const profile = entry?.spec.synthetic
    ? await closing(createEnv(envs[0], { dataDir }), (env) => syntheticSupport(envs[0], env).abstraction.profile)
    : undefined;

  const chat = createChatModel(o.judge, { cache: o.cache, concurrency: 4, ...endpointSettings(o) });
  const bar = o.json ? undefined : progressBar("judge", picked.length, {});
  let report: JudgeReport;
  try {
    report = await new TrajectoryJudge({ chat, profile, context: o.context, onJudged: (done) => bar?.update(done) }).judgeAll(picked);
  } finally {
    bar?.stop();
    await chat.close?.();
  }
  // No score at all is no audit: a table of dashes and exit 0 would read as a judge that had nothing to say (the answers paid for stay in --cache).
  if (report.judged === 0)
    throw new InvalidConfigError(
      `the judge ${o.judge} judged none of the ${picked.length} trajectories: every call failed (first: ${report.firstFailure ?? "no answer"}); check the judge model and its endpoint`,
    );
  if (o.json) return void console.log(JSON.stringify({ source: from, env: envs[0], available: all.length, ...report }, null, 2));
  console.log(`LLM judge ${report.model} on ${picked.length} of ${all.length} synthetic ${envs[0]} trajectories (${from}); scores 1–10`);
  const rows: [string, string][] = JUDGE_DIMENSIONS.map((d) => [
    d === "hallucination" ? "hallucination (lower is better)" : d,
    report.mean[d] === null ? "-" : `${report.mean[d]!.toFixed(2)} ± ${report.sd[d]!.toFixed(2)}`,
  ]);
  rows.push(["judged / failed", `${report.judged} / ${report.failed}`], ["tokens", String(report.tokens)]);
  console.log(`${"dimension".padEnd(34)} mean ± sd`);
  for (const [k, v] of rows) console.log(`${k.padEnd(34)} ${v}`);
  if (report.firstFailure) console.log(`${"first failure".padEnd(34)} ${report.firstFailure}`);
}
