import {
  appendFileSync,
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { DataError, firstMissingFolder, InvalidConfigError, readJsonFile, writeFileAtomic } from "../core/index.ts";
import type { AuditPair } from "../experience/index.ts";
import { resolveTrainConfig, type IterationMetrics, type ResumeOverrides, type TrainConfig } from "./config.ts";
import { parseMetricsLine, writeReport } from "./report.ts";
import type { RunSink, RunState } from "./run-sink.ts";

/** `checkpoints/latest.json`: where a resume starts. */
export interface Checkpoint {
  iteration: number;
  /** False for a checkpoint taken when the run stopped between scheduled ones: its buffer was not trimmed. */
  trimmed?: boolean;
  policyFile: string;
  state: RunState;
  curriculum?: unknown;
  /** The env and mode it was trained in (absent in checkpoints from before): a resume must not go on in others. */
  env?: string;
  mode?: string;
  /**
   * The experience model's refit state (`ExperienceModel.refitState`: `file` in checkpoints/), where the
   * run refits (`--refit`) a model that has one: taken at `iteration`, when the run's real interactions
   * were `realInteractions` (before a real phase, the refits' steps). A resume loads it and refits again
   * only from the audits after it.
   */
  experience?: { file: string; iteration: number; realInteractions: number };
}

/** Iterations between two refit states a run keeps (~18 MB each for WebShop's learned model, ~20 ms to write; a resume refits from at most this many iterations' audits, ~34 ms an audit). */
const REFIT_STATE_EVERY = 50;

/** The iteration of a run's last checkpoint (0: none yet). */
export function checkpointedIteration(runDir: string): number {
  const latest = join(runDir, "checkpoints", "latest.json");
  return existsSync(latest) ? (JSON.parse(readFileSync(latest, "utf8")) as { iteration: number }).iteration : 0;
}

/**
 * The policy file of a finished run's latest checkpoint, to start other runs from it (`initPolicy`;
 * the demo's and the experiment's RL rows start from the BC run's). A run with no checkpoint is a `DataError`.
 */
export function latestPolicyFile(runDir: string): string {
  const latestFile = join(runDir, "checkpoints", "latest.json");
  if (!existsSync(latestFile)) throw new DataError("the run has no checkpoint", { file: latestFile });
  const latest = readJsonFile<Partial<Checkpoint>>(latestFile);
  if (typeof latest?.policyFile !== "string") throw new DataError("not a checkpoint record (no policyFile)", { file: latestFile });
  return join(runDir, "checkpoints", latest.policyFile);
}

/**
 * A run folder: `config.json` (written last, so a folder holds a run once it is whole),
 * `metrics.jsonl` (one line per iteration), `checkpoints/` (the last two policies and
 * `latest.json`), `buffer.db` (the run's own copy of the seed buffer), `report.html`, `summary.json`, and `audit/` (the episodes of each on-policy audit).
 */
export class RunFolder implements RunSink {
  private constructor(
    readonly dir: string,
    readonly config: TrainConfig,
    readonly runId: string,
  ) {}

  get where(): string {
    return this.dir;
  }

  get bufferFile(): string {
    return join(this.dir, "buffer.db");
  }

  /**
   * Makes the folder of a new run (which must not hold one). `start` runs with the folder in place;
   * if it throws before calling `started()`, or the process exits before then, only what this call
   * created is removed again, so the same folder can be used for another try. `flag` is the option that
   * named `dir`, for the refusals (`serve --mode dreamgym` takes it as `--run`).
   */
  static async create<T>(dir: string, config: TrainConfig, start: (folder: RunFolder, started: () => void) => Promise<T>, flag = "--out"): Promise<T> {
    if (existsSync(dir) && !statSync(dir).isDirectory()) throw new InvalidConfigError(`${dir} is a file; ${flag} must be a folder`);
    if (existsSync(join(dir, "config.json")))
      throw new InvalidConfigError(`${dir} already holds a run; resume it with --resume ${dir} or choose another ${flag}`);
    const created = firstMissingFolder(dir);
    const before = existsSync(dir) ? new Set(readdirSync(dir)) : null;
    // Only what this start made: the folders it created, or the entries it added to an existing folder.
    const undo = () => {
      if (created) rmSync(created, { recursive: true, force: true });
      else for (const f of readdirSync(dir)) if (!before?.has(f)) rmSync(join(dir, f), { recursive: true, force: true });
    };
    // A process that exits before the run has started (Ctrl-C: the CLI exits at once) takes it back too.
    process.on("exit", undo);
    let started = false;
    const markStarted = () => {
      started = true;
      process.off("exit", undo);
    };
    try {
      mkdirSync(join(dir, "checkpoints"), { recursive: true });
      writeFileSync(join(dir, "metrics.jsonl"), "");
      // The run grows its own copy, so the seed buffer stays as it was and a resume finds the run's.
      if (config.buffer && (config.mode === "dreamgym" || config.mode === "s2r")) copyFileSync(config.buffer, join(dir, "buffer.db"));
      const runId = `${Date.now().toString(36)}${process.pid.toString(36)}`;
      writeFileAtomic(join(dir, "config.json"), JSON.stringify({ ...config, runId, createdAt: new Date().toISOString() }, null, 2) + "\n");
      return await start(new RunFolder(dir, config, runId), markStarted);
    } catch (e) {
      if (!started) undo();
      throw e;
    } finally {
      process.off("exit", undo);
    }
  }

  /** Opens a run to resume it: its config (with `overrides`) and its last checkpoint. Metrics past the checkpoint go. */
  static open(dir: string, overrides: ResumeOverrides = {}): { folder: RunFolder; latest: Checkpoint | undefined; warnings: string[] } {
    const configFile = join(dir, "config.json");
    if (!existsSync(configFile)) throw new InvalidConfigError(`${dir} holds no run (no config.json)`);
    const raw = readJsonFile<Record<string, unknown>>(configFile);
    if (typeof raw !== "object" || raw === null || Array.isArray(raw) || typeof raw.runId !== "string") {
      throw new DataError("not a run's config (no runId); it may be damaged: start a new run with another --out", { file: configFile });
    }
    const { createdAt: _, runId, ...stored } = raw as Record<string, unknown> & { runId: string };
    // A run from before the synthetic phase's std floor and KL penalty goes on without them, as it began.
    const p = stored.pessimism;
    if (p && typeof p === "object" && !Array.isArray(p) && !("kl" in p)) stored.pessimism = { ...p, kl: 0, stdFloor: 0 };
    const latestFile = join(dir, "checkpoints", "latest.json");
    const latest = existsSync(latestFile) ? readJsonFile<Checkpoint>(latestFile) : undefined;
    if (
      latest !== undefined &&
      (typeof latest !== "object" ||
        latest === null ||
        !Number.isInteger(latest.iteration) ||
        typeof latest.policyFile !== "string" ||
        typeof latest.state !== "object" ||
        latest.state === null ||
        (latest.experience !== undefined && !isExperienceRecord(latest.experience)))
    ) {
      throw new DataError("not a checkpoint record (iteration, policyFile, state); it may be damaged: restore it or start a new run", { file: latestFile });
    }
    // The counters the loop goes on from: a state without them would train, then fail at the end.
    const counters = ["iteration", "realInteractions", "evalInteractions", "syntheticInteractions", "droppedEpisodes", "episodes", "wallSeconds"] as const;
    const missing =
      latest === undefined ? [] : counters.filter((k) => typeof latest.state[k] !== "number" || !Number.isFinite(latest.state[k]) || latest.state[k] < 0);
    if (missing.length > 0)
      throw new DataError(`the checkpoint's state lacks ${missing.join(", ")} (numbers ≥ 0); it may be damaged: restore it or start a new run`, {
        file: latestFile,
      });
    const defined = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined));
    const toS2r =
      defined.mode !== undefined || defined.realBudget !== undefined || defined.realScreen !== undefined || defined.realBatchAdvantage !== undefined;
    if (toS2r && (defined.mode !== "s2r" || !(Number(defined.realBudget) > 0) || (stored.mode !== "dreamgym" && stored.mode !== "s2r"))) {
      throw new InvalidConfigError(
        `a resumed run can only go on to a real phase: a dreamgym or s2r run, with --mode s2r and --real-budget N > 0, --real-screen and --real-batch-advantage optional (this run is ${String(stored.mode)})`,
      );
    }
    // (With refit, real steps come before the real phase: the synthetic budget tells.)
    const refit = (stored.onPolicyAudit as { refit?: unknown } | undefined)?.refit === true;
    const realPhaseBegun =
      stored.mode === "s2r" && (refit ? (latest?.state.syntheticInteractions ?? 0) >= Number(stored.budget) : (latest?.state.realInteractions ?? 0) > 0);
    // An s2r run's real phase is extended, as --budget extends the first: a real budget not above the
    // run's would change nothing, or end the phase before what was played, and config.json would then
    // name settings never used.
    if (toS2r && stored.mode === "s2r") {
      if (!(Number(defined.realBudget) > Number(stored.realBudget))) {
        throw new InvalidConfigError(
          `--real-budget extends a resumed s2r run's real phase to more real steps than its real budget: this run's real budget is ${String(stored.realBudget)} (to go on as it is: --resume ${dir} alone)`,
        );
      }
      // Once the real phase has begun, its screening and batch term are what its steps were played with.
      const changed = [
        ["--real-screen", "realScreen", stored.realScreen ?? 1],
        ["--real-batch-advantage", "realBatchAdvantage", stored.realBatchAdvantage],
      ].filter(([, key, was]) => defined[key as string] !== undefined && defined[key as string] !== was);
      if (realPhaseBegun && changed.length > 0) {
        throw new InvalidConfigError(
          `${changed.map(([flag]) => flag).join(" and ")} cannot change once an s2r run's real phase has begun (this run's: ${changed.map(([flag, , was]) => (was === undefined ? `no ${flag}` : `${flag} ${String(was)}`)).join(", ")}): drop ${changed.length === 1 ? "it" : "them"}`,
        );
      }
    }
    // A larger first-phase budget extends the run, as if it had been given from the start.
    if (defined.budget !== undefined) {
      if (stored.mode === "bc" || !(Number(defined.budget) > Number(stored.budget)) || realPhaseBegun) {
        const why =
          stored.mode === "bc"
            ? "this run is bc (its length is bc.epochs)"
            : realPhaseBegun
              ? "this s2r run's real phase has begun"
              : `this run's budget is ${String(stored.budget)}`;
        throw new InvalidConfigError(
          `--budget extends a resumed real, dreamgym or s2r run (an s2r run before its real phase) to more steps than its budget: ${why}`,
        );
      }
    }
    // A run from before the audit's replay could be chosen replayed actions: it goes on doing so, so
    // its audit rows stay comparable.
    const audit = stored.onPolicyAudit;
    const before = typeof audit === "object" && audit !== null && !("replay" in audit) ? { onPolicyAudit: { ...audit, replay: "actions" } } : {};
    const config = resolveTrainConfig({ ...stored, ...before, ...defined }, `config of ${configFile}`);
    // From now on the run is an S2R run, or one with the larger budget, also for a later resume: written
    // when the run starts (`saveConfigChanges`), so a resume that fails before (no data, a missing file)
    // leaves the folder as it was and can be given again as it was.
    const configChanges =
      toS2r || defined.budget !== undefined
        ? JSON.stringify(
            {
              ...raw,
              mode: config.mode,
              budget: config.budget,
              realBudget: config.realBudget,
              realScreen: config.realScreen,
              realBatchAdvantage: config.realBatchAdvantage,
            },
            null,
            2,
          ) + "\n"
        : undefined;
    // An edited config.json must not take the run elsewhere: its policy was trained in this env and mode
    // (a DreamGym run going on to its real phase, S2R, is the one change of mode a resume makes).
    if (latest?.env !== undefined && latest.env !== config.env) {
      throw new InvalidConfigError(
        `${configFile} names env ${config.env}, but the run's checkpoint was trained on ${latest.env}: restore its env, or start a new run (a policy does not carry over between envs)`,
      );
    }
    if (latest?.mode !== undefined && latest.mode !== config.mode && !(latest.mode === "dreamgym" && config.mode === "s2r")) {
      throw new InvalidConfigError(
        `${configFile} names mode ${config.mode}, but the run's checkpoint was trained in mode ${latest.mode}: restore its mode, or start a new run with --init-policy`,
      );
    }
    // Files a killed write left half-made beside their targets (`<file>.<pid>.tmp`) are removed.
    const checkpoints = join(dir, "checkpoints");
    if (existsSync(checkpoints)) for (const f of readdirSync(checkpoints)) if (/\.\d+\.tmp$/.test(f)) rmSync(join(checkpoints, f), { force: true });
    const folder = new RunFolder(dir, config, runId);
    folder.configChanges = configChanges;
    folder.experience = latest?.experience;
    folder.policyFile = latest?.policyFile;
    // Lines after the checkpoint are replayed, so they go (and a torn last line with them). Anything
    // else missing is said, and a damaged line is kept aside, not dropped without a word.
    const upTo = latest?.iteration ?? 0;
    const metricsFile = join(dir, "metrics.jsonl");
    const warnings: string[] = [];
    const lines = existsSync(metricsFile) ? readFileSync(metricsFile, "utf8").split("\n") : [];
    const last = lines.map((l) => l.trim() !== "").lastIndexOf(true);
    const damaged = lines.filter((l, i) => l.trim() !== "" && i !== last && parseMetricsLine(l) === undefined);
    if (damaged.length > 0) {
      appendFileSync(join(dir, "metrics.damaged.jsonl"), damaged.map((l) => l + "\n").join(""));
      warnings.push(
        `${metricsFile}: ${damaged.length} damaged line${damaged.length === 1 ? "" : "s"} set aside in metrics.damaged.jsonl; the run goes on from its checkpoint`,
      );
    }
    const keep = lines.map(parseMetricsLine).filter((m): m is IterationMetrics => m !== undefined && m.iteration <= upTo);
    const have = new Set(keep.map((m) => m.iteration));
    const lost = Array.from({ length: upTo }, (_, i) => i + 1).filter((i) => !have.has(i));
    if (lost.length > 0) {
      const span =
        lost.length === 1
          ? `${lost[0]}`
          : lost.length === lost[lost.length - 1] - lost[0] + 1
            ? `${lost[0]}–${lost[lost.length - 1]}`
            : `${lost.length} of 1–${upTo}`;
      warnings.push(
        `${metricsFile} ${existsSync(metricsFile) ? "lacks" : "is missing, with"} the figures of iteration${lost.length === 1 ? "" : "s"} ${span}; the run goes on from its checkpoint (iteration ${upTo}), and its report and view will not show them`,
      );
    }
    writeFileAtomic(metricsFile, keep.map((m) => JSON.stringify(m) + "\n").join(""));
    // So do audited episodes past it (the resumed run writes them again, the same).
    for (const f of auditFiles(dir)) if (f.iteration > (latest?.iteration ?? 0)) rmSync(f.file, { force: true });
    return { folder, latest, warnings };
  }

  /** The policy label of the run's synthetic episodes of one iteration (so a resume can find them). */
  episodeLabel(iteration: number): string {
    return `neural@${this.runId}#${iteration}`;
  }

  /** The checkpoint's refit state (`experience`) and its record, or undefined where it has none; a file it names and lacks is a `DataError`. */
  checkpointRefitState(latest: Checkpoint): (NonNullable<Checkpoint["experience"]> & { bytes: Uint8Array; path: string }) | undefined {
    if (latest.experience === undefined) return undefined;
    const path = join(this.dir, "checkpoints", latest.experience.file);
    if (!existsSync(path))
      throw new DataError("the experience model's refit state named by latest.json is missing: restore it or start a new run", { file: path });
    return { ...latest.experience, bytes: readFileSync(path), path };
  }
  /** A resume's changes of config.json (a larger budget, S2R's real phase), written when the run starts. */
  private configChanges: string | undefined;
  saveConfigChanges(): void {
    if (this.configChanges === undefined) return;
    writeFileAtomic(join(this.dir, "config.json"), this.configChanges);
    this.configChanges = undefined;
  }

  /** The refit state the last checkpoint named (carried over by checkpoints that take no new one). */
  private experience: Checkpoint["experience"];
  /** The policy file the last checkpoint named. */
  private policyFile: string | undefined;
  /** Whether a checkpoint names a policy file (a policy that has not changed since need not be given again). */
  get hasPolicyFile(): boolean {
    return this.policyFile !== undefined;
  }

  /** The saved policy bytes a checkpoint names. */
  checkpointPolicy(latest: Checkpoint): Uint8Array {
    const file = join(this.dir, "checkpoints", latest.policyFile);
    if (!existsSync(file)) throw new DataError(`checkpoint ${file} named by latest.json is missing`, { file });
    return readFileSync(file);
  }

  /** An iteration's audited episodes (synthetic beside real), one JSON line each, in `audit/iteration-NNNN.jsonl`. */
  writeAuditPairs(iteration: number, pairs: readonly AuditPair[]): void {
    mkdirSync(join(this.dir, "audit"), { recursive: true });
    writeFileAtomic(join(this.dir, "audit", auditFileName(iteration)), pairs.map((p) => JSON.stringify(p) + "\n").join(""));
  }

  appendMetrics(m: IterationMetrics): void {
    appendFileSync(join(this.dir, "metrics.jsonl"), JSON.stringify(m) + "\n");
  }

  /** Writes the policy (and the refit state when due), then `latest.json` pointing at them; keeps the last two of each; refreshes the report. */
  saveCheckpoint(policy: Uint8Array | null, state: RunState, curriculum: unknown, trimmed = true, refitState?: () => Uint8Array | undefined): void {
    const dir = join(this.dir, "checkpoints");
    // null: the policy has not changed since the last checkpoint (a served run's, whose policy is the
    // trainer's: 13 MB and an fsync an iteration saved), whose file goes on.
    if (policy === null && this.policyFile === undefined) throw new Error("a first checkpoint needs the policy");
    const policyFile = policy === null ? this.policyFile! : `iter-${iterationName(state.iteration)}.policy`;
    if (policy !== null) writeFileAtomic(join(dir, policyFile), policy);
    // A new refit state (one changed since the last taken) every REFIT_STATE_EVERY iterations, in a file of
    // its own, named by latest.json once written; between them the last one goes on.
    const due = this.experience === undefined || state.iteration - this.experience.iteration >= REFIT_STATE_EVERY;
    const bytes = due ? refitState?.() : undefined;
    if (bytes) {
      const experience = {
        file: `experience-${iterationName(state.iteration)}.bin`,
        iteration: state.iteration,
        realInteractions: state.realInteractions,
      };
      writeFileAtomic(join(dir, experience.file), bytes);
      this.experience = experience;
    }
    const latest: Checkpoint = {
      iteration: state.iteration,
      ...(trimmed ? {} : { trimmed }),
      policyFile,
      state,
      ...(curriculum ? { curriculum } : {}),
      env: this.config.env,
      mode: this.config.mode,
      ...(this.experience ? { experience: this.experience } : {}),
    };
    writeFileAtomic(join(dir, "latest.json"), JSON.stringify(latest, null, 2) + "\n");
    this.policyFile = policyFile;
    // The two latest of each kind stay, and whatever latest.json names (a file of a later checkpoint
    // than it, left by a run killed between the two writes, may be among the latest).
    const files = readdirSync(dir);
    for (const kind of [/^iter-\d+\.policy$/, /^experience-\d+\.bin$/]) {
      const old = files
        .filter((f) => kind.test(f))
        .sort()
        .slice(0, -2);
      for (const f of old) if (f !== policyFile && f !== this.experience?.file) rmSync(join(dir, f), { force: true });
    }
    this.writeReport();
  }

  lastCheckpoint(): number {
    return checkpointedIteration(this.dir);
  }

  writeSummary(summary: object): void {
    writeFileAtomic(join(this.dir, "summary.json"), JSON.stringify(summary, null, 2) + "\n");
  }

  writeReport(): void {
    writeReport(this.dir);
  }
}

