import { readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultConfig } from "../src/config/config.js";
import { projectBranch } from "../src/context/projection.js";
import { openSession } from "../src/session/open.js";
import { loadSession } from "../src/session/session.js";
import { computeContextMetrics, chainSpan } from "../src/report/context-metrics.js";
import { findDiagnostics } from "../src/report/diagnostics.js";
import { renderAfterRun } from "../src/pipeline/render.js";
import { sessionView } from "../src/pipeline/view.js";
import type { Session } from "../src/session/session.js";
import type { Tokenizer } from "../src/report/tokenizer.js";
import { computeSessionMetrics } from "../src/report/session-metrics.js";
import { CHARS4, loadTokenizer } from "../src/report/tokenizer.js";
import { protectionTest } from "../src/prune/protect.js";
import { branchMessages } from "../src/context/branch-messages.js";
import { renderBranch } from "../src/render/render.js";
import { contextSize } from "../src/context/size.js";
import type { AgentMessage, SessionEntry } from "../src/session/types.js";
import { SHARED_SESSIONS, fixture, runCli } from "./cli-capture.js";

/** The metrics as `condense metrics` computes them: the session as read, and after a planned run. */
async function metricsOfSession(session: Session, tokenizer?: Tokenizer) {
  const view = sessionView(session, defaultConfig());
  return computeSessionMetrics(view, await renderAfterRun(view.fork()), tokenizer);
}
const metricsOf = async (name: string) => metricsOfSession(await openSession(fixture(name), "read"));

