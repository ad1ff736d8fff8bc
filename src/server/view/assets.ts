import { existsSync, readdirSync } from "node:fs";
import { dirname, extname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { InvalidConfigError, PACKAGE_ROOT } from "../../core/index.ts";

/**
 * The web app's files: its own (`ui/view/` at the package's top, shipped as they are: tsc copies no
 * .js or .css, and there is no build step) and the browser modules it imports from node_modules
 * (Preact, its hooks, htm, uPlot), served from where Node resolves them, so the app works offline.
 */
export interface ViewAssets {
  /** URL path → file. */
  files: Map<string, string>;
  /** The import map the page declares (bare specifiers → served paths). */
  importMap: Record<string, string>;
}

/** `ui/view` at the package's top, wherever this module was compiled to. */
export const UI_DIR = join(PACKAGE_ROOT, "ui", "view") + sep;

/** The folder of an installed package, from the entry Node resolves for it. */
function packageDir(name: string): string {
  let entry: string;
  try {
    entry = fileURLToPath(import.meta.resolve(name));
  } catch {
    throw new InvalidConfigError(`the view app needs the package ${name}, which is not installed: reinstall dreamgym's dependencies`);
  }
  const marker = `${sep}node_modules${sep}${name}${sep}`;
  const at = entry.lastIndexOf(marker);
  return at >= 0 ? entry.slice(0, at + marker.length - 1) : dirname(dirname(entry));
}

const VENDOR: [url: string, pkg: string, file: string, specifier?: string][] = [
  ["/vendor/preact.mjs", "preact", "dist/preact.mjs", "preact"],
  ["/vendor/preact-hooks.mjs", "preact", "hooks/dist/hooks.mjs", "preact/hooks"],
  ["/vendor/htm.mjs", "htm", "dist/htm.mjs", "htm"],
  ["/vendor/uplot.mjs", "uplot", "dist/uPlot.esm.js", "uplot"],
  ["/vendor/uplot.css", "uplot", "dist/uPlot.min.css"],
];

export function viewAssets(uiDir = UI_DIR): ViewAssets {
  const files = new Map<string, string>();
  const importMap: Record<string, string> = {};
  for (const [url, pkg, file, specifier] of VENDOR) {
    const path = join(packageDir(pkg), file);
    if (!existsSync(path)) throw new InvalidConfigError(`the view app needs ${pkg}'s ${file}, which is missing: reinstall dreamgym's dependencies`);
    files.set(url, path);
    if (specifier) importMap[specifier] = url;
  }
  if (!existsSync(join(uiDir, "index.html"))) throw new InvalidConfigError(`the view app's files are missing (${uiDir}): reinstall dreamgym`);
  for (const f of readdirSync(uiDir)) if ([".js", ".css", ".html", ".svg"].includes(extname(f))) files.set(`/ui/${f}`, join(uiDir, f));
  return { files, importMap };
}

export const CONTENT_TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".svg": "image/svg+xml",
};
