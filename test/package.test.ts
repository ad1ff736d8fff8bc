// The published package, as a user gets it: `npm pack`, install the tarball in a fresh folder, then
// import it and run its CLI from plain Node (no tsx, no TypeScript sources).
//
// The tarball is packed from the dist/ that `npm test` builds first (`npm run build`), with
// --ignore-scripts: `prepack` would delete and rebuild dist/ under the CLI tests running beside this
// one. The install resolves the tarball's declared dependencies for real (--prefer-offline: tarballs
// from the npm cache that `npm ci` filled, metadata from the registry when the cache lacks it), without
// install scripts and optional dependencies; better-sqlite3's native binary is then copied from the
// project's own install (same pinned version, same Node) instead of a minutes-long node-gyp build.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { resolveDataDir } from "../src/envs/data-dir.ts";
import { ROOT } from "./helpers.ts";

const npm = (args: string[], cwd: string) =>
  execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, encoding: "utf8", timeout: 240_000 });

test("the packed tarball installs in a fresh folder and works from plain Node", { timeout: 300_000 }, () => {
  assert.ok(existsSync(join(ROOT, "dist", "index.js")), "dist/ is missing: run `npm run build` (npm test does)");
  const tmp = mkdtempSync(join(tmpdir(), "dreamgym-pack-"));
  try {
    // Pack: compiled JS, declarations, the bin and the README; no sources, no tests.
    const [packed] = JSON.parse(npm(["pack", "--ignore-scripts", "--json", "--pack-destination", tmp], ROOT)) as [
      { filename: string; files: { path: string }[] },
    ];
    const files = packed.files.map((f) => f.path);
    for (const f of [
      "package.json",
      "README.md",
      "bin/dreamgym",
      "dist/index.js",
      "dist/index.d.ts",
      "dist/cli/main.js",
      "dist/envs/data-dir.js",
      "ui/view/index.html",
      "ui/view/app.js",
    ]) {
      assert.ok(files.includes(f), `tarball lacks ${f}`);
    }
    const unwanted = files.filter(
      (f) =>
        !/^(dist\/|bin\/|ui\/view\/[\w-]+\.(js|css|html)$|README\.md$|package\.json$)/.test(f) ||
        /\.test\.|test-|kill-writer/.test(f) ||
        (f.endsWith(".ts") && !f.endsWith(".d.ts")),
    );
    assert.deepEqual(unwanted, []);

    // Install it where nothing of the project is visible.
    const app = join(tmp, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
    npm(["install", join(tmp, packed.filename), "--prefer-offline", "--omit=optional", "--ignore-scripts"], app);
    const installed = join(app, "node_modules", "dreamgym");
    const pkg = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as { exports: Record<string, { types: string; default: string }> };
    for (const [sub, target] of Object.entries(pkg.exports)) {
      assert.ok(existsSync(join(installed, target.types)) && existsSync(join(installed, target.default)), `export ${sub} points at missing files`);
    }
    const sqlite = "node_modules/better-sqlite3";
    const version = (dir: string) => (JSON.parse(readFileSync(join(dir, sqlite, "package.json"), "utf8")) as { version: string }).version;
    assert.equal(version(app), version(ROOT));
    mkdirSync(join(app, sqlite, "build", "Release"), { recursive: true });
    copyFileSync(join(ROOT, sqlite, "build", "Release", "better_sqlite3.node"), join(app, sqlite, "build", "Release", "better_sqlite3.node"));

    // The library: every subpath imports; a WebShop episode step and a replay buffer work.
    const script = `
      const m = await import("dreamgym");
      for (const sub of ${JSON.stringify(Object.keys(pkg.exports).filter((s) => s !== "."))}) await import("dreamgym" + sub.slice(1));
      const env = m.createEnv("webshop", { split: "test" });
      await env.reset({ seed: 3 });
      const r = await env.step("search[red running shoes]");
      const actions = env.availableActions().length;
      env.close();
      const buffer = m.ReplayBuffer.open(${JSON.stringify(join(tmp, "b.db"))});
      const stored = buffer.countTrajectories();
      buffer.close();
      const { PACKAGE_ROOT } = await import("dreamgym/envs");
      // dreamgym view finds its page and the browser modules (Preact, htm, uPlot) from the installed package.
      const { createViewApp } = await import("dreamgym/server");
      const view = createViewApp({ runs: ${JSON.stringify(tmp)} });
      const page = await (await view.app.request("/")).text();
      const modules = await Promise.all(["/ui/app.js", "/vendor/preact.mjs", "/vendor/uplot.mjs"].map(async (u) => (await view.app.request(u)).status));
      await view.close();
      console.log(JSON.stringify({ actions, reward: r.reward, terminated: r.terminated, stored, root: PACKAGE_ROOT, view: { importMap: page.includes('"importmap"'), modules } }));
    `;
    const env = { ...process.env, DREAMGYM_DATA: resolveDataDir(), PATH: dirname(process.execPath) + delimiter + process.env.PATH };
    const lib = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: app, env, encoding: "utf8" });
    assert.equal(lib.status, 0, lib.stderr);
    const out = JSON.parse(lib.stdout) as {
      actions: number;
      reward: number;
      terminated: boolean;
      stored: number;
      root: string;
      view: { importMap: boolean; modules: number[] };
    };
    assert.deepEqual(out.view, { importMap: true, modules: [200, 200, 200] });
    assert.ok(out.actions > 1, "a search leads to a results page with actions");
    assert.equal(out.reward, 0);
    assert.equal(out.terminated, false);
    assert.equal(out.stored, 0);
    assert.equal(realpathSync(out.root), realpathSync(installed), "PACKAGE_ROOT is the installed package's folder");

    // The CLI: the installed bin runs the compiled JS.
    const bin = join(app, "node_modules", ".bin", "dreamgym");
    const help = spawnSync(bin, ["--help"], { cwd: app, env, encoding: "utf8" });
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /Usage: dreamgym/);
    const list = spawnSync(bin, ["env", "list"], { cwd: app, env, encoding: "utf8" });
    assert.equal(list.status, 0, list.stderr);
    assert.match(list.stdout, /^webshop\t/m);
    assert.match(list.stdout, /^alfworld\t/m);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});
