// A stand-in LLM server for benchmarks (separate process): the OpenAI chat-completions protocol with a
// fixed latency per request and a concurrency cap (requests beyond it queue, as in vLLM). It answers
// experience-model prompts with a valid abstract next state; GET /stats counts the requests answered,
// GET /v1/models lists its one model (so that a training run can be pointed at it).
// Usage: node llm-server.mjs <latencyMs> <cap>
import { createServer } from "node:http";

const latency = Number(process.argv[2] ?? 200);
const cap = Number(process.argv[3] ?? 64);
let active = 0;
const queue = [];
let served = 0;

function next() {
  while (active < cap && queue.length > 0) {
    const job = queue.shift();
    active++;
    setTimeout(() => {
      active--;
      served++;
      job();
      next();
    }, latency);
  }
}

const server = createServer((req, res) => {
  // The model list, which `dreamgym train --experience http://…` asks first (an endpoint that is not there fails at once).
  if (req.method === "GET" && req.url.endsWith("/models")) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ object: "list", data: [{ id: "bench", object: "model" }] }));
    return;
  }
  // Benchmarks read how many requests were answered, to measure the share of capacity used.
  if (req.method === "GET" && req.url === "/stats") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ served, active, queued: queue.length }));
    return;
  }
  let raw = "";
  req.on("data", (c) => (raw += c));
  req.on("end", () => {
    const body = JSON.parse(raw);
    const user = body.messages.at(-1).content;
    const action = /Action: (.*)\s*$/.exec(user)?.[1] ?? "";
    const instruction = /Task: (.*)/.exec(user)?.[1] ?? "";
    const buy = action.includes("buy now");
    const state = buy
      ? "page: done\ninstruction: \nbought B07XTK3P89\nscore: 0.5"
      : action.startsWith("click[b0")
        ? `page: item\ninstruction: ${instruction}\n[back to search] [< prev]\nsize: [small] [large]\nA pillow\nPrice: $9.99\nRating: N.A.\n[description] [features] [reviews] [buy now]`
        : `page: results\ninstruction: ${instruction}\n[back to search] [next >]\nPage 1 (Total results: 50)\n[b07xtk3p89] A pillow | $9.99\n[b08k7ldm7q] A cover | $17.99`;
    const content = JSON.stringify({ reasoning: "the action leads to the next page", next_state: state, reward: buy ? 0.5 : 0, terminated: buy });
    queue.push(() => {
      const answer = Buffer.from(
        JSON.stringify({
          id: "b",
          object: "chat.completion",
          created: 0,
          model: body.model,
          choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
          usage: { prompt_tokens: 500, completion_tokens: 80, total_tokens: 580 },
        }),
      );
      // With its length, as vLLM, SGLang, llama.cpp and Ollama send a whole (not streamed) completion.
      res.writeHead(200, { "content-type": "application/json", "content-length": answer.length });
      res.end(answer);
    });
    next();
  });
});
server.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ port: server.address().port })));
process.on("SIGTERM", () => process.exit(0));
