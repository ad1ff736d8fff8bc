// Every command × bad inputs: each must exit 2 with one line on stderr (no stack trace, no raw
// control bytes), and leave no output behind and no input changed. The cases run in this process,
// one after another, through `runCli` (the entry point bin/dreamgym runs); a few of them run through
// the binary too, with outputs in a folder of their own, which must exit and print the same, that
// folder's name aside (the binary is runCli with the process's streams).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
  closeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { ReplayBuffer } from "../src/buffer/index.ts";
// Loaded before the cases, so that the first case does not count the modules' loading in its process state.
import "../src/cli/run.ts";
import { makeTrajectory } from "../src/testing/index.ts";
import { BIN, runInProcess } from "./helpers.ts";

interface Case {
  /** The command line after `dreamgym`. */
  args: string[];
  /** A pattern the error line must match (that it fails for the right reason). */
  expect: RegExp;
  /** Paths that must not exist afterwards (the outputs a failed command must not leave). */
  absent?: string[];
  /** Also run through bin/dreamgym in a child process: the same exit code, stdout and stderr. */
  binary?: boolean;
}

const dir = mkdtempSync(join(tmpdir(), "dreamgym-fuzz-"));
const out = join(dir, "out"); // every in-process case's outputs go here, under names of their own
// The binary's runs write theirs here instead: they run beside the in-process ones, and a failed
// command removes the new file it made, which the other run of the same case may have open. A name
// as long as `out`'s, so that messages cut or padded to a width come out the same.
const outBin = join(dir, "bin");
const f = (name: string) => join(dir, name);
const o = (name: string) => join(out, name);
/** A folder's path where it stands whole (not the start of a longer name such as `outline.jsonl` or `out.db`; before a full stop, yes). */
const folderAt = (folder: string) => new RegExp(`${folder.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![\\w-]|\\.\\w)`, "g");
/** A case's command line, or its output paths, for the binary's run (`outBin`), and its output read back. */
const toBin = (s: string) => s.replace(folderAt(out), () => outBin);
const fromBin = (s: string) => s.replace(folderAt(outBin), () => out);
const DEAD_MODEL = "http://127.0.0.1:9/v1#m"; // never contacted: every case fails before

/** A folder this process cannot write: chmod when not root (root ignores modes), else sysfs. */
const isRoot = process.getuid?.() === 0;
const readOnlyDir = isRoot ? (existsSync("/sys/kernel") ? "/sys" : null) : f("readonly");

const line = (t: object) => JSON.stringify(t);
const traj = (over: Record<string, unknown> = {}) => ({ ...makeTrajectory(1, { env: "webshop" }), ...over });

