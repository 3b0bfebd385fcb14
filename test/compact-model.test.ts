/**
 * The model-written compaction summary sends what Pi 1.6's own `compact()` sends: with pi-ai's
 * faux provider, Pi's `compact()` (on Pi's `prepareCompaction`) and condense's `planCompaction`
 * (on its own preparation) make the same requests — system prompt, user text, reasoning level,
 * `cacheRetention: "none"`, a fresh session id — and produce the same summary, file tags and usage.
 * Then the whole CLI path against a real HTTP server on 127.0.0.1 (test/fake-llm-server.mjs),
 * configured through models.json as a user would.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createModels,
  fauxAssistantMessage,
  fauxProvider,
  type AssistantMessage,
  type FauxProviderHandle,
  type SimpleStreamOptions,
  type TranscriptContext,
} from "@earendil-works/pi-ai";
import { createHash } from "node:crypto";
import { modelSummary } from "../src/compact/model-summary.js";
import { planCompaction } from "../src/pipeline/compact-plan.js";
import { sessionView } from "../src/pipeline/view.js";
import { defaultConfig } from "../src/config/config.js";
import { prepareCompaction } from "../src/compact/prepare.js";
import { SUMMARIZATION_SYSTEM_PROMPT } from "../src/compact/prompts.js";
import { historyPromptText } from "../src/compact/request.js";
import { DEFAULT_COMPACTION_SETTINGS, DEFAULT_RETRY_SETTINGS } from "../src/compact/settings.js";
import { loadSession } from "../src/session/session.js";
import { runCli } from "./cli-harness.js";
import { copyInto, FIXTURES, importPiCompaction, importPiSessionManager, makeTempDir, SHARED_SESSIONS } from "./helpers.js";
import { startFakeLlmServer } from "./fake-llm-server.mjs";

interface Recorded {
  context: TranscriptContext;
  options: SimpleStreamOptions | undefined;
}

/** A faux provider answering every request with a summary derived from its prompt, recording the requests. */
function recordingFaux(reasoning: boolean): { faux: FauxProviderHandle; requests: Recorded[]; stream: (m: any, c: any, o: any) => any } {
  const faux = fauxProvider({ provider: "faux-sum", models: [{ id: "sum-1", reasoning, contextWindow: 100_000 }] });
  const requests: Recorded[] = [];
  faux.setResponses(
    Array.from({ length: 20 }, () => (context: TranscriptContext, options: SimpleStreamOptions | undefined): AssistantMessage => {
      requests.push({ context, options });
      const user = JSON.stringify((context.messages[context.messages.length - 1] as any).content);
      return fauxAssistantMessage(`## Goal\nsummary ${createHash("sha1").update(user).digest("hex").slice(0, 10)}`);
    }),
  );
  const models = createModels();
  models.setProvider(faux.provider);
  return { faux, requests, stream: (m, c, o) => models.streamSimple(m, c, o) };
}

