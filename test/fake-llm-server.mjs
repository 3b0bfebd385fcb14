/**
 * A local HTTP server that speaks the two streaming APIs condense's integration tests and the
 * bench use, so pi-ai's whole client path (SDK, HTTP, SSE parsing) runs:
 * - OpenAI chat completions: POST {base}/chat/completions with `stream: true` (configure the model
 *   with baseUrl `http://127.0.0.1:<port>/v1`, api `openai-completions`);
 * - Anthropic messages: POST {base}/v1/messages with `stream: true` (baseUrl
 *   `http://127.0.0.1:<port>`, api `anthropic-messages`).
 *
 * What each request gets is decided by `plan(request)`; by default a deterministic answer derived
 * from the request's user message only: one bullet per `[[N:tool]]` label found at a line start,
 * so the same batch always gets the same summary whatever order requests arrive in.
 */
import { createHash } from "node:crypto";
import { createServer } from "node:http";

/**
 * @typedef {object} FakeRequest
 * @property {"openai" | "anthropic"} api
 * @property {number} index  0-based arrival order
 * @property {string} model
 * @property {string} system  system prompt text
 * @property {string} user    user message text
 * @property {Record<string, unknown>} body  the parsed request body
 * @property {Record<string, string | string[] | undefined>} headers
 */

/**
 * @typedef {object} FakePlan
 * @property {number} [status]      an HTTP error status (e.g. 429, 500) instead of an answer
 * @property {string} [errorBody]   body of that error
 * @property {Record<string,string>} [errorHeaders]
 * @property {string} [text]        the answer (default: {@link defaultAnswer})
 * @property {number} [delayMs]     wait before answering
 * @property {boolean} [stall]      send the first chunk, then nothing (until the client goes away)
 * @property {boolean} [hangUp]     close the connection without an answer
 * @property {boolean} [chunked]    send each SSE event in its own write (default: the whole answer in one write)
 * @property {"stop" | "length"} [finish]
 * @property {number} [inputTokens]
 * @property {number} [outputTokens]
 */

/** Labels found at line starts of a batch prompt, in order: `[[N:tool]]` → { n, tool }. */
export function promptLabels(user) {
  const out = [];
  for (const m of user.matchAll(/^\[\[(\d+):([^\]\n]+)\]\]/gm)) out.push({ n: Number(m[1]), tool: m[2] });
  return out;
}

/** The deterministic answer: one short bullet per label, tagged with a hash of the prompt. */
export function defaultAnswer(user) {
  const tag = createHash("sha1").update(user).digest("hex").slice(0, 8);
  const labels = promptLabels(user);
  if (labels.length === 0) return `Fused summary ${tag}: the work went as described in the steps.`;
  return labels.map(({ n, tool }) => `- [[${n}:${tool}]] ran ${tool} (call ${n}, batch ${tag})`).join("\n");
}

function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((b) => (b && typeof b === "object" && typeof b.text === "string" ? b.text : "")).join("");
  return "";
}