before(async () => {
  mkdirSync(out);
  mkdirSync(outBin);
  mkdirSync(f("a-folder"));
  if (readOnlyDir && !isRoot) {
    mkdirSync(readOnlyDir);
    chmodSync(readOnlyDir, 0o555);
  }
  // Trajectory files: good, and each kind of bad.
  const good = Array.from({ length: 5 }, (_, i) => makeTrajectory(i, { env: "webshop" }));
  writeFileSync(f("good.jsonl"), good.map((t) => line(t) + "\n").join(""));
  writeFileSync(f("empty.jsonl"), "");
  writeFileSync(f("truncated.jsonl"), line(good[0]).slice(0, 120));
  writeFileSync(f("garbage.txt"), "hello\n\u001b[31mred\u001b[0m\nnot json at all\n");
  // Binary bytes, with NULs and terminal escapes among them (deterministic).
  const bin = Buffer.alloc(4096);
  for (let i = 0, x = 7; i < bin.length; i++) bin[i] = x = (x * 1103515245 + 12345) & 0xff;
  bin[10] = 0x1b;
  bin[11] = 0;
  writeFileSync(f("garbage.bin"), bin);
  writeFileSync(f("reward-huge.jsonl"), line(traj({ total_reward: 1e308, steps: [{ ...good[1].steps[0], reward: 1e308 }] })) + "\n");
  writeFileSync(f("reward-negative.jsonl"), line(traj({ total_reward: -5, steps: [{ ...good[1].steps[0], reward: -5 }] })) + "\n");
  writeFileSync(f("unknown-env.jsonl"), line(traj({ env: "nowhere" })) + "\n");
  writeFileSync(f("no-steps.jsonl"), line(traj({ steps: [], total_reward: 0 })) + "\n");
  writeFileSync(f("short-token"), "x\n");
  // Buffers: a good one, one with corrupt pages (opens fine; reading or looking up its texts fails), and files that are not buffers.
  const b = ReplayBuffer.open(f("good.db"));
  await b.appendTrajectories(Array.from({ length: 300 }, (_, i) => makeTrajectory(i, { env: "webshop", steps: 4 })));
  b.close();
  const c = ReplayBuffer.open(f("corrupt.db"));
  await c.appendTrajectories(Array.from({ length: 300 }, (_, i) => makeTrajectory(i, { env: "webshop", steps: 4 })));
  c.close();
  const db = new Database(f("corrupt.db"));
  db.pragma("wal_checkpoint(TRUNCATE)");
  const pageSize = Number(db.pragma("page_size", { simple: true }));
  // The texts and their key index: any read of a text, or lookup of one by its key, meets a corrupt page.
  const pages = (
    db.prepare("SELECT pageno FROM dbstat WHERE name IN ('texts', 'sqlite_autoindex_texts_1') AND pagetype = 'leaf'").all() as { pageno: number }[]
  ).map((r) => r.pageno);
  db.close();
  assert.ok(pages.length >= 3, "the corrupt buffer's texts span pages");
  const fd = openSync(f("corrupt.db"), "r+");
  for (const p of pages) writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (p - 1) * pageSize);
  closeSync(fd);
  writeFileSync(f("not-a-db.db"), "this is a text file, not SQLite\n".repeat(200));
  // Run folders: a damaged config.json; a sound config with a damaged checkpoint record.
  mkdirSync(f("run-bad-config"));
  writeFileSync(f("run-bad-config/config.json"), '{"runId": "abc", "env": ');
  mkdirSync(f("run-bad-latest/checkpoints"), { recursive: true });
  writeFileSync(f("run-bad-latest/config.json"), line({ runId: "abc", budget: 10 }));
  writeFileSync(f("run-bad-latest/metrics.jsonl"), "");
  writeFileSync(f("run-bad-latest/checkpoints/latest.json"), "{oops");
  mkdirSync(f("run-empty-state/checkpoints"), { recursive: true });
  writeFileSync(f("run-empty-state/config.json"), line({ runId: "abc", budget: 10 }));
  writeFileSync(f("run-empty-state/metrics.jsonl"), "");
  writeFileSync(f("run-empty-state/checkpoints/latest.json"), line({ iteration: 2, policyFile: "iter-000002.policy", state: {} }));
  writeFileSync(f("config-garbage.json"), "{ budget: 5 ");
  writeFileSync(f("config-array.json"), "[1, 2]");
  writeFileSync(f("policy-garbage.policy"), "not a policy");
  // An sft output folder with a damaged manifest.
  mkdirSync(f("sft-bad-manifest"));
  writeFileSync(f("sft-bad-manifest/manifest.json"), "{valFraction:");
  // A folder that is neither empty nor the demo's.
  mkdirSync(f("not-demo"));
  writeFileSync(f("not-demo/keep.txt"), "mine\n");
  snapshotBefore = snapshot();
});

after(() => {
  if (readOnlyDir && !isRoot) chmodSync(readOnlyDir, 0o755);
  rmSync(dir, { recursive: true, force: true });
});

/** The fixtures' content (SQLite's -wal/-shm side files aside, which read-only opens may make). */
function snapshot(): Map<string, string> {
  const m = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of readdirSync(d).sort()) {
      const p = join(d, e);
      if (p === out || p === outBin || /-(wal|shm)$/.test(e)) continue;
      if (statSync(p).isDirectory()) {
        m.set(p, "dir");
        if (p !== readOnlyDir) walk(p);
      } else m.set(p, createHash("sha1").update(readFileSync(p)).digest("hex"));
    }
  };
  walk(dir);
  return m;
}
let snapshotBefore = new Map<string, string>();

/** What a refused write into a read-only folder may say (the check up front, or the OS's error). */
const RO = /cannot write in|permission denied|read-only|writable|EACCES|EROFS|EPERM|not permitted/;
const BAD_INTS = ["-1", "0", "1e30", "NaN", "abc", "1.5"];
const ro = (name: string): string[] => (readOnlyDir ? [join(readOnlyDir, `dreamgym-fuzz-${name}`)] : []);

