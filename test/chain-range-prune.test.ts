/**
 * Render phase 3 (`applyChainCompressions`) and the compressor (`compressChains`) on small
 * in-memory message lists: fail-closed ranges, overlaps, id cross-check, coverage-based summary
 * suppression, thinking strip, eligibility (window, registry, grace), fusion accounting,
 * `backfill-empty`.
 */
import { describe, expect, it } from "vitest";
import { compressChains, deterministicChainBody, selectEligibleChains } from "../src/chain/compress.js";
import { defaultConfig, type PruneConfig } from "../src/config/config.js";
import { ToolCallIndexer } from "../src/prune/indexer.js";
import { protectionTest } from "../src/prune/protect.js";
import type { ChainEntryData } from "../src/entries/types.js";
import { applyChainCompressions } from "../src/render/chain-range-prune.js";
import type { RenderDiagnostic } from "../src/render/types.js";
import type { AgentMessage } from "../src/session/types.js";
import { deterministicSummarizer } from "../src/summarize/deterministic.js";
import type { Summarizer } from "../src/summarize/types.js";
import { loose } from "./helpers.js";

const user = (text: string, timestamp: number): AgentMessage => ({ role: "user", content: [{ type: "text", text }], timestamp });
const call = (id: string, timestamp: number, name = "bash", thinking = false): AgentMessage =>
  ({
    role: "assistant",
    content: [
      ...(thinking ? [{ type: "thinking", thinking: "hmm", thinkingSignature: "sig" }] : []),
      { type: "toolCall", id, name, arguments: { command: `run ${id}` } },
    ],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "m",
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason: "toolUse",
    timestamp,
  }) as AgentMessage;
const reply = (text: string, timestamp: number, thinking = true): AgentMessage =>
  ({
    role: "assistant",
    content: [...(thinking ? [{ type: "thinking", thinking: "done", thinkingSignature: "sig2" }] : []), { type: "text", text }],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "m",
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason: "stop",
    timestamp,
  }) as AgentMessage;
const result = (id: string, text: string, timestamp: number, toolName = "bash"): AgentMessage => ({
  role: "toolResult",
  toolCallId: id,
  toolName,
  content: [{ type: "text", text }],
  isError: false,
  timestamp,
});
const summaryMsg = (text: string, refs: { shortId: string; toolCallId: string; resultTimestamp?: number }[], timestamp: number): AgentMessage => ({
  role: "custom",
  customType: "context-prune-summary",
  content: text,
  display: false,
  details: { toolCallRefs: refs, toolNames: refs.map(() => "bash"), turnIndex: 0, timestamp },
  timestamp,
});

/** Three chains: 100–104 (a1), 200–204 (b1), 300–304 (c1). */
function threeChains(): AgentMessage[] {
  return [
    user("one", 100),
    call("a1", 101, "bash", true),
    result("a1", "A1 out", 102),
    reply("r1", 103),
    user("two", 200),
    call("b1", 201),
    result("b1", "B1 out", 202),
    reply("r2", 203),
    user("three", 300),
    call("c1", 301),
    result("c1", "C1 out", 302),
    reply("r3", 303),
  ];
}

function ctxWith(
  entries: ChainEntryData[],
  config: PruneConfig = defaultConfig(),
  summaries: { text: string; refs: { shortId: string; toolCallId: string; resultTimestamp?: number }[] }[] = [],
) {
  const indexer = new ToolCallIndexer();
  for (const e of entries) indexer.chains.set(e.startUserTimestamp, e);
  for (const s of summaries) indexer.summaries.push({ entryId: "", ...s });
  return { indexer, config, isProtected: protectionTest(config) };
}

const entry = (blockId: string, start: number, final: number | null, ids: string[], extra: Partial<ChainEntryData> = {}): ChainEntryData => ({
  blockId,
  startUserTimestamp: start,
  droppedToolCallIds: ids,
  finalAssistantTimestamp: final,
  toolRefs: [],
  compressedAt: 999,
  ...extra,
});

const texts = (ms: AgentMessage[]) =>
  ms.map((m) => {
    const c = (m as { content: unknown }).content;
    const t = typeof c === "string" ? c : (c as { type: string; text?: string }[]).map((b) => b.text ?? `<${b.type}>`).join("|");
    return `${m.role}:${t}`;
  });

