// Benchmark clients of `dreamgym serve`: an OpenEnv WebSocket session, an AgentGym HTTP session, and the
// action mix they play (search, click a product, options, description pages, back, buy).
import { Agent, request } from "node:http";
import { WebSocket } from "ws";
import { Rng } from "../src/core/index.ts";

/** The WebShop controls that are not a product or an option. */
const CONTROLS = new Set(["back to search", "< prev", "next >", "description", "features", "reviews", "attributes", "buy now", "search"]);
const ASIN = /^b0[0-9a-z]{8}$/i;

/**
 * A browsing agent's next action from what the page offers: `search` (the page has the search bar)
 * and the click targets. Item pages: options, a description page, back, or buy (~1 in 6);
 * results: mostly a product, sometimes the next page or back to search.
 */
export function chooseAction(targets: readonly string[], searchBar: boolean, instruction: string, rng: Rng): string {
  if (searchBar) {
    const words = instruction
      .toLowerCase()
      .replace(/[^a-z0-9 ]/g, " ")
      .split(/\s+/)
      .filter((w) => w.length > 2);
    const n = 3 + Math.floor(rng.random() * 4);
    const start = Math.floor(rng.random() * Math.max(1, words.length - n));
    return `search[${words.slice(start, start + n).join(" ") || "shoes"}]`;
  }
  const pick = (xs: readonly string[]) => xs[Math.floor(rng.random() * xs.length)];
  const has = (t: string) => targets.includes(t);
  const r = rng.random();
  if (has("buy now")) {
    const options = targets.filter((t) => !CONTROLS.has(t));
    if (r < 0.16) return "click[buy now]";
    if (r < 0.5 && options.length) return `click[${pick(options)}]`;
    if (r < 0.7) return `click[${pick(["description", "features", "reviews"])}]`;
    if (r < 0.9) return "click[< prev]";
    return "click[back to search]";
  }
  const products = targets.filter((t) => ASIN.test(t));
  if (products.length) {
    if (r < 0.75) return `click[${pick(products)}]`;
    if (r < 0.88 && has("next >")) return "click[next >]";
    if (r < 0.94 && has("< prev")) return "click[< prev]";
    return "click[back to search]";
  }
  if (has("< prev") && r < 0.9) return "click[< prev]";
  return has("back to search") ? "click[back to search]" : `click[${pick(targets)}]`;
}

/** The click targets and search bar of an OpenEnv observation's `available_actions`. */
export function targetsOf(actions: readonly string[] | null): { targets: string[]; searchBar: boolean } {
  const targets: string[] = [];
  let searchBar = false;
  for (const a of actions ?? []) {
    if (a.startsWith("search[")) searchBar = true;
    else if (a.startsWith("click[")) targets.push(a.slice(6, -1));
  }
  return { targets, searchBar };
}

interface Observation {
  text: string;
  available_actions: string[] | null;
  instruction: string;
  invalid?: boolean;
}
type Reply =
  | { type: "observation"; data: { observation: Observation; reward: number | null; done: boolean } }
  | { type: "error"; data: { message: string; code: string } }
  | { type: "state"; data: unknown };

/** One OpenEnv session over WS /ws: one request at a time, replies in order. */
export class WsSession {
  private waiter: ((r: Reply) => void) | undefined;
  readonly closed: Promise<void>;

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => {
      const w = this.waiter;
      this.waiter = undefined;
      w?.(JSON.parse(data.toString()) as Reply);
    });
    this.closed = new Promise((resolve) => ws.once("close", () => resolve()));
  }

  static open(url: string): Promise<WsSession> {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    const s = new WsSession(ws);
    return new Promise((resolve, reject) => {
      ws.once("open", () => resolve(s));
      ws.once("error", reject);
    });
  }

  /** Sends a message and resolves with its reply; rejects on an error reply or a closed socket. */
  call(message: unknown): Promise<Reply & { type: "observation" }> {
    return new Promise((resolve, reject) => {
      if (this.ws.readyState !== WebSocket.OPEN) return reject(new Error("socket closed"));
      const onClose = () => reject(new Error("socket closed"));
      this.ws.once("close", onClose);
      this.waiter = (r) => {
        this.ws.off("close", onClose);
        if (r.type === "error") reject(new Error(`${r.data.code}: ${r.data.message}`));
        else resolve(r as Reply & { type: "observation" });
      };
      this.ws.send(JSON.stringify(message));
    });
  }

  reset(seed: number) {
    return this.call({ type: "reset", data: { seed } });
  }

  step(action: string) {
    return this.call({ type: "step", data: { action } });
  }
}

/** A keep-alive HTTP client of one server (AgentGym's routes are JSON over POST and GET). */
export class HttpClient {
  readonly agent: Agent;
  private readonly host: string;
  private readonly port: number;

  constructor(base: string, maxSockets = 512) {
    const u = new URL(base);
    this.host = u.hostname;
    this.port = Number(u.port);
    this.agent = new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  }

  call(method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; json: any }> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: this.host,
          port: this.port,
          method,
          path,
          agent: this.agent,
          headers: payload === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (d: string) => (text += d));
          res.on("end", () => {
            try {
              resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) });
            } catch (e) {
              reject(e);
            }
          });
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  }

  /** A call that must succeed (2xx). */
  async ok(method: "GET" | "POST", path: string, body?: unknown): Promise<any> {
    const r = await this.call(method, path, body);
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json;
  }

  close(): void {
    this.agent.destroy();
  }
}

/** The instruction in a raw WebShop page (`... [SEP] Instruction: [SEP] <text> [SEP] ...`). */
export function rawInstruction(page: string): string {
  const m = /Instruction:\s*\[SEP\]\s*(.*?)\s*\[SEP\]/.exec(page);
  return m ? m[1] : page.slice(0, 200);
}
