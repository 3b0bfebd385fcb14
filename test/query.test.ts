/**
 * `query`: ref resolution (short refs 1:1, raw ids → every occurrence incl. dedup aliases, oldest
 * first), head truncation (Pi's own truncateHead as the oracle), sidecars, exit codes, the default
 * session, and the block and JSON formats.
 */
import { mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ToolCallIndexer } from "../src/prune/indexer.js";
import type { ToolCallRecord } from "../src/entries/types.js";
import { formatQueryBlock, lookupRef, recordBody, shownOutput } from "../src/query/query.js";
import { MAX_BYTES, MAX_LINES, truncateHead } from "../src/query/truncate.js";
import { loadSession } from "../src/session/session.js";
import { copyTo, fixture, REPO, runCli, SHARED_SESSIONS, tempDir, writeSession } from "./render-support.js";

const T = 1767225600000;
const FAIL = "FAIL src/app.test.ts\n  ✕ adds numbers (4 ms)\n\n  Expected: 3\n  Received: 4\n\nTests: 1 failed, 11 passed, 12 total\n";
const PASS = "PASS src/app.test.ts\nTests: 12 passed, 12 total\n";

describe("truncateHead matches Pi's own", () => {
  let piTruncateHead: (
    text: string,
    options?: { maxLines?: number; maxBytes?: number },
  ) => {
    content: string;
    truncated: boolean;
    truncatedBy: string | null;
    outputLines: number;
    totalLines: number;
    firstLineExceedsLimit: boolean;
  };
  beforeAll(async () => {
    const url = pathToFileURL(path.join(REPO, "node_modules/@earendil-works/pi-coding-agent/dist/core/tools/truncate.js")).href;
    piTruncateHead = (await import(/* @vite-ignore */ url)).truncateHead;
  });

  const lines = (n: number, width = 5) => Array.from({ length: n }, (_, i) => `${i}`.padStart(width, "0")).join("\n");
  const cases: [string, string][] = [
    ["empty", ""],
    ["one line", "hello"],
    ["trailing newline", "a\nb\n"],
    ["exactly 2000 lines", lines(2000)],
    ["2001 lines", lines(2001)],
    ["2000 lines + trailing newline", `${lines(2000)}\n`],
    ["2500 lines", lines(2500)],
    ["over 50 KB in 1000 lines", lines(1000, 80)],
    ["exactly 51200 bytes", "x".repeat(51200)],
    ["first line over 50 KB", `${"y".repeat(51201)}\nsecond`],
    ["multibyte", "é".repeat(30000)],
    ["multibyte lines over 50 KB", Array.from({ length: 900 }, () => "ü".repeat(40)).join("\n")],
  ];
  for (const [name, text] of cases) {
    it(name, () => {
      const ours = truncateHead(text);
      const pi = piTruncateHead(text, { maxLines: MAX_LINES, maxBytes: MAX_BYTES });
      expect({ text: ours.text, truncated: ours.truncated, by: ours.by, shown: ours.shownLines, total: ours.totalLines, first: ours.firstLineTooLong }).toEqual(
        {
          text: pi.content,
          truncated: pi.truncated,
          by: pi.truncatedBy,
          shown: pi.outputLines,
          total: pi.totalLines,
          first: pi.firstLineExceedsLimit,
        },
      );
    });
  }

  it("the notice line is appended only when cut", () => {
    expect(shownOutput(lines(2500), false).text.split("\n")).toHaveLength(2000);
    expect(shownOutput(lines(2500), true)).toEqual({ text: lines(2500), truncation: null });
    expect(shownOutput("short", false)).toEqual({ text: "short", truncation: null });
  });
});

