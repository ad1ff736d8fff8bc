import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DataError, InvalidConfigError } from "../../core/index.ts";
import {
  actionKind,
  checkSites,
  cleanAnswer,
  loadWebArenaTasks,
  missingSites,
  mustInclude,
  parseStopAction,
  parseTaskFile,
  pyStr,
  redditPostUrl,
  resolvePlaceholders,
  sitesFromEnvironment,
  unescapeHtml,
  urlMatch,
  wordTokenize,
  WebArenaSite,
} from "./index.ts";

test("both task files load: 812 and 165 tasks, ids webarena:<task_id>, the intent as the instruction", () => {
  const all = loadWebArenaTasks("all");
  const lite = loadWebArenaTasks("lite");
  assert.equal(all.length, 812);
  assert.equal(lite.length, 165);
  assert.deepEqual(
    all.map((t) => t.task_id),
    Array.from({ length: 812 }, (_, i) => i),
  );
  const t0 = all[0];
  assert.equal(t0.id, "webarena:0");
  assert.equal(t0.instruction, "What is the top-1 best-selling product in 2022");
  assert.deepEqual(t0.sites, ["shopping_admin"]);
  assert.equal(t0.start_url, "__SHOPPING_ADMIN__");
  assert.equal(t0.split, "all");
  assert.equal(lite[0].split, "lite");
  // Counts the data README gives: eval types and sites.
  const types = (ts: typeof all) => ts.filter((t) => t.eval.eval_types.includes("program_html")).length;
  assert.equal(types(all), 282 + 129);
  assert.equal(types(lite), 48 + 19);
  assert.equal(all.filter((t) => t.sites.includes("wikipedia")).length, 23);
  assert.throws(() => loadWebArenaTasks("train"), /unknown webarena split "train" \(known: all, lite\)/);
});

