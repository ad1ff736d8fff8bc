// `dreamgym view`'s HTTP API on a small real run (loopback, port 0, real fetch), and its command's
// bad input and shutdown (the real bin/dreamgym in a child process).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { appendFileSync, cpSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeFileAtomic } from "../src/core/index.ts";
import { auditTable, summarizeReplays, type AuditPair, type OnPolicyAuditSummary } from "../src/experience/index.ts";
import { createViewApp, startServer, type RunningServer } from "../src/server/index.ts";
import { RunStore } from "../src/server/view/run-store.ts";
import { auditFiles, readAuditPairs, readMetrics } from "../src/train/index.ts";
import { BIN, run, runInProcess } from "./helpers.ts";
import { makeViewFixture } from "./view-fixture.ts";

let root: string;
let fx: Awaited<ReturnType<typeof makeViewFixture>>;
let server: RunningServer;
// The API's answers, read loosely: the test checks their fields itself.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
const get = async (path: string, init?: RequestInit): Promise<{ status: number; body: Json; res: Response }> => {
  const res = await fetch(`${server.url}${path}`, init);
  return { status: res.status, body: (res.headers.get("content-type") ?? "").includes("json") ? await res.json() : await res.text(), res };
};

before(async () => {
  root = mkdtempSync(join(tmpdir(), "dreamgym-view-"));
  fx = await makeViewFixture(root);
  // A third run, still "training": a copy without its summary.
  cpSync(fx.dirs[0], join(fx.runs, "live"), { recursive: true });
  rmSync(join(fx.runs, "live", "summary.json"));
  server = await startServer({ app: createViewApp({ runs: fx.runs, buffer: fx.buffer }), port: 0, host: "127.0.0.1" });
});
after(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

test("runs: every run folder under the root, with mode, env, budget, final eval and status", async () => {
  const { status, body } = await get("/api/runs");
  assert.equal(status, 200);
  assert.deepEqual(
    body.runs.map((r: { id: string }) => r.id),
    ["exp/seed-3", "exp/seed-4", "live"],
  );
  const [a, b, live] = body.runs;
  assert.equal(a.group, "exp");
  assert.equal(a.mode, "dreamgym");
  assert.equal(a.env, "view-corridor");
  assert.equal(a.budget, 400);
  assert.deepEqual(a.eval, fx.summaries[0].final);
  assert.equal(a.finalEval, true);
  assert.equal(a.iterations, fx.summaries[0].iterations);
  assert.equal(b.syntheticInteractions, fx.summaries[1].syntheticInteractions);
  assert.equal(a.status, "finished");
  assert.equal(live.status, "running"); // no summary, metrics just written
  assert.equal(live.finalEval, false);
  assert.equal(a.audited, true);
});

test("metrics: from a line on, so a live view reads only what a training run appended", async () => {
  const all = (await get("/api/run/metrics?run=live")).body.metrics;
  assert.equal(all.length, fx.summaries[0].iterations);
  assert.deepEqual((await get(`/api/run/metrics?run=live&since=${all.length}`)).body.metrics, []);
  const next = { ...all.at(-1), iteration: all.length + 1, meanReward: 0.5 };
  appendFileSync(join(fx.runs, "live", "metrics.jsonl"), JSON.stringify(next) + "\n");
  const tail = (await get(`/api/run/metrics?run=live&since=${all.length}`)).body.metrics;
  assert.deepEqual(tail, [next]);
  const runs = (await get("/api/runs")).body.runs;
  assert.equal(runs.find((r: { id: string }) => r.id === "live").iterations, all.length + 1);
});

test("episodes: filtered and paged by key; pages cover the filter once each", async () => {
  const first = (await get("/api/episodes?src=buffer&limit=5")).body;
  assert.equal(first.total, 12);
  assert.ok(first.episodes.every((e: { origin: string }) => e.origin === "offline"));
  assert.deepEqual(first.envs, ["view-corridor"]);
  // Walk a run's buffer 7 at a time.
  const seen: number[] = [];
  let after: number | null | undefined;
  let total = 0;
  do {
    const page = (await get(`/api/episodes?src=run&run=exp/seed-3&limit=7${after ? `&after=${after}` : ""}`)).body;
    total = page.total;
    assert.ok(page.episodes.length <= 7);
    seen.push(...page.episodes.map((e: { id: number }) => e.id));
    after = page.next;
  } while (after !== null);
  assert.equal(seen.length, total);
  assert.equal(new Set(seen).size, total);
  assert.deepEqual(
    seen,
    [...seen].sort((x, y) => x - y),
  );

  const synthetic = (await get("/api/episodes?src=run&run=exp/seed-3&origin=synthetic&limit=1000")).body;
  const offline = (await get("/api/episodes?src=run&run=exp/seed-3&origin=offline&limit=1000")).body;
  assert.equal(offline.total, 12, "the run's buffer started as a copy of the seed");
  assert.equal(synthetic.total + offline.total, total);
  const own = (await get("/api/episodes?src=run&run=exp/seed-3&own=true&limit=1000")).body;
  const runId = (await get("/api/run?run=exp/seed-3")).body.config.runId;
  assert.equal(own.total, synthetic.total);
  assert.ok(own.episodes.every((e: { policy: string }) => e.policy.startsWith(`neural@${runId}#`)));
  const won = (await get("/api/episodes?src=run&run=exp/seed-3&origin=synthetic&success=true&limit=1000")).body;
  assert.ok(won.total > 0 && won.total < synthetic.total);
  assert.ok(won.episodes.every((e: { success: boolean; totalReward: number }) => e.success && e.totalReward >= 1));
  const paid = (await get("/api/episodes?src=run&run=exp/seed-3&origin=synthetic&minReward=0.5&limit=1000")).body;
  assert.deepEqual(
    paid.episodes.map((e: { id: number }) => e.id),
    won.episodes.map((e: { id: number }) => e.id),
    "reward ≥ 0.5: the successes (rewards are 0 or 1)",
  );
  assert.equal((await get("/api/episodes?src=run&run=exp/seed-3&minReward=lots")).status, 400);
  // Task text: the generated tasks' instructions ("then wait").
  const varied = (await get("/api/episodes?src=run&run=exp/seed-3&task=then%20wait&limit=1000")).body;
  assert.ok(varied.total > 0);
  assert.ok(varied.episodes.every((e: { task: { id: string } }) => e.task.id.includes("~g")));
  // LIKE's wildcards in the text match themselves.
  assert.equal((await get("/api/episodes?src=run&run=exp/seed-3&task=%25&limit=5")).body.total, 0);
});

test("an episode: its steps with the model's reasoning, and the audited pair it was replayed in", async () => {
  const own = (await get("/api/episodes?src=run&run=exp/seed-3&own=true&limit=1000")).body.episodes as { id: number }[];
  const pairs = readFileSync(join(fx.dirs[0], "audit", "iteration-0001.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as AuditPair);
  let linked = 0;
  for (const { id } of own) {
    const { body } = await get(`/api/episode?src=run&run=exp/seed-3&id=${id}`);
    assert.equal(body.steps.length, body.episode.steps);
    assert.ok(body.steps.every((s: { reasoning?: string }) => typeof s.reasoning === "string" && s.reasoning.length > 0));
    if (!body.replayed) continue;
    linked++;
    const pair = (await get(`/api/run/audit-pair?run=exp/seed-3&iteration=${body.replayed.iteration}&index=${body.replayed.index}`)).body as AuditPair & {
      iteration: number;
    };
    assert.equal(pair.task.id, body.episode.task.id);
    assert.deepEqual(
      pair.synthetic.steps.slice(0, body.steps.length).map((s) => s.action),
      body.steps.map((s: { action: string }) => s.action),
    );
  }
  assert.ok(linked >= pairs.length, `${linked} episodes linked to their audit`);
  // The pair: the first divergence is the first step whose real state differs from the synthetic one.
  for (const p of pairs) {
    const i = p.synthetic.steps.findIndex(
      (s, k) => p.real.steps[k] !== undefined && (p.real.steps[k].observation !== s.nextObservation || p.real.steps[k].terminated !== s.terminated),
    );
    assert.equal(p.divergedAt, i < 0 ? null : i + 1);
  }
  assert.equal((await get("/api/episode?src=buffer&id=99999")).status, 404);
});

test("audit: a row per audited iteration and one over the kept episodes; curriculum: the generated tasks under their parents", async () => {
  const { body } = await get("/api/run/audit?run=exp/seed-3");
  const audited = readFileSync(join(fx.dirs[0], "metrics.jsonl"), "utf8")
    .trim()
    .split("\n")
    .filter((l) => l.includes('"onPolicyAudit"')).length;
  assert.equal(body.lines.length, audited + 1);
  assert.equal(body.header[0], "iteration");
  const all = body.lines.at(-1);
  assert.equal(all[0], "all");
  assert.equal(Number(all[1]), body.pairs.length);
  assert.equal(body.pairsTotal, body.pairs.length);
  assert.equal(all[body.header.indexOf("exploitation")], "100.0%", "the planted jump is exploited: every synthetic success fails for real");
  // The pooled row's groups are each one iteration's: its pairs are the iterations' pairs, no more.
  const perIteration = body.rows
    .filter((r: { iteration: unknown }) => r.iteration !== "all")
    .reduce((n: number, r: { summary: { advantage?: { pairs: number } } }) => n + (r.summary.advantage?.pairs ?? 0), 0);
  assert.equal(body.rows.at(-1).summary.advantage.pairs, perIteration);
  assert.ok(
    body.pairs.every((p: { synthetic?: unknown }) => p.synthetic === undefined),
    "the list leaves the episodes out",
  );

  const tree = (await get("/api/run/curriculum?run=exp/seed-3")).body;
  const latest = JSON.parse(readFileSync(join(fx.dirs[0], "checkpoints", "latest.json"), "utf8"));
  assert.equal(tree.generated, latest.curriculum.generated.length);
  const walk = (n: { id: string; children: { id: string; parent: string }[] }): number =>
    n.children.reduce((c, x) => (assert.equal(x.parent, n.id), c + 1 + walk(x as never)), 0);
  assert.equal(
    tree.roots.reduce((c: number, r: never) => c + walk(r), 0),
    tree.generated,
  );
  assert.ok(tree.roots.every((r: { generation: number; instruction: string }) => r.generation === 0 && r.instruction.length > 0));
  // Each root is a seed task, shown with its own instruction.
  const seeds = new Map(
    (await get("/api/episodes?src=run&run=exp/seed-3&limit=200")).body.episodes.map((e: { task: { id: string; instruction: string } }) => [
      e.task.id,
      e.task.instruction,
    ]),
  );
  const shown = (tree.roots as { id: string; instruction: string }[]).filter((r) => seeds.has(r.id));
  assert.ok(shown.length > 0);
  for (const r of shown) assert.equal(r.instruction, seeds.get(r.id), r.id);
  const used = tree.roots.flatMap((r: { uses: { variance: number }[] }) => r.uses);
  assert.ok(used.length > 0 && used.some((u: { variance: number }) => u.variance > 0));
});

/** `/api/run/audit` as it was computed before its cache: every audit file read and parsed anew. */
function auditReadAnew(dir: string) {
  const rows: { iteration: number | "all"; summary: OnPolicyAuditSummary }[] = readMetrics(dir)
    .filter((m) => m.onPolicyAudit !== undefined)
    .map((m) => ({ iteration: m.iteration, summary: m.onPolicyAudit! }));
  const pairs = auditFiles(dir).flatMap((f) => readAuditPairs(f.file).map((p) => ({ ...p, iteration: f.iteration })));
  if (pairs.length > 0)
    rows.push({ iteration: "all", summary: summarizeReplays(pairs.map((p) => (p.group === undefined ? p : { ...p, group: `${p.iteration}/${p.group}` }))) });
  const heads = pairs.map(({ synthetic: _s, real: _r, ...head }) => head);
  return JSON.parse(JSON.stringify({ ...auditTable(rows), rows, pairs: heads })) as Json;
}

test("audit: the answers of every file read anew, also after audit files are rewritten, removed, added or linked out of the run", async () => {
  const runs = mkdtempSync(join(tmpdir(), "dreamgym-view-audit-"));
  const dir = join(runs, "r");
  cpSync(fx.dirs[0], dir, { recursive: true });
  const file = (i: number) => join(dir, "audit", `iteration-${String(i).padStart(4, "0")}.jsonl`);
  const view = await startServer({ app: createViewApp({ runs }), port: 0, host: "127.0.0.1" });
  const audit = async () => (await (await fetch(`${view.url}/api/run/audit?run=r`)).json()) as Json;
  /** The answer's first page (`/api/run/audit` pages the audited episodes, 200 a page by default). */
  const page = (whole: Json, offset = 0, limit = 200) => ({
    ...whole,
    pairs: whole.pairs.slice(offset, offset + limit),
    offset,
    pairsTotal: whole.pairs.length,
  });
  const pair = async (iteration: number, index: number) =>
    (await (await fetch(`${view.url}/api/run/audit-pair?run=r&iteration=${iteration}&index=${index}`)).json()) as Json;
  // The same store with room for 5 heads: it drops files it read and reads them again, to the same answers.
  const small = new RunStore(runs, { auditHeadsKept: 5 });
  const same = async (what: string) => {
    const expected = auditReadAnew(dir);
    assert.deepEqual(await audit(), page(expected), what);
    assert.deepEqual(await audit(), page(expected), `${what}, asked again`);
    assert.deepEqual(JSON.parse(JSON.stringify(small.audit(dir))), expected, `${what}, 5 heads kept`);
    for (const f of auditFiles(dir))
      for (const p of readAuditPairs(f.file)) assert.deepEqual(await pair(f.iteration, p.index), { ...p, iteration: f.iteration }, what);
    return expected;
  };
  try {
    const first = await same("as trained");
    assert.ok(first.pairs.length >= 8);
    // Pages of the audited episodes; a bad page is one line.
    const paged = async (q: string) => (await (await fetch(`${view.url}/api/run/audit?run=r&${q}`)).json()) as Json;
    assert.deepEqual(await paged("offset=3&limit=4"), page(first, 3, 4));
    assert.deepEqual((await paged(`offset=${first.pairs.length}&limit=4`)).pairs, []);
    for (const bad of ["limit=0", "limit=1001", "offset=-1", "limit=x"]) {
      const r = await fetch(`${view.url}/api/run/audit?run=r&${bad}`);
      assert.equal(r.status, 400, bad);
      assert.match(((await r.json()) as Json).error, /limit must be 1–1000|must be a non-negative integer/, bad);
    }
    // Rewritten as the trainer writes (a new file renamed over it): its first pair only, which the real env now passes.
    const [kept] = readAuditPairs(file(2));
    writeFileAtomic(file(2), JSON.stringify({ ...kept, realSuccess: !kept.realSuccess, realReturn: kept.realReturn + 1 }) + "\n");
    await same("a file rewritten");
    // Rewritten in place at its size (same inode): the time tells; set, as a file system may keep whole seconds only.
    const text = readFileSync(file(1), "utf8");
    const flipped = text.includes('"realSuccess":false')
      ? text.replace('"realSuccess":false', '"realSuccess":true ')
      : text.replace('"realSuccess":true', '"realSuccess":false');
    assert.notEqual(flipped, text);
    writeFileSync(file(1), flipped);
    utimesSync(file(1), new Date(2000, 0, 1), new Date(2000, 0, 1));
    await same("a file rewritten in place at its size");
    rmSync(file(3)); // as a resume drops those past its checkpoint
    await same("a file removed");
    cpSync(file(4), file(40));
    await same("a file added");
    // A second file of one iteration (another padding of its number): its pairs are found too.
    writeFileSync(
      join(dir, "audit", "iteration-40.jsonl"),
      readAuditPairs(file(40))
        .map((p) => JSON.stringify({ ...p, index: p.index + 100 }))
        .join("\n") + "\n",
    );
    await same("two files of one iteration");
    // Links: one leading out of the run is not read; one inside it is.
    const outside = mkdtempSync(join(tmpdir(), "dreamgym-view-audit-outside-"));
    cpSync(file(4), join(outside, "iteration-0041.jsonl"));
    symlinkSync(join(outside, "iteration-0041.jsonl"), file(41));
    symlinkSync(file(5), file(42));
    const linked = (await audit()) as Json;
    assert.equal((await fetch(`${view.url}/api/run/audit-pair?run=r&iteration=41&index=0`)).status, 404);
    rmSync(file(41)); // the answer, as if it were not there
    assert.deepEqual(linked, page(await same("links")));
    assert.ok(linked.pairs.some((p: { iteration: number }) => p.iteration === 42));
    // An audit folder that leads out of the run: none of its files are read.
    renameSync(join(dir, "audit"), join(outside, "audit"));
    symlinkSync(join(outside, "audit"), join(dir, "audit"));
    assert.deepEqual((await audit()).pairs, []);
    assert.deepEqual(JSON.parse(JSON.stringify(small.audit(dir))).pairs, []);
    rmSync(outside, { recursive: true, force: true });
  } finally {
    await view.close();
    rmSync(runs, { recursive: true, force: true });
  }
});

test("search: the demos the experience model would be given, best first", async () => {
  const state = encodeURIComponent("page: corridor\ninstruction: walk to the end of the corridor\nposition 2 of 4\n[left] [right]");
  const { status, body } = await get(`/api/search?src=buffer&state=${state}&action=click%5Bright%5D&k=3`);
  assert.equal(status, 200);
  assert.equal(body.env, "view-corridor");
  assert.ok(body.demos.length >= 1 && body.demos.length <= 3 + 1);
  assert.equal(body.demos[0].action, "click[right]");
  assert.match(body.demos[0].state, /position 2 of 4/);
  const scores = body.demos.filter((d: { anchor?: boolean }) => !d.anchor).map((d: { score: number }) => d.score);
  assert.deepEqual(
    scores,
    [...scores].sort((x, y) => y - x),
  );
  assert.equal((await get(`/api/search?src=buffer&state=${state}&k=0`)).status, 400);
  assert.equal((await get("/api/search?src=buffer")).status, 400);
});

test("the page, its modules from node_modules, and requests that name nothing real", async () => {
  const page = await get("/");
  assert.equal(page.status, 200);
  const map = JSON.parse(/<script type="importmap">(.*?)<\/script>/.exec(page.body)![1]);
  for (const url of [...(Object.values(map.imports) as string[]), "/ui/app.js", "/ui/style.css", "/vendor/uplot.css"]) {
    const r = await get(url);
    assert.equal(r.status, 200, url);
    assert.match(r.res.headers.get("content-type")!, url.endsWith(".css") ? /text\/css/ : /javascript/);
  }
  assert.match((await get("/vendor/preact.mjs")).body, /export\s*\{/);
  assert.equal((await get("/vendor/../package.json")).status, 404);
  assert.equal((await get("/ui/../../package.json")).status, 404);
  assert.equal((await get("/api/run?run=../..")).status, 404);
  assert.equal((await get("/api/run?run=exp")).status, 404, "a folder of runs is not a run");
  assert.equal((await get("/api/run")).status, 400);
  assert.equal((await get("/api/episodes?src=elsewhere")).status, 400);
  assert.equal((await get("/api/episodes?src=buffer&origin=dreamt")).status, 400);
  assert.equal((await get("/api/episodes?src=buffer&limit=5000")).status, 400);
  assert.equal((await get("/api/episodes?src=buffer&after=-1")).status, 400);
});

test("a token: every route needs it, as a header or the cookie that /?token= sets", async () => {
  const s = await startServer({ app: createViewApp({ runs: fx.runs, token: "s3cret" }), port: 0, host: "127.0.0.1" });
  try {
    assert.equal((await fetch(`${s.url}/api/runs`)).status, 401);
    assert.equal((await fetch(`${s.url}/`)).status, 401);
    assert.equal((await fetch(`${s.url}/?token=wrong`)).status, 401);
    assert.equal((await fetch(`${s.url}/api/runs`, { headers: { authorization: "Bearer s3cret" } })).status, 200);
    const login = await fetch(`${s.url}/?token=s3cret`, { redirect: "manual" });
    assert.equal(login.status, 302);
    const cookie = login.headers.get("set-cookie")!;
    assert.match(cookie, /HttpOnly/i);
    assert.match(cookie, /SameSite=Strict/i);
    assert.equal((await fetch(`${s.url}/vendor/htm.mjs`, { headers: { cookie: cookie.split(";")[0] } })).status, 200);
  } finally {
    await s.close();
  }
});

/** Starts `dreamgym view …`, resolves with its URL once it listens. */
function startCli(args: string[]) {
  const child = spawn(process.execPath, [BIN, "view", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const url = new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (d) => {
      stdout += d;
      const m = /on (http:\/\/\S+?)\/\s/.exec(stdout);
      if (m) resolve(m[1]);
    });
    void exited.then(() => reject(new Error(`exited: ${stderr}`)));
  });
  return { child, url, exited, out: () => ({ stdout, stderr }) };
}

test("dreamgym view: serves until SIGTERM, then stops cleanly", async () => {
  const v = startCli(["--runs", fx.runs, "--buffer", fx.buffer, "--port", "0"]);
  const url = await v.url;
  const r = await fetch(`${url}/api/runs`);
  assert.equal(((await r.json()) as Json).runs.length, 3);
  v.child.kill("SIGTERM");
  assert.equal(await v.exited, 0);
  assert.match(v.out().stderr, /^SIGTERM: stopped\n$/);
});

// A timeout: a refusal run in this process that stopped refusing would serve and wait for a signal.
test("dreamgym view: bad input is one line and exit 2", { timeout: 120_000 }, async () => {
  const oneLine = (r: { status: number | null; stderr: string }, pattern: RegExp) => {
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    assert.match(r.stderr, pattern);
  };
  // The refusals in this process (the CLI's own entry point; `--port 0`, so that one which stopped refusing takes no
  // port another test holds); a token from the environment and a port in use as the binary meets them.
  oneLine(await runInProcess(["view", "--runs", join(root, "nowhere"), "--port", "0"]), /--runs .*nowhere: no such folder/);
  oneLine(await runInProcess(["view", "--runs", fx.buffer, "--port", "0"]), /is a file/);
  const notABuffer = join(root, "notes.db");
  writeFileSync(notABuffer, "these are my notes, not a database\n".repeat(100));
  oneLine(await runInProcess(["view", "--runs", fx.runs, "--buffer", notABuffer, "--port", "0"]), /not a dreamgym buffer/);
  assert.equal(readFileSync(notABuffer, "utf8"), "these are my notes, not a database\n".repeat(100), "left as it was");
  oneLine(await runInProcess(["view", "--runs", fx.runs, "--buffer", join(root, "missing.db"), "--port", "0"]), /--buffer .*missing\.db: no such file/);
  oneLine(await runInProcess(["view", "--runs", fx.runs, "--port", "70000"]), /^error: --port must be an integer from 0 to 65535, got "70000"$/m);
  oneLine(run(["view", "--runs", fx.runs, "--host", "0.0.0.0"], undefined, { ...process.env, DREAMGYM_TOKEN: "" }), /token/);
  // A port in use.
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  try {
    const port = (holder.address() as { port: number }).port;
    const r = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
      const c = spawn(process.execPath, [BIN, "view", "--runs", fx.runs, "--port", String(port)], { stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      c.stderr.on("data", (d) => (stderr += d));
      c.on("exit", (status) => resolve({ status, stderr }));
    });
    oneLine(r, new RegExp(`${port} is in use`));
  } finally {
    await new Promise((resolve) => holder.close(resolve));
  }
});

test("files that a symlink leads out of a run folder are not served; a run folder that is a symlink is (issue 34, item 14)", async () => {
  const runs = mkdtempSync(join(tmpdir(), "dreamgym-view-links-"));
  const outside = mkdtempSync(join(tmpdir(), "dreamgym-view-outside-"));
  writeFileSync(join(outside, "creds.json"), JSON.stringify({ runId: "x", secret: "hunter2-hunter2" }));
  writeFileSync(join(outside, "metrics.jsonl"), JSON.stringify({ iteration: 1, secret: "hunter2-hunter2" }) + "\n");
  // A run whose config.json leads outside: not a run here.
  cpSync(fx.dirs[0], join(runs, "leaky-config"), { recursive: true });
  rmSync(join(runs, "leaky-config", "config.json"));
  symlinkSync(join(outside, "creds.json"), join(runs, "leaky-config", "config.json"));
  // A run whose metrics lead outside: listed, without them.
  cpSync(fx.dirs[0], join(runs, "leaky-metrics"), { recursive: true });
  rmSync(join(runs, "leaky-metrics", "metrics.jsonl"));
  symlinkSync(join(outside, "metrics.jsonl"), join(runs, "leaky-metrics", "metrics.jsonl"));
  // A run folder that is itself a symlink (runs shared between experiments): served.
  symlinkSync(fx.dirs[1], join(runs, "alias"));
  const view = await startServer({ app: createViewApp({ runs }), port: 0, host: "127.0.0.1" });
  try {
    const list = (await (await fetch(`${view.url}/api/runs`)).json()) as { runs: { id: string; iterations: number }[] };
    assert.deepEqual(
      list.runs.map((r) => r.id),
      ["alias", "leaky-metrics"],
    );
    assert.equal(list.runs[1].iterations, 0);
    assert.ok(list.runs[0].iterations > 0);
    const metrics = await (await fetch(`${view.url}/api/run/metrics?run=leaky-metrics`)).text();
    assert.match(metrics, /"metrics":\[\]/);
    assert.doesNotMatch(metrics, /hunter2/);
  } finally {
    await view.close();
  }
});