describe("lookupRef", () => {
  it("short refs resolve 1:1; a raw id returns every occurrence oldest first, the legacy one flagged", async () => {
    const session = await loadSession(fixture("legacy-and-occurrence-keyed-same-id"));
    const indexer = ToolCallIndexer.fromBranch(session.branch);
    const t1 = lookupRef(indexer, "t1");
    expect(t1.hits.map((h) => [h.label, h.key, h.legacy, h.record.resultText])).toEqual([["t1", "bash_23", true, FAIL]]);
    const t2 = lookupRef(indexer, "t2");
    expect(t2.hits.map((h) => [h.label, h.key, h.legacy, h.record.resultText])).toEqual([["t2", `bash_23@${T + 7000}`, false, PASS]]);
    const all = lookupRef(indexer, "bash_23");
    expect(all.hits.map((h) => [h.label, h.shortRef, h.legacy, h.record.resultText])).toEqual([
      ["bash_23", "t1", true, FAIL],
      [`bash_23@${T + 7000}`, "t2", false, PASS],
    ]);
    expect(lookupRef(indexer, `bash_23@${T + 7000}`).hits.map((h) => h.label)).toEqual([`bash_23@${T + 7000}`]);
    expect(lookupRef(indexer, "t3")).toEqual({ hits: [], unknown: "no short ref t3 in this session's pruner index" });
    expect(lookupRef(indexer, "bash_99")).toEqual({ hits: [], unknown: "no indexed tool call with id or key bash_99 in this session" });
  });

  it("a raw id includes dedup-aliased occurrences, each labelled with its own timestamp", () => {
    const indexer = new ToolCallIndexer();
    const original: ToolCallRecord = {
      toolCallId: "bash_1",
      toolName: "bash",
      args: { command: "ls" },
      resultText: "a\nb\n",
      isError: false,
      turnIndex: 0,
      timestamp: 100,
      resultTimestamp: 110,
    };
    indexer.addRecord(original, true);
    indexer.registerRefs([{ shortId: "t1", toolCallId: "bash_1", resultTimestamp: 110 }]);
    indexer.addRecord({ ...original, resultText: "c\n", turnIndex: 1, timestamp: 200, resultTimestamp: 210 }, true);
    indexer.registerRefs([{ shortId: "t2", toolCallId: "bash_1", resultTimestamp: 210 }]);
    indexer.addAlias("bash_1@310", "bash_1@110");
    indexer.addAlias("bash_7@400", "bash_1@110");
    const hits = lookupRef(indexer, "bash_1").hits;
    expect(hits.map((h) => [h.label, h.shortRef, h.aliasOf ?? null, h.record.resultText])).toEqual([
      ["bash_1@110", "t1", null, "a\nb\n"],
      ["bash_1@210", "t2", null, "c\n"],
      ["bash_1@310", "t1", "bash_1@110", "a\nb\n"],
    ]);
    expect(lookupRef(indexer, "bash_7").hits.map((h) => [h.label, h.aliasOf])).toEqual([["bash_7@400", "bash_1@110"]]);
    expect(lookupRef(indexer, "t1").hits.map((h) => h.key)).toEqual(["bash_1@110"]);
  });

  it("records stored under id#n (failed, shared-key and timestamp-less removed results) are occurrences of id", () => {
    const indexer = new ToolCallIndexer();
    const record = (toolCallId: string, resultTimestamp: number | undefined, resultText: string): ToolCallRecord => ({
      toolCallId,
      toolName: "bash",
      args: {},
      resultText,
      isError: false,
      turnIndex: -1,
      timestamp: resultTimestamp ?? 50,
      ...(resultTimestamp === undefined ? {} : { resultTimestamp }),
    });
    indexer.addRecord(record("bash_1", 300, "own key"), false);
    indexer.addRecord(record("bash_1#1", 200, "failed"), false);
    indexer.addRecord(record("bash_1#2", 200, "shared key, second"), false);
    indexer.addRecord(record("bash_1#1", undefined, "no timestamp"), false);
    // Not stored ids of bash_1: another id that starts alike, and a suffix that is not a rank.
    indexer.addRecord(record("bash_12#1", 200, "bash_12"), false);
    indexer.addRecord(record("bash_1#x", 200, "not a rank"), false);
    const hits = (ref: string) => lookupRef(indexer, ref).hits.map((h) => [h.label, h.record.resultText]);
    expect(hits("bash_1")).toEqual([
      ["bash_1#1", "no timestamp"],
      ["bash_1#1@200", "failed"],
      ["bash_1#2@200", "shared key, second"],
      ["bash_1@300", "own key"],
    ]);
    expect(hits("bash_1@200")).toEqual([
      ["bash_1#1@200", "failed"],
      ["bash_1#2@200", "shared key, second"],
    ]);
    expect(hits("bash_1@300")).toEqual([["bash_1@300", "own key"]]);
    expect(hits("bash_1#2@200")).toEqual([["bash_1#2@200", "shared key, second"]]);
    expect(lookupRef(indexer, "bash_1@201")).toEqual({ hits: [], unknown: "no indexed tool call with id or key bash_1@201 in this session" });
    // context_tree_query takes ids as given (the extension's getRecordsForId).
    expect(indexer.getRecordsForId("bash_1").map((e) => e.key)).toEqual(["bash_1@300"]);
  });
});

