/**
 * The main job on small hand-written fixtures: exact entries appended, exact stubs rendered,
 * spill, dedup, protection, trivial and oversized skips, configuration errors, --dry-run, --output,
 * and v1 refusal / --migrate.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { contextSize } from "../src/context/size.js";
import { RECOVERY_HINT } from "../src/context/vocabulary.js";
import { defaultConfig, loadConfig, type PruneConfig } from "../src/config/config.js";
import { captureBatches } from "../src/prune/capture.js";
import { ToolCallIndexer } from "../src/prune/indexer.js";
import { planRun } from "../src/pipeline/plan.js";
import { sessionView } from "../src/pipeline/view.js";
import { protectionTest } from "../src/prune/protect.js";
import { renderBranch } from "../src/render/render.js";
import { loadSession } from "../src/session/session.js";
import type { Summarizer } from "../src/summarize/types.js";
import { runCli } from "./cli-harness.js";
import { copyInto, FIXTURES, makeTempDir, loose } from "./helpers.js";

const NOW = "2026-01-01T12:00:00.000Z";
const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const temps: (() => void)[] = [];
afterEach(() => {
  for (const c of temps.splice(0)) c();
});

function tempCopy(fixture: string): string {
  const { dir, cleanup } = makeTempDir("run");
  temps.push(cleanup);
  return copyInto(dir, path.join(FIXTURES, fixture));
}

/** Entries appended after the original bytes of a file. */
function appended(file: string, originalSize: number): Record<string, any>[] {
  return readFileSync(file)
    .subarray(originalSize)
    .toString("utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l));
}

function config(sets: Partial<PruneConfig> = {}): PruneConfig {
  return { ...defaultConfig(), ...sets };
}

describe("capture", () => {
  it("turn mode: one batch per assistant tool turn, turnIndex counting every assistant message", async () => {
    const s = await loadSession(path.join(FIXTURES, "example-session.jsonl"));
    const { batches } = captureBatches(s.branch, new ToolCallIndexer(), protectionTest(config()), "turn");
    expect(batches.map((b) => [b.turnIndex, b.flushGroup, b.calls.map((c) => c.toolCallId).join(",")])).toEqual([
      [0, 0, "toolu_01,toolu_02"],
      [1, 0, "toolu_03"],
      [2, 0, "toolu_04"],
      [3, 0, "toolu_05"],
      [5, 1, "toolu_06"],
      [6, 1, "toolu_07,toolu_08"],
      [7, 1, "toolu_09"],
    ]);
    expect(batches[1].calls[0].key).toBe("toolu_03@1767261607100");
    expect(batches[1].calls[0].isError).toBe(true);
    expect(batches[0].assistantText).toBe("I'll look at the store and its tests.");
  });

  it("agent-message mode: all tool turns of one user turn form one batch", async () => {
    const s = await loadSession(path.join(FIXTURES, "example-session.jsonl"));
    const { batches } = captureBatches(s.branch, new ToolCallIndexer(), protectionTest(config()), "agent-message");
    expect(batches.map((b) => [b.turnIndex, b.calls.length])).toEqual([
      [3, 5],
      [7, 4],
    ]);
    expect(batches[0].assistantText).toBe(
      "I'll look at the store and its tests.\n\nLet me run the tests to see the failure.\n\n" +
        "`delete` removes the key in memory but never calls `flush()`, so the file keeps the old value. Fixing it.",
    );
  });

  it("protected paths and tools never enter a batch", async () => {
    const s = await loadSession(path.join(FIXTURES, "protected-and-trivial.jsonl"));
    const result = captureBatches(s.branch, new ToolCallIndexer(), protectionTest(config({ protectedTools: ["todowrite"] })), "turn");
    expect(result.protectedCalls).toBe(2);
    expect(result.batches.map((b) => b.calls.map((c) => c.toolCallId))).toEqual([["r3"], ["r4"]]);
  });
});

describe("run on the example session", () => {
  it("appends exactly the summaries, index entries and the frontier/stats/metrics tail", async () => {
    const file = tempCopy("example-session.jsonl");
    const before = readFileSync(file);
    const r = await runCli([file, "--json"], { CONDENSE_NOW: NOW });
    expect(r.code).toBe(0);
    expect(sha256(readFileSync(file).subarray(0, before.length))).toBe(sha256(before));
    const entries = appended(file, before.length);
    expect(entries.map((e) => `${e.type}:${e.customType}`)).toEqual([
      "custom_message:context-prune-summary",
      "custom:context-prune-index",
      "custom_message:context-prune-summary",
      "custom:context-prune-index",
      "custom:context-prune-frontier",
      "custom:context-prune-stats",
      "custom:context-prune-flush-metrics",
    ]);
    // Each a child of the one before, the first a child of the old leaf; fixed clock.
    const session = await loadSession(path.join(FIXTURES, "example-session.jsonl"));
    expect(entries[0].parentId).toBe(session.leaf!.id);
    for (let i = 1; i < entries.length; i++) expect(entries[i].parentId).toBe(entries[i - 1].id);
    for (const e of entries) {
      expect(e.id).toMatch(/^[0-9a-f]{8}$/);
      expect(e.timestamp).toBe(NOW);
    }
    // Chosen for information, copied without the colour codes vitest printed: the failing test, the
    // assertion, the totals and the file; the run's one recovery hint ends its last summary.
    expect(entries[2].content).toBe(
      "- `t3` bash `npm test` — ERROR, exit 1, 1,007 chars, 34 lines\n" +
        "  - × test/store.test.ts > KvStore > persists deletes across reopen 5ms\n" +
        "  - FAIL test/store.test.ts > KvStore > persists deletes across reopen\n" +
        "  - AssertionError: expected '1' to be undefined\n" +
        "  - Test Files 1 failed (1)\n" +
        "  - Tests 1 failed | 2 passed (3)\n" +
        "  - files: test/store.test.ts\n\n" +
        "---\n" +
        RECOVERY_HINT,
    );
    expect(entries[2].display).toBe(false);
    expect(entries[2].details).toEqual({
      toolCallRefs: [{ shortId: "t3", toolCallId: "toolu_03", resultTimestamp: 1767261607100 }],
      toolNames: ["bash"],
      turnIndex: 1,
      timestamp: Date.parse("2026-01-01T10:00:06.400Z"),
    });
    const original = loose(session.branch).find((e) => e.message?.toolCallId === "toolu_03")!.message;
    expect(entries[3].data).toEqual({
      toolCalls: [
        {
          toolCallId: "toolu_03",
          toolName: "bash",
          args: { command: "npm test" },
          resultText: original.content[0].text,
          isError: true,
          turnIndex: 1,
          timestamp: Date.parse("2026-01-01T10:00:06.400Z"),
          resultTimestamp: 1767261607100,
        },
      ],
    });
    expect(entries[4].data).toEqual({
      lastAttemptedToolCallId: "toolu_09",
      lastAttemptedToolName: "bash",
      lastAttemptedTurnIndex: 7,
      lastAttemptedTimestamp: Date.parse(loose(session.branch).find((e) => e.message?.content?.[0]?.id === "toolu_09")!.timestamp),
      attemptedBatchCount: 7,
      attemptedToolCallCount: 9,
      rawCharCount: entries[4].data.rawCharCount,
      summaryCharCount: entries[0].content.length + entries[2].content.length,
      outcome: "summarized",
    });
    expect(entries[6].data.trigger).toBe("offline");
    expect(entries[6].data.ts).toBe(Date.parse(NOW));

    const report = JSON.parse(r.stdout).sessions[0];
    expect(report.batches).toEqual({ captured: 7, summarized: 2, skippedTrivial: 5, skippedDeduped: 0, skippedOversized: 0, failed: 0, spilled: 0 });
    expect(report.entriesAppended).toBe(7);

    // The rendered context carries the exact stub for t3, and a second run appends nothing.
    const after = await loadSession(file);
    const rendered = renderBranch(after.branch, config());
    const stub = rendered.after.find((m) => m.role === "toolResult" && m.toolCallId === "toolu_03")!;
    expect(stub).toEqual({
      role: "toolResult",
      toolCallId: "toolu_03",
      toolName: "bash",
      content: [{ type: "text", text: "[Summarized in pruner summary, ref `t3`. Use context_tree_query to retrieve full output.]" }],
      isError: false,
      timestamp: 1767261607100,
    });
    const size = readFileSync(file).length;
    const again = await runCli([file, "--json"], { CONDENSE_NOW: NOW });
    expect(again.code).toBe(0);
    expect(readFileSync(file).length).toBe(size);
    expect(JSON.parse(again.stdout).sessions[0].entriesAppended).toBe(0);
  });

  it("--dry-run writes nothing; --output writes original bytes plus entries and leaves the input alone", async () => {
    const file = tempCopy("example-session.jsonl");
    const bytes = readFileSync(file);
    const dry = await runCli([file, "--dry-run", "--json"], { CONDENSE_NOW: NOW });
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout).sessions[0].entriesAppended).toBe(7);
    expect(readFileSync(file).equals(bytes)).toBe(true);

    const out = path.join(path.dirname(file), "out", "condensed.jsonl");
    mkdirSync(path.dirname(out));
    const r = await runCli([file, "--output", out, "--quiet"], { CONDENSE_NOW: NOW });
    expect(r.code).toBe(0);
    expect(readFileSync(file).equals(bytes)).toBe(true);
    const written = readFileSync(out);
    expect(written.subarray(0, bytes.length).equals(bytes)).toBe(true);
    expect(appended(out, bytes.length)).toHaveLength(7);
    // The same bytes as an in-place run.
    await runCli([file, "--quiet"], { CONDENSE_NOW: NOW });
    expect(readFileSync(file).equals(written)).toBe(true);

    const again = await runCli([path.join(path.dirname(file), "example-session.jsonl"), "--output", out]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`--output ${out} already exists; use --force to overwrite it`);
  });
});