describe("applyChainCompressions", () => {
  it("drops the middle, inserts the block after the start, strips the kept reply's thinking", () => {
    const messages = threeChains();
    const diagnostics: RenderDiagnostic[] = [];
    const out = applyChainCompressions(messages, ctxWith([entry("b1", 100, 103, ["a1"], { toolRefs: ["t1"], rangeSummaryText: "Body." })]), diagnostics);
    expect(texts(out).slice(0, 4)).toEqual(["user:one", 'user:<compressed-chain id="b1" tools="t1">\nBody.\n</compressed-chain>', "assistant:r1", "user:two"]);
    expect(out[1].timestamp).toBe(999);
    expect(out.slice(3)).toEqual(messages.slice(4));
    expect(diagnostics).toEqual([]);
    // Applying it again changes nothing.
    expect(applyChainCompressions(out, ctxWith([entry("b1", 100, 103, ["a1"], { toolRefs: ["t1"], rangeSummaryText: "Body." })]), diagnostics)).toBe(out);
    expect(diagnostics).toEqual([]);
  });

  it("returns the input itself when disabled or when there are no entries", () => {
    const messages = threeChains();
    const config = defaultConfig();
    config.chainCompression.enabled = false;
    expect(applyChainCompressions(messages, ctxWith([entry("b1", 100, 103, ["a1"])], config), [])).toBe(messages);
    expect(applyChainCompressions(messages, ctxWith([]), [])).toBe(messages);
  });

  it("fails closed: a null final, a missing start, duplicate timestamps or a reversed pair drop nothing", () => {
    const messages = [...threeChains(), user("dup", 200)];
    const diagnostics: RenderDiagnostic[] = [];
    const entries = [
      entry("b1", 100, null, ["a1"]),
      entry("b2", 200, 203, ["b1"]), // two users at 200
      entry("b3", 300, 103, ["c1"]), // the final reply comes before the start
      entry("b4", 400, 403, []), // no such user
    ];
    expect(applyChainCompressions(messages, ctxWith(entries), diagnostics)).toBe(messages);
    expect(diagnostics.map((d) => [d.kind, d.dedupKey])).toEqual([
      ["unresolved-range", "b1"],
      ["unresolved-range", "b2"],
      ["unresolved-range", "b3"],
      ["unresolved-range", "b4"],
    ]);
    expect(diagnostics[0].detail).toBe(
      "blockId=b1 start=100 final=null: not exactly one user and one later assistant message at these timestamps; nothing dropped",
    );
  });

  it("skips a range nested in another (overlap key) and cross-checks the recorded ids", () => {
    // An entry spanning chains 1–2 (start 100, final 203) and one for chain 2 alone.
    const messages = threeChains();
    const diagnostics: RenderDiagnostic[] = [];
    const out = applyChainCompressions(messages, ctxWith([entry("b1", 100, 203, ["a1"]), entry("b2", 200, 203, ["b1"])]), diagnostics);
    expect(diagnostics).toEqual([
      { kind: "unresolved-range", dedupKey: "overlap:b2", detail: "blockId=b2 skipped: its range nests inside blockId=b1" },
      { kind: "range-id-mismatch", dedupKey: "b1", detail: "blockId=b1 recorded=1 actual=2" },
    ]);
    // The range wins over the recorded ids: both tool turns go; the user message inside survives.
    expect(texts(out)).toEqual([
      "user:one",
      'user:<compressed-chain id="b1" tools="">\n\n</compressed-chain>',
      "user:two",
      "assistant:r2",
      ...texts(messages.slice(8)),
    ]);
  });

  it("suppresses per-batch summaries by coverage, keeps others and third-party custom messages", () => {
    const messages: AgentMessage[] = [
      user("one", 100),
      call("a1", 101),
      result("a1", "A1", 102),
      { role: "custom", customType: "other-extension", content: "note", display: true, timestamp: 102 },
      summaryMsg("inside", [{ shortId: "t9", toolCallId: "zz", resultTimestamp: 1 }], 102),
      reply("r1", 103),
      user("two", 200),
      call("a1", 201), // the same provider id reused in a later turn
      result("a1", "A1 again", 202),
      reply("r2", 203, false),
      summaryMsg("S1", [{ shortId: "t1", toolCallId: "a1", resultTimestamp: 102 }], 500),
      summaryMsg("S2", [{ shortId: "t2", toolCallId: "a1", resultTimestamp: 202 }], 501),
    ];
    const ctx = ctxWith([entry("b1", 100, 103, ["a1"], { toolRefs: ["t1"], droppedOccurrenceKeys: ["a1@102"] })], defaultConfig(), [
      { text: "S1", refs: [{ shortId: "t1", toolCallId: "a1", resultTimestamp: 102 }] },
      { text: "S2", refs: [{ shortId: "t2", toolCallId: "a1", resultTimestamp: 202 }] },
    ]);
    const out = applyChainCompressions(messages, ctx, []);
    expect(texts(out)).toEqual([
      "user:one",
      'user:<compressed-chain id="b1" tools="t1">\nS1\n</compressed-chain>',
      "custom:note",
      "assistant:r1",
      "user:two",
      "assistant:<toolCall>",
      "toolResult:A1 again",
      "assistant:r2",
      "custom:S2",
    ]);
  });

  it("with no range summary the body is the covering per-batch summaries, distinct, in order", () => {
    const messages = threeChains().slice(0, 4);
    messages.splice(3, 0, call("a2", 102.5), result("a2", "A2", 102.7));
    const refs1 = [{ shortId: "t1", toolCallId: "a1", resultTimestamp: 102 }];
    const refs2 = [{ shortId: "t2", toolCallId: "a2", resultTimestamp: 102.7 }];
    const ctx = ctxWith([entry("b3", 100, 103, ["a1", "a2"], { toolRefs: ["t1", "t2"], droppedOccurrenceKeys: ["a1@102", "a2@102.7"] })], defaultConfig(), [
      { text: "first", refs: refs1 },
      { text: "second", refs: refs2 },
      { text: "first", refs: refs1 },
      { text: "unrelated", refs: [{ shortId: "t3", toolCallId: "zz", resultTimestamp: 5 }] },
    ]);
    const out = applyChainCompressions(messages, ctx, []);
    expect(texts(out)[1]).toBe('user:<compressed-chain id="b3" tools="t1,t2">\nfirst\n\nsecond\n</compressed-chain>');
  });

  it("never strips thinking from the latest assistant message, nor leaves a reply empty", () => {
    const messages = [user("one", 100), call("a1", 101), result("a1", "A1", 102), reply("r1", 103)];
    const out = applyChainCompressions(messages, ctxWith([entry("b1", 100, 103, ["a1"])]), []);
    expect(texts(out)).toEqual(["user:one", 'user:<compressed-chain id="b1" tools="">\n\n</compressed-chain>', "assistant:<thinking>|r1"]);
    const thinkingOnly = { ...(reply("", 103) as object), content: [{ type: "thinking", thinking: "x", thinkingSignature: "s" }] } as AgentMessage;
    const more = [user("one", 100), call("a1", 101), result("a1", "A1", 102), thinkingOnly, user("two", 200), reply("r2", 201)];
    expect(applyChainCompressions(more, ctxWith([entry("b1", 100, 103, ["a1"])]), [])[2]).toBe(thinkingOnly);
  });
});

