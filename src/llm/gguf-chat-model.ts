import { existsSync } from "node:fs";
import { DataError, InvalidConfigError } from "../core/index.ts";
import { extractJson, type ChatChoice, type ChatModel, type ChatRequest, type ChatResponse, type ModelStats } from "./chat-model.ts";
import { ResponseCache } from "./response-cache.ts";
import { Semaphore } from "./semaphore.ts";

export interface GgufChatModelOptions {
  /** Path of the .gguf file. */
  path: string;
  /** Context size in tokens. @default 4096 */
  contextSize?: number;
  /** CPU threads for inference. @default 1 (more contend with the rest of the run on small machines) */
  threads?: number;
  /** A response cache (or its file path): identical requests are answered from it. */
  cache?: ResponseCache | string;
}

// node-llama-cpp is an optional dependency, loaded on first use.
type NodeLlamaCpp = typeof import("node-llama-cpp");

/**
 * A local GGUF model through node-llama-cpp (the llama.cpp engine), with grammar-constrained JSON
 * output when a schema is given: the sampler can only produce text the schema's grammar accepts.
 * Messages are rendered as a plain "System: / User: / Assistant:" transcript. Calls run one at a time.
 */
export class GgufChatModel implements ChatModel {
  readonly id: string;
  readonly stats: ModelStats = { requests: 0, cacheHits: 0, retries: 0, failures: 0, promptTokens: 0, completionTokens: 0, latencyMs: 0 };
  private readonly opts: GgufChatModelOptions;
  private readonly semaphore = new Semaphore(1);
  private loaded: Promise<{
    lib: NodeLlamaCpp;
    llama: Awaited<ReturnType<NodeLlamaCpp["getLlama"]>>;
    model: Awaited<ReturnType<Awaited<ReturnType<NodeLlamaCpp["getLlama"]>>["loadModel"]>>;
  }> | null = null;

  private readonly cache: ResponseCache | null;

  constructor(opts: GgufChatModelOptions) {
    this.opts = opts;
    this.id = `gguf:${opts.path}`;
    this.cache = typeof opts.cache === "string" ? new ResponseCache(opts.cache) : (opts.cache ?? null);
  }

  close(): void {
    this.cache?.close();
  }

  private load() {
    this.loaded ??= (async () => {
      if (!existsSync(this.opts.path)) throw new DataError("no such GGUF model file", { file: this.opts.path });
      let lib: NodeLlamaCpp;
      try {
        lib = await import("node-llama-cpp");
      } catch (e) {
        throw new InvalidConfigError(`local GGUF models need the optional dependency node-llama-cpp (npm i -E node-llama-cpp@3.21.1): ${(e as Error).message}`);
      }
      const llama = await lib.getLlama({ gpu: false, logLevel: lib.LlamaLogLevel.error });
      try {
        const model = await llama.loadModel({ modelPath: this.opts.path });
        return { lib, llama, model };
      } catch (e) {
        throw new DataError(`llama.cpp could not load the model: ${(e as Error).message}`, { file: this.opts.path }, e);
      }
    })();
    return this.loaded;
  }

  async generate(request: ChatRequest): Promise<ChatResponse> {
    const key = this.cache ? ResponseCache.key(this.id, request) : null;
    const hit = key ? this.cache!.get(key) : undefined;
    if (hit) {
      this.stats.cacheHits++;
      return { ...hit, cached: true, latencyMs: 0 };
    }
    const response = await this.run(request);
    if (key) this.cache!.put(key, response);
    return response;
  }

  private async run(request: ChatRequest): Promise<ChatResponse> {
    const started = performance.now();
    return this.semaphore.run(async () => {
      const { lib, llama, model } = await this.load();
      this.stats.requests++;
      const prompt = `${request.messages.map((m) => `${m.role === "system" ? "System" : m.role === "user" ? "User" : "Assistant"}: ${m.content}`).join("\n\n")}\n\nAssistant:`;
      const contextSize = Math.min(this.opts.contextSize ?? 4096, model.trainContextSize);
      const promptTokens = model.tokenize(prompt).length;
      const maxTokens = request.maxTokens ?? 512;
      // llama.cpp would silently drop the start of a prompt that does not fit (the system prompt and the task).
      if (promptTokens + maxTokens > contextSize) {
        throw new InvalidConfigError(
          `the prompt is ${promptTokens} tokens and up to ${maxTokens} may be generated, but the context holds ${contextSize} (${this.id})`,
        );
      }
      const context = await model.createContext({ contextSize, threads: this.opts.threads ?? 1 });
      try {
        const grammar = request.schema ? await llama.createGrammarForJsonSchema(request.schema.schema as never) : undefined;
        const completion = new lib.LlamaCompletion({ contextSequence: context.getSequence() });
        const choices: ChatChoice[] = [];
        for (let i = 0; i < (request.n ?? 1); i++) {
          const text = await completion.generateCompletion(prompt, {
            grammar,
            maxTokens,
            temperature: request.temperature ?? 0.7,
            seed: request.seed !== undefined ? request.seed + i : undefined,
            customStopTriggers: request.stop,
          });
          const choice: ChatChoice = { text };
          if (request.schema) {
            const { value, error } = extractJson(text);
            if (error) choice.parseError = error;
            else choice.parsed = value;
          }
          choices.push(choice);
        }
        const completionTokens = choices.reduce((n, c) => n + model.tokenize(c.text).length, 0);
        this.stats.promptTokens += promptTokens;
        this.stats.completionTokens += completionTokens;
        const latencyMs = performance.now() - started;
        this.stats.latencyMs += latencyMs;
        return { model: this.id, choices, usage: { promptTokens, completionTokens }, latencyMs, cached: false };
      } finally {
        await context.dispose();
      }
    });
  }
}
