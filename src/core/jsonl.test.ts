import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, writeFileSync, readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readJsonlAll, readJsonFile, writeJsonl, JsonlWriter, jsonErrorPosition, jsonlEnd, repairJsonlTail, type JsonlLineError } from "./jsonl.ts";
import { DataError } from "./errors.ts";

const dir = mkdtempSync(join(tmpdir(), "dreamgym-jsonl-"));

test("round trip: what writeJsonl writes, readJsonl reads", async () => {
  const file = join(dir, "a.jsonl");
  const records = [{ a: 1 }, { b: "x\ny" }, [1, 2]];
  await writeJsonl(file, records);
  assert.deepEqual(await readJsonlAll(file), records);
});

test("a UTF-8 byte-order mark before the first line is not part of it (issue 34, item 18)", async () => {
  const file = join(dir, "bom.jsonl");
  writeFileSync(file, "\uFEFF" + '{"a":1}\n{"b":2}\n');
  assert.deepEqual(await readJsonlAll(file), [{ a: 1 }, { b: 2 }]);
  const json = join(dir, "bom.json");
  writeFileSync(json, '\uFEFF{"c":3}');
  assert.deepEqual(readJsonFile(json), { c: 3 });
});

test("a malformed line throws a DataError naming file and line", async () => {
  const file = join(dir, "bad.jsonl");
  writeFileSync(file, '{"ok":1}\n\n{"broken":\n{"ok":2}\n');
  await assert.rejects(readJsonlAll(file), (e: unknown) => {
    assert.ok(e instanceof DataError);
    assert.equal(e.file, file);
    assert.equal(e.line, 3);
    assert.match(e.message, /bad\.jsonl:3/);
    return true;
  });
});

test("with onError, malformed lines are reported and the rest is read", async () => {
  const file = join(dir, "mixed.jsonl");
  writeFileSync(file, '{"ok":1}\nnot json\n{"ok":2}\n{"ok":');
  const errors: JsonlLineError[] = [];
  const values = await readJsonlAll(file, { onError: (e) => errors.push(e) });
  assert.deepEqual(values, [{ ok: 1 }, { ok: 2 }]);
  assert.deepEqual(
    errors.map((e) => e.line),
    [2, 4],
  );
});

test("a parse hook can reject a line, reported with its number", async () => {
  const file = join(dir, "typed.jsonl");
  writeFileSync(file, '{"n":1}\n{"n":"two"}\n');
  const errors: JsonlLineError[] = [];
  const values = await readJsonlAll(file, {
    parse: (v) => {
      const n = (v as { n: unknown }).n;
      if (typeof n !== "number") throw new Error("n must be a number");
      return n;
    },
    onError: (e) => errors.push(e),
  });
  assert.deepEqual(values, [1]);
  assert.equal(errors[0].line, 2);
  assert.match(errors[0].message, /n must be a number/);
});

test("JsonlWriter appends whole lines", () => {
  const file = join(dir, "append.jsonl");
  const w = new JsonlWriter(file, { append: false });
  w.write({ i: 1 }, { i: 2 });
  w.close();
  const w2 = new JsonlWriter(file);
  w2.write({ i: 3 });
  w2.close();
  assert.equal(readFileSync(file, "utf8"), '{"i":1}\n{"i":2}\n{"i":3}\n');
});

test("readJsonFile names the file, line and column of corrupt JSON, and missing files", () => {
  const file = join(dir, "corrupt.json");
  writeFileSync(file, '{\n  "a": 1,\n  "b": ]\n}');
  assert.throws(
    () => readJsonFile(file),
    (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.equal(e.file, file);
      assert.equal(e.line, 3);
      assert.match(e.message, /corrupt JSON at position \d+/);
      return true;
    },
  );
  assert.throws(() => readJsonFile(join(dir, "missing.json")), /missing\.json: cannot read file: ENOENT/);
});

test("jsonErrorPosition finds the first syntax error", () => {
  assert.equal(jsonErrorPosition('{"a": [1, 2, ]}'), 13);
  assert.equal(jsonErrorPosition('{"a": tru}'), 6);
  assert.equal(jsonErrorPosition("[1] x"), 4);
  assert.equal(jsonErrorPosition('{"a": "b\\q"}'), 9);
  assert.equal(jsonErrorPosition('{"a": [1, {"b": null}], "c": -1.5e3}'), -1);
});

