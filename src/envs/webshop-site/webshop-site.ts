import type { Server } from "node:http";
import { randomBytes } from "node:crypto";
import { createAdaptorServer } from "@hono/node-server";
import type { Page } from "playwright-core";
import { InvalidConfigError, type Task } from "../../core/index.ts";
import { loadCatalogue, WEBSHOP_SPLITS, webshopGoalOf, webshopTask, type Catalogue, type WebShopSplit } from "../webshop/index.ts";
import type { BrowserSite, SiteVerdict } from "../browser/site.ts";
import { webshopApp, type SiteSession } from "./app.ts";
import { listenOn } from "../../server/listen.ts";

export interface WebShopSiteOptions {
  /** Data root (holding `webshop/`). Default: `$DREAMGYM_DATA`, else `../shared/data`. */
  dataDir?: string;
  /** The catalogue's seed (prices, price bounds). @default 42, as the text env */
  seed?: number;
  /** The split a session without a fixed goal draws from. @default "test" */
  split?: WebShopSplit;
  /** Show the Attributes button on item pages. @default false */
  showAttributes?: boolean;
  /** Score goal options by value. @default false */
  goalOptionValues?: boolean;
}

/**
 * WebShop served as a website (`dreamgym serve-site webshop`), and the {@link BrowserSite} a
 * browser env trains on: an episode starts on a fresh session of its goal's search page and ends on
 * the done page, whose score is the reward.
 */
export class WebShopSite implements BrowserSite {
  readonly name = "webshop";
  /** Stopping is no way to end a WebShop episode: buying is. */
  readonly stopAction = false;
  readonly catalogue: Catalogue;
  private readonly app: ReturnType<typeof webshopApp>;
  private server: Server | null = null;
  private base: string | null = null;
  private starting: Promise<string> | null = null;
  private readonly nonce = randomBytes(3).toString("hex");
  private counter = 0;

  constructor(opts: WebShopSiteOptions = {}) {
    const split = opts.split ?? "test";
    if (!WEBSHOP_SPLITS.includes(split)) throw new InvalidConfigError(`unknown WebShop split "${split}" (known: ${WEBSHOP_SPLITS.join(", ")})`);
    this.catalogue = loadCatalogue({ dataDir: opts.dataDir, seed: opts.seed });
    this.app = webshopApp({
      catalogue: this.catalogue,
      goalIndexes: this.catalogue.splitIndexes(split),
      seed: opts.seed ?? 0,
      showAttributes: opts.showAttributes ?? false,
      goalOptionValues: opts.goalOptionValues ?? false,
    });
  }

  /** The site's address once started (`http://host:port`). */
  get url(): string | null {
    return this.base;
  }

  /** The Hono app (to serve it elsewhere, or to call it without a socket). */
  get fetch(): (req: Request) => Response | Promise<Response> {
    return this.app.app.fetch;
  }

  /** Serves the site on host:port (port 0: one the OS picks); resolves to its URL. Starting twice returns the same server. */
  start(opts: { port?: number; host?: string } = {}): Promise<string> {
    return (this.starting ??= this.listen(opts.port ?? 0, opts.host ?? "127.0.0.1"));
  }

  private async listen(port: number, host: string): Promise<string> {
    const server = createAdaptorServer({ fetch: this.app.app.fetch }) as Server;
    server.keepAliveTimeout = 60_000;
    try {
      await listenOn(server, port, host);
    } catch (e) {
      this.starting = null;
      throw e;
    }
    const address = server.address();
    const bound = typeof address === "object" && address ? address.port : port;
    this.server = server;
    this.base = `http://${host.includes(":") ? `[${host}]` : host}:${bound}`;
    return this.base;
  }

  tasks(split: string = "test"): Task[] {
    if (!WEBSHOP_SPLITS.includes(split as WebShopSplit)) throw new InvalidConfigError(`unknown WebShop split "${split}" (known: ${WEBSHOP_SPLITS.join(", ")})`);
    return this.catalogue.splitIndexes(split as WebShopSplit).map((i) => webshopTask(this.catalogue, i, split as WebShopSplit));
  }

  /** A fresh session of the task's goal (a goal of the catalogue by index, or a goal object of its own). */
  async startUrl(task: Task): Promise<string> {
    const base = await this.start();
    const goal = webshopGoalOf(this.catalogue, task);
    if (!goal) throw new InvalidConfigError(`WebShop task "${task.id}" has neither goal_index nor goal (ids look like "webshop:<index>")`);
    const index = this.catalogue.goals.indexOf(goal);
    const sid = `${this.nonce}${(this.counter++).toString(36)}_${index >= 0 ? `fixed_${index}` : "goal"}`;
    this.app.sessions.set(sid, { goal, goalIndex: index >= 0 ? index : null });
    return `${base}/${sid}`;
  }

  /** The site's record of a session (its goal and, once bought, the reward), by the session id in a page URL. */
  session(url: string): SiteSession | undefined {
    const parts = new URL(url).pathname.split("/").filter(Boolean);
    const sid = parts.length === 1 ? parts[0] : parts[1];
    return sid === undefined ? undefined : this.app.sessions.get(decodeURIComponent(sid));
  }

  /** The done page ends the episode; its score is the reward. Stopping anywhere else scores 0. */
  async judge(page: Page, _task: Task, ended: { stopped: boolean; answer?: string }): Promise<SiteVerdict | null> {
    if (new URL(page.url()).pathname.startsWith("/done/")) {
      const text = (await page.locator("#reward pre").first().textContent())?.trim() ?? "";
      const reward = Number(text);
      if (text === "" || !Number.isFinite(reward)) return { reward: 0, detail: `the done page shows no score ("${text}")` };
      return { reward, detail: "bought" };
    }
    return ended.stopped ? { reward: 0, detail: "stopped without buying" } : null;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.starting = null;
    this.base = null;
    if (!server) return;
    const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await stopped;
  }
}
