import type { Command } from "commander";
import { InvalidConfigError } from "../core/index.ts";
import { WEBSHOP_SPLITS, type WebShopSplit } from "../envs/webshop/index.ts";
import { WebShopSite } from "../envs/webshop-site/index.ts";
import { parseIntOption } from "./options.ts";
import { untilStopSignal } from "./signals.ts";
import { cliConsole as console } from "./io.ts";

interface ServeSiteOptions {
  port: number;
  host: string;
  data?: string;
  split: string;
  attrs?: boolean;
}

/** The sites `serve-site` knows. */
const SITES = ["webshop"];

export function registerServeSite(program: Command): void {
  program
    .command("serve-site")
    .description("serve a website for browser agents (WebShop: /<session> is a fresh session; /<x>_fixed_<n> plays goal n); runs until SIGTERM/SIGINT")
    .argument("<site>", `the site (${SITES.join(", ")})`)
    .option("--port <n>", "port (0: any free port, printed)", parseIntOption("port", 0, 65_535), 3000)
    .option("--host <address>", "address to bind", "127.0.0.1")
    .option("--data <dir>", "data folder")
    .option("--split <split>", `goals a session without a fixed goal draws from (${WEBSHOP_SPLITS.join(", ")})`, "test")
    .option("--attrs", "show the Attributes button on item pages (the reference's --attrs)")
    .action(async (name: string, o: ServeSiteOptions) => {
      if (!SITES.includes(name)) throw new InvalidConfigError(`unknown site "${name}" (known: ${SITES.join(", ")})`);
      if (!WEBSHOP_SPLITS.includes(o.split as WebShopSplit))
        throw new InvalidConfigError(`--split must be one of ${WEBSHOP_SPLITS.join(", ")}, got "${o.split}"`);
      const site = new WebShopSite({ dataDir: o.data, split: o.split as WebShopSplit, showAttributes: o.attrs });
      const url = await site.start({ port: o.port, host: o.host });
      const first = site.tasks(o.split)[0];
      console.log(`serving ${name} on ${url}  (a session: ${url}/abc; goal ${first?.goal_index ?? 0}: ${url}/abc_fixed_${first?.goal_index ?? 0})`);

      // Runs until a signal; a second one while shutting down stops at once.
      const signal = await untilStopSignal();
      await site.close();
      console.error(`${signal}: stopped`);
    });
}
