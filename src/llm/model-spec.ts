import { existsSync, statSync } from "node:fs";
import { Agents, ApiCallError, DataError, HeadersTimeoutError, InvalidConfigError, openAIHeaders, statusAt } from "../core/index.ts";

/** A chat model string, taken apart (the forms `createChatModel` accepts). */
export type ModelSpec = { kind: "openai"; model: string } | { kind: "http"; baseURL: string; model: string } | { kind: "gguf"; path: string };

/** Where `openai:<model>` goes. */
export const OPENAI_BASE_URL = "https://api.openai.com/v1";

const FORMS = "use openai:<model>, http(s)://host:port/v1#<model> or gguf:<file>";

/**
 * Checks a chat model string without contacting anything (a run can refuse a typo before it
 * writes a file): a known form, a parseable URL, a model name, an existing GGUF file (unless
 * `checkFile` is false).
 */
export function parseModelSpec(spec: string, opts: { checkFile?: boolean } = {}): ModelSpec {
  if (spec.startsWith("openai:")) {
    const model = spec.slice("openai:".length).trim();
    if (!model) throw new InvalidConfigError(`model "${spec}" names no model (${FORMS})`);
    return { kind: "openai", model };
  }
  if (spec.startsWith("gguf:")) {
    const path = spec.slice("gguf:".length);
    if (!path) throw new InvalidConfigError(`model "${spec}" names no file (${FORMS})`);
    if ((opts.checkFile ?? true) && (!existsSync(path) || !statSync(path).isFile())) throw new DataError("no such GGUF model file", { file: path });
    return { kind: "gguf", path };
  }
  const m = /^(https?:\/\/[^#]+)#(.*)$/.exec(spec);
  if (m) {
    if (!m[2].trim()) throw new InvalidConfigError(`model "${spec}" names no model after "#" (${FORMS})`);
    try {
      new URL(m[1]);
    } catch {
      throw new InvalidConfigError(`model "${spec}": "${m[1]}" is not a valid URL (${FORMS})`);
    }
    return { kind: "http", baseURL: m[1], model: m[2] };
  }
  if (/^https?:\/\//.test(spec)) throw new InvalidConfigError(`model "${spec}" names no model: add #<model> after the URL (${FORMS})`);
  throw new InvalidConfigError(`unknown model "${spec}" (${FORMS})`);
}

/**
 * Checks that a model's endpoint answers HTTP at all (`GET <baseURL>/models`, which OpenAI-compatible
 * servers serve; any status will do), without paying for a completion: a dead or wrong URL fails a
 * command before it writes anything. Local GGUF models have no endpoint. `spec` may come parsed.
 */
export async function probeEndpoint(spec: string | ModelSpec, timeoutMs: number): Promise<void> {
  const m = typeof spec === "string" ? parseModelSpec(spec) : spec;
  if (m.kind === "gguf") return;
  const base = m.kind === "openai" ? OPENAI_BASE_URL : m.baseURL.replace(/\/+$/, "");
  const url = `${base}/models`;
  // The chat calls' own headers (the key trimmed; a key no header can carry is a config error).
  const headers = openAIHeaders(undefined);
  const agents = new Agents();
  try {
    await statusAt(url, { headers, headersTimeoutMs: timeoutMs, agents });
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    const why = e instanceof HeadersTimeoutError ? `no answer within ${timeoutMs / 1000} s` : (cause?.code ?? cause?.message ?? (e as Error).message);
    throw new ApiCallError(`LLM endpoint does not answer: ${why}; start the server or fix the model URL`, { url, isRetryable: false, cause: e });
  } finally {
    agents.close();
  }
}