describe("spill and dedup", () => {
  it("spills a huge result to a sidecar, indexes it with a ref, and aliases its duplicate without a second file", async () => {
    const file = tempCopy("spill-and-duplicate.jsonl");
    const size = readFileSync(file).length;
    const r = await runCli([file, "--set", "spillThreshold=4000", "--json"], { CONDENSE_NOW: NOW });
    expect(r.code).toBe(0);
    const entries = appended(file, size);
    // The records as the extension's own spill writes them, then the refs in a record-less
    // back-filled entry (the only index entry whose refs the extension reads).
    expect(entries.map((e) => e.customType)).toEqual(["context-prune-index", "context-prune-index", "context-prune-dedup-alias"]);
    const blobs = path.join(path.dirname(file), "0199c0de-0000-7000-8000-0000000000a1-blobs");
    expect(readdirSync(blobs)).toEqual(["call_1_1767261602300.txt"]);
    const session = await loadSession(path.join(FIXTURES, "spill-and-duplicate.jsonl"));
    const original = loose(session.branch).find((e) => e.message?.toolCallId === "call_1")!.message.content[0].text;
    expect(readFileSync(path.join(blobs, "call_1_1767261602300.txt"), "utf8")).toBe(original);
    expect(Object.keys(entries[0].data)).toEqual(["toolCalls"]);
    const record = entries[0].data.toolCalls[0];
    expect(record.resultText).toBe("");
    expect(record.spillPath).toBe(path.join(blobs, "call_1_1767261602300.txt"));
    expect(record.spillBytes).toBe(Buffer.byteLength(original));
    expect(record.resultPreview).toBe(original.slice(0, original.lastIndexOf("\n", 2048)));
    expect(entries[1].data).toEqual({ toolCalls: [], backfilled: true, refs: [{ shortId: "t1", toolCallId: "call_1", resultTimestamp: 1767261602300 }] });
    expect(entries[2].data).toEqual({
      newToolCallId: "call_2",
      originalToolCallId: "call_1",
      newResultTimestamp: 1767261605600,
      originalResultTimestamp: 1767261602300,
    });
    const rendered = renderBranch((await loadSession(file)).branch, loadConfig({ sets: ["spillThreshold=4000"], env: {} }));
    const stubs = rendered.after.filter((m) => m.role === "toolResult").map((m) => (m.content[0] as any).text);
    // pi-condense 2.9.1 src/pruner.ts, the stub of a spilled record.
    const expected = [
      `[Oversized output spilled to file — ${record.spillBytes} bytes.]`,
      "Tool: bash",
      "Preview (head):",
      record.resultPreview,
      `Full output — read this file (offset/limit supported): ${record.spillPath}`,
      "Or use context_tree_query with ref `t1`.",
    ].join("\n");
    expect(stubs).toEqual([expected, expected]);
  });

  it("dedups only against records of earlier flushes; CRLF and trailing spaces do not matter", async () => {
    const file = tempCopy("dedup-across-chains.jsonl");
    const size = readFileSync(file).length;
    const r = await runCli([file, "--quiet"], { CONDENSE_NOW: NOW });
    expect(r.code).toBe(0);
    const entries = appended(file, size);
    const summaries = entries.filter((e) => e.customType === "context-prune-summary");
    // bash_1 and bash_2 are in the same flush (first chain): both summarized, no alias between them.
    expect(summaries.map((s) => s.details.toolCallRefs.map((x: any) => `${x.shortId}=${x.toolCallId}`))).toEqual([["t1=bash_1"], ["t2=bash_2"]]);
    // The reused id bash_1 in the second chain is a duplicate of the first occurrence.
    const alias = entries.find((e) => e.customType === "context-prune-dedup-alias")!;
    expect(alias.data).toEqual({
      newToolCallId: "bash_1",
      originalToolCallId: "bash_1",
      newResultTimestamp: 1767261606900,
      originalResultTimestamp: 1767261602300,
    });
    const indexer = ToolCallIndexer.fromBranch((await loadSession(file)).branch);
    expect(indexer.shortRefFor("bash_1@1767261606900")).toBe("t1");
    expect(indexer.frontier?.outcome).toBe("summarized");
  });

  it("leaves trivial batches raw and protected outputs verbatim, and still advances the frontier", async () => {
    const file = tempCopy("protected-and-trivial.jsonl");
    const size = readFileSync(file).length;
    const r = await runCli([file, "--set", 'protectedTools=["todowrite"]', "--json"], { CONDENSE_NOW: NOW });
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout).sessions[0];
    expect(report.batches.skippedTrivial).toBe(1);
    expect(report.calls.protected).toBe(2);
    const entries = appended(file, size);
    const indexed = entries.filter((e) => e.customType === "context-prune-index").flatMap((e) => e.data.toolCalls.map((t: any) => t.toolCallId));
    expect(indexed).toEqual(["r4"]);
    expect(entries.find((e) => e.customType === "context-prune-frontier")!.data.lastAttemptedToolCallId).toBe("r4");
  });
});