describe("compressChains", () => {
  const base = { summarizer: deterministicSummarizer, concurrency: 2, nowMs: 7, targetPath: "/tmp/none/s.jsonl", sessionId: "s" };
  const items = (ms: AgentMessage[]) => ms.map((message) => ({ message }));
  const five = () => [
    ...threeChains(),
    user("four", 400),
    call("d1", 401),
    result("d1", "D", 402),
    reply("r4", 403),
    user("chat", 450),
    reply("no tools", 451), // a chain without tool calls never counts
    user("five", 500),
    call("e1", 501),
    result("e1", "E", 502),
    reply("r5", 503),
  ];

  it("selects all but the rollingWindow most recent closed chains with tool calls, skipping the registry", () => {
    const config = defaultConfig();
    const indexer = new ToolCallIndexer();
    const pick = () => selectEligibleChains(five(), indexer, config, protectionTest(config)).eligible.map((c) => c.startUserTimestamp);
    expect(pick()).toEqual([100, 200]);
    indexer.chains.set(100, entry("b1", 100, 103, ["a1"]));
    expect(pick()).toEqual([200]);
    config.chainCompression.rollingWindow = 0;
    expect(pick()).toEqual([200, 300, 400, 500]);
  });

  it("holds back a chain with a context_tree_query result inside the recovery grace window", () => {
    const config = defaultConfig();
    const ms = five();
    ms.splice(6, 1, result("b1", "queried", 202, "context_tree_query"));
    ms.splice(5, 1, call("b1", 201, "context_tree_query"));
    const sel = () => selectEligibleChains(ms, new ToolCallIndexer(), config, protectionTest(config));
    // Four user messages came after it: with graceTurns 3 it is out of the window; with 4 it waits.
    expect(sel()).toMatchObject({ waiting: 0 });
    config.recoveryGraceTurns = 4;
    expect(sel().eligible.map((c) => c.startUserTimestamp)).toEqual([100]);
    expect(sel().waiting).toBe(1);
  });

  it("continues block ids, reports backfill-empty once, and counts alias members as indexed", async () => {
    const config = defaultConfig();
    const indexer = new ToolCallIndexer();
    indexer.nextBlock = 5;
    // Chain 2's only call was never answered; chain 1's call is a dedup alias of an indexed record.
    indexer.addRecord(
      { toolCallId: "orig", toolName: "bash", args: {}, resultText: "same", isError: false, turnIndex: 0, timestamp: 1, resultTimestamp: 1 },
      true,
    );
    indexer.registerRefs([{ shortId: "t4", toolCallId: "orig", resultTimestamp: 1 }]);
    indexer.addAlias("a1@102", "orig@1");
    const ms = five();
    ms.splice(6, 1); // drop b1's result
    const existing = new Set<string>();
    const run = () => compressChains(items(ms), indexer, { ...base, config, isProtected: protectionTest(config), existingDiagnostics: existing });
    const first = await run();
    expect(first.entries).toHaveLength(1);
    expect(loose(first.entries[0]).data).toMatchObject({ blockId: "b5", startUserTimestamp: 100, toolRefs: ["t4"], bodySource: "deterministic" });
    expect(first.backfilledCalls).toBe(0);
    expect(loose(first.diagnostics).map((d) => d.data)).toEqual([
      { kind: "backfill-empty", detail: "start=200 middles=1: no tool output of this chain could be indexed" },
    ]);
    const second = await run();
    expect(second.entries).toEqual([]);
    expect(second.diagnostics).toEqual([]);
  });

  it("fuses two or more summaries with one model call each, and survives a failed fusion", async () => {
    const config = defaultConfig();
    config.chainCompression.rollingWindow = 1;
    const calls: string[][] = [];
    const model: Summarizer = {
      name: "fake/model",
      local: false,
      summarizeBatch: async () => ({ ok: false, kind: "unusable", reason: "unused" }),
      fuseRange: async (bodies) => {
        calls.push(bodies);
        return bodies[0] === "A"
          ? { ok: true, text: "fused A+B", usage: { input: 10, output: 3, cost: 0.5 } }
          : { ok: false, kind: "transient", reason: "down" };
      },
    };
    const indexer = new ToolCallIndexer();
    const ms = [
      user("one", 100),
      call("a1", 101),
      result("a1", "x", 102),
      call("a2", 103),
      result("a2", "y", 104),
      reply("r1", 105),
      user("two", 200),
      call("b1", 201),
      result("b1", "x", 202),
      call("b2", 203),
      result("b2", "y", 204),
      reply("r2", 205),
      user("three", 300),
      call("c1", 301),
      result("c1", "x", 302),
      reply("r3", 303),
    ];
    indexer.summaries.push(
      { entryId: "", refs: [{ shortId: "t1", toolCallId: "a1", resultTimestamp: 102 }], text: "A" },
      { entryId: "", refs: [{ shortId: "t2", toolCallId: "a2", resultTimestamp: 104 }], text: "B" },
      { entryId: "", refs: [{ shortId: "t3", toolCallId: "b1", resultTimestamp: 202 }], text: "C" },
      { entryId: "", refs: [{ shortId: "t4", toolCallId: "b2", resultTimestamp: 204 }], text: "D" },
    );
    indexer.registerRefs(indexer.summaries.flatMap((s) => s.refs));
    // The summarized calls are indexed, as a run leaves them.
    for (const ref of indexer.summaries.flatMap((s) => s.refs)) {
      indexer.addRecord(
        {
          toolCallId: ref.toolCallId,
          toolName: "bash",
          args: {},
          resultText: "x",
          isError: false,
          turnIndex: 0,
          timestamp: ref.resultTimestamp!,
          resultTimestamp: ref.resultTimestamp,
        },
        true,
      );
    }
    const out = await compressChains(items(ms), indexer, { ...base, summarizer: model, config, isProtected: protectionTest(config) });
    expect(calls).toEqual([
      ["A", "B"],
      ["C", "D"],
    ]);
    expect(loose(out.entries).map((e) => e.data)).toEqual([
      {
        blockId: "b1",
        startUserTimestamp: 100,
        droppedToolCallIds: ["a1", "a2"],
        finalAssistantTimestamp: 105,
        toolRefs: ["t1", "t2"],
        compressedAt: 7,
        rangeSummaryText: "fused A+B",
        droppedOccurrenceKeys: ["a1@102", "a2@104"],
      },
      {
        blockId: "b2",
        startUserTimestamp: 200,
        droppedToolCallIds: ["b1", "b2"],
        finalAssistantTimestamp: 205,
        toolRefs: ["t3", "t4"],
        compressedAt: 7,
        droppedOccurrenceKeys: ["b1@202", "b2@204"],
      },
    ]);
    expect(out).toMatchObject({ chainsCompressed: 2, rangesSummarized: 1, modelCalls: 1, usage: { input: 10, output: 3, cost: 0.5 } });
  });

  it("throws when a fusion call is aborted", async () => {
    const config = defaultConfig();
    config.chainCompression.rollingWindow = 0;
    const model: Summarizer = { ...deterministicSummarizer, fuseRange: async () => ({ ok: false, kind: "aborted", reason: "aborted" }) };
    const indexer = new ToolCallIndexer();
    indexer.summaries.push(
      { entryId: "", refs: [{ shortId: "t1", toolCallId: "a1", resultTimestamp: 102 }], text: "A" },
      { entryId: "", refs: [{ shortId: "t2", toolCallId: "a1", resultTimestamp: 102 }], text: "B" },
    );
    await expect(compressChains(items(threeChains()), indexer, { ...base, summarizer: model, config, isProtected: protectionTest(config) })).rejects.toThrow(
      "aborted",
    );
  });
});