/** A request without the fields that differ by nature: the user message's `Date.now()` and the fresh session id. */
function comparable(r: Recorded) {
  const messages = r.context.messages.map((m: any) => (m.role === "user" ? { ...m, timestamp: 0 } : m));
  const { signal: _signal, sessionId, ...options } = (r.options ?? {}) as SimpleStreamOptions & { sessionId?: string };
  expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
  return { messages, options: Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
}

const CASES = [
  {
    name: "example-session.jsonl (split turn: history + turn prefix, instructions, thinking)",
    file: path.join(FIXTURES, "example-session.jsonl"),
    keep: 400,
    thinking: "high",
    instructions: "keep exact test names",
    reasoning: true,
  },
  {
    name: "compact-after-compaction.jsonl (previous summary: the update prompt)",
    file: path.join(FIXTURES, "compact-after-compaction.jsonl"),
    keep: 500,
    thinking: "low",
    reasoning: false,
  },
  {
    name: "gjc-03 (a real session with a previous compaction, no split)",
    file: path.join(SHARED_SESSIONS, "gjc-03-raddit-dashboard-pr.v3.jsonl"),
    keep: 20000,
    thinking: "off",
    reasoning: true,
  },
  {
    name: "trl-session (split turn with nothing before it: one request)",
    file: path.join(SHARED_SESSIONS, "trl-session.v3.jsonl"),
    keep: 20000,
    thinking: "medium",
    reasoning: true,
  },
] as const;

describe("compact's model path sends Pi's compact() requests (faux provider)", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let Pi: any;
  let PiCompaction: any;
  beforeAll(async () => {
    tmp = makeTempDir("compact-model");
    Pi = await importPiSessionManager();
    PiCompaction = await importPiCompaction();
  });
  afterAll(() => tmp?.cleanup());

  for (const c of CASES) {
    it(c.name, async () => {
      const settings = { ...DEFAULT_COMPACTION_SETTINGS, keepRecentTokens: c.keep };
      const instructions = "instructions" in c ? c.instructions : undefined;

      const pi = recordingFaux(c.reasoning);
      const piBranch = Pi.SessionManager.open(copyInto(tmp.dir, c.file, `pi-${path.basename(c.file)}`)).getBranch();
      const piPrep = PiCompaction.prepareCompaction(piBranch, settings);
      const piResult = await PiCompaction.compact(piPrep, pi.faux.getModel(), undefined, undefined, instructions, undefined, c.thinking, pi.stream);

      const ours = recordingFaux(c.reasoning);
      const session = await loadSession(c.file);
      const plan = await planCompaction(sessionView(session, defaultConfig()), {
        settings,
        contextWindow: null,
        customInstructions: instructions,
        nowIso: "2026-02-01T00:00:00.000Z",
        summarize: (prep) =>
          modelSummary(
            prep,
            { model: ours.faux.getModel() as any, stream: ours.stream, thinkingLevel: c.thinking, retry: DEFAULT_RETRY_SETTINGS },
            instructions,
          ),
      });

      expect(ours.requests.length).toBe(pi.requests.length);
      expect(ours.requests.length).toBeGreaterThan(0);
      for (let i = 0; i < pi.requests.length; i++) expect(comparable(ours.requests[i]), `request ${i}`).toEqual(comparable(pi.requests[i]));
      expect(ours.requests[0].options).toMatchObject({ cacheRetention: "none", ...(c.reasoning && c.thinking !== "off" ? { reasoning: c.thinking } : {}) });
      if (!c.reasoning || c.thinking === "off") expect(ours.requests[0].options).not.toHaveProperty("reasoning");
      const system = ours.requests[0].context.messages[0] as any;
      expect(system).toMatchObject({ role: "system", content: SUMMARIZATION_SYSTEM_PROMPT });

      // The same summary (answers + Pi's file tags), details and usage as Pi's compact().
      expect(plan.entry).not.toBeNull();
      expect(plan.entry!.summary).toBe(piResult.summary);
      expect(plan.entry!.details).toEqual(piResult.details);
      expect(plan.entry!.tokensBefore).toBe(piResult.tokensBefore);
      expect(plan.entry!.usage).toEqual(piResult.usage);
    });
  }

  it("a cut answer (length) or an error fails the compaction as in Pi; a tool call is refused", async () => {
    const session = await loadSession(path.join(FIXTURES, "example-session.jsonl"));
    const prep = prepareCompaction(session.branch, { ...DEFAULT_COMPACTION_SETTINGS, keepRecentTokens: 400 });
    if (typeof prep === "string") throw new Error(prep);
    const faux = fauxProvider({ provider: "faux-bad", models: [{ id: "m" }] });
    const models = createModels();
    models.setProvider(faux.provider);
    const options = {
      model: faux.getModel() as any,
      stream: (m: any, c: any, o: any) => models.streamSimple(m, c, o),
      retry: { ...DEFAULT_RETRY_SETTINGS, enabled: false },
    };
    faux.setResponses([fauxAssistantMessage("half a summ", { stopReason: "length" })]);
    await expect(modelSummary(prep, options)).rejects.toThrow("faux-bad/m: Summarization failed: generation hit the token cap and the summary is incomplete");
    faux.setResponses([fauxAssistantMessage("", { stopReason: "error", errorMessage: "401 invalid x-api-key" })]);
    await expect(modelSummary(prep, options)).rejects.toThrow("faux-bad/m: Summarization failed: 401 invalid x-api-key");
    faux.setResponses([fauxAssistantMessage({ type: "toolCall", id: "t", name: "bash", arguments: {} })]);
    await expect(modelSummary(prep, options)).rejects.toThrow("Summarization attempted to call a tool");
  });
});