/** The table: command × bad input. */
function cases(): Case[] {
  const c: Case[] = [];
  const add = (args: string[], expect: RegExp, absent: string[] = []): Case => c[c.push({ args, expect, absent }) - 1];

  // Usage errors.
  add(["frobnicate"], /unknown command 'frobnicate'/).binary = true;
  add(["collect", "--env", "webshop", "--policy", "rule", "--out", o("u1.jsonl"), "--bogus"], /unknown option '--bogus'/, [o("u1.jsonl")]).binary = true;
  add(["collect", "--env", "webshop", "--out", o("u2.jsonl")], /required option '--policy/, [o("u2.jsonl")]);
  add(["buffer", "search", "--buffer", f("good.db")], /missing required argument 'text'/);
  add(["buffer", "search", " ", "--buffer", f("good.db")], /^error: buffer search needs a text to search for \(a state or an action\), not an empty one$/);
  add(["env", "list", "--json"], /unknown option '--json'/);

  // env eval / env play.
  add(["env", "eval", "--env", "nowhere", "--policy", "rule"], /unknown environment "nowhere"/);
  add(["env", "eval", "--env", "webshop", "--policy", "nobody"], /unknown policy "nobody"/);
  add(["env", "eval", "--env", "webshop", "--policy", "rule", "--split", "nosplit"], /unknown WebShop split "nosplit"/);
  for (const v of BAD_INTS) add(["env", "eval", "--env", "webshop", "--policy", "rule", "--episodes", v], /--episodes must be an integer/);
  add(["env", "eval", "--env", "webshop", "--policy", "rule", "--max-steps", "0"], /--max-steps must be an integer/);
  add(["env", "eval", "--env", "webshop", "--policy", "rule", "--start", "-1"], /--start must be an integer/);
  add(["env", "eval", "--env", "webshop", "--policy", "rule", "--data", f("no-such-data")], /data folder/);
  add(["env", "play", "nowhere"], /unknown environment "nowhere"/);
  add(["env", "play", "webshop", "--task", "99999999"], /--task 99999999 is out of range/);

  // collect.
  const co = (name: string, ...rest: string[]) => ["collect", "--env", "webshop", "--policy", "rule", "--episodes", "2", "--out", name, ...rest];
  add(co(join(dir, "no-such-folder", "x.jsonl")), /the folder .*no-such-folder does not exist/, [join(dir, "no-such-folder")]);
  add(co(f("a-folder")), /--out is a folder/);
  for (const p of ro("collect.jsonl")) add(co(p), RO, [p]);
  add(co("/dev/full"), /no space left on device \(ENOSPC\)/).binary = true;
  for (const v of ["1e30", "abc"])
    add(["collect", "--env", "webshop", "--policy", "rule", "--episodes", v, "--out", o(`c-ep${v}.jsonl`)], /--episodes must be an integer/, [
      o(`c-ep${v}.jsonl`),
    ]);
  add([...co(o("c-maxsteps.jsonl")), "--max-steps", "1e30"], /--max-steps must be an integer/, [o("c-maxsteps.jsonl")]);
  add(["collect", "--env", "nowhere", "--policy", "rule", "--out", o("c-env.jsonl")], /unknown environment "nowhere"/, [o("c-env.jsonl")]);
  add(["collect", "--env", "webshop", "--policy", "expert", "--out", o("c-pol.jsonl")], /unknown policy "expert" for webshop/, [o("c-pol.jsonl")]);
  add([...co(o("c-split.jsonl")), "--split", "nosplit"], /unknown WebShop split/, [o("c-split.jsonl")]);
  add([...co(o("c-hybrid.jsonl")), "--hybrid"], /--hybrid applies to synthetic episodes only/, [o("c-hybrid.jsonl")]);
  add([...co(o("c-buf.jsonl")), "--buffer", f("good.db")], /--buffer applies to synthetic episodes only/, [o("c-buf.jsonl")]);
  add([...co(o("c-nobuf.jsonl")), "--experience", "default"], /--experience needs --buffer/, [o("c-nobuf.jsonl")]);
  add([...co(o("c-missingbuf.jsonl")), "--experience", "default", "--buffer", o("missing.db")], /does not exist/, [o("c-missingbuf.jsonl"), o("missing.db")]);
  add([...co(o("c-model.jsonl")), "--experience", "bogus-model", "--buffer", o("c-model.db")], /unknown model "bogus-model"/, [
    o("c-model.jsonl"),
    o("c-model.db"),
  ]);
  add(
    ["collect", "--env", "alfworld", "--policy", "expert", "--experience", "default", "--buffer", f("good.db"), "--out", o("c-alf.jsonl")],
    /policy "expert" cannot play the synthetic alfworld env \(it can: random\)/,
    [o("c-alf.jsonl")],
  );
  add([...co(o("c-conc.jsonl")), "--experience", "default", "--buffer", f("good.db"), "--concurrency", "0"], /--concurrency must be an integer/, [
    o("c-conc.jsonl"),
  ]);
  // --append onto a file that is not trajectory JSONL: refused, the file untouched (the snapshot).
  add([...co(f("garbage.bin")), "--append"], /garbage\.bin: not a text file \(binary bytes\); --append adds to a trajectory JSONL file/);
  add([...co(f("garbage.txt")), "--append"], /garbage\.txt: its last line \(from byte \d+\) is not JSON/);

  // buffer import.
  const imp = (file: string, buffer: string, ...rest: string[]) => ["buffer", "import", file, "--buffer", buffer, ...rest];
  add(imp(f("missing.jsonl"), o("i-missing.db")), /no such file to import/, [o("i-missing.db")]).binary = true;
  add(imp(f("a-folder"), o("i-folder.db")), /not a file/, [o("i-folder.db")]);
  add(imp(f("garbage.bin"), o("i-bin.db")), /not a text file/, [o("i-bin.db")]);
  add(imp(f("garbage.txt"), o("i-txt.db")), /no line is a trajectory/, [o("i-txt.db")]);
  add(imp(f("truncated.jsonl"), o("i-trunc.db")), /no line is a trajectory/, [o("i-trunc.db")]).binary = true;
  add(imp(f("empty.jsonl"), o("i-empty.db")), /no trajectories/, [o("i-empty.db")]);
  add(imp(f("reward-huge.jsonl"), o("i-huge.db")), /reward .* is outside webshop's reward range \[0, 1\]/, [o("i-huge.db")]);
  add(imp(f("reward-negative.jsonl"), o("i-neg.db")), /reward -5 is outside webshop's reward range/, [o("i-neg.db")]);
  add(imp(f("unknown-env.jsonl"), o("i-env.db")), /unknown env "nowhere"/, [o("i-env.db")]);
  add(imp(f("no-steps.jsonl"), o("i-steps.db")), /"steps" is empty/, [o("i-steps.db")]);
  add(["buffer", "import", f("good.jsonl"), f("garbage.txt"), "--buffer", o("i-mixed.db")], /garbage\.txt: no line is a trajectory/, [o("i-mixed.db")]);
  add(imp(f("good.jsonl"), f("a-folder")), /--buffer is a folder/);
  add(imp(f("good.jsonl"), join(dir, "no-such-folder", "b.db")), /does not exist/, [join(dir, "no-such-folder")]);
  for (const p of ro("import.db")) add(imp(f("good.jsonl"), p), RO, [p]);
  add(imp(f("good.jsonl"), f("not-a-db.db")), /not a database|not a dreamgym buffer/);
  add(["buffer", "import", "--buffer", o("i-none.db")], /give trajectory JSONL files to import/, [o("i-none.db")]);

  // buffer export / stats / search.
  add(["buffer", "export", "--buffer", f("corrupt.db"), "--out", o("e-corrupt.jsonl")], /SQLITE_CORRUPT/, [o("e-corrupt.jsonl")]);
  add(["buffer", "export", "--buffer", f("missing.db"), "--out", o("e-missing.jsonl")], /does not exist/, [o("e-missing.jsonl"), f("missing.db")]);
  add(["buffer", "export", "--buffer", f("a-folder"), "--out", o("e-folder.jsonl")], /--buffer is a folder/, [o("e-folder.jsonl")]);
  add(["buffer", "export", "--buffer", f("not-a-db.db"), "--out", o("e-notdb.jsonl")], /not a database|not a dreamgym buffer/, [o("e-notdb.jsonl")]);
  add(["buffer", "export", "--buffer", f("good.db"), "--out", join(dir, "no-such-folder", "x.jsonl")], /does not exist/, [join(dir, "no-such-folder")]);
  add(["buffer", "export", "--buffer", f("good.db"), "--out", f("a-folder")], /--out is a folder/);
  for (const p of ro("export.jsonl")) add(["buffer", "export", "--buffer", f("good.db"), "--out", p], RO, [p]);
  add(["buffer", "export", "--buffer", f("good.db"), "--out", "/dev/full"], /no space left on device \(ENOSPC\)/);
  add(["buffer", "export", "--buffer", f("good.db"), "--out", f("good.db")], /the buffer file itself/);
  add(["buffer", "stats", "--buffer", f("corrupt.db")], /the buffer is corrupt: the integrity check found/);
  add(["buffer", "stats", "--buffer", f("missing.db")], /does not exist/, [f("missing.db")]);
  add(["buffer", "stats", "--buffer", f("a-folder")], /--buffer is a folder/);
  add(["buffer", "stats", "--buffer", f("not-a-db.db")], /not a database|not a dreamgym buffer/);
  add(["buffer", "search", "shelf item", "--buffer", f("corrupt.db")], /SQLITE_CORRUPT/);
  // view: it must not start serving on bad input.
  add(["view", "--runs", f("no-such-run"), "--port", "0"], /--runs .*no-such-run: no such folder/);
  add(["view", "--runs", f("good.jsonl"), "--port", "0"], /is a file/);
  add(["view", "--runs", dir, "--buffer", f("missing.db"), "--port", "0"], /no such file/, [f("missing.db")]);
  add(["view", "--runs", dir, "--buffer", f("a-folder"), "--port", "0"], /--buffer is a folder/);
  add(["view", "--runs", dir, "--buffer", f("not-a-db.db"), "--port", "0"], /not a database|not a dreamgym buffer/);
  add(["view", "--runs", dir, "--buffer", f("garbage.bin"), "--port", "0"], /not a database|not a dreamgym buffer/);
  add(["view", "--runs", dir, "--port", "-1"], /port/);
  add(["view", "--runs", dir, "--port", "0", "--token-file", f("short-token")], /the token has 1 characters; give at least 16/);
  add(["serve", "--env", "webshop", "--port", "0", "--token-file", f("short-token")], /the token has 1 characters; give at least 16/);
  add(["serve", "--env", "webshop", "--mode", "dreamgym", "--port", "0"], /--mode dreamgym needs a run folder \(--run DIR\)/);
  add(["serve", "--env", "webshop", "--port", "0", "--group", "4"], /--group is for a DreamGym session server: add --mode dreamgym/);
  add(
    ["serve", "--env", "webshop", "--mode", "dreamgym", "--run", f("served"), "--port", "0"],
    /mode dreamgym needs a buffer of offline webshop trajectories .* to start from none \(dreamgym serve: --set coldStart=true\)$/,
  );
  add(
    ["serve", "--env", "webshop", "--mode", "dreamgym", "--run", f("good.jsonl"), "--buffer", f("good.db"), "--port", "0"],
    /good\.jsonl is a file; --run must be a folder$/,
  );
  add(["buffer", "search", "shelf", "--buffer", f("missing.db")], /does not exist/, [f("missing.db")]);
  for (const v of ["0"]) add(["buffer", "search", "shelf", "--buffer", f("good.db"), "-k", v], /^error: -k must be an integer/);
  add(["buffer", "search", "shelf", "--buffer", f("good.db"), "--source", "bogus"], /--source must be real or synthetic/);

  // audit.
  const au = (...rest: string[]) => ["audit", "--env", "webshop", ...rest];
  add(au("--trajectories", f("missing.jsonl"), "--buffer", f("good.db")), /no such trajectory file/);
  add(au("--trajectories", f("a-folder"), "--buffer", f("good.db")), /not a file/);
  add(au("--trajectories", f("garbage.bin"), "--buffer", f("good.db")), /garbage\.bin: not a text file \(binary bytes\); give a trajectory JSONL file$/);
  add(au("--trajectories", f("good.jsonl")), /needs --buffer/);
  add(au("--trajectories", f("good.jsonl"), "--buffer", f("missing.db")), /no such buffer file/, [f("missing.db")]);
  add(au("--trajectories", f("good.jsonl"), "--buffer", f("not-a-db.db")), /not a database|not a dreamgym buffer/);
  add(au("--trajectories", f("good.jsonl"), "--buffer", f("corrupt.db")), /SQLITE_CORRUPT/);
  add(au("--trajectories", f("good.jsonl"), "--buffer", f("good.db"), "--experience", "bogus-model"), /unknown model "bogus-model"/);
  add(["audit", "--env", "nowhere", "--trajectories", f("good.jsonl"), "--buffer", f("good.db")], /unknown environment "nowhere"/);
  add(["audit", "--env", "alfworld", "--trajectories", f("good.jsonl"), "--buffer", f("good.db")], /has no real alfworld trajectories/);

  // sft build.
  const sft = (outDir: string, ...rest: string[]) => ["sft", "build", "--env", "webshop", "--teacher", DEAD_MODEL, "--out", outDir, ...rest];
  add(sft(o("s-missing"), "--trajectories", f("missing.jsonl")), /no such trajectory file/, [o("s-missing")]);
  add(sft(o("s-folder"), "--trajectories", f("a-folder")), /not a file/, [o("s-folder")]);
  add(sft(o("s-bin"), "--trajectories", f("garbage.bin")), /garbage\.bin: not a text file \(binary bytes\); give a trajectory JSONL file$/, [o("s-bin")]);
  add(sft(o("s-env"), "--trajectories", f("unknown-env.jsonl")), /unknown env "nowhere"/, [o("s-env")]);
  add(
    ["sft", "build", "--env", "webshop", "--teacher", "bogus-model", "--out", o("s-teacher"), "--trajectories", f("good.jsonl")],
    /unknown model "bogus-model"/,
    [o("s-teacher")],
  );
  for (const v of ["1"]) add(sft(o(`s-val${v}`), "--trajectories", f("good.jsonl"), "--val", v), /--val must be a number in \[0, 1\)/, [o(`s-val${v}`)]);
  add(sft(f("good.jsonl"), "--trajectories", f("good.jsonl")), /--out is a file, not a folder/);
  for (const p of ro("sft")) add(sft(p, "--trajectories", f("good.jsonl")), RO, [p]);
  add(sft(f("sft-bad-manifest"), "--trajectories", f("good.jsonl")), /manifest\.json.*corrupt JSON/);
  add(sft(o("s-nobuf"), "--trajectories", f("good.jsonl"), "--buffer", f("missing.db")), /no such buffer file/, [o("s-nobuf"), f("missing.db")]);

  // train.
  const tr = (name: string, ...rest: string[]) => ["train", "--out", o(name), ...rest];
  for (const v of ["0", "1e30"]) add(tr(`t-budget${v}`, "--budget", v), /--budget must be an integer/, [o(`t-budget${v}`)]);
  add(tr("t-env", "--env", "nowhere"), /unknown environment "nowhere"/, [o("t-env")]);
  add(tr("t-mode", "--mode", "dream"), /mode: "dream" is not allowed/, [o("t-mode")]);
  add(tr("t-group", "--group", "1"), /--group must be an integer/, [o("t-group")]);
  add(tr("t-config-missing", "--config", f("missing.json")), /missing\.json: no such config file$/, [o("t-config-missing")]);
  add(tr("t-config-folder", "--config", f("a-folder")), /a-folder: not a file; give a JSON training config file$/, [o("t-config-folder")]);
  add(tr("t-config-garbage", "--config", f("config-garbage.json")), /config-garbage\.json:1:\d+: corrupt JSON/, [o("t-config-garbage")]);
  add(tr("t-config-array", "--config", f("config-array.json")), /invalid training config/, [o("t-config-array")]);
  add(tr("t-set", "--set", "bogusKey=1"), /bogusKey: unknown key/, [o("t-set")]);
  add(tr("t-init", "--set", `initPolicy=${f("policy-garbage.policy")}`), /not a dreamgym policy/, [o("t-init")]);
  add(["train", "--out", f("good.jsonl")], /is a file; --out must be a folder/);
  for (const p of ro("run")) add(["train", "--out", p, "--budget", "10"], RO, [p]);
  add(tr("t-nobuf", "--mode", "dreamgym"), /needs a buffer/, [o("t-nobuf")]);
  add(tr("t-missingbuf", "--mode", "dreamgym", "--buffer", f("missing.db")), /does not exist/, [o("t-missingbuf"), f("missing.db")]);
  add(tr("t-notdb", "--mode", "dreamgym", "--buffer", f("not-a-db.db")), /not a database|not a dreamgym buffer/, [o("t-notdb")]);
  add(tr("t-model", "--mode", "dreamgym", "--buffer", f("good.db"), "--experience", "bogus-model"), /unknown model "bogus-model"/, [o("t-model")]);
  add(tr("t-model-url", "--mode", "dreamgym", "--buffer", f("good.db"), "--experience", "http://127.0.0.1:9/v1"), /names no model/, [o("t-model-url")]);
  add(tr("t-hybrid", "--mode", "real", "--hybrid"), /--hybrid applies to the synthetic env/, [o("t-hybrid")]);
  add(tr("t-s2r", "--mode", "s2r", "--buffer", f("good.db")), /realBudget/, [o("t-s2r")]);
  add(tr("t-alf", "--env", "alfworld", "--mode", "dreamgym", "--buffer", f("good.db")), /holds webshop trajectories, not alfworld/, [o("t-alf")]);
  add(["train", "--resume", f("no-such-run")], /holds no run/, [f("no-such-run")]);
  add(["train", "--resume", ""], /--resume needs the folder of the run to continue/);
  add(["train", "--resume", f("run-bad-config")], /config\.json:1:\d+: corrupt JSON/);
  add(["train", "--resume", f("run-bad-latest")], /latest\.json:1:\d+: corrupt JSON/);
  add(["train", "--resume", f("run-empty-state")], /latest\.json: the checkpoint's state lacks iteration, realInteractions/); // issue 34, item 8
  add(["train", "--resume", f("run-bad-latest"), "--seed", "5"], /--resume continues a run with its own config; drop --seed/);

  // rollout.
  const rl = (name: string, ...rest: string[]) => ["rollout", "--env", "webshop", "--model", DEAD_MODEL, "--out", o(name), ...rest];
  add(["rollout", "--env", "nowhere", "--model", DEAD_MODEL, "--out", o("r-env.jsonl")], /unknown environment "nowhere"/, [o("r-env.jsonl")]);
  for (const v of ["1e30"]) add(rl(`r-tasks${v}.jsonl`, "--tasks", v), /--tasks must be an integer/, [o(`r-tasks${v}.jsonl`)]);
  add(rl("r-temp.jsonl", "--temperature", "3"), /--temperature must be a number in \[0, 2\]/, [o("r-temp.jsonl")]);
  add(rl("r-format.jsonl", "--format", "csv"), /--format must be steps or trajectories/, [o("r-format.jsonl")]);
  add(rl("r-split.jsonl", "--split", "nosplit"), /unknown WebShop split/, [o("r-split.jsonl")]);
  add(["rollout", "--env", "alfworld", "--model", DEAD_MODEL, "--out", o("r-alfsplit.jsonl"), "--split", "test"], /unknown ALFWorld split "test"/, [
    o("r-alfsplit.jsonl"),
  ]);
  add(["rollout", "--env", "webshop", "--model", "bogus-model", "--out", o("r-model.jsonl")], /unknown model "bogus-model"/, [o("r-model.jsonl")]);
  add(["rollout", "--env", "webshop", "--model", DEAD_MODEL, "--out", join(dir, "no-such-folder", "r.jsonl")], /does not exist/, [join(dir, "no-such-folder")]);
  add(["rollout", "--env", "webshop", "--model", DEAD_MODEL, "--out", f("a-folder")], /--out is a folder/);
  // A cache that cannot be opened: no output made.
  add(rl("r-cachedir.jsonl", "--concurrency", "1", "--cache", f("a-folder")), /a-folder: cannot open the response cache: unable to open database file$/, [
    o("r-cachedir.jsonl"),
  ]);
  add(rl("r-notdb.jsonl", "--concurrency", "1", "--cache", f("not-a-db.db")), /not-a-db\.db: cannot open the response cache: file is not a database$/, [
    o("r-notdb.jsonl"),
  ]);

  // demo.
  add(["demo", "--out", o("d-budget"), "--budget", "0"], /--budget must be an integer/, [o("d-budget")]);
  add(["demo", "--out", f("good.jsonl")], /--out is a file, not a folder/);
  add(["demo", "--out", f("not-demo")], /is not a demo folder/);
  // The experience model is checked before the demo seeds anything (a dead endpoint: endpoint-failures-cli.test.ts).
  add(["demo", "--out", o("d-model"), "--experience", "bogus-model"], /unknown model "bogus-model"/, [o("d-model")]);
  add(["demo", "--out", o("d-learned"), "--experience", `learned:${f("no-model.bin")}`], /cannot read the learned model .*no-model\.bin: no such file/, [
    o("d-learned"),
  ]);
  return c;
}

interface Result {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `dreamgym <args>` in the binary, without blocking (it runs beside the in-process cases). */
function spawnCli(args: string[]): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, DREAMGYM_DATA: process.env.DREAMGYM_DATA },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/** What is wrong with a case's result (nothing: []). */
function problemsOf({ expect, absent = [] }: Case, r: Result): string[] {
  const lines = r.stderr.trimEnd().split("\n");
  const problems: string[] = [];
  if (r.status !== 2) problems.push(`exit ${r.status}`);
  if (lines.length !== 1 || !lines[0].startsWith("error: ")) problems.push(`stderr is not one "error: " line`);
  if (r.stderr.split("\n").some((l) => /^\s+at /.test(l))) problems.push("stack trace");
  if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(r.stderr + r.stdout)) problems.push("raw control bytes in the output");
  if (!expect.test(lines[0])) problems.push(`error does not match ${expect}`);
  for (const p of absent) if (existsSync(p)) problems.push(`left ${p}`);
  return problems;
}

/** Process-wide state an in-process run must leave as it found it. */
const processState = () => ({
  exitCode: process.exitCode,
  listeners: Object.fromEntries((["SIGINT", "SIGTERM", "exit"] as const).map((e) => [e, process.listenerCount(e)])),
});

test("every command refuses bad input with exit 2, one line, no stack trace, no output left, no input changed", async () => {
  // DREAMGYM_FUZZ_ONLY=<regex> runs the cases whose command line matches (when working on one command).
  const only = process.env.DREAMGYM_FUZZ_ONLY ? new RegExp(process.env.DREAMGYM_FUZZ_ONLY) : null;
  const table = cases().filter((c) => !only || only.test(c.args.join(" ")));
  const failures: string[] = [];
  const fail = (how: string, args: string[], problems: string[], r: Result) =>
    failures.push(`${how} dreamgym ${args.join(" ")}\n    ${problems.join("; ")}\n    stderr: ${JSON.stringify(r.stderr.slice(0, 600))}`);
  // The binary's cases start first and run in their own processes, beside the in-process ones.
  const viaBinary = table.filter((c) => c.binary).map((c) => ({ c, result: spawnCli(c.args.map(toBin)) }));
  const inProcess = new Map<Case, Result>();
  for (const c of table) {
    const before = processState();
    const r = await runInProcess(c.args);
    inProcess.set(c, r);
    const problems = problemsOf(c, r);
    const after = processState();
    if (JSON.stringify(after) !== JSON.stringify(before)) problems.push(`changed the process's state: ${JSON.stringify(before)} → ${JSON.stringify(after)}`);
    if (problems.length) fail("(in-process)", c.args, problems, r);
  }
  for (const { c, result } of viaBinary) {
    const ran = await result;
    const r = { ...ran, stdout: fromBin(ran.stdout), stderr: fromBin(ran.stderr) };
    const problems = problemsOf({ ...c, absent: c.absent?.map(toBin) }, r);
    const mine = inProcess.get(c)!;
    if (r.status !== mine.status || r.stdout !== mine.stdout || r.stderr !== mine.stderr)
      problems.push(`the binary differs from the in-process run: ${JSON.stringify(mine).slice(0, 600)}`);
    if (problems.length) fail("(bin/dreamgym)", c.args.map(toBin), problems, ran);
  }
  // No temporary or partial files, and the inputs are as they were.
  const leftovers = [...readdirSync(out), ...readdirSync(outBin).map((n) => `(binary's) ${n}`)];
  if (only) snapshotBefore = snapshot(); // a subset proves nothing about the inputs it did not run
  if (leftovers.length) failures.push(`files left in the output folder: ${leftovers.join(", ")}`);
  const now = snapshot();
  for (const [p, h] of snapshotBefore) if (now.get(p) !== h) failures.push(`input changed: ${p}`);
  for (const p of now.keys()) if (!snapshotBefore.has(p)) failures.push(`new file beside the inputs: ${p}`);
  console.log(`cli-fuzz: ${table.length} cases in-process, ${viaBinary.length} of them through bin/dreamgym too`);
  assert.equal(failures.length, 0, `${failures.length} failures in ${table.length} cases:\n${failures.join("\n")}`);
});
