import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { PACKAGE_ROOT } from "../core/index.ts";
import { appendCache, cacheFile, readCache, resolveCacheDir, sourceDigest, writeCache } from "./cache-folder.ts";

/** `fn` with these environment variables (undefined: unset), restored after. */
function withEnv<T>(vars: Record<string, string | undefined>, fn: () => T): T {
  const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const set = (v: Record<string, string | undefined>) => {
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined) delete process.env[k];
      else process.env[k] = x;
    }
  };
  set(vars);
  try {
    return fn();
  } finally {
    set(before);
  }
}

test("the cache folder: $DREAMGYM_CACHE, else an absolute $XDG_CACHE_HOME/dreamgym, else ~/.cache/dreamgym; off keeps nothing", () => {
  const home = homedir();
  assert.equal(
    withEnv({ DREAMGYM_CACHE: "/x/cache", XDG_CACHE_HOME: "/y" }, () => resolveCacheDir()),
    "/x/cache",
  );
  assert.equal(
    withEnv({ DREAMGYM_CACHE: undefined, XDG_CACHE_HOME: "/y" }, () => resolveCacheDir()),
    "/y/dreamgym",
  );
  // XDG: a relative path is to be ignored.
  assert.equal(
    withEnv({ DREAMGYM_CACHE: undefined, XDG_CACHE_HOME: "rel" }, () => resolveCacheDir()),
    join(home, ".cache", "dreamgym"),
  );
  for (const off of ["off", "OFF", "0", "false", "no"]) {
    assert.equal(
      withEnv({ DREAMGYM_CACHE: off }, () => resolveCacheDir()),
      undefined,
      off,
    );
    assert.equal(
      withEnv({ DREAMGYM_CACHE: off }, () => cacheFile("x", "json", { code: "c", packages: [] })),
      undefined,
      off,
    );
  }
  // Named by a digest of the key: another key, another file.
  const a = withEnv({ DREAMGYM_CACHE: "/c" }, () => cacheFile("webshop-search", "json", { code: "c", packages: ["stemmer"], input: ["text 1"] }));
  const b = withEnv({ DREAMGYM_CACHE: "/c" }, () => cacheFile("webshop-search", "json", { code: "c", packages: ["stemmer"], input: ["text 2"] }));
  assert.match(a!, /^\/c\/webshop-search-[0-9a-f]{16}\.json$/);
  assert.notEqual(a, b);
});

test("a module's source digest follows its code; reads and writes that cannot be done are worked without", () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-cache-folder-"));
  const module = join(dir, "m.js");
  writeFileSync(module, "export const a = 1;\n");
  const first = sourceDigest(pathToFileURL(module).href);
  writeFileSync(module, "export const a = 2;\n");
  assert.match(first!, /^[0-9a-f]{64}$/);
  assert.notEqual(sourceDigest(pathToFileURL(module).href), first);
  assert.equal(sourceDigest(pathToFileURL(join(dir, "none.js")).href), undefined);

  // Written whole, read back; appended records each on a line of their own.
  const file = join(dir, "made", "deeper", "f.json");
  writeCache(file, '{"a":1}');
  assert.equal(readCache(file), '{"a":1}');
  assert.ok(appendCache(join(dir, "made", "log.jsonl"), "[1]") && appendCache(join(dir, "made", "log.jsonl"), "[2]"));
  assert.equal(readCache(join(dir, "made", "log.jsonl")), "\n[1]\n[2]");
  assert.deepEqual(readdirSync(join(dir, "made", "deeper")), ["f.json"], "no temp file left");
  // Under a file (no folder can be made there): nothing thrown, nothing made.
  assert.equal(readCache(join(module, "f.json")), undefined);
  writeCache(join(module, "f.json"), "x");
  assert.equal(appendCache(join(module, "log.jsonl"), "[1]"), false);
  // A folder this process cannot write (not as root, which writes anyway): no temp file is left.
  if (process.getuid?.() !== 0) {
    const locked = join(dir, "locked");
    writeCache(join(locked, "f.json"), "x");
    chmodSync(locked, 0o500);
    writeCache(join(locked, "g.json"), "y");
    assert.deepEqual(readdirSync(locked), ["f.json"]);
    chmodSync(locked, 0o700);
  }
});