describe("oversized summaries and concurrency", () => {
  const slowEcho = (pad: number): Summarizer => ({
    name: "test",
    local: false,
    async summarizeBatch(batch) {
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 15)));
      return {
        ok: true,
        text: batch.calls.map((c, i) => `- [[${i + 1}:${c.toolName}]] ${"x".repeat(pad)}`).join("\n"),
        usage: { input: 10, output: 5, cost: 0.001 },
      };
    },
    async fuseRange(bodies) {
      return { ok: true, text: bodies.join("\n") };
    },
  });

  it("a summary longer than the raw text is discarded and counted as skipped-oversized", async () => {
    const s = await loadSession(path.join(FIXTURES, "example-session.jsonl"));
    const plan = await planRun(sessionView(s, config()), { summarizer: slowEcho(5000), concurrency: 4, nowMs: Date.parse(NOW), targetPath: s.path });
    expect(plan.report.batches.skippedOversized).toBe(2);
    expect(plan.report.batches.summarized).toBe(0);
    expect(loose(plan.entries).map((e) => e.customType)).toEqual(["context-prune-frontier", "context-prune-stats", "context-prune-flush-metrics"]);
    expect(loose(plan.entries[0]).data.outcome).toBe("skipped-oversized");
    expect(loose(plan.entries[1]).data).toEqual({
      totalInputTokens: 20,
      totalOutputTokens: 10,
      totalCost: 0.002,
      callCount: 2,
      chainsCompressed: 0,
      rangesSummarized: 0,
    });
  });

  it("appends the same entries whatever the concurrency and the order answers arrive in", async () => {
    const s = await loadSession(path.join(FIXTURES, "example-session.jsonl"));
    const run = (concurrency: number) =>
      planRun(sessionView(s, config({ minBatchChars: 0 })), { summarizer: slowEcho(3), concurrency, nowMs: Date.parse(NOW), targetPath: s.path });
    const one = JSON.stringify((await run(1)).entries);
    expect(JSON.stringify((await run(8)).entries)).toBe(one);
    expect(JSON.stringify((await run(3)).entries)).toBe(one);
    // Seven batches, all summarized: without a per-summary footer even the two tiny edit batches fit.
    expect(JSON.parse(one).filter((e: any) => e.customType === "context-prune-summary")).toHaveLength(7);
    expect(JSON.parse(one).find((e: any) => e.customType === "context-prune-frontier").data.outcome).toBe("summarized");
  });
});