describe("condense compact --model through a real HTTP server", () => {
  type Server = Awaited<ReturnType<typeof startFakeLlmServer>>;
  let server: Server;
  let dir: string;
  beforeAll(async () => {
    server = await startFakeLlmServer();
  });
  afterAll(async () => {
    await server.close();
  });
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), "condense-compact-http-"));
    server.requests.length = 0;
    server.setPlan(() => ({ text: "## Goal\n- Fix the kvstore delete test\n\n## Next Steps\n1. Add `clear()`" }));
    writeFileSync(
      path.join(dir, "models.json"),
      JSON.stringify({
        providers: {
          oai: {
            baseUrl: server.openaiBaseUrl,
            api: "openai-completions",
            apiKey: "$OAI_KEY",
            models: [{ id: "gpt-local", cost: { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 } }],
          },
        },
      }),
    );
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const cli = (...args: string[]) =>
    runCli(["compact", ...args], { PI_CODING_AGENT_DIR: dir, OAI_KEY: "oai-key", NO_COLOR: "1", CONDENSE_NOW: "2026-02-01T00:00:00.000Z" });

  it("sends Pi's prompts, appends the model's summary with Pi's file tags and the usage", async () => {
    const file = copyInto(dir, path.join(FIXTURES, "example-session.jsonl"));
    const r = await cli(file, "--model", "oai/gpt-local", "--keep-recent-tokens", "400", "--json");
    expect(r.code, r.stderr).toBe(0);
    // Split turn: the history request, then the turn prefix request.
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0].system).toBe(SUMMARIZATION_SYSTEM_PROMPT);
    expect(server.requests[0].headers.authorization).toBe("Bearer oai-key");
    const session = await loadSession(path.join(FIXTURES, "example-session.jsonl"));
    const prep = prepareCompaction(session.branch, { ...DEFAULT_COMPACTION_SETTINGS, keepRecentTokens: 400 });
    if (typeof prep === "string") throw new Error(prep);
    expect(server.requests[0].user).toBe(historyPromptText(prep.messagesToSummarize));
    expect(server.requests[1].user.startsWith("# Conversation\n[User]: Also add a `clear()` method")).toBe(true);
    const entry = JSON.parse(readFileSync(file, "utf8").trimEnd().split("\n").pop()!);
    const answer = "## Goal\n- Fix the kvstore delete test\n\n## Next Steps\n1. Add `clear()`";
    expect(entry.summary).toBe(
      `${answer}\n\n---\n\n**Turn Context (split turn):**\n\n${answer}\n\n<read-files>\ntest/store.test.ts\n</read-files>\n\n<modified-files>\nsrc/store.ts\n</modified-files>`,
    );
    expect(entry.usage.input).toBeGreaterThan(0);
    expect(Object.keys(entry)).toEqual(["type", "id", "parentId", "timestamp", "summary", "firstKeptEntryId", "tokensBefore", "details", "usage", "fromHook"]);
    const doc = JSON.parse(r.stdout).sessions[0];
    expect(doc.summarizer).toBe("oai/gpt-local");
    expect(doc.usage.input).toBe(entry.usage.input);
    expect(doc.usage.cost).toBeGreaterThan(0);
  });

  it("a cut answer fails the session (exit 1) and writes nothing; a missing key is a usage error", async () => {
    const file = copyInto(dir, path.join(FIXTURES, "example-session.jsonl"));
    const before = readFileSync(file);
    server.setPlan(() => ({ text: "half", finish: "length" }));
    const r = await cli(file, "--model", "oai/gpt-local", "--keep-recent-tokens", "400");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("oai/gpt-local: Summarization failed: generation hit the token cap and the summary is incomplete");
    expect(readFileSync(file).equals(before)).toBe(true);
    const noKey = await runCli(["compact", file, "--model", "oai/gpt-local", "--keep-recent-tokens", "400"], {
      PI_CODING_AGENT_DIR: dir,
      OAI_KEY: undefined,
      NO_COLOR: "1",
    });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain("OAI_KEY");
    expect(readFileSync(file).equals(before)).toBe(true);
  });
});