function sse(res, event, data) {
  res.write(`${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
}

/** Collects SSE events to send them in one write (a server that has the whole answer at once). */
function buffered(res) {
  let body = "";
  return {
    write: (text) => {
      body += text;
    },
    end: () => res.end(body),
  };
}

function chunks(text) {
  const out = [];
  for (let i = 0; i < text.length; i += 40) out.push(text.slice(i, i + 40));
  return out.length > 0 ? out : [""];
}

/**
 * Start the server on 127.0.0.1, a random port.
 * @param {{ plan?: (req: FakeRequest) => FakePlan | Promise<FakePlan> }} [options]
 */
export async function startFakeLlmServer(options = {}) {
  /** @type {FakeRequest[]} */
  const requests = [];
  let plan = options.plan ?? (() => ({}));
  let active = 0;
  let maxActive = 0;
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", async () => {
      const url = (req.url ?? "").split("?")[0];
      const api = url.endsWith("/chat/completions") ? "openai" : url.endsWith("/v1/messages") ? "anthropic" : null;
      if (req.method !== "POST" || api === null) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${url}` } }));
        return;
      }
      let body;
      try {
        body = JSON.parse(raw);
      } catch {
        res.writeHead(400).end("bad json");
        return;
      }
      const messages = Array.isArray(body.messages) ? body.messages : [];
      const system =
        api === "anthropic"
          ? textOf(body.system)
          : messages
              .filter((m) => m.role === "system" || m.role === "developer")
              .map((m) => textOf(m.content))
              .join("\n");
      const user = messages
        .filter((m) => m.role === "user")
        .map((m) => textOf(m.content))
        .join("\n");
      /** @type {FakeRequest} */
      const request = { api, index: requests.length, model: String(body.model), system, user, body, headers: req.headers };
      requests.push(request);
      active++;
      maxActive = Math.max(maxActive, active);
      let closed = false;
      res.on("close", () => {
        closed = true;
      });
      try {
        const p = (await plan(request)) ?? {};
        if (p.delayMs) await new Promise((r) => setTimeout(r, p.delayMs));
        if (closed) return;
        if (p.hangUp) {
          req.socket.destroy();
          return;
        }
        if (p.status) {
          res.writeHead(p.status, { "content-type": "application/json", ...p.errorHeaders });
          res.end(p.errorBody ?? JSON.stringify({ error: { type: "error", message: `fake server error ${p.status}` } }));
          return;
        }
        const text = p.text ?? defaultAnswer(user);
        const inputTokens = p.inputTokens ?? Math.ceil((system.length + user.length) / 4);
        const outputTokens = p.outputTokens ?? Math.ceil(text.length / 4);
        const finish = p.finish ?? "stop";
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
        if (api === "openai") {
          const base = { id: `chatcmpl-${request.index}`, object: "chat.completion.chunk", created: 0, model: request.model };
          const parts = chunks(text);
          if (p.stall) {
            sse(res, null, { ...base, choices: [{ index: 0, delta: { role: "assistant", content: parts[0] }, finish_reason: null }] });
            return; // leave the stream open, silent
          }
          const out = p.chunked ? res : buffered(res);
          sse(out, null, { ...base, choices: [{ index: 0, delta: { role: "assistant", content: parts[0] }, finish_reason: null }] });
          for (const part of parts.slice(1)) sse(out, null, { ...base, choices: [{ index: 0, delta: { content: part }, finish_reason: null }] });
          sse(out, null, { ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }] });
          sse(out, null, {
            ...base,
            choices: [],
            usage: { prompt_tokens: inputTokens, completion_tokens: outputTokens, total_tokens: inputTokens + outputTokens },
          });
          out.write("data: [DONE]\n\n");
          out.end();
        } else {
          const out = p.chunked || p.stall ? res : buffered(res);
          sse(out, "message_start", {
            type: "message_start",
            message: {
              id: `msg_${request.index}`,
              type: "message",
              role: "assistant",
              model: request.model,
              content: [],
              stop_reason: null,
              stop_sequence: null,
              usage: { input_tokens: inputTokens, output_tokens: 1 },
            },
          });
          sse(out, "content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } });
          if (p.stall) return;
          for (const part of chunks(text))
            sse(out, "content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: part } });
          sse(out, "content_block_stop", { type: "content_block_stop", index: 0 });
          sse(out, "message_delta", {
            type: "message_delta",
            delta: { stop_reason: finish === "length" ? "max_tokens" : "end_turn", stop_sequence: null },
            usage: { output_tokens: outputTokens },
          });
          sse(out, "message_stop", { type: "message_stop" });
          out.end();
        }
      } finally {
        active--;
      }
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    port,
    /** Base URL for an `openai-completions` model. */
    openaiBaseUrl: `http://127.0.0.1:${port}/v1`,
    /** Base URL for an `anthropic-messages` model. */
    anthropicBaseUrl: `http://127.0.0.1:${port}`,
    requests,
    get maxActive() {
      return maxActive;
    },
    /** Replace the plan for the following requests. */
    setPlan(next) {
      plan = next;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(() => resolve(undefined)));
    },
  };
}
