import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { InvalidConfigError, type Task } from "../../core/index.ts";
import { BrowserEnv, BrowserPool, BrowserUnavailableError, parseBrowserAction, parseElements, SiteUnreachableError, type BrowserSite } from "./index.ts";

/**
 * A small site of our own: a start page with a text box, a select, a link to a page that never
 * answers (the action timeout), and a link to a page that says "done" (the judge's end signal).
 */
const held: ServerResponse[] = [];
let server: Server;
let base = "";
const START = `<!DOCTYPE html><html><body><h1>Start</h1><p>Some <b>bold</b> text</p>
<label for="q">Query</label><input id="q" type="text"><select id="s"><option>Small</option><option>Large</option></select>
<a href="/hang">slow page</a> <a href="/done">finish</a><div style="display:none"><button>hidden</button></div></body></html>`;

before(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url === "/hang") return void held.push(res); // answered when the test ends
    res.setHeader("content-type", "text/html");
    res.end(req.url === "/done" ? "<!DOCTYPE html><html><body><p id=score>0.75</p></body></html>" : START);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  base = `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`;
});
const pools: BrowserPool[] = [];
after(async () => {
  for (const p of pools) await p.close();
  for (const r of held) r.destroy();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const tasks: Task[] = [{ id: "t:0", instruction: "finish" }];
function site(start = () => `${base}/`): BrowserSite {
  return {
    name: "toy",
    tasks: () => tasks,
    startUrl: start,
    async judge(page, _task, ended) {
      if (new URL(page.url()).pathname === "/done") return { reward: Number(await page.locator("#score").textContent()), detail: "done" };
      return ended.stopped ? { reward: 0, detail: "stopped" } : null;
    },
  };
}
function pool(size: number): BrowserPool {
  const p = new BrowserPool({ size });
  pools.push(p);
  return p;
}
/** One context, one browser, for the tests that need no more. */
let single: BrowserPool | undefined;
const one = () => (single ??= pool(1));

test("the page state: text in reading order, elements with ids, roles and names; hidden ones left out", async () => {
  const env = new BrowserEnv({ site: site(), pool: one() });
  const { observation } = await env.reset();
  assert.equal(
    observation,
    [
      "Start",
      "Some bold text",
      '[1] textbox "Query"',
      '[2] combobox "" options: "Small" | "Large" selected "Small"',
      '[3] link "slow page"',
      '[4] link "finish"',
    ].join("\n"),
  );
  assert.deepEqual(env.availableActions(), [
    "type [1] [<query>]",
    "select [2] [Small]",
    "select [2] [Large]",
    "click [3]",
    "click [4]",
    "go_back",
    "stop [<query>]",
  ]);
  assert.deepEqual(
    parseElements(observation).map((e) => [e.id, e.role]),
    [
      [1, "textbox"],
      [2, "combobox"],
      [3, "link"],
      [4, "link"],
    ],
  );
  const typed = await env.step("type [1] [red shoes] [0]");
  assert.match(typed.observation, /\[1\] textbox "Query" value="red shoes"/);
  const picked = await env.step("select [2] [Large]");
  assert.match(picked.observation, /selected "Large"/);
  assert.equal((await env.step("select [2] [Medium]")).info.invalid, true);
  const done = await env.step("click [4]");
  assert.equal(done.terminated, true);
  assert.equal(done.reward, 0.75);
  assert.equal(env.availableActions()!.length, 0);
  await env.close();
});

test("stop ends the episode with the site's verdict", async () => {
  const env = new BrowserEnv({ site: site(), pool: one() });
  await env.reset();
  const r = await env.step("stop [nothing found]");
  assert.deepEqual([r.terminated, r.reward, r.info.verdict], [true, 0, "stopped"]);
  await env.close();
});

test("an action past its timeout ends the episode as failed, never hangs; the next reset works", async () => {
  const env = new BrowserEnv({ site: site(), pool: one(), actionTimeoutMs: 1500 });
  await env.reset();
  const r = await env.step("click [3]");
  assert.equal(r.truncated, true);
  assert.match(String(r.info.error), /timed out|Timeout/i);
  const again = await env.reset();
  assert.match(again.observation, /^Start/);
  assert.equal((await env.step("click [4]")).reward, 0.75);
  await env.close();
});

test("a site that does not answer: an error naming its URL", async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const a = closed.address();
  const url = `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}/start`;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const env = new BrowserEnv({ site: site(() => url), pool: one() });
  await assert.rejects(env.reset(), (e: Error) => SiteUnreachableError.isInstance(e) && e.message.includes(url) && /CONNECTION_REFUSED/.test(e.message));
  await env.close();
});

test("a task the site refuses: its error, and the context goes back unharmed", async () => {
  const p = one();
  const broken = p.stats.broken;
  const env = new BrowserEnv({
    site: site(() => {
      throw new InvalidConfigError("no such task");
    }),
    pool: p,
  });
  await assert.rejects(env.reset(), /no such task/);
  assert.equal(p.inUse, 0);
  assert.equal(p.stats.broken, broken);
  await env.close();
});

test("the pool leases at most N contexts: a third env waits until an episode ends", async () => {
  const p = pool(2);
  const envs = [0, 1, 2].map(() => new BrowserEnv({ site: site(), pool: p }));
  await envs[0].reset();
  await envs[1].reset();
  assert.equal(p.inUse, 2);
  let third = false;
  const waiting = envs[2].reset().then(() => (third = true));
  // Nothing else can free a context: the third reset stays pending however long the loop turns.
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
  assert.equal(third, false);
  assert.equal((await envs[0].step("click [4]")).terminated, true); // its episode ends: its context goes back
  await waiting;
  assert.equal(third, true);
  assert.equal(p.inUse, 2);
  assert.ok(p.stats.contexts <= 2, "the freed context is reused");
  for (const e of envs) await e.close();
  assert.equal(p.inUse, 0);
});

test("an abandoned episode's idle context is reclaimed for a waiting env; the abandoned env reports the failure", async () => {
  const p = new BrowserPool({ size: 1, reclaimIdleMs: 200 });
  pools.push(p);
  const [a, b] = [0, 1].map(() => new BrowserEnv({ site: site(), pool: p }));
  await a.reset(); // and never stepped again
  const r = await b.reset(); // waits until a's lease has sat idle long enough
  assert.match(r.observation, /^Start/);
  assert.equal(p.stats.reclaimed, 1);
  const lost = await a.step("click [4]");
  assert.deepEqual([lost.truncated, lost.terminated, lost.reward], [true, false, 0]);
  assert.match(String(lost.info.error), /reclaimed/);
  assert.equal((await b.step("click [4]")).reward, 0.75);
  await a.close();
  await b.close();
});

test("Chromium missing: an error that names the package", async () => {
  const p = new BrowserPool({ executablePath: "/nonexistent/chromium" });
  await assert.rejects(
    p.acquire(),
    (e: Error) => BrowserUnavailableError.isInstance(e) && /apt-get install chromium/.test(e.message) && !e.message.includes("\n"),
  );
  await p.close();
});

test("a browser that cannot open a page after one restart: one clear line, not the driver's error", async () => {
  // A storage state that does not exist makes every new context fail, on the first browser and on its restart.
  const p = new BrowserPool({ contextOptions: { storageState: "/nonexistent/state.json" } });
  try {
    await assert.rejects(
      p.acquire(),
      (e: Error) => BrowserUnavailableError.isInstance(e) && /could not open a page/.test(e.message) && !e.message.includes("\n"),
    );
    assert.equal(p.stats.launches, 2);
  } finally {
    await p.close();
  }
});

test("the action grammar", () => {
  assert.deepEqual(parseBrowserAction("click [12]"), { kind: "click", id: 12 });
  assert.deepEqual(parseBrowserAction("click[3]"), { kind: "click", id: 3 });
  assert.deepEqual(parseBrowserAction('type [5] [28" x 28" [big]]'), { kind: "type", id: 5, text: '28" x 28" [big]', enter: true });
  assert.deepEqual(parseBrowserAction("type [5] [shoes] [0]"), { kind: "type", id: 5, text: "shoes", enter: false });
  assert.deepEqual(parseBrowserAction("select [2] [Large]"), { kind: "select", id: 2, option: "Large" });
  assert.deepEqual(parseBrowserAction("go_back"), { kind: "go_back" });
  assert.deepEqual(parseBrowserAction("stop [42]"), { kind: "stop", answer: "42" });
  for (const bad of ["click", "click [x]", "search[shoes]", "type [1]", ""]) assert.equal(parseBrowserAction(bad), null, bad);
});