describe("formatQueryBlock", () => {
  it("prints label, occurrence, tool, arguments, status, turn, a blank line, then the output", async () => {
    const session = await loadSession(fixture("reused-id-bash23"));
    const [hit] = lookupRef(ToolCallIndexer.fromBranch(session.branch), "t1").hits;
    const body = recordBody(hit.record, [], () => "");
    expect(formatQueryBlock(hit, body, shownOutput(body.text, false))).toBe(
      ["=== t1 ===", `Occurrence: bash_23@${T + 3000}`, "Tool: bash", "Arguments: {", '  "command": "npm test"', "}", "Status: OK", "Turn: 0", "", FAIL].join(
        "\n",
      ),
    );
  });

  it("marks a legacy occurrence, an alias, an error, and a cut output", () => {
    const record: ToolCallRecord = { toolCallId: "x", toolName: "bash", args: {}, resultText: "", isError: true, turnIndex: 4, timestamp: 1 };
    const text = Array.from({ length: 2001 }, (_, i) => `l${i}`).join("\n");
    const out = formatQueryBlock(
      { ref: "x", label: "x", key: "x", record, legacy: true, aliasOf: "y@2" },
      { text, source: "record" },
      shownOutput(text, false),
    );
    expect(out.split("\n").slice(0, 9)).toEqual([
      "=== x ===",
      "Occurrence: legacy record (no result timestamp was stored)",
      "Duplicate of: y@2 (same output; tool, arguments and turn are the original's)",
      "Tool: bash",
      "Arguments: {}",
      "Status: ERROR",
      "Turn: 4",
      "",
      "l0",
    ]);
    // The notice says how to get the rest.
    expect(out.endsWith("\nl1999\n[Output truncated: 2000/2001 lines shown; --full prints all 2,001]")).toBe(true);
  });

  it("a record back-filled from a compressed chain has no turn, and says why", () => {
    const record = { toolCallId: "c", toolName: "bash", args: {}, resultText: "ok", isError: false, turnIndex: -1, timestamp: 1, resultTimestamp: 1 };
    const out = formatQueryBlock(
      { ref: "t9", label: "t9", key: "c@1", shortRef: "t9", record, legacy: false },
      { text: "ok", source: "record" },
      shownOutput("ok", false),
    );
    expect(out.split("\n")).toContain("Turn: none (indexed when its chain was compressed)");
    expect(out).not.toContain("Turn: -1");
  });
});

