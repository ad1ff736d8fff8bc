// WebArena's evaluators on tasks of the real task files, against pages that mimic WebArena's sites,
// served from a loopback HTTP server and read by a real Chromium (program_html runs its JS there).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { ApiCallError, InvalidConfigError } from "../../core/index.ts";
import { OpenAIChatModel } from "../../llm/index.ts";
import { chatServer } from "../../testing/index.ts";
import { ADMIN, fixtureSites, type FixtureSites } from "../../../test/fixtures/webarena-sites.ts";
import { evaluateTask, LlmAnswerJudge, loadWebArenaTasks, type WebArenaTask } from "./index.ts";

const all = new Map(loadWebArenaTasks("all").map((t) => [t.task_id, t]));
const lite = new Map(loadWebArenaTasks("lite").map((t) => [t.task_id, t]));
const full = (id: number): WebArenaTask => all.get(id)!;

let browser: Browser;
let context: BrowserContext;
let page: Page;
let fx: FixtureSites;

before(async () => {
  fx = await fixtureSites();
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  context = await browser.newContext();
  page = await context.newPage();
});
after(async () => {
  await context?.close();
  await browser?.close();
  await fx?.close();
});

const score = async (task: WebArenaTask, answer = "", extra: Partial<Parameters<typeof evaluateTask>[1]> = {}) =>
  (await evaluateTask(task, { page, answer, sites: fx.sites, magentoAdmin: ADMIN, ...extra })).score;

test("program_html must_include on a page the agent changed (465: add to wish list)", async () => {
  const t = full(465);
  await page.goto(`${fx.sites.shopping}/`);
  assert.equal(await score(t), 0, "empty wish list: fails");
  // What an agent does: open the product, press "Add to Wish List" (a real form post).
  await page.goto(`${fx.sites.shopping}/tide-pods.html`);
  await page.click("button.towishlist");
  await page.waitForURL("**/wishlist/");
  await page.goto(`${fx.sites.shopping}/`); // program_html navigates to the wish list itself
  const r = await evaluateTask(t, { page, answer: "", sites: fx.sites });
  assert.equal(r.score, 1, r.parts[0].detail);
  assert.match(page.url(), /\/shop\/wishlist\/$/, "it went to the target URL");
});