describe("configuration and refusals", () => {
  it("names key, value and accepted range for invalid values; exit 2, nothing written", async () => {
    const file = tempCopy("example-session.jsonl");
    const bytes = readFileSync(file);
    const cases: [string[], string][] = [
      [["--set", "minBatchChars=-1"], "--set minBatchChars=-1: invalid value -1 for minBatchChars: expected an integer ≥ 0"],
      [["--set", "batchingMode=chain"], '--set batchingMode=chain: invalid value "chain" for batchingMode: expected one of turn, agent-message'],
      [
        ["--set", "autoBudgetThreshold=1.5"],
        "--set autoBudgetThreshold=1.5: invalid value 1.5 for autoBudgetThreshold: expected a number in (0, 1], or null to disable",
      ],
      [["--set", "nope=1"], '--set nope=1: unknown configuration key "nope"'],
      [["--concurrency", "0"], '--concurrency: expected a positive integer, got "0"'],
    ];
    for (const [args, message] of cases) {
      const r = await runCli([file, ...args]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(message);
    }
    expect(readFileSync(file).equals(bytes)).toBe(true);
  });

  it("reads contextPrune from Pi's settings.json and --config, later sources winning", async () => {
    const { dir, cleanup } = makeTempDir("cfg");
    temps.push(cleanup);
    writeFileSync(
      path.join(dir, "settings.json"),
      JSON.stringify({ contextPrune: { minBatchChars: 10, pruneOn: "agent-message", chainCompression: { rollingWindow: 5 } } }),
    );
    writeFileSync(path.join(dir, "condense.json"), JSON.stringify({ minBatchChars: 20 }));
    const c = loadConfig({ configFile: path.join(dir, "condense.json"), sets: ["purgeErrors.cooldownTurns=4"], env: { PI_CODING_AGENT_DIR: dir } });
    expect(c.minBatchChars).toBe(20);
    expect(c.chainCompression).toEqual({ enabled: true, rollingWindow: 5, fuseRangeSummary: true, stripFinalAssistantThinking: true });
    expect(c.purgeErrors.cooldownTurns).toBe(4);
  });

  it("a settings.json that starts with a byte-order mark is read, as Pi reads it (stripBom)", () => {
    const { dir, cleanup } = makeTempDir("cfg-bom");
    temps.push(cleanup);
    writeFileSync(path.join(dir, "settings.json"), `\uFEFF${JSON.stringify({ contextPrune: { minBatchChars: 10 } })}`);
    writeFileSync(path.join(dir, "condense.json"), `\uFEFF${JSON.stringify({ spillThreshold: 9000 })}`);
    const c = loadConfig({ configFile: path.join(dir, "condense.json"), env: { PI_CODING_AGENT_DIR: dir } });
    expect([c.minBatchChars, c.spillThreshold]).toEqual([10, 9000]);
  });

  it("refuses a v1 session without --migrate, and with it backs up and runs", async () => {
    const file = tempCopy("v1-with-compaction.jsonl");
    const bytes = readFileSync(file);
    const refused = await runCli([file]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("a v1 session; Pi rewrites such files as v3 when it opens them. Run with --migrate");
    expect(readFileSync(file).equals(bytes)).toBe(true);
    // --output: the output starts with the v3 rewrite of the input, which stays as it was.
    const output = path.join(path.dirname(file), "v3-out.jsonl");
    const toOutput = await runCli([file, "--migrate", "--output", output, "--target", "extension"], { CONDENSE_NOW: NOW, COLUMNS: "400" });
    expect(toOutput.code, toOutput.stderr).toBe(0);
    expect(readFileSync(file).equals(bytes)).toBe(true);
    const doc = JSON.parse((await runCli([file, "--migrate", "--output", `${output}.2`, "--target", "extension", "--json"], { CONDENSE_NOW: NOW })).stdout)
      .sessions[0];
    const tail = toOutput.stdout.trimEnd().split("\n");
    expect(tail.at(-1)).toBe(
      `wrote ${output}: the v3 rewrite of ${file} + ${doc.entriesAppended} entries (+${doc.bytesAppended.toLocaleString("en-US")} bytes); ${file} is untouched`,
    );
    expect(tail.some((l) => l.startsWith(`${output} holds the session's v3 rewrite + `) && l.endsWith("; the session file is untouched"))).toBe(true);
    const migrated = await runCli([file, "--migrate", "--json"], { CONDENSE_NOW: NOW });
    expect(migrated.code).toBe(0);
    expect(readFileSync(`${file}.v1.bak`).equals(bytes)).toBe(true);
    const header = JSON.parse(readFileSync(file, "utf8").split("\n")[0]);
    expect(header.version).toBe(3);
    expect(existsSync(`${file}.v1.bak`)).toBe(true);
  });
});

describe("trial findings", () => {
  it("--json gives one JSON document on stdout even for usage errors", async () => {
    const r = await runCli(["run", "/no/such/session.jsonl", "--json"], { PI_CODING_AGENT_DIR: "/tmp/none", PI_CODING_AGENT_SESSION_DIR: undefined });
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toEqual({
      error: { message: "/no/such/session.jsonl: no such file or directory, no glob match, and no session with that id in /tmp/none/sessions", exitCode: 2 },
    });
  }, 30_000);

  it("refuses a spill threshold that is not above the preview size", async () => {
    const file = tempCopy("example-session.jsonl");
    const r = await runCli([file, "--set", "spillThreshold=500"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("spillThreshold (500) must be greater than spillPreviewBytes (2048)");
  });
});

describe("context edits", () => {
  it("never indexes the original text behind a user's redaction", async () => {
    const file = tempCopy("context-edit-redacted-result.jsonl");
    const size = readFileSync(file).length;
    const r = await runCli([file, "--set", "minBatchChars=0", "--json"], { CONDENSE_NOW: NOW });
    expect(r.code).toBe(0);
    const tail = readFileSync(file).subarray(size).toString("utf8");
    expect(tail).not.toContain("SECRET123");
    // The batch holds the 25-char replacement, so any summary is longer than it: skipped, not indexed.
    const entries = appended(file, size);
    expect(entries.find((e) => e.customType === "context-prune-index")).toBeUndefined();
    expect(entries.find((e) => e.customType === "context-prune-frontier")!.data).toMatchObject({ rawCharCount: 25, outcome: "skipped-oversized" });
  });
});

describe("error purge after a run", () => {
  it("a failed call whose arguments error purge takes stays raw: summarizing it would bring the arguments back", async () => {
    // pi-condense 2.9.1: pruneMessages stubs first (isError: false), then purgeErroredArgs sees
    // only isError results — Pi would send the full arguments of a failed call once it is
    // summarized, so run leaves such a call out of its batch.
    const file = tempCopy("summarized-failed-write.jsonl");
    const before = renderBranch((await loadSession(file)).branch, config());
    expect((before.after[1] as any).content[0].arguments).toEqual({ _purged: '<purged-errored-args size="30031"/>' });
    const r = await runCli([file, "--json"], { CONDENSE_NOW: NOW });
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout).sessions[0];
    expect(report.batches.summarized).toBe(0);
    const rendered = renderBranch((await loadSession(file)).branch, config());
    expect(rendered.after[1]).toStrictEqual(before.after[1]);
    expect(rendered.after[2]).toBe(rendered.before[2]);
    expect((rendered.after[2] as any).isError).toBe(true);
    // Nothing changed what Pi sends (context/size.ts, the one measure).
    expect(report.context.after).toEqual(contextSize(before.afterAgent));
    expect(report.context.before).toEqual(contextSize(before.afterAgent));
  });
});

describe("files Pi cannot open are never written", () => {
  it.each([
    ["bad-bom.jsonl", "no usable session header: line 1 starts with a UTF-8 byte-order mark (bytes EF BB BF)"],
    ["bad-parent-cycle.jsonl", "the active branch runs in a cycle: "],
    ["bad-null-message.jsonl", "a message entry without a message object at "],
  ])("%s", async (name, message) => {
    const file = tempCopy(name);
    const bytes = readFileSync(file);
    const r = await runCli([file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(readFileSync(file).equals(bytes)).toBe(true);
  });
});

describe("chain compression of a partly summarized chain", () => {
  it("back-fills the calls no summary covers, names them in the block, and keeps them recoverable", async () => {
    const file = tempCopy("chain-partly-summarized.jsonl");
    const r = await runCli([file, "--set", "chainCompression.rollingWindow=0", "--json"], { CONDENSE_NOW: NOW });
    expect(r.code).toBe(0);
    const after = await loadSession(file);
    const rendered = renderBranch(after.branch, config());
    const block = rendered.after.find((m) => m.role === "user" && JSON.stringify(m.content).includes("<compressed-chain"))!;
    expect((block.content as any)[0].text).toBe(
      '<compressed-chain id="b1" tools="t1,t2">\n' +
        "- `t1` bash `make` — OK, 1,500 chars, 100 lines\n\n" +
        "Not summarized in this span:\n- `t2` bash `cat port.txt` — OK: PORT=48213\n\n" +
        // The chain hides the run's only summary: the run's recovery hint ends the block instead.
        `---\n${RECOVERY_HINT}\n</compressed-chain>`,
    );
    const q = await runCli(["query", "t2", "--session", file, "--full", "--json"]);
    expect(JSON.parse(q.stdout).results[0].output).toBe("PORT=48213");
  });
});

describe("--output safety", () => {
  it("refuses an empty path, a directory and the input itself; the input stays as it was", async () => {
    const file = tempCopy("example-session.jsonl");
    const bytes = readFileSync(file);
    const cases: [string, string][] = [
      ["", "--output: empty path (is the variable you passed unset?)"],
      [path.dirname(file), `--output ${path.dirname(file)} is a directory; name a file`],
      [file, `--output ${file} is the input session itself; run without --output to prune it in place`],
    ];
    for (const [output, message] of cases) {
      const r = await runCli([file, "--output", output, "--force"]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(message);
    }
    expect(readFileSync(file).equals(bytes)).toBe(true);
  });
});

describe("a session whose last message waits for tool results", () => {
  it("is left alone while it looks live, and written with --force", async () => {
    const file = tempCopy("example-session.jsonl");
    const lines = readFileSync(file, "utf8").trimEnd().split("\n");
    const last = JSON.parse(lines[lines.length - 1]);
    const pending = {
      type: "message",
      id: "0000beef",
      parentId: last.id,
      timestamp: "2026-01-01T10:05:00.000Z",
      message: {
        role: "assistant",
        content: [{ type: "toolCall", id: "toolu_99", name: "bash", arguments: { command: "sleep 100" } }],
        stopReason: "toolUse",
        timestamp: 1767261900000,
      },
    };
    writeFileSync(file, `${lines.join("\n")}\n${JSON.stringify(pending)}\n`);
    const bytes = readFileSync(file);
    const r = await runCli([file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("the last message has 1 tool call(s) still without a result");
    expect(readFileSync(file).equals(bytes)).toBe(true);
    const forced = await runCli([file, "--force", "--json"], { CONDENSE_NOW: NOW });
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout).sessions[0].entriesAppended).toBeGreaterThan(0);
  });
});

describe("the recovery command a run's notes print", () => {
  const FIXTURE = "custom-message-between-call-and-result.jsonl";
  const removed = (file: string) =>
    `${file}: read_1@1767225603000 (entry 82dfc00e) is removed by the orphan sweep: read_1 (its call was closed by a custom message "file-watcher" in between; pi-ai answers the call with "No result provided"); `;
  const noteOf = (stdout: string, file: string) =>
    stdout
      .split("\n")
      .find((l) => l.startsWith(removed(file)))
      ?.slice(removed(file).length);

  it("names --session for a session condense query would not find from here, and that command prints the output", async () => {
    const file = tempCopy(FIXTURE);
    const dry = await runCli([file, "--dry-run"], { CONDENSE_NOW: NOW, NO_COLOR: "1" });
    expect(noteOf(dry.stdout, file)).toBe("would be indexed as t1");
    const r = await runCli([file], { CONDENSE_NOW: NOW, NO_COLOR: "1" });
    expect(noteOf(r.stdout, file)).toBe(`indexed as t1 — condense query t1 --session ${file}`);
    const q = await runCli(["query", "t1", "--session", file]);
    expect([q.code, q.stderr]).toEqual([0, ""]);
  });

  it("no --session where condense query finds the session by itself: $PI_SESSION_FILE, or Pi's folder for this directory", async () => {
    const { dir, cleanup } = makeTempDir("run-notes");
    temps.push(cleanup);
    const agent = path.join(dir, "agent");
    const project = path.join(dir, "project");
    const piFolder = path.join(agent, "sessions", `--${project.slice(1).replace(/\//g, "-")}--`);
    mkdirSync(piFolder, { recursive: true });
    mkdirSync(project);
    const inPi = copyInto(piFolder, path.join(FIXTURES, FIXTURE));
    const elsewhere = tempCopy(FIXTURE);
    const here = process.cwd();
    process.chdir(project);
    try {
      const env = { CONDENSE_NOW: NOW, NO_COLOR: "1", PI_CODING_AGENT_DIR: agent };
      expect(noteOf((await runCli([inPi], env)).stdout, inPi)).toBe("indexed as t1 — condense query t1");
      expect((await runCli(["query", "t1"], env)).code).toBe(0);
      expect(noteOf((await runCli([elsewhere, "--force"], { ...env, PI_SESSION_FILE: elsewhere })).stdout, elsewhere)).toBe(
        "indexed as t1 — condense query t1",
      );
    } finally {
      process.chdir(here);
    }
  });
});