describe("context metrics (docs/design.md §9) on small fixtures", () => {
  it("a session that is one open chain: 100% share, all thinking open, every result in the gap", async () => {
    const m = await metricsOf("metrics-one-open-chain.jsonl");
    // Thinking texts of 36 + 48 + 31 = 115 chars → ceil(115 / 4) = 29.
    expect(m.openCycleThinkingTokens).toBe(29);
    // No text-only reply: the whole branch is the open segment.
    expect(m.largestChainSharePct).toBe(100);
    // No frontier: results of 90, 30 and 15 chars → 23 + 8 + 4 (Pi's ceil, per message).
    expect(m.frontierGapTokens).toBe(35);
    expect(m.index).toEqual({
      records: 0,
      summaries: 0,
      aliases: 0,
      spills: 0,
      chains: 0,
      refs: 0,
      frontier: null,
      summarizer: { calls: 0, inputTokens: 0, outputTokens: 0, cost: 0 },
      chainsCompressed: 0,
      rangesSummarized: 0,
    });
    // Pi's count per message: user 22, assistant 36 + "bash" + {"command":"npm run build"} = 67, result 90,
    // assistant 71, result 30, assistant 86, result 15 → 381 chars; tokens 6+17+23+18+8+22+4 = 98.
    expect(m.context.before).toEqual({ messages: 7, chars: 381, tokens: 98 });
    // Three batches, all below minBatchChars: a run leaves them raw.
    expect(m.context.after).toEqual(m.context.before);
    expect(m.reportedUsage).toEqual({
      entryId: "c0000006",
      line: 7,
      model: "anthropic/claude-sonnet-4-5",
      input: 13050,
      output: 50,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 13100,
      tokens: 13100,
    });
    expect(m.diagnosticFaults).toBe(0);
  });

  it("closed chains, a frontier, a summary, a protected path and a dedup alias", async () => {
    const m = await metricsOf("metrics-chains-frontier.jsonl");
    // Open segment after the last text-only reply: one thinking text of 20 chars → 5.
    expect(m.openCycleThinkingTokens).toBe(5);
    // Branch messages (Pi's count): chain 1 = 16 + 26 + 36 + 65 (summary) + 17 = 160, chain 2 =
    // 39 + 46 + 116 + 37 + 43 + 32 = 313, open segment = 22 + 46 + 36 = 104; all 577 → 54%.
    expect(m.largestChainSharePct).toBe(54);
    // Past the frontier (call_1): call_2's result (116 chars → 29) counts; call_3 reads
    // docs/skills/testing.md (protected), call_4 is a dedup alias of call_1.
    expect(m.frontierGapTokens).toBe(29);
    expect(m.index).toEqual({
      records: 1,
      summaries: 1,
      aliases: 1,
      spills: 0,
      chains: 0,
      refs: 1,
      frontier: { toolCallId: "call_1", turnIndex: 0, outcome: "summarized" },
      summarizer: { calls: 1, inputTokens: 1200, outputTokens: 80, cost: 0.0042 },
      chainsCompressed: 0,
      rangesSummarized: 0,
    });
    // What Pi sends now: call_1 and its alias call_4 are stubs (89 chars each, 36 raw).
    expect(m.context.before).toEqual({ messages: 14, chars: 683, tokens: 177 });
    // The one batch past the frontier is below minBatchChars: a run leaves it raw.
    expect(m.context.after).toEqual(m.context.before);
    expect(m.context.reclaimedTokens).toBe(0);
  });

  it("the extension's measure (flush metrics): JSON lengths, rounded half up, the gap per message", () => {
    const at = 1000;
    const messages: AgentMessage[] = [
      { role: "user", content: [{ type: "text", text: "go" }], timestamp: at },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "a" },
          { type: "toolCall", id: "x", name: "bash", arguments: { command: "ls" } },
        ],
        timestamp: at + 1,
      } as AgentMessage,
      { role: "toolResult", toolCallId: "x", toolName: "bash", content: [{ type: "text", text: "y" }], isError: false, timestamp: at + 2 },
    ];
    const m = computeContextMetrics(messages, null, { isSummarized: () => false }, protectionTest(defaultConfig()));
    // {"type":"thinking","thinking":"a"} is 34 chars → Math.round(8.5) = 9.
    expect(JSON.stringify({ type: "thinking", thinking: "a" }).length).toBe(34);
    expect(m.openCycleThinkingTokens).toBe(9);
    expect(m.frontierGapTokens).toBe(Math.round(JSON.stringify(messages[2]).length / 4));
    expect(m.largestChainSharePct).toBe(100);
  });

  it("an empty branch is all zeros", () => {
    expect(computeContextMetrics([], null, { isSummarized: () => false }, () => false)).toEqual({
      openCycleThinkingTokens: 0,
      largestChainSharePct: 0,
      frontierGapTokens: 0,
    });
  });

  it("locates chains by timestamp: first user with the start, first assistant at or after it with the final", () => {
    const u = (ts: number): AgentMessage => ({ role: "user", content: "q", timestamp: ts });
    const a = (ts: number): AgentMessage => ({ role: "assistant", content: [{ type: "text", text: "r" }], timestamp: ts }) as AgentMessage;
    const messages = [u(5), a(9), u(5), a(7), a(9)];
    expect(chainSpan(messages, 5, 9)).toEqual({ start: 0, end: 1 });
    expect(chainSpan(messages, 5, 7)).toEqual({ start: 0, end: 3 });
    expect(chainSpan(messages, 5, 8)).toBeNull();
    expect(chainSpan(messages, 5, null)).toEqual({ start: 0, end: 1 });
    expect(chainSpan([u(1), a(2)], 1, null)).toEqual({ start: 0, end: 1 });
  });

  it("uses the arguments of the nearest preceding assistant carrying the call id for protection", () => {
    const messages: AgentMessage[] = [
      { role: "user", content: "x", timestamp: 1 },
      {
        role: "assistant",
        content: [{ type: "toolCall", id: "c", name: "read", arguments: { path: "a/skills/s.md" } }],
        timestamp: 2,
      } as Partial<AgentMessage> as AgentMessage,
      {
        role: "assistant",
        content: [{ type: "toolCall", id: "d", name: "read", arguments: { path: "b.md" } }],
        timestamp: 3,
      } as Partial<AgentMessage> as AgentMessage,
      { role: "toolResult", toolCallId: "c", toolName: "read", content: [{ type: "text", text: "protected" }], isError: false, timestamp: 4 },
    ];
    const m = computeContextMetrics(messages, null, { isSummarized: () => false }, protectionTest(defaultConfig()));
    expect(m.frontierGapTokens).toBe(0);
  });
});