/** An iteration in a checkpoint file's name (sorted by name, they are in order). */
const iterationName = (iteration: number) => String(iteration).padStart(6, "0");

function isExperienceRecord(e: unknown): boolean {
  const r = e as Checkpoint["experience"];
  return (
    typeof r === "object" &&
    r !== null &&
    typeof r.file === "string" &&
    /^experience-\d+\.bin$/.test(r.file) &&
    Number.isInteger(r.iteration) &&
    r.iteration >= 0 &&
    Number.isInteger(r.realInteractions) &&
    r.realInteractions >= 0
  );
}

const auditFileName = (iteration: number) => `iteration-${String(iteration).padStart(4, "0")}.jsonl`;

/** A run's files of audited episodes, by iteration (oldest first). */
export function auditFiles(runDir: string): { iteration: number; file: string }[] {
  const dir = join(runDir, "audit");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map((f) => /^iteration-(\d+)\.jsonl$/.exec(f))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ iteration: Number(m[1]), file: join(dir, m[0]) }))
    .sort((a, b) => a.iteration - b.iteration);
}

/** An audit file's episodes (one JSON line each); a damaged line is a `DataError` naming the file and line. */
export function readAuditPairs(file: string): AuditPair[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .flatMap((line, i) => {
      if (!line.trim()) return [];
      try {
        return [JSON.parse(line) as AuditPair];
      } catch {
        throw new DataError(`line ${i + 1} is not an audited episode (not JSON)`, { file });
      }
    });
}