test("a malformed task file: one error naming the file, the task and the field", () => {
  const dir = mkdtempSync(join(tmpdir(), "webarena-"));
  try {
    const tasks = JSON.parse(readFileSync(join(process.env.DREAMGYM_DATA ?? "../shared/data", "webarena", "test_webarena_lite.raw.json"), "utf8")) as Record<
      string,
      any
    >[];
    const write = (mutate: (ts: Record<string, any>[]) => void) => {
      const copy = structuredClone(tasks);
      mutate(copy);
      const f = join(dir, "tasks.json");
      writeFileSync(f, JSON.stringify(copy));
      return f;
    };
    const cases: [string, (ts: Record<string, any>[]) => void, RegExp][] = [
      ["eval type", (ts) => (ts[3].eval.eval_types = ["dom_match"]), /task \[3\] \(task_id 3\) eval\.eval_types\.0: Invalid option/],
      [
        "url_match without URL",
        (ts) => {
          ts[7].eval.eval_types = ["url_match"];
          ts[7].eval.reference_url = "";
        },
        /task \[7\] \(task_id 7\) eval\.reference_url: url_match needs a reference_url/,
      ],
      ["unknown site", (ts) => (ts[10].sites = ["amazon"]), /task \[10\] \(task_id 10\) sites\.0/],
      ["missing intent", (ts) => delete ts[2].intent, /task \[2\] \(task_id 2\) intent/],
      ["string_match without answers", (ts) => (ts[0].eval.reference_answers = null), /eval\.reference_answers: string_match needs reference_answers/],
      ["duplicate id", (ts) => (ts[5].task_id = 4), /task \[5\] task_id: 4 is not unique/],
    ];
    for (const [what, mutate, want] of cases) {
      const f = write(mutate);
      assert.throws(
        () => parseTaskFile(f, "lite"),
        (e: unknown) => e instanceof DataError && e.message.startsWith(`${f}: `) && want.test(e.message) && !e.message.includes("\n"),
        what,
      );
    }
    writeFileSync(join(dir, "bad.json"), '{"not": "a list"}');
    assert.throws(() => parseTaskFile(join(dir, "bad.json"), "lite"), /bad\.json: a WebArena task file is a JSON list of tasks/);
    writeFileSync(join(dir, "cut.json"), '[{"task_id": 1,');
    assert.throws(() => parseTaskFile(join(dir, "cut.json"), "lite"), /cut\.json:1:\d+: corrupt JSON/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("placeholders resolve from the sites map; a site not given is refused by name", () => {
  const sites = checkSites({ shopping: "http://shop.test:7770/", gitlab: "http://git.test:8023" });
  assert.equal(sites.shopping, "http://shop.test:7770");
  assert.equal(resolvePlaceholders("__GITLAB__/primer/design", sites), "http://git.test:8023/primer/design");
  assert.throws(
    () => resolvePlaceholders("__SHOPPING_ADMIN__/sales", sites, "webarena:0"),
    (e: unknown) =>
      e instanceof InvalidConfigError &&
      /webarena:0 needs the shopping_admin site: give its URL \(sites\.shopping_admin, or \$SHOPPING_ADMIN\)/.test(e.message),
  );
  const lite = loadWebArenaTasks("lite");
  const multi = lite.find((t) => t.task_id === 146)!; // reddit + gitlab
  assert.deepEqual(missingSites(multi, sites), ["reddit"]);
  const site = new WebArenaSite({ sites, split: "lite" });
  assert.throws(() => site.startUrl(multi), /webarena:146 needs the reddit site/);
  assert.equal(site.startUrl(lite.find((t) => t.sites.join() === "gitlab" && t.start_url === "__GITLAB__")!), "http://git.test:8023");
  assert.throws(() => checkSites({ shop: "http://x" }), /unknown site "shop"/);
  assert.throws(() => checkSites({ map: "localhost:3000" }), /sites\.map: "localhost:3000" is not an http\(s\) URL/);
  assert.deepEqual(sitesFromEnvironment({ SHOPPING: "http://a:1/", GITLAB: "http://b:2", PATH: "/bin" }), { shopping: "http://a:1", gitlab: "http://b:2" });
  assert.throws(() => sitesFromEnvironment({ MAP: "yes" }), /\$MAP is "yes", not an http\(s\) URL of the map site/);
});

test("stop [answer] as WebArena reads it", () => {
  assert.deepEqual(parseStopAction("stop [Quest Lumaflex™ Band]"), { answer: "Quest Lumaflex™ Band" });
  assert.deepEqual(parseStopAction("stop [[1] and [2]]"), { answer: "[1] and [2]" }, "first [ to last ]");
  assert.deepEqual(parseStopAction("stop"), { answer: "" });
  assert.deepEqual(parseStopAction("stop []"), { answer: "" });
  assert.equal(parseStopAction("click [12]"), null);
  assert.equal(parseStopAction("stopwatch [3]"), null);
  assert.equal(actionKind("type [5] [red shoes] [1]"), "type");
  assert.equal(actionKind("go_back"), "go_back");
  assert.equal(actionKind("buy it"), null);
});

test("matching primitives: cleaning, tokens, Python's str of page values, entities, URLs", () => {
  assert.equal(cleanAnswer(' "Yes" '), "yes");
  assert.equal(cleanAnswer(' "Yes" ', "vab"), ' "yes" ', "VAB does not strip");
  assert.deepEqual(wordTokenize("I spent $1,000.50 (in Jan), didn't I?"), ["I", "spent", "$", "1,000.50", "(", "in", "Jan", ")", ",", "did", "n't", "I", "?"]);
  assert.deepEqual(wordTokenize("Total: 0."), ["Total", ":", "0", "."]);
  assert.equal(mustInclude("0", "Total: 0.", { tokenize: true }), 1);
  assert.equal(mustInclude("0", "Total: 10.", { tokenize: true }), 0);
  assert.equal(mustInclude("0", "Total: 10.", { tokenize: false }), 1, "canonical: substring unless a one-item list");
  assert.equal(mustInclude("Guest", "guests", { rules: "vab" }), 0, "VAB: any one-token reference is a token");
  assert.equal(pyStr(0), "0");
  assert.equal(pyStr(true), "True");
  assert.equal(pyStr(null), "None");
  assert.equal(pyStr(["a", "it's"]), "['a', \"it's\"]");
  assert.equal(pyStr({ k: 1.5 }), "{'k': 1.5}");
  assert.equal(unescapeHtml("Tom &amp; Jerry&#39;s &#x2122; &nbsp;&bogus;"), "Tom & Jerry's ™ \u00a0&bogus;");
  assert.equal(redditPostUrl("http://r:9999/f/nyc/12/slug/-/comment/3"), "http://r:9999/f/nyc/12/");
  assert.equal(redditPostUrl("http://r:9999/forums"), "http://r:9999/forums");
  // url_match: host+path substring, query values from any reference.
  assert.equal(urlMatch("http://g/a/b/-/issues/?label_name%5B%5D=bug&state=opened", "http://g/a/b/-/issues/?label_name[]=bug", undefined).score, 1);
  assert.equal(urlMatch("http://g/a/b/-/issues", "http://g/x |OR| http://g/a/b", undefined).score, 1);
  assert.equal(urlMatch("http://g/a/b/-/issues", "http://g/a/b/-/issues/?state=closed", undefined).score, 0);
  assert.equal(urlMatch("http://localhost:1/x/", "http://127.0.0.1:1/x", undefined, "vab").score, 1, "VAB: EXACT by default, localhost as 127.0.0.1");
  assert.equal(urlMatch("http://h/x?y=1", "http://h/x", undefined, "vab").score, 0);
  assert.equal(urlMatch("http://h/x?y=1", "http://h/x", "GOLD in PRED", "vab").score, 1);
});