describe("structural diagnostics (docs/design.md §9)", () => {
  it("finds each shape once, with entry id and line", async () => {
    const m = await metricsOf("diagnostics-shapes.jsonl");
    expect(m.diagnostics).toEqual({
      orphanResults: { count: 1, places: [{ entryId: "e000000a", line: 11, detail: "ghost" }] },
      unansweredCalls: { count: 1, places: [{ entryId: "e0000009", line: 10, detail: "call_c" }] },
      duplicateIdsInMessage: { count: 1, places: [{ entryId: "e0000002", line: 3, detail: "dup_1" }] },
      reusedIds: { count: 1, places: [{ entryId: "e0000005", line: 6, detail: "call_a" }] },
      splitCallResult: {
        count: 1,
        places: [{ entryId: "e0000007", line: 8, detail: "custom message between call call_b and its result" }],
      },
      unresolvedRanges: { count: 0, places: [] },
      images: {
        count: 2,
        places: [
          { entryId: "e0000001", line: 2, detail: "user image image/png" },
          { entryId: "e0000004", line: 5, detail: "toolResult image image/png" },
        ],
      },
    });
    expect(m.diagnosticFaults).toBe(5);
  });

  it("counts unresolved chain ranges from the render's diagnostics, placed at the chain entry", async () => {
    const session = await openSession(fixture("metrics-chains-frontier.jsonl"), "read");
    const chainEntry: SessionEntry = {
      type: "custom",
      customType: "context-prune-chain",
      id: "f0000001",
      parentId: null,
      timestamp: "x",
      data: { blockId: "b4" },
    };
    const d = findDiagnostics(
      projectBranch(session.branch),
      [
        { kind: "unresolved-range", detail: "b4: start timestamp matches 2 user messages", dedupKey: "b4" },
        { kind: "unresolved-range", detail: "b9: nested in b4", dedupKey: "overlap:b9" },
        { kind: "orphan-sweep", detail: "swept 1", dedupKey: "abc" },
      ],
      [...session.branch, chainEntry],
      (e) => (e === chainEntry ? 42 : null),
    );
    expect(d.unresolvedRanges).toEqual({
      count: 2,
      places: [
        { entryId: "f0000001", line: 42, detail: "b4: start timestamp matches 2 user messages" },
        { entryId: "", line: null, detail: "b9: nested in b4" },
      ],
    });
  });

  it("counts the unresolved chain range the render reports (ambiguous-chain-boundaries.jsonl)", async () => {
    const m = await metricsOf("ambiguous-chain-boundaries.jsonl");
    expect(m.diagnostics.unresolvedRanges).toEqual({
      count: 1,
      places: [
        {
          entryId: "a6000015",
          line: 22,
          detail:
            "blockId=b7 start=1767261601000 final=1767261604000: not exactly one user and one later assistant message at these timestamps; nothing dropped",
        },
      ],
    });
    expect(m.diagnosticFaults).toBe(1);
  });

  it("keeps only the first five places", async () => {
    const m = await metricsOfSession(await openSession(path.join(SHARED_SESSIONS, "pimono-large-session.migrated-v3.jsonl"), "read"));
    // SOURCES.md: 18 tool calls never answered (aborted turns).
    expect(m.diagnostics.unansweredCalls.count).toBe(18);
    expect(m.diagnostics.unansweredCalls.places).toHaveLength(5);
    expect(m.diagnostics.unansweredCalls.places[0]).toEqual({ entryId: "5c782c0c", line: 33, detail: "toolu_016i8caCv6EqBx4nQUJmnEvU" });
  });
});

describe("tokenizers", () => {
  it("chars4 is ceil(chars / 4), as Pi; o200k counts real tokens and treats special-token text as text", async () => {
    expect(CHARS4.count("abcdef")).toBe(2);
    expect(CHARS4.count("abcde")).toBe(2);
    expect(CHARS4.count("abcd")).toBe(1);
    const o200k = await loadTokenizer("o200k");
    expect(o200k.count("hello world")).toBe(2);
    expect(o200k.count("a <|endoftext|> b")).toBeGreaterThan(3);
    expect(o200k.count("")).toBe(0);
    await expect(loadTokenizer("cl100k")).rejects.toThrow(/--tokenizer: expected one of chars4, o200k/);
  });

  it("--tokenizer o200k changes the token figures, not the chars or the share", async () => {
    const session = await openSession(fixture("metrics-one-open-chain.jsonl"), "read");
    const a = await metricsOfSession(session);
    const b = await metricsOfSession(session, await loadTokenizer("o200k"));
    expect(b.tokenizer).toBe("o200k");
    expect(b.context.before.chars).toBe(a.context.before.chars);
    expect(b.largestChainSharePct).toBe(a.largestChainSharePct);
    expect(b.context.before.tokens).not.toBe(a.context.before.tokens);
  });
});