test("repairJsonlTail cuts a torn last line and leaves clean files alone", () => {
  const file = join(dir, "torn.jsonl");
  writeFileSync(file, '{"a":1}\n{"b":2}\n{"c":');
  assert.equal(repairJsonlTail(file), true);
  assert.equal(readFileSync(file, "utf8"), '{"a":1}\n{"b":2}\n');
  assert.equal(repairJsonlTail(file), false);
  writeFileSync(file, '{"only": "torn"');
  assert.equal(repairJsonlTail(file), true);
  assert.equal(readFileSync(file, "utf8"), "");
  writeFileSync(file, '{"a":1}\n{"complete": true}');
  assert.equal(repairJsonlTail(file), true);
  assert.equal(readFileSync(file, "utf8"), '{"a":1}\n{"complete": true}\n', "a complete last line gets its newline");
  const long = join(dir, "long.jsonl");
  writeFileSync(long, `${JSON.stringify({ x: "y".repeat(200_000) })}\n${"z".repeat(100_000)}`);
  repairJsonlTail(long);
  assert.equal(readFileSync(long, "utf8").split("\n").length, 2);
});

test("jsonlEnd reads a file's end backwards: its torn tail, its last non-blank whole line, across chunk edges", () => {
  const file = join(dir, "end.jsonl");
  writeFileSync(file, '{"a":1}\r\n{"b":2}\n\n  \n{"c":');
  assert.deepEqual(jsonlEnd(file), { size: 26, tailStart: 21, tail: '{"c":', last: { start: 9, text: '{"b":2}' } });
  writeFileSync(file, '\ufeff{"a":1}\r\n');
  assert.deepEqual(jsonlEnd(file), { size: 12, tailStart: 12, tail: "", last: { start: 0, text: '{"a":1}' } });
  writeFileSync(file, "");
  assert.deepEqual(jsonlEnd(file), { size: 0, tailStart: 0, tail: "", last: null });
  // Lines longer than a chunk (64 KiB), and a limit it gives up past.
  const long = `{"x":"${"y".repeat(150_000)}"}`;
  writeFileSync(file, `${long}\n${long}\n${"z".repeat(70_000)}`);
  assert.deepEqual(jsonlEnd(file)?.last, { start: long.length + 1, text: long });
  assert.equal(jsonlEnd(file)?.tailStart, 2 * long.length + 2);
  assert.equal(jsonlEnd(file, 100_000), null);
});

test("lines cut at newline bytes: characters across 1 MB chunk edges, CRLF and a last line without a newline read back whole", async () => {
  const file = join(dir, "big.jsonl");
  const records = Array.from({ length: 30_000 }, (_, i) => ({ i, s: "é日😀x".repeat(i % 17) + "a".repeat((i * 37) % 100) }));
  writeFileSync(file, records.map((r) => JSON.stringify(r)).join("\r\n"));
  assert.deepEqual(await readJsonlAll(file), records);
});

test("writeFileAtomic: a write that fails (the file grows past a limit, as on a full disk) names the file and leaves nothing", (t) => {
  if (process.platform === "win32" || spawnSync("bash", ["-c", "true"]).status !== 0) return t.skip("needs bash's ulimit");
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-atomic-"));
  const file = join(dir, "policy.bin");
  // A write to an open file that fails has no path of its own; `ulimit -f` makes one fail (EFBIG).
  const script = `import { writeFileAtomic } from ${JSON.stringify(new URL("./jsonl.js", import.meta.url).href.replace(/\.ts$/, ".js"))};
try { writeFileAtomic(${JSON.stringify(file)}, new Uint8Array(100000)); } catch (e) { console.log(JSON.stringify({ code: e.code, path: e.path })); }`;
  const r = spawnSync("bash", ["-c", 'ulimit -f 1; exec node --input-type=module -e "$0"', script], { encoding: "utf8" });
  assert.deepEqual(JSON.parse(r.stdout), { code: "EFBIG", path: file }, r.stderr);
  assert.equal(existsSync(file), false);
  assert.deepEqual(readdirSync(dir), []);
});