describe("deterministicChainBody", () => {
  const call = (ref: string, toolName: string, args: unknown, resultText: string, at: number, isError = false) => ({
    ref,
    toolName,
    args,
    resultText,
    isError,
    at,
  });

  it("counts the calls and tools, spans the time, and describes each call under its ref (a dedup alias once)", () => {
    const log = `${"compiling\n".repeat(40)}src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\nFound 1 error.`;
    const body = deterministicChainBody([
      call("t2", "bash", { command: "npm run build" }, log, 5000, true),
      call("t1", "bash", { command: "ls" }, "a.ts\nb.ts", 1000),
      call("t3", "write", { path: "src/a.ts", content: "x".repeat(300) }, "Wrote src/a.ts", 158_400),
      call("t1", "bash", { command: "ls" }, "a.ts\nb.ts", 160_000),
    ]);
    expect(body.split("\n")).toEqual([
      "Sub-task compressed without a model (no per-batch summary covered it); each output below is recoverable by its ref.",
      "4 calls (bash ×3, write ×1) · 1970-01-01T00:00:01.000Z to 1970-01-01T00:02:40.000Z (2 min 39 s)",
      "- `t2` bash `npm run build` — ERROR, 493 chars, 42 lines",
      "  - src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.",
      "  - Found 1 error.",
      "  - files: src/a.ts",
      "- `t1` bash `ls` — OK: a.ts ⏎ b.ts",
      "- `t3` write `src/a.ts` — OK: Wrote src/a.ts",
    ]);
  });

  it("one call: one time, no span, no first/last lines", () => {
    expect(
      deterministicChainBody([call("t9", "read", { path: "x.md" }, "hello", 1000)])
        .split("\n")
        .slice(1),
    ).toEqual(["1 call (read) · 1970-01-01T00:00:01.000Z", "- `t9` read `x.md` — OK: hello"]);
  });
});