test("program_html exact_match of an input's value, through the task's unclosed selector (458: price)", async () => {
  const t = full(458);
  assert.match(t.eval.program_html[0].locator, /\[name="product\[price\]"'\)/, "the task file's selector lacks its closing bracket");
  fx.state.price = "32.00";
  assert.equal(await score(t), 0);
  fx.state.price = "27.00";
  assert.equal(await score(t), 1);
  fx.state.price = "27.000";
  assert.equal(await score(t), 0, "exact, not numeric");
});

test("program_html with a helper locator (481: gitlab member role) and an empty locator (496: the page's HTML)", async () => {
  fx.state.memberRole = "Developer";
  assert.equal(await score(full(481)), 0);
  fx.state.memberRole = "Guest";
  assert.equal(await score(full(481)), 1);
  fx.state.shipmentComment = "";
  assert.equal(await score(full(496)), 0);
  fx.state.shipmentComment = "Tracking number 8974568499 for Federal Express assigned";
  assert.equal(await score(full(496)), 1);
});

test("url_match + program_html: the product of both (653: contact form)", async () => {
  const t = full(653);
  assert.deepEqual(t.eval.eval_types, ["url_match", "program_html"]);
  const message = "I want a refund: it broke after three days of use. Order 000000180, item B087QJN9W1.";
  await page.goto(`${fx.sites.shopping}/contact`);
  await page.fill("textarea[name=comment]", message);
  let r = await evaluateTask(t, { page, answer: "", sites: fx.sites });
  assert.deepEqual(
    r.parts.map((p) => p.score),
    [1, 1],
  );
  assert.equal(r.score, 1);
  await page.fill("textarea[name=comment]", "I want a refund for order 000000180.");
  r = await evaluateTask(t, { page, answer: "", sites: fx.sites });
  assert.deepEqual(
    r.parts.map((p) => p.score),
    [1, 0],
  );
  assert.match(r.parts[1].detail, /missing "it broke after three days of use"/);
  // Right text on the wrong page: the URL check fails, so the task does.
  await page.goto(`${fx.sites.shopping}/`);
  await page.evaluate(`document.body.insertAdjacentHTML("beforeend", ${JSON.stringify(`<textarea title="What’s on your mind?">${message}</textarea>`)})`);
  r = await evaluateTask(t, { page, answer: "", sites: fx.sites });
  assert.deepEqual(
    r.parts.map((p) => p.score),
    [0, 1],
  );
  assert.equal(r.score, 0);
});

test("url_match: base path in the final URL, each reference query value present, order free (45)", async () => {
  const t = full(45);
  const issues = `${fx.sites.gitlab}/a11yproject/a11yproject.com/-/issues/`;
  for (const [q, want] of [
    ["?sort=created_asc&state=opened", 1],
    ["?state=opened&page=1&sort=created_asc", 1],
    ["?sort=created_desc&state=opened", 0],
    ["?sort=created_asc", 0],
    ["", 0],
  ] as const) {
    await page.goto(issues + q);
    assert.equal(await score(t), want, q);
  }
});

test("reddit: url_match GOLD in PRED on a forum, program_html at the post a comment URL belongs to (600)", async () => {
  const t = full(600);
  await page.goto(`${fx.sites.reddit}/f/consoles/12345/what-is-the-recommended-console/-/comment/9`);
  const r = await evaluateTask(t, { page, answer: "", sites: fx.sites });
  assert.equal(r.score, 1, r.parts.map((p) => p.detail).join("; "));
  assert.equal(page.url(), `${fx.sites.reddit}/f/consoles/12345/`, "reddit_get_post_url cut the URL to the post");
  await page.goto(`${fx.sites.reddit}/f/nyc/777/is-car-necessary`);
  assert.equal(await score(t), 0);
});

test("helpers over Magento's REST API: the latest order (436), the latest review's rating and author (585)", async () => {
  fx.state.orderSkus = ["B07DFJ5XKH"];
  await page.goto(`${fx.sites.shopping}/`);
  assert.equal(await score(full(436)), 1);
  fx.state.orderSkus = ["B000000000"];
  assert.equal(await score(full(436)), 0);
  assert.ok(fx.rest.includes("GET /shop/rest/V1/orders"));
  const t = full(585);
  assert.equal(await score(t), 0, "the latest review is someone else's 3 stars");
  fx.state.reviews.push({ nickname: "Emma Lopez", ratings: [{ rating_name: "Rating", percent: 100 }] });
  assert.equal(await score(t), 1);
  await assert.rejects(score(t, "", { magentoAdmin: undefined }), (e: unknown) => e instanceof InvalidConfigError && /magentoAdmin/.test(e.message));
  await assert.rejects(
    score(t, "", { magentoAdmin: { username: "x", password: "y" } }),
    (e: unknown) => e instanceof ApiCallError && /HTTP 401/.test(e.message),
  );
});

test("placeholders inside required contents are resolved; a task needing a site not given is refused by name (lite 146)", async () => {
  const t = lite.get(146)!;
  await page.goto(`${fx.sites.reddit}/f/machinelearning/5/chatgpt`);
  await page.evaluate(
    `document.querySelector(".submission__inner").insertAdjacentHTML("beforeend", ${JSON.stringify(`<p>ChatGPT repo: ${fx.sites.gitlab}/convexegg/chatgpt</p>`)})`,
  );
  assert.equal(await score(t), 1);
  const { gitlab: _, ...noGitlab } = fx.sites;
  await assert.rejects(evaluateTask(t, { page, answer: "", sites: noGitlab }), /webarena:146 needs the gitlab site/);
});

test("string_match: exact_match, must_include (a one-character reference matched as a token), on the real tasks", async () => {
  await page.goto(`${fx.sites.shopping}/`);
  assert.equal(await score(full(0), '"Quest Lumaflex™ Band"'), 1, "quotes and case are cleaned");
  assert.equal(await score(full(0), "  quest lumaflex™ band "), 1);
  assert.equal(await score(full(0), "Quest Lumaflex Band"), 0);
  assert.equal(await score(full(21), "Joseph Brzezinski, Catso, Dibbins, Anglebert Dinkherhump, Michelle Davis"), 1);
  assert.equal(await score(full(21), "Joseph Brzezinski, Catso, Dibbins, Michelle Davis"), 0);
  assert.equal(await score(full(144), "0"), 1);
  assert.equal(await score(full(144), "I spent 0 dollars."), 1);
  assert.equal(await score(full(144), "10"), 0, "0 as a token, not a substring");
  // WebArena-Lite's bare-string must_include, under VAB's rules.
  assert.equal(await score(lite.get(81)!, "yjlou"), 1);
  assert.equal(await score(lite.get(81)!, "yjlou2 and others"), 0);
});

test("fuzzy_match and the N/A reason are graded by a chat model over the OpenAI protocol", async () => {
  let verdict = "The student's answer is correct.";
  const server = await chatServer({ reply: () => verdict });
  const chat = new OpenAIChatModel({ baseURL: server.url, model: "grader", backoffMs: 1, maxBackoffMs: 2 });
  const judge = new LlmAnswerJudge(chat);
  try {
    await page.goto(`${fx.sites.shopping}/`);
    const t8 = full(8);
    assert.equal(await score(t8, "None: no airport is within 5 km of CMU", { judge }), 1);
    const sent = server.requests.at(-1)!;
    const user = (sent.messages as { role: string; content: string }[]).find((m) => m.role === "user")!.content;
    assert.ok(user.includes(`question: ${t8.instruction}`) && user.includes("reference answer: There is no airport within 5 km of Carnegie Mellon University"));
    assert.ok(user.includes("student answer: none: no airport is within 5 km of cmu"), "the cleaned answer is graded");
    assert.equal(sent.temperature, 0);
    verdict = "partially correct";
    assert.equal(await score(t8, "Pittsburgh International Airport", { judge }), 0);
    verdict = "incorrect";
    assert.equal(await score(t8, "Pittsburgh International Airport", { judge }), 0);
    // N/A: "N/A" itself passes without a call; another answer is a reason, compared with string_note.
    const t22 = full(22);
    const calls = server.requests.length;
    assert.equal(await score(t22, "N/A", { judge }), 1);
    assert.equal(server.requests.length, calls, "no grader call for N/A itself");
    verdict = "same";
    assert.equal(await score(t22, "No reviewer mentions under water photos", { judge }), 1);
    assert.ok(
      (server.requests.at(-1)!.messages as { content: string }[])[1].content.includes("actual unachievable reason: There is no review about under water photo"),
    );
    verdict = "different";
    assert.equal(await score(t22, "The site is down", { judge }), 0);
    verdict = "I cannot tell.";
    await assert.rejects(score(t8, "x", { judge }), /grader's reply has no verdict/);
    await assert.rejects(score(t8, "x"), /fuzzy_match, judged by a chat model/);
    // WebArena-Lite: program_html with fuzzy_match (VAB), the references joined into one question (lite 123).
    verdict = "correct";
    await page.goto(`${fx.sites.shopping}/contact`);
    await page.fill("textarea[name=comment]", "Refund please: it broke after 3 days. Order 180, $12.99.");
    assert.equal(await score(lite.get(123)!, "", { judge }), 1);
    const last = (server.requests.at(-1)!.messages as { content: string }[])[1].content;
    assert.ok(last.includes("reference answer: refund, it broke after three days of use, 000000180, 12.99") && last.includes("student answer: Refund please"));
  } finally {
    await chat.close?.();
    await server.close();
  }
});