describe("metrics over every shared session", () => {
  const files = readdirSync(SHARED_SESSIONS).filter((f) => f.endsWith(".jsonl"));

  it.each(files)("%s", async (name) => {
    // gjc-01 has no header: Pi refuses it, and so does every read-only command (below); the metrics
    // themselves are still computed on what the file holds.
    const session = name.startsWith("gjc-01")
      ? await loadSession(path.join(SHARED_SESSIONS, name))
      : await openSession(path.join(SHARED_SESSIONS, name), "read");
    const m = await metricsOfSession(session);
    expect(m.largestChainSharePct).toBeGreaterThanOrEqual(0);
    expect(m.largestChainSharePct).toBeLessThanOrEqual(100);
    expect(m.context.before.messages).toBeGreaterThan(0);
    // A run never makes what Pi sends bigger.
    expect(m.context.after.tokens).toBeLessThanOrEqual(m.context.before.tokens);
    // "before" is what Pi sends now, measured as Pi measures it.
    const rendered = renderBranch(session.branch, defaultConfig());
    expect(m.context.before).toEqual(contextSize(rendered.afterAgent));
    // The gap counts only results still in that context, so it never exceeds it.
    expect(m.frontierGapTokens).toBeLessThanOrEqual(m.context.before.tokens);
    // The open-segment thinking never exceeds all thinking on the branch.
    const all = branchMessages(session.branch)
      .map((x) => x.message)
      .filter((x) => x.role === "assistant" && Array.isArray(x.content))
      .flatMap((x) => (x as { content: { type: string; thinking?: string }[] }).content.filter((b) => b.type === "thinking"));
    expect(m.openCycleThinkingTokens).toBeLessThanOrEqual(Math.ceil(all.map((b) => b.thinking ?? "").join("").length / 4));
  });

  it("gjc-01 (no header, Pi refuses it): a failure for that file — exit 2 (unusable input), a failures entry, no row", async () => {
    const file = path.join(SHARED_SESSIONS, "gjc-01-youtube-transcript-extraction.v3.jsonl");
    const message = `${file}: no session header: the first entry (line 1, a "message" entry) should be {"type":"session","id",...}; Pi refuses to open such a file`;
    await expect(openSession(file, "read")).rejects.toMatchObject({ exitCode: 2, message });
    const r = await runCli("metrics", file, "--json");
    expect(r.code).toBe(2);
    const doc = JSON.parse(r.stdout);
    expect(doc.sessions).toEqual([]);
    expect(doc.failures).toEqual([{ session: file, error: message }]);
    expect(doc.totals.failed).toBe(1);
  });

  it("gjc-02's three results whose calls sat on the broken line are orphans", async () => {
    const m = await metricsOfSession(await openSession(path.join(SHARED_SESSIONS, "gjc-02-inline-agent-design.v3.jsonl"), "read"));
    expect(m.diagnostics.orphanResults.count).toBe(3);
    expect(m.diagnostics.orphanResults.places.map((p) => p.line)).toEqual([119, 120, 121]);
  });
});

describe("condense metrics --json", () => {
  it("prints the documented document: schema, tokenizer, sessions, totals, failures, gates", async () => {
    const r = await runCli("metrics", fixture("metrics-one-open-chain.jsonl"), fixture("metrics-chains-frontier.jsonl"), "--json", "--jobs", "1");
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(Object.keys(doc)).toEqual(["schema", "tokenizer", "sessions", "totals", "failures", "gates"]);
    expect(doc.schema).toBe("condense.metrics/2");
    expect(doc.tokenizer).toBe("chars4");
    expect(doc.sessions.map((s: { id: string }) => s.id)).toEqual(["one-open-chain", "chains-frontier"]);
    expect(doc.totals).toMatchObject({
      sessions: 2,
      failed: 0,
      contextBeforeTokens: 98 + 177,
      contextAfterTokens: 98 + 177,
      openCycleThinkingTokens: 29 + 5,
      frontierGapTokens: 35 + 29,
      largestChainSharePctMax: 100,
      records: 1,
      summaries: 1,
      aliases: 1,
      summarizerCalls: 1,
      summarizerInputTokens: 1200,
      summarizerOutputTokens: 80,
      diagnosticFaults: 0,
    });
    expect(doc.failures).toEqual([]);
    expect(doc.gates).toEqual({ limits: {}, crossed: [] });
  });

  it("prints one table row per session plus a totals row, and the places of the faults", async () => {
    const r = await runCli("metrics", fixture("metrics-one-open-chain.jsonl"), fixture("diagnostics-shapes.jsonl"), "--jobs", "1");
    expect(r.code).toBe(0);
    // Sessions are labelled by short id, date and first prompt (or name).
    expect(r.stdout).toContain("one-open 2026-01-01 Fix the failing build.");
    expect(r.stdout).toContain("total (2)");
    expect(r.stdout).toContain("  orphanResults 1: e000000a (line 11) ghost");
    expect(r.stdout).toContain("  splitCallResult 1: e0000007 (line 8) custom message between call call_b and its result");
  });
});
