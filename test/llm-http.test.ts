/**
 * The LLM summarizer against a real HTTP server on 127.0.0.1 speaking the OpenAI
 * chat-completions and Anthropic messages streaming APIs (test/fake-llm-server.mjs), configured
 * the way a user would: a models.json in a temporary PI_CODING_AGENT_DIR. pi-ai's whole client
 * path runs: SDK, fetch, SSE parsing, usage and cost.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { defaultConfig, type PruneConfig } from "../src/config/config.js";
import { planRun } from "../src/pipeline/plan.js";
import { usageLine } from "../src/cli/run-report.js";
import { sessionView } from "../src/pipeline/view.js";
import { loadSession } from "../src/session/session.js";
import { createSummarizer } from "../src/summarize/select.js";
import { SendSlots } from "../src/summarize/slots.js";
import type { SummaryBatch } from "../src/summarize/types.js";
import { defaultAnswer, startFakeLlmServer } from "./fake-llm-server.mjs";
import { loose } from "./helpers.js";

const FIXTURE = path.resolve(__dirname, "../fixtures/llm-three-batches.jsonl");
type Server = Awaited<ReturnType<typeof startFakeLlmServer>>;
type FakeRequest = Server["requests"][number];

let server: Server;
let dir: string;
beforeAll(async () => {
  server = await startFakeLlmServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "condense-llm-http-"));
  server.requests.length = 0;
  server.setPlan(() => ({}));
  // $3 / $15 per million tokens
  const cost = { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 };
  writeFileSync(
    path.join(dir, "models.json"),
    JSON.stringify({
      providers: {
        oai: { baseUrl: server.openaiBaseUrl, api: "openai-completions", apiKey: "$OAI_KEY", models: [{ id: "gpt-local", cost }] },
        ant: { baseUrl: server.anthropicBaseUrl, api: "anthropic-messages", apiKey: "ant-key", models: [{ id: "claude-local", cost }] },
      },
    }),
  );
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const env = () => ({ PI_CODING_AGENT_DIR: dir, OAI_KEY: "oai-key" });
const BATCH: SummaryBatch = {
  assistantText: "Running the tests.",
  calls: [
    { toolName: "bash", args: { command: "npm test" }, resultText: "FAIL src/a.test.ts\nexit code 1", isError: true },
    { toolName: "read", args: { path: "src/a.ts" }, resultText: "export const a = 1;\n", isError: false },
  ],
};

function config(overrides: Partial<PruneConfig> = {}): PruneConfig {
  return { ...defaultConfig(), summarizerIdleTimeoutMs: 2000, summarizerMaxTimeoutMs: 5000, ...overrides };
}

async function summarizer(model: string, cfg = config(), extra: { fallbackModel?: string; notices?: string[] } = {}) {
  const session = await loadSession(FIXTURE);
  return createSummarizer({ model, fallbackModel: extra.fallbackModel }, cfg, session, {
    env: env(),
    retry: { baseDelayMs: 5, maxRetries: 2 },
    onNotice: (m) => extra.notices?.push(m),
  });
}

const APIS = [
  { name: "OpenAI chat completions", model: "oai/gpt-local", api: "openai", auth: (r: FakeRequest) => r.headers.authorization, expectedAuth: "Bearer oai-key" },
  { name: "Anthropic messages", model: "ant/claude-local", api: "anthropic", auth: (r: FakeRequest) => r.headers["x-api-key"], expectedAuth: "ant-key" },
] as const;

describe.each(APIS)("$name streaming API", ({ model, api, auth, expectedAuth }) => {
  it("summarizes a batch: answer, usage and cost, auth header, system prompt", async () => {
    const s = await summarizer(model);
    const result = await s.summarizeBatch(BATCH);
    expect(server.requests).toHaveLength(1);
    const request = server.requests[0];
    expect(request.api).toBe(api);
    expect(request.model).toBe(model.split("/")[1]);
    expect(auth(request)).toBe(expectedAuth);
    expect(request.system).toContain("[[2:bash]]");
    expect(request.user).toContain("<tool-calls>\n[[1:bash]] bash\narguments:");
    const input = Math.ceil((request.system.length + request.user.length) / 4);
    const output = Math.ceil(defaultAnswer(request.user).length / 4);
    expect(result).toEqual({
      ok: true,
      text: defaultAnswer(request.user),
      usage: { input, output, cost: expect.closeTo((input * 3 + output * 15) / 1e6, 12) },
      model,
    });
    expect((result as { text: string }).text).toMatch(
      /^- \[\[1:bash\]\] ran bash \(call 1, batch [0-9a-f]{8}\)\n- \[\[2:read\]\] ran read \(call 2, batch [0-9a-f]{8}\)$/,
    );
  });

  it("retries after a 429 and then succeeds", async () => {
    // the answer after the retry streams one SSE event per write
    server.setPlan((r: FakeRequest) => (r.index === 0 ? { status: 429, errorHeaders: { "retry-after-ms": "1" } } : { chunked: true }));
    const result = await (await summarizer(model)).summarizeBatch(BATCH);
    expect(result).toMatchObject({ ok: true, text: defaultAnswer(server.requests[1].user) });
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0].user).toBe(server.requests[1].user);
  });

  it("gives up after bounded retries on a 500 that never ends", async () => {
    server.setPlan(() => ({ status: 500 }));
    const result = await (await summarizer(model)).summarizeBatch(BATCH);
    expect(result).toMatchObject({ ok: false, kind: "transient" });
    expect(result.ok ? "" : result.reason).toMatch(new RegExp(`^${model}: 500\\b.*fake server error 500.*\\(3 attempts\\)$`));
    expect(server.requests).toHaveLength(3);
  });

  it("aborts a stream that stalls past the idle timeout, and retries it", async () => {
    server.setPlan(() => ({ stall: true }));
    const started = Date.now();
    const result = await (await summarizer(model, config({ summarizerIdleTimeoutMs: 150 }))).summarizeBatch(BATCH);
    expect(result).toMatchObject({ ok: false, kind: "transient", reason: `${model}: timed out: no data for 150 ms (summarizerIdleTimeoutMs) (3 attempts)` });
    expect(server.requests).toHaveLength(3);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("stops a request that runs past the total timeout", async () => {
    server.setPlan((r: FakeRequest) => (r.index === 0 ? { delayMs: 1500 } : {}));
    const result = await (await summarizer(model, config({ summarizerMaxTimeoutMs: 200, summarizerIdleTimeoutMs: 5000 }))).summarizeBatch(BATCH);
    expect(result.ok).toBe(true); // the retry is answered at once
    expect(server.requests).toHaveLength(2);
  });

  it("times a request that waits for its send slot from when it is sent", async () => {
    const slots = new SendSlots(1);
    const held = await slots.acquire();
    const s = await summarizer(model, config({ summarizerIdleTimeoutMs: 150, summarizerMaxTimeoutMs: 200 }));
    const answer = s.summarizeBatch(BATCH, undefined, slots);
    // longer than every attempt would last if the timeouts ran while it waits
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(server.requests).toHaveLength(0);
    held?.();
    expect(await answer).toMatchObject({ ok: true, text: defaultAnswer(server.requests[0].user) });
    expect(server.requests).toHaveLength(1);
  });

  it("reports an auth failure without retrying", async () => {
    server.setPlan(() => ({ status: 401, errorBody: JSON.stringify({ error: { type: "authentication_error", message: "invalid x-api-key" } }) }));
    const result = await (await summarizer(model)).summarizeBatch(BATCH);
    expect(result).toMatchObject({ ok: false, kind: "auth" });
    expect(server.requests).toHaveLength(1);
  });
});

describe("whole runs through the server", () => {
  it("a batch whose summary finally fails stays raw and pending; the others are written", async () => {
    server.setPlan((r: FakeRequest) => (r.user.includes("[[1:grep]]") ? { status: 500 } : {}));
    const session = await loadSession(FIXTURE);
    const s = await summarizer("oai/gpt-local");
    const plan = await planRun(sessionView(session, config()), {
      summarizer: s,
      concurrency: 4,
      nowMs: Date.parse("2026-02-01T00:00:00Z"),
      targetPath: FIXTURE,
    });
    expect(plan.report.batches).toMatchObject({ captured: 3, summarized: 2, failed: 1 });
    expect(plan.report.failures).toHaveLength(1);
    expect(plan.report.failures[0].turnIndex).toBe(1);
    expect(plan.report.failures[0].reason).toMatch(/^transient: oai\/gpt-local: 500\b.*\(3 attempts\)$/);
    const summaries = loose(plan.entries).filter((e) => e.customType === "context-prune-summary");
    expect(summaries.map((e) => (e.details as { toolNames: string[] }).toolNames)).toEqual([["bash", "read"], ["bash"]]);
    const frontier = loose(plan.entries).find((e) => e.customType === "context-prune-frontier")?.data;
    expect(frontier).toMatchObject({ lastAttemptedToolCallId: "toolu_02", attemptedBatchCount: 1 });
    expect(plan.report.usage.calls).toBe(2);
    expect(plan.report.usage.cost).toBeGreaterThan(0);
  });

  it("falls back to the session's own model when the configured one keeps failing", async () => {
    // The fixture's model is anthropic/claude-sonnet-4-5; route the built-in anthropic provider to the server.
    writeFileSync(
      path.join(dir, "models.json"),
      JSON.stringify({
        providers: {
          oai: { baseUrl: server.openaiBaseUrl, api: "openai-completions", apiKey: "k", models: [{ id: "gpt-local" }] },
          anthropic: { baseUrl: server.anthropicBaseUrl },
        },
      }),
    );
    server.setPlan((r: FakeRequest) => (r.api === "openai" ? { status: 503 } : {}));
    const notices: string[] = [];
    const session = await loadSession(FIXTURE);
    const s = await createSummarizer({ model: "oai/gpt-local" }, config(), session, {
      env: { ...env(), ANTHROPIC_API_KEY: "sk-ant-test" },
      retry: { baseDelayMs: 5, maxRetries: 1 },
      onNotice: (m) => notices.push(m),
    });
    const plan = await planRun(sessionView(session, config()), { summarizer: s, concurrency: 1, nowMs: 0, targetPath: FIXTURE });
    expect(plan.report.batches).toMatchObject({ summarized: 3, failed: 0 });
    expect(server.requests.map((r: FakeRequest) => `${r.api}:${r.model}`)).toEqual([
      "openai:gpt-local",
      "openai:gpt-local",
      "anthropic:claude-sonnet-4-5",
      "anthropic:claude-sonnet-4-5",
      "anthropic:claude-sonnet-4-5",
    ]);
    expect(server.requests[2].headers["x-api-key"]).toBe("sk-ant-test");
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/^oai\/gpt-local is failing \(oai\/gpt-local: 503\b.*\); summarizing with anthropic\/claude-sonnet-4-5 instead/);
    // The report names the model that answered.
    expect(plan.report.usage.answeredBy).toEqual({ "anthropic/claude-sonnet-4-5": 3 });
    expect(usageLine({ ...plan.report, session: "s.jsonl" })).toMatch(
      /^s\.jsonl: 3 calls to oai\/gpt-local \(3 answered by the fallback anthropic\/claude-sonnet-4-5\) · [\d,]+ input \+ [\d,]+ output tokens/,
    );
  });

  it("--fallback-model names another fallback", async () => {
    server.setPlan((r: FakeRequest) => (r.api === "openai" ? { status: 500 } : {}));
    const notices: string[] = [];
    const s = await summarizer("oai/gpt-local", config(), { fallbackModel: "ant/claude-local", notices });
    const result = await s.summarizeBatch(BATCH);
    expect(result.ok).toBe(true);
    expect(server.requests.map((r: FakeRequest) => r.api)).toEqual(["openai", "openai", "openai", "anthropic"]);
    expect(notices).toHaveLength(1);
  });
});
