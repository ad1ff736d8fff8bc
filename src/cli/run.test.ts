import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { Command } from "commander";
import { commandName } from "./command-name.ts";
import { COMMANDS, commandsToLoad, runCli } from "./run.ts";

test("each command's module registers that command and no other", async () => {
  for (const [name, load] of Object.entries(COMMANDS)) {
    const program = new Command();
    (await load())(program);
    assert.deepEqual(
      program.commands.map((c) => c.name()),
      [name],
    );
  }
});

test("the command a run names: its first argument that is not the program's own option", () => {
  assert.equal(commandName(["train", "--env", "webshop"]), "train");
  assert.equal(commandName(["--env-module", "vault.ts", "collect", "--out", "o.jsonl"]), "collect");
  assert.equal(commandName(["--env-module=vault.ts", "buffer", "import"]), "buffer");
  assert.equal(commandName(["--env-module"]), undefined);
  for (const argv of [[], ["--help"], ["-h", "train"], ["--version"], ["-V"], ["--bogus", "train"], ["--", "train"]])
    assert.equal(commandName(argv), undefined, argv.join(" "));
  assert.equal(commandName(["train", "--help"]), "train");
  assert.equal(commandName(["help", "train"]), "help");
});

test("a run loads the module of the command it names, and all of them for help, --version or an unknown name", () => {
  assert.deepEqual(commandsToLoad(["train", "--env", "webshop"]), ["train"]);
  assert.deepEqual(commandsToLoad(["--env-module", "vault.ts", "collect", "--help"]), ["collect"]);
  assert.deepEqual(commandsToLoad(["serve-site", "webshop"]), ["serve-site"]);
  const all = Object.keys(COMMANDS);
  for (const argv of [[], ["--help"], ["--version"], ["help", "train"], ["colect"], ["toString"], ["__proto__"]])
    assert.deepEqual(commandsToLoad(argv), all, argv.join(" "));
});

test("help lists every command, and an unknown one is told the nearest name", async () => {
  const run = async (argv: string[]) => {
    let text = "";
    const sink = new Writable({
      write(chunk, _encoding, done) {
        text += String(chunk);
        done();
      },
    });
    return { status: await runCli(argv, { stdout: sink, stderr: sink }), text };
  };
  const help = await run(["--help"]);
  assert.equal(help.status, 0);
  const listed = [...help.text.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((m) => m[1]).filter((n) => n !== "help");
  // The CLI's commands, each loaded only when named (a command missing from COMMANDS would be missing here).
  const expected = ["env", "collect", "buffer", "audit", "model", "sft", "train", "rollout", "demo", "serve", "view", "serve-site", "oracle-model", "webarena"];
  assert.deepEqual(listed, expected);
  assert.deepEqual(Object.keys(COMMANDS), expected);
  const typo = await run(["colect", "--env", "webshop"]);
  assert.equal(typo.status, 2);
  assert.equal(typo.text, "error: unknown command 'colect' (Did you mean collect?) (see: dreamgym --help)\n");
  // `help` of an unknown command: the same line as the command alone, at the program's level and a group's.
  assert.deepEqual(await run(["help", "colect"]), typo);
  assert.deepEqual(await run(["help", "nope"]), { status: 2, text: "error: unknown command 'nope' (see: dreamgym --help)\n" });
  assert.deepEqual(await run(["buffer", "help", "nope"]), { status: 2, text: "error: unknown command 'nope' (see: dreamgym buffer --help)\n" });
  // An unknown option's suggestion too: one line.
  const option = await run(["collect", "--env", "webshop", "--policy", "rule", "--out", "unused.jsonl", "--episode", "3"]);
  assert.equal(option.status, 2);
  assert.equal(option.text, "error: unknown option '--episode' (Did you mean --episodes?) (see: dreamgym collect --help)\n");
  // A command alone: its own help, as with every command loaded.
  const one = await run(["buffer", "--help"]);
  assert.equal(one.status, 0);
  assert.match(one.text, /^Usage: dreamgym buffer \[options\] \[command\]/);
});

test("an env module that does not load stops a command, but help and --version still answer, with its error as a warning", async () => {
  const dir = mkdtempSync(join(tmpdir(), "dreamgym-broken-module-"));
  const broken = join(dir, "broken.mjs");
  writeFileSync(broken, 'throw new Error("x");\n');
  const run = async (argv: string[]) => {
    let out = "";
    let err = "";
    const sink = (add: (t: string) => void) =>
      new Writable({
        write(chunk, _encoding, done) {
          add(String(chunk));
          done();
        },
      });
    const status = await runCli(argv, { stdout: sink((t) => (out += t)), stderr: sink((t) => (err += t)) });
    return { status, out, err };
  };
  const warning = `warning: ${broken}: env module failed to load: x\n`;
  for (const argv of [["--help"], ["-h", "train"], ["train", "--help"], ["help", "train"]]) {
    const r = await run(["--env-module", broken, ...argv]);
    assert.deepEqual([r.status, r.err], [0, warning], argv.join(" "));
    assert.match(r.out, /^Usage: dreamgym/, argv.join(" "));
  }
  const version = await run(["--env-module", broken, "--version"]);
  assert.deepEqual([version.status, version.err], [0, warning]);
  assert.match(version.out, /^\d+\.\d+\.\d+\n$/);
  const command = await run(["--env-module", broken, "env", "list"]);
  assert.deepEqual([command.status, command.out, command.err], [2, "", `error: ${broken}: env module failed to load: x\n`]);
});