/**
 * Takes the run folder for this process (`run.lock`, holding its pid) until the returned function
 * is called or the process exits. A folder that a live process holds is refused: two processes
 * training one run would write the same metrics and checkpoints. A lock whose process is gone (a
 * killed run) is stale and taken over.
 */
export function lockRun(dir: string): () => void {
  const file = join(dir, "run.lock");
  for (let attempt = 0; ; attempt++) {
    let fd: number;
    try {
      fd = openSync(file, "wx");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw e;
      const pid = Number(readFileSync(file, "utf8").trim());
      if (Number.isSafeInteger(pid) && pid > 0 && isAlive(pid)) {
        // This process's own pid: a pid alone cannot tell which of these holds it (a restarted container's
        // PID 1 meets the lock its killed predecessor left), so the user is told what to check.
        if (pid === process.pid)
          throw new InvalidConfigError(
            `${file} names this process's own pid (${pid}): this process trains ${dir} already, or a process in another container does, or an earlier process with this pid was killed (a container started again); if none trains it now, delete ${file}`,
          );
        throw new InvalidConfigError(
          `${dir} is being trained by process ${pid} now (${file}): wait for it to end, or stop it, before resuming; two processes would write the same run`,
        );
      }
      rmSync(file, { force: true });
      continue;
    }
    writeSync(fd, `${process.pid}\n`);
    closeSync(fd);
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      process.off("exit", release);
      rmSync(file, { force: true });
    };
    process.on("exit", release);
    return release;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"; // alive, another user's
  }
}
