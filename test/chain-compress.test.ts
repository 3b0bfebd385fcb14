/**
 * Chain compression end to end on hand-written fixtures (docs/design.md §6 step 8, section 7
 * phase 3): `condense run` appends the chain entries, the render applies them.
 */
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { defaultConfig } from "../src/config/config.js";
import { compressChains } from "../src/chain/compress.js";
import { projectBranch } from "../src/context/projection.js";
import { RECOVERY_HINT } from "../src/context/vocabulary.js";
import { ToolCallIndexer } from "../src/prune/indexer.js";
import { protectionTest } from "../src/prune/protect.js";
import { CUSTOM_TYPES } from "../src/entries/types.js";
import { applyChainCompressions } from "../src/render/chain-range-prune.js";
import { pruneMessages } from "../src/render/prune-messages.js";
import type { RenderDiagnostic } from "../src/render/types.js";
import { renderBranch } from "../src/render/render.js";
import { planRun } from "../src/pipeline/plan.js";
import { sessionView } from "../src/pipeline/view.js";
import { loadSession } from "../src/session/session.js";
import { chainEntries } from "../src/session/writer.js";
import { deterministicSummarizer } from "../src/summarize/deterministic.js";
import type { Summarizer } from "../src/summarize/types.js";
import { cleanupTempDirs, dataOf, FIXTURES, firstTextOf, NOW_MS, runCli, runFixture, tempCopy } from "./chain-fixtures.js";

afterAll(cleanupTempDirs);

const T = (s: number) => 1767261600000 + s * 1000; // fixture message times: 10:00:00 + s seconds