test("with no home folder to find (no HOME, a uid with no passwd entry), there is no cache folder, and nothing throws", (t) => {
  if (process.getuid?.() !== 0 || !existsSync("/usr/bin/setpriv")) return t.skip("needs root and setpriv to run as a uid with no passwd entry");
  const ts = import.meta.url.endsWith(".ts");
  const self = new URL(`./cache-folder.${ts ? "ts" : "js"}`, import.meta.url).href;
  const script = `import(${JSON.stringify(self)}).then((m) => process.stdout.write(String(m.resolveCacheDir())))`;
  const r = spawnSync(
    "/usr/bin/setpriv",
    ["--reuid=54321", "--regid=54321", "--clear-groups", process.execPath, ...(ts ? ["--import", "tsx"] : []), "-e", script],
    { encoding: "utf8", env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !["HOME", "XDG_CACHE_HOME", "DREAMGYM_CACHE"].includes(k))) },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, "undefined");
});

test("a write prunes its kind of file once a process: those not written for 30 days and their temp files an hour old go, nothing else", () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-cache-prune-"));
  const ago = (name: string, ms: number) => {
    writeFileSync(join(dir, name), "x");
    const t = new Date(Date.now() - ms);
    utimesSync(join(dir, name), t, t);
  };
  const day = 24 * 3600 * 1000;
  ago("webshop-search-0123456789abcdef.json", 31 * day); // older code's or another catalogue's
  ago("webshop-search-fedcba9876543210.json", 29 * day);
  ago("webshop-search-fedcba9876543210.json.0123456789ab.tmp", 2 * 3600 * 1000); // a writer killed before its rename
  ago("webshop-search-fedcba9876543210.json.ba9876543210.tmp", 60 * 1000); // a writer at work
  ago("webshop-title-nouns-0123456789abcdef.jsonl", 31 * day); // another kind: pruned when that kind is written
  // Not the cache's: the folder may be shared.
  ago("results-0123456789abcdef.json", 365 * day);
  ago("notes.txt", 365 * day);
  ago("webshop-search-old.json", 365 * day);
  writeCache(join(dir, "webshop-search-aaaaaaaaaaaaaaaa.json"), "{}");
  assert.deepEqual(readdirSync(dir).sort(), [
    "notes.txt",
    "results-0123456789abcdef.json",
    "webshop-search-aaaaaaaaaaaaaaaa.json",
    "webshop-search-fedcba9876543210.json",
    "webshop-search-fedcba9876543210.json.ba9876543210.tmp",
    "webshop-search-old.json",
    "webshop-title-nouns-0123456789abcdef.jsonl",
  ]);
  assert.ok(appendCache(join(dir, "webshop-title-nouns-bbbbbbbbbbbbbbbb.jsonl"), "[1]"));
  assert.ok(!readdirSync(dir).includes("webshop-title-nouns-0123456789abcdef.jsonl"));
});

test("the modules whose own code names their cache files import no other code of ours that their output depends on", () => {
  // A cache file's name holds a digest of one module's source: code moved out of it into another module
  // would change the output without changing the name. Libraries are named by their versions instead.
  for (const [module, allowed] of [
    ["src/envs/webshop/text-search.ts", []],
    ["src/envs/webshop/title-nouns.ts", ["../cache-folder.ts"]],
  ] as const) {
    const source = readFileSync(join(PACKAGE_ROOT, module), "utf8");
    const ours = [...source.matchAll(/^import (?!type )[^;]*? from "(\.{1,2}\/[^"]+)";/gm)].map((m) => m[1]);
    assert.deepEqual(ours, allowed, module);
  }
});
