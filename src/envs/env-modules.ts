import { existsSync, statSync } from "node:fs";
import { basename, extname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { DataError, DreamGymError, orderEnforcing, withActions, withTimeLimit } from "../core/index.ts";
import { registerEnv, type EnvSpec } from "./registry.ts";

/** Config files looked for in the working folder, first found wins. */
export const CONFIG_FILES = ["dreamgym.config.js", "dreamgym.config.mjs", "dreamgym.config.ts", "dreamgym.config.mts"];

const TS = new Set([".ts", ".mts", ".cts", ".tsx"]);
let tsxRegistered = false;

/** TypeScript modules need a loader; tsx is used when it can be found (it is not a runtime dependency). */
async function ensureTypeScript(file: string): Promise<void> {
  if (tsxRegistered || process.execArgv.some((a) => a.includes("tsx")) || (process as { features?: { typescript?: unknown } }).features?.typescript) return;
  try {
    const api = (await import("tsx/esm/api")) as { register: () => unknown };
    api.register();
    tsxRegistered = true;
  } catch {
    throw new DataError(`${file} is TypeScript and no TypeScript loader is installed: install tsx (npm i -D tsx) or give a .js module`, { file });
  }
}

/**
 * Why an env module did not load, in one line: Node's first line, and what to do where Node took a
 * module written with import/export for CommonJS (a .ts or .js file under no package.json of "type":
 * "module"), which its own words (a require() cycle, or require() of an ES module) do not say.
 */
export function loadFailure(file: string, message: string): string {
  const first = message.split("\n")[0];
  const hint = /require\(\) (of )?ES Module/i.test(first)
    ? ` (it is an ES module that Node loads as CommonJS here: name it ${basename(file, extname(file))}.${extname(file) === ".js" ? "mjs" : "mts"}, or add "type": "module" to the package.json of its folder)`
    : "";
  return `env module failed to load: ${first}${hint}`;
}

/** What a default-export env module function is handed. */
export interface EnvModuleApi {
  registerEnv: typeof registerEnv;
  /** `step` before `reset` and after the end throws, as `dreamgym env check` requires. */
  orderEnforcing: typeof orderEnforcing;
  withTimeLimit: typeof withTimeLimit;
  withActions: typeof withActions;
}

/**
 * Loads env modules: each may call `registerEnv(...)` itself, or export `envs` (or a default export
 * holding `envs`): a record of name → EnvSpec, registered here. Then `--env-module` files, and a
 * `dreamgym.config.{js,mjs,ts,mts}` in `cwd` when there is one.
 */
export async function loadEnvModules(files: readonly string[], opts: { cwd?: string; config?: boolean } = {}): Promise<string[]> {
  const cwd = opts.cwd ?? process.cwd();
  const paths = files.map((f) => resolve(cwd, f));
  if (opts.config ?? true) {
    const found = CONFIG_FILES.map((f) => join(cwd, f)).find((f) => existsSync(f));
    if (found && !paths.includes(found)) paths.push(found);
  }
  for (const file of paths) {
    if (!existsSync(file)) throw new DataError("env module not found: check the --env-module path", { file });
    if (!statSync(file).isFile()) throw new DataError("env module is not a file", { file });
    if (TS.has(extname(file))) await ensureTypeScript(file);
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    } catch (e) {
      if (DreamGymError.isInstance(e)) throw e;
      throw new DataError(loadFailure(file, String((e as Error)?.message ?? e)), { file }, e);
    }
    const def = mod.default as { envs?: unknown } | ((api: EnvModuleApi) => unknown) | undefined;
    // The module gets what registering a checked env takes, so it need not install dreamgym to import it.
    if (typeof def === "function") await def({ registerEnv, orderEnforcing, withTimeLimit, withActions });
    const envs = (mod.envs ?? (typeof def === "object" && def !== null ? def.envs : undefined)) as Record<string, EnvSpec> | undefined;
    if (envs !== undefined) {
      if (typeof envs !== "object" || envs === null) throw new DataError("env module: `envs` must be an object of name → spec", { file });
      for (const [name, spec] of Object.entries(envs)) registerEnv(name, spec);
    }
  }
  return paths;
}