describe("five closed chains, window 3", () => {
  it("compresses the oldest two: a fused summary (b1) and a back-filled deterministic body (b2)", async () => {
    const run = await runFixture("five-closed-chains.jsonl");
    expect(run.code).toBe(0);
    expect(run.appended.map((e) => e.customType)).toEqual([
      "context-prune-summary",
      "context-prune-index",
      "context-prune-summary",
      "context-prune-index",
      "context-prune-summary",
      "context-prune-index",
      "context-prune-chain",
      "context-prune-index",
      "context-prune-chain",
      "context-prune-frontier",
      "context-prune-stats",
      "context-prune-flush-metrics",
    ]);
    const fused =
      "- `t1` bash `npm run build` — OK, exit 2, 1,544 chars, 36 lines\n" +
      "  - src/foo.ts(3,10): error TS2304: Cannot find name 'Foo'.\n" +
      "  - Found 1 error.\n" +
      "  - files: src/generated/schema.ts, src/foo.ts\n" +
      "- `t2` read `src/foo.ts` — OK, 1,440 chars, 61 lines";
    // No summary covered it: each call under its ref, short outputs whole.
    const deterministic =
      "Sub-task compressed without a model (no per-batch summary covered it); each output below is recoverable by its ref.\n" +
      "2 calls (bash ×1, read ×1) · 2026-01-01T10:00:09.000Z to 2026-01-01T10:00:11.000Z (2 s)\n" +
      "- `t4` bash `ls test` — OK: store.test.ts ⏎ util.test.ts\n" +
      "- `t5` read `test/util.test.ts` — OK: import { it } from 'vitest'; ⏎ it('adds', () => {});";
    expect(dataOf(run.appended, CUSTOM_TYPES.chain)).toEqual([
      {
        blockId: "b1",
        startUserTimestamp: T(1),
        droppedToolCallIds: ["call_1", "call_2"],
        finalAssistantTimestamp: T(6),
        toolRefs: ["t1", "t2"],
        compressedAt: NOW_MS,
        rangeSummaryText: fused,
        droppedOccurrenceKeys: [`call_1@${T(3)}`, `call_2@${T(5)}`],
      },
      {
        blockId: "b2",
        startUserTimestamp: T(7),
        droppedToolCallIds: ["call_3", "call_4"],
        finalAssistantTimestamp: T(12),
        toolRefs: ["t4", "t5"],
        compressedAt: NOW_MS,
        rangeSummaryText: deterministic,
        bodySource: "deterministic",
        droppedOccurrenceKeys: [`call_3@${T(9)}`, `call_4@${T(11)}`],
      },
    ]);
    // The back-fill: one index entry, flagged, with the refs it hands out (after t1–t3 of the flush).
    const backfill = run.appended[7];
    expect(backfill.data).toEqual({
      toolCalls: [
        {
          toolCallId: "call_3",
          toolName: "bash",
          args: { command: "ls test" },
          resultText: "store.test.ts\nutil.test.ts\n",
          isError: false,
          turnIndex: -1,
          timestamp: T(9),
          resultTimestamp: T(9),
        },
        {
          toolCallId: "call_4",
          toolName: "read",
          args: { path: "test/util.test.ts" },
          resultText: "import { it } from 'vitest';\nit('adds', () => {});\n",
          isError: false,
          turnIndex: -1,
          timestamp: T(11),
          resultTimestamp: T(11),
        },
      ],
      backfilled: true,
      refs: [
        { shortId: "t4", toolCallId: "call_3", resultTimestamp: T(9) },
        { shortId: "t5", toolCallId: "call_4", resultTimestamp: T(11) },
      ],
    });
    expect(dataOf(run.appended, CUSTOM_TYPES.stats)).toEqual([
      { totalInputTokens: 0, totalOutputTokens: 0, totalCost: 0, callCount: 0, chainsCompressed: 2, rangesSummarized: 1 },
    ]);

    const rendered = renderBranch(run.after.branch, defaultConfig());
    expect(rendered.diagnostics).toEqual([]);
    const after = rendered.after;
    // Chains 1 and 2: start, synthetic, final reply without thinking. Chains 3–5 raw (stubs). Summary of chain 3 only.
    expect(after.map((m) => `${m.role}:${firstTextOf(m).slice(0, 30)}`)).toEqual([
      "user:Why does the build fail?",
      'user:<compressed-chain id="b1" tool',
      "assistant:The build fails because `Foo` ",
      "user:List the test files.",
      'user:<compressed-chain id="b2" tool',
      "assistant:There are two test files: stor",
      "user:Show the config.",
      "assistant:",
      "toolResult:[Summarized in pruner summary,",
      "assistant:The config has 25 keys, key1 t",
      "user:Run the tests.",
      "assistant:",
      "toolResult:2 passing\n",
      "assistant:All tests pass.",
      "user:Anything uncommitted?",
      "assistant:",
      "toolResult:",
      "assistant:The working tree is clean.",
      "user:- `t3` read `config.json` — OK",
    ]);
    expect(after[1]).toEqual({
      role: "user",
      content: [{ type: "text", text: `<compressed-chain id="b1" tools="t1,t2">\n${fused}\n</compressed-chain>` }],
      timestamp: NOW_MS,
    });
    expect(after[4]).toEqual({
      role: "user",
      content: [{ type: "text", text: `<compressed-chain id="b2" tools="t4,t5">\n${deterministic}\n</compressed-chain>` }],
      timestamp: NOW_MS,
    });
    expect(after[2]).toMatchObject({
      role: "assistant",
      content: [{ type: "text", text: "The build fails because `Foo` is used in src/foo.ts without an import." }],
      timestamp: T(6),
    });
    expect(after[5]).toMatchObject({ role: "assistant", content: [{ type: "text", text: "There are two test files: store.test.ts and util.test.ts." }] });
    // The latest assistant message keeps its thinking (never altered).
    expect((after[17] as { content: { type: string }[] }).content.map((b) => b.type)).toEqual(["thinking", "text"]);

    // A second run on the unchanged file appends nothing.
    const size = statSync(run.path).size;
    expect(await runCli(["run", run.path, "--quiet"])).toBe(0);
    expect(statSync(run.path).size).toBe(size);
  });

  it("a second render with the entries already applied changes nothing", async () => {
    const run = await runFixture("five-closed-chains.jsonl");
    const config = defaultConfig();
    const ctx = { indexer: ToolCallIndexer.fromBranch(run.after.branch), config, isProtected: protectionTest(config) };
    const first = pruneMessages(
      projectBranch(run.after.branch).map((i) => i.message),
      ctx,
    );
    const diagnostics: RenderDiagnostic[] = [];
    const second = applyChainCompressions(first.messages, ctx, diagnostics);
    expect(second).toBe(first.messages);
    expect(diagnostics).toEqual([]);
    const again = pruneMessages(first.messages, ctx);
    expect(JSON.stringify(again.messages)).toBe(JSON.stringify(first.messages));
  });

  it("--no-chain skips compression and the render leaves chains alone", async () => {
    const run = await runFixture("five-closed-chains.jsonl", ["--no-chain"]);
    expect(dataOf(run.appended, CUSTOM_TYPES.chain)).toEqual([]);
    expect(dataOf(run.appended, CUSTOM_TYPES.stats)).toEqual([
      { totalInputTokens: 0, totalOutputTokens: 0, totalCost: 0, callCount: 0, chainsCompressed: 0, rangesSummarized: 0 },
    ]);
  });
});