describe("condense query", () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => (tmp = tempDir("query")));
  afterEach(() => tmp.cleanup());
  const env = { CONDENSE_NOW: "2026-02-01T00:00:00.000Z" };

  it("prints known refs, names an unknown one on stderr, exits 1", async () => {
    const r = await runCli(["query", "t1", "t9", "bash_23", "--session", fixture("reused-id-bash23")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("error: unknown ref t9: no short ref t9 in this session's pruner index\n");
    expect(r.stdout.match(/^=== .* ===$/gm)).toEqual(["=== t1 ===", `=== bash_23@${T + 3000} ===`]);
    expect(r.stdout).toContain(`=== bash_23@${T + 3000} ===\nRef: t1\nTool: bash\n`);
    const ok = await runCli(["query", "t1", "--session", fixture("reused-id-bash23")]);
    expect(ok.code).toBe(0);
    expect(ok.stderr).toBe("");
  });

  it("--format tool prints context_tree_query's own text: legacy and keyed occurrences of one id, an unknown id", async () => {
    // The layout is pi-condense 2.9.1 src/query-tool.ts (the extension oracle checks it on every session).
    const r = await runCli(["query", "bash_23", "nope", "--format", "tool", "--session", fixture("legacy-and-occurrence-keyed-same-id")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("error: unknown ref nope: not in this session's pruner index\n");
    const args = JSON.stringify({ command: "npm test" }, null, 2);
    const blocks = [
      `## toolRef: bash_23\nOccurrence: legacy (no resultTimestamp)\nTool: bash\nArgs: ${args}\nStatus: OK\nTurn: 0\n\n${FAIL}`,
      `## toolRef: bash_23@${T + 7000}\nTool: bash\nArgs: ${args}\nStatus: OK\nTurn: 2\n\n${PASS}`,
      "## toolRef: nope\n(not found in index — may not have been summarized yet)",
    ];
    expect(r.stdout).toBe(`${blocks.join("\n\n---\n\n")}\n`);
    const both = await runCli(["query", "bash_23", "--format", "tool", "--json", "--session", fixture("legacy-and-occurrence-keyed-same-id")]);
    expect(both.code).toBe(2);
  });

  it("--json holds the record, the label and the output; unknown refs are listed", async () => {
    const r = await runCli(["query", "bash_23", "nope", "--json", "--session", fixture("legacy-and-occurrence-keyed-same-id")]);
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout);
    expect(doc.results.map((x: { label: string; legacy: boolean; output: string; truncated: unknown }) => [x.label, x.legacy, x.output, x.truncated])).toEqual([
      ["bash_23", true, FAIL, null],
      [`bash_23@${T + 7000}`, false, PASS, null],
    ]);
    expect(doc.results[1].record).toEqual({
      toolCallId: "bash_23",
      toolName: "bash",
      args: { command: "npm test" },
      resultText: PASS,
      isError: false,
      turnIndex: 2,
      timestamp: T + 6000,
      resultTimestamp: T + 7000,
    });
    expect(doc.unknown).toEqual([{ ref: "nope", reason: "no indexed tool call with id or key nope in this session" }]);
  });

  it("cuts long outputs at 2000 lines unless --full", async () => {
    const file = path.join(tmp.dir, "long.jsonl");
    const long = Array.from({ length: 2500 }, (_, i) => `line ${i}`).join("\n");
    writeSession(file, [long]);
    expect((await runCli(["run", file, "--quiet"], env)).code).toBe(0);
    const cut = await runCli(["query", "t1", "--session", file]);
    expect(cut.stdout.endsWith("\nline 1999\n[Output truncated: 2000/2500 lines shown; --full prints all 2,500]\n")).toBe(true);
    const full = await runCli(["query", "t1", "--full", "--json", "--session", file]);
    const [res] = JSON.parse(full.stdout).results;
    expect(res.output).toBe(long);
    expect(res.truncated).toBeNull();
    const json = JSON.parse((await runCli(["query", "t1", "--json", "--session", file])).stdout).results[0];
    expect(json.truncated).toEqual({ shownLines: 2000, totalLines: 2500, by: "lines" });
  });

  it("reads spilled outputs from the sidecar, also after the session and its blobs moved, and falls back to the preview", async () => {
    const dirA = path.join(tmp.dir, "a");
    mkdirSync(dirA);
    const file = path.join(dirA, "spill.jsonl");
    const huge = `${Array.from({ length: 3000 }, (_, i) => `row ${i} ${"z".repeat(30)}`).join("\n")}\n`;
    writeSession(file, [huge]);
    expect((await runCli(["run", file, "--quiet"], env)).code).toBe(0);
    const blobs = path.join(dirA, "0f0000aa-0000-7000-8000-0000000000aa-blobs");
    const sidecar = path.join(blobs, `bash_0_${T + 3000}.txt`);
    expect(readFileSync(sidecar, "utf8")).toBe(huge);
    const q = async (f: string) => JSON.parse((await runCli(["query", "t1", "--full", "--json", "--session", f])).stdout).results[0];
    let res = await q(file);
    expect([res.output === huge, res.outputSource, res.sidecarPath, res.record.resultText]).toEqual([true, "sidecar", sidecar, ""]);

    const dirB = path.join(tmp.dir, "b");
    renameSync(dirA, dirB);
    res = await q(path.join(dirB, "spill.jsonl"));
    expect([res.output === huge, res.outputSource, res.sidecarPath]).toEqual([
      true,
      "sidecar",
      path.join(dirB, "0f0000aa-0000-7000-8000-0000000000aa-blobs", `bash_0_${T + 3000}.txt`),
    ]);

    rmSync(path.join(dirB, "0f0000aa-0000-7000-8000-0000000000aa-blobs"), { recursive: true });
    res = await q(path.join(dirB, "spill.jsonl"));
    expect(res.outputSource).toBe("preview");
    expect(res.output).toBe(res.record.resultPreview);
    const text = await runCli(["query", "t1", "--session", path.join(dirB, "spill.jsonl")]);
    const why = `missing: ${sidecar}: the session's sidecar folder ${path.join(dirB, "0f0000aa-0000-7000-8000-0000000000aa-blobs")} does not exist`;
    expect(text.stdout).toContain(`Spilled output unavailable (${why}); showing the stored head preview`);
    // Said on stderr as well, so a script can tell; the exit code stays 0 (SPEC §8: only an unknown ref exits 1).
    expect([text.code, text.stderr]).toEqual([0, `warning: t1: spilled output unavailable (${why}); showing the stored head preview\n`]);
    const json = await runCli(["query", "t1", "--json", "--session", path.join(dirB, "spill.jsonl")]);
    expect([json.code, json.stderr]).toEqual([0, `warning: t1: spilled output unavailable (${why}); showing the stored head preview\n`]);
    const tool = await runCli(["query", "bash_0", "--format", "tool", "--session", path.join(dirB, "spill.jsonl")]);
    const inFolder = path.join(dirB, "0f0000aa-0000-7000-8000-0000000000aa-blobs");
    expect([tool.code, tool.stderr]).toEqual([
      0,
      `warning: spilled output unavailable (missing: ${sidecar}: the session's sidecar folder ${inFolder} does not exist); the tool's text shows the stored head preview\n`,
    ]);
  });

  it("without --session uses the latest session of the current directory", async () => {
    const sessions = path.join(tmp.dir, "sessions");
    mkdirSync(sessions);
    writeSession(
      path.join(sessions, "2026-01-01T00-00-00-000Z_0f0000aa.jsonl"),
      [Array.from({ length: 200 }, (_, i) => `entry ${i}`).join("\n")],
      process.cwd(),
    );
    const sessionEnv = { ...env, PI_CODING_AGENT_SESSION_DIR: sessions };
    expect((await runCli(["run", "--quiet"], sessionEnv)).code).toBe(0);
    const r = await runCli(["query", "t1"], sessionEnv);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("=== t1 ===\nOccurrence: bash_0@1767225603000\nTool: bash\n");
  });

  it("a --session that matches nothing is a usage error (exit 2)", async () => {
    const r = await runCli(["query", "t1", "--session", path.join(tmp.dir, "missing.jsonl")]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
  });
});

describe("query through Pi's bash tool (no terminal)", () => {
  it("prints the recovered output only: not the lines Pi skips in the session, which run and render name", async () => {
    // gjc-02: line 118 is not valid JSON (Pi skips it).
    const { dir, cleanup } = tempDir("query-quiet");
    try {
      const file = copyTo(dir, path.join(SHARED_SESSIONS, "gjc-02-inline-agent-design.v3.jsonl"));
      const env = { PI_CODING_AGENT_DIR: dir, NO_COLOR: "1" };
      const run = await runCli(["run", file], env);
      expect(run.stderr).toContain(":118 (byte 353618): line is not valid JSON; skipped, as Pi skips it");
      const q = await runCli(["query", "t1", "--session", file], env);
      expect(q.code).toBe(0);
      expect(q.stderr).toBe("");
      // The recovered output itself, as --json gives it (the block's text), and nothing else.
      const json = JSON.parse((await runCli(["query", "t1", "--session", file, "--json"], env)).stdout);
      expect(json.results[0].output.length).toBeGreaterThan(100);
      expect(q.stdout).toContain(json.results[0].output);
    } finally {
      cleanup();
    }
  });
});
