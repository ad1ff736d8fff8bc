import type { ChatModel, ChatRequest, ChatResponse, ModelStats } from "../llm/index.ts";
import { extractJson } from "../llm/index.ts";

/**
 * A chat model that answers from a script, in process: each request gets `reply(request, index)`
 * (or the next string of a list, the last one repeating). Its answers are parsed as the real
 * backends parse them (JSON out of fences or prose), so the code under test runs its real repair
 * and retry paths. For unit tests of experience models, policies and generators; `chatServer`
 * is the same over real HTTP.
 */
export class ScriptedChatModel implements ChatModel {
  readonly id: string;
  readonly requests: ChatRequest[] = [];
  readonly stats: ModelStats = { requests: 0, cacheHits: 0, retries: 0, failures: 0, promptTokens: 0, completionTokens: 0, latencyMs: 0 };
  private readonly reply: (request: ChatRequest, index: number) => string;

  constructor(script: readonly string[] | ((request: ChatRequest, index: number) => string), opts: { id?: string } = {}) {
    this.id = opts.id ?? "scripted";
    if (typeof script === "function") this.reply = script;
    else {
      if (script.length === 0) throw new Error("ScriptedChatModel needs at least one reply");
      this.reply = (_, i) => script[Math.min(i, script.length - 1)];
    }
  }

  async generate(request: ChatRequest): Promise<ChatResponse> {
    const index = this.requests.length;
    this.requests.push(request);
    const text = this.reply(request, index);
    const promptTokens = request.messages.reduce((s, m) => s + Math.ceil(m.content.length / 4), 0);
    const completionTokens = Math.ceil(text.length / 4);
    this.stats.requests++;
    this.stats.promptTokens += promptTokens;
    this.stats.completionTokens += completionTokens;
    const choice = request.schema ? { text, ...toParsed(extractJson(text)) } : { text };
    return { model: this.id, choices: [choice], usage: { promptTokens, completionTokens }, latencyMs: 0, cached: false };
  }
}

const toParsed = (r: { value?: unknown; error?: string }) => (r.error !== undefined ? { parseError: r.error } : { parsed: r.value });