const SPILL = ["--set", "spillThreshold=500", "--set", "spillPreviewBytes=200"];

describe("a chain no summary covers (behind the live extension's frontier)", () => {
  it("is back-filled (oversized output spilled) and gets the deterministic body, with no batch work at all", async () => {
    const run = await runFixture("uncovered-chain-behind-frontier.jsonl", SPILL);
    expect(run.code).toBe(0);
    expect(run.appended.map((e) => e.customType)).toEqual(["context-prune-index", "context-prune-chain", "context-prune-stats", "context-prune-flush-metrics"]);
    const original = (n: number) => firstTextOf((run.before.entries[n] as { message: { content: unknown } }).message);
    const bigLog = original(2); // call_1's result
    expect(bigLog.length).toBe(930);
    const blob = `${run.path.slice(0, run.path.lastIndexOf("/"))}/0199c0de-0000-7000-8000-00000000c0f1-blobs/call_1_${T(3)}.txt`;
    const index = run.appended[0].data as { toolCalls: Record<string, unknown>[]; backfilled: true; refs: unknown[] };
    expect(index.backfilled).toBe(true);
    expect(index.toolCalls[0]).toEqual({
      toolCallId: "call_1",
      toolName: "bash",
      args: { command: "cat logs/app.log" },
      resultText: "",
      isError: false,
      turnIndex: -1,
      timestamp: T(3),
      resultTimestamp: T(3),
      spillPath: blob,
      spillBytes: 930,
      resultPreview: bigLog.slice(0, bigLog.slice(0, 200).lastIndexOf("\n")),
      contentHash: createHash("sha1").update(`bash\0${bigLog}`).digest("hex"),
    });
    expect(readFileSync(blob, "utf8")).toBe(bigLog);
    expect(index.refs).toEqual([
      { shortId: "t1", toolCallId: "call_1", resultTimestamp: T(3) },
      { shortId: "t2", toolCallId: "call_2", resultTimestamp: T(5) },
      { shortId: "t3", toolCallId: "call_3", resultTimestamp: T(6) },
    ]);
    expect(run.appended[1].data).toEqual({
      blockId: "b1",
      startUserTimestamp: T(1),
      droppedToolCallIds: ["call_1", "call_2", "call_3"],
      finalAssistantTimestamp: T(7),
      toolRefs: ["t1", "t2", "t3"],
      compressedAt: NOW_MS,
      // The spilled output is described by its size on disk; the failed read keeps its reason.
      // No summary was written in this run, so the run's one recovery hint ends this body.
      rangeSummaryText:
        "Sub-task compressed without a model (no per-batch summary covered it); each output below is recoverable by its ref.\n" +
        "3 calls (read ×2, bash ×1) · 2026-01-01T10:00:03.000Z to 2026-01-01T10:00:06.000Z (3 s)\n" +
        "- `t1` bash `cat logs/app.log` — OK, spilled, 930 bytes\n" +
        "- `t2` read `logs/errors.log` — OK: ERROR disk full at 09:14\n" +
        "- `t3` read `logs/missing.log` — ERROR: ENOENT: no such file or directory, open 'logs/missing.log'\n" +
        `\n---\n${RECOVERY_HINT}`,
      bodySource: "deterministic",
      droppedOccurrenceKeys: [`call_1@${T(3)}`, `call_2@${T(5)}`, `call_3@${T(6)}`],
    });
    // No frontier (nothing was attempted); stats count the chain; flush metrics say the capture was empty.
    expect(run.appended[2].data).toEqual({ totalInputTokens: 0, totalOutputTokens: 0, totalCost: 0, callCount: 0, chainsCompressed: 1, rangesSummarized: 0 });
    expect(run.appended[3].data).toMatchObject({ ts: NOW_MS, capturedBatches: 0, processedBatches: 0, outcome: "empty" });

    // Every ref resolves, from the file alone, to the exact original output.
    const index2 = ToolCallIndexer.fromBranch(run.after.branch);
    const resolved = (ref: string) => index2.getRecord(index2.resolveToolCallId(ref)!)!;
    expect(resolved("t1").spillPath).toBe(blob);
    expect(resolved("t2")).toMatchObject({ toolCallId: "call_2", resultText: "ERROR disk full at 09:14\n", isError: false });
    expect(resolved("t3")).toMatchObject({ toolCallId: "call_3", resultText: "ENOENT: no such file or directory, open 'logs/missing.log'", isError: true });
    expect(resolved("t2").resultText).toBe(original(4));
    expect(resolved("t3").resultText).toBe(original(5));
    // Back-filled records never seed the content-hash map.
    expect(index2.contentHashToOriginal.size).toBe(0);

    const size = statSync(run.path).size;
    expect(await runCli(["run", run.path, "--quiet", ...SPILL])).toBe(0);
    expect(statSync(run.path).size).toBe(size);
  });
});

describe("a chain whose batch failed to summarize", () => {
  it("waits for a later run instead of dropping an output nothing indexed", async () => {
    const session = await loadSession(tempCopy(path.join(FIXTURES, "five-closed-chains.jsonl")));
    const flaky: Summarizer = {
      ...deterministicSummarizer,
      name: "flaky",
      async summarizeBatch(batch) {
        if (batch.calls.some((c) => c.toolName === "bash" && (c.args as { command?: string }).command === "npm run build")) {
          return { ok: false, kind: "transient", reason: "overloaded" };
        }
        return deterministicSummarizer.summarizeBatch(batch);
      },
    };
    const plan = await planRun(sessionView(session, defaultConfig()), { summarizer: flaky, concurrency: 2, nowMs: NOW_MS, targetPath: session.path });
    expect(plan.report.batches.failed).toBe(1);
    expect(plan.report.chains).toEqual({ compressed: 1, rangesSummarized: 0, backfilledCalls: 2, waiting: 1 });
    expect(dataOf(plan.entries, CUSTOM_TYPES.chain)).toMatchObject([{ blockId: "b1", startUserTimestamp: T(7), bodySource: "deterministic" }]);
  });
});

describe("protected outputs", () => {
  it("leaves a fully protected chain alone without a diagnostic, and relocates protected outputs of a mixed chain verbatim", async () => {
    const run = await runFixture("protected-chains.jsonl");
    expect(run.appended.map((e) => e.customType)).toEqual([
      "context-prune-summary",
      "context-prune-index",
      "context-prune-chain",
      "context-prune-frontier",
      "context-prune-stats",
      "context-prune-flush-metrics",
    ]);
    expect(dataOf(run.appended, CUSTOM_TYPES.diagnostic)).toEqual([]);
    expect(dataOf(run.appended, CUSTOM_TYPES.chain)).toEqual([
      {
        blockId: "b1",
        startUserTimestamp: T(5),
        droppedToolCallIds: ["call_2", "call_3"],
        finalAssistantTimestamp: T(9),
        toolRefs: ["t1"],
        compressedAt: NOW_MS,
        protectedToolCallIds: ["call_2"],
        droppedOccurrenceKeys: [`call_2@${T(7)}`, `call_3@${T(8)}`],
      },
    ]);
    const skill = firstTextOf((run.before.entries[2] as { message: { content: unknown } }).message);
    const summary = run.appended[0].content as string;
    const rendered = renderBranch(run.after.branch, defaultConfig());
    expect(rendered.diagnostics).toEqual([]);
    const after = rendered.after;
    // Chain 1 (fully protected) is untouched: its result stays verbatim.
    expect(after.slice(0, 4).map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(firstTextOf(after[2])).toBe(skill);
    expect(after[5]).toEqual({
      role: "user",
      content: [
        {
          type: "text",
          text: `<compressed-chain id="b1" tools="t1">\n${summary}\n\n<protected-output tool="read">\n${skill}\n</protected-output>\n</compressed-chain>`,
        },
      ],
      timestamp: NOW_MS,
    });
    expect(after[6]).toMatchObject({ role: "assistant", content: [{ type: "text", text: "Version bumped to v1.0.1 following the skill." }] });
    // The chain's per-batch summary is suppressed (its body lives in the block now).
    expect(after.filter((m) => firstTextOf(m) === summary)).toEqual([]);
  });
});

describe("ambiguous chain boundaries", () => {
  it("run withholds a chain whose block would outweigh what it drops; the unresolved b7 drops nothing", async () => {
    const run = await runFixture("ambiguous-chain-boundaries.jsonl");
    // Chain 2's outputs are a few words: its block would make what Pi sends larger (352 → 723
    // chars, context/size.ts), so run writes no chain.
    expect(dataOf(run.appended, CUSTOM_TYPES.chain)).toEqual([]);
    const config = defaultConfig();
    const rendered = renderBranch(run.after.branch, config);
    expect(rendered.diagnostics.map((d) => d.dedupKey)).toEqual(["b7"]);
    const projected = renderBranch(run.after.branch, { ...config, chainCompression: { ...config.chainCompression, enabled: false } }).after;
    expect(rendered.after).toEqual(projected);
  });

  it("an entry whose start timestamp matches two user messages drops nothing and reports unresolved-range", async () => {
    // The chain step itself, without run's growth check: the extension's b7 is in the registry; the
    // next block id is b8 (chain 2, older than the window).
    const session = await loadSession(path.join(FIXTURES, "ambiguous-chain-boundaries.jsonl"));
    const config = defaultConfig();
    const view = sessionView(session, config);
    const compressed = await compressChains(view.items, view.indexer, {
      config,
      summarizer: deterministicSummarizer,
      isProtected: view.isProtected,
      concurrency: 1,
      nowMs: NOW_MS,
      targetPath: session.path,
      sessionId: session.id,
    });
    const entries = chainEntries(session, compressed.entries, new Date(NOW_MS).toISOString());
    expect(dataOf(entries, CUSTOM_TYPES.chain)).toMatchObject([{ blockId: "b8", startUserTimestamp: T(5), toolRefs: ["t1"] }]);
    const run = { after: { branch: [...session.branch, ...entries] } };
    const rendered = renderBranch(run.after.branch, config);
    expect(rendered.diagnostics).toEqual([
      {
        kind: "unresolved-range",
        dedupKey: "b7",
        detail: `blockId=b7 start=${T(1)} final=${T(4)}: not exactly one user and one later assistant message at these timestamps; nothing dropped`,
      },
    ]);
    // Chains 1 and 3 (both starting at T(1)) keep every message; chain 2 is compressed.
    const roles = rendered.after.map((m) => `${m.role}:${firstTextOf(m).slice(0, 18)}`);
    expect(roles.slice(0, 12)).toEqual([
      "user:Check the disk.",
      "assistant:",
      "toolResult:/dev/sda1 40G 20G ",
      "assistant:Half full.",
      "user:Check memory.",
      "user:<compressed-chain ",
      "assistant:8 GB free.",
      "user:Check the load.",
      "assistant:",
      "toolResult:load average: 0.10",
      "assistant:Load is low.",
      "user:Kernel?",
    ]);
    const projected = renderBranch(run.after.branch, { ...config, chainCompression: { ...config.chainCompression, enabled: false } }).after;
    expect(rendered.after.slice(0, 4)).toEqual(projected.slice(0, 4));
    expect(rendered.after.slice(7)).toEqual(projected.slice(8));
  });
});

describe("one long open chain", () => {
  it("compresses nothing, even with a rolling window of 0", async () => {
    for (const extra of [[], ["--set", "chainCompression.rollingWindow=0"]]) {
      const run = await runFixture("one-long-open-chain.jsonl", extra);
      expect(run.code).toBe(0);
      expect(dataOf(run.appended, CUSTOM_TYPES.chain)).toEqual([]);
      expect(dataOf(run.appended, CUSTOM_TYPES.stats)).toEqual([
        { totalInputTokens: 0, totalOutputTokens: 0, totalCost: 0, callCount: 0, chainsCompressed: 0, rangesSummarized: 0 },
      ]);
      const rendered = renderBranch(run.after.branch, defaultConfig());
      expect(rendered.phases.find((p) => p.phase === "chain-range-prune")!.messages).toEqual(rendered.phases.find((p) => p.phase === "stub-replace")!.messages);
      expect(rendered.after.filter((m) => m.role === "assistant")).toHaveLength(6);
    }
  });
});
