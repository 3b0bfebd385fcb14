/**
 * Summaries a model can use (docs/design.md "Summary quality", "Recovery hints"): text without
 * control characters and cut between words; what counts as information in an output; the quality
 * figure (kept facts of the pruned outputs) against plain masking; the run's one recovery hint.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultConfig } from "../src/config/config.js";
import { RECOVERY_HINT, toolCallsOf } from "../src/context/vocabulary.js";
import { renderAfterRun } from "../src/pipeline/render.js";
import { sessionView } from "../src/pipeline/view.js";
import { openSession } from "../src/session/open.js";
import { loadSession } from "../src/session/session.js";
import { CUSTOM_TYPES } from "../src/entries/types.js";
import { placeRecoveryHint } from "../src/pipeline/plan.js";
import { contextText, keptFacts, maskOutputs, outputFacts, pruneQuality, prunedOutputs } from "../src/report/quality.js";
import type { AgentMessage, NewEntry, ToolResultMessage } from "../src/session/types.js";
import { exitStatus, failureReason, filePaths, isErrorLine, isTotalsLine } from "../src/summarize/facts.js";
import { cropAtWord, groupDigits, oneLine, stripControl } from "../src/util/text.js";
import { HEADERLESS_SHARED, SHARED_SESSIONS, sharedSessionFiles } from "./helpers.js";

describe("text for a model or a terminal", () => {
  it("strips escape sequences and control characters, keeps tabs and newlines", () => {
    expect(stripControl("\u001b[1;31mred\u001b[0m and \u001b]0;title\u0007plain\u001b[K")).toBe("red and plain");
    expect(stripControl("a\tb\r\nc\u0000d\u007f\u009b2Je")).toBe("a\tb\ncde");
    // A progress line redrawn with \r keeps what was written last.
    expect(stripControl("10%\r50%\r100%\ndone")).toBe("100%\ndone");
    expect(stripControl("nothing to strip")).toBe("nothing to strip");
  });

  it("cuts between words, a single long word only when it must", () => {
    expect(cropAtWord("short", 10)).toBe("short");
    expect(cropAtWord("the quick brown fox jumps", 16)).toBe("the quick brown…");
    expect(cropAtWord("/a/very/long/path/without/spaces.ts", 12)).toBe("/a/very/lon…");
    expect(oneLine("  a\n  b\t c ")).toBe("a b c");
  });

  it("groups the digits of a count by commas as toLocaleString('en-US') does, without its formatter", () => {
    expect(groupDigits(0)).toBe("0");
    expect(groupDigits(999)).toBe("999");
    expect(groupDigits(1000)).toBe("1,000");
    expect(groupDigits(12345)).toBe("12,345");
    expect(groupDigits(1234567)).toBe("1,234,567");
    expect(groupDigits(-1234567)).toBe("-1,234,567");
    for (const n of [7, 65, 100_000, 4_096_000, 987_654_321, Number.MAX_SAFE_INTEGER, -0, 1.5, Number.NaN]) {
      expect(groupDigits(n)).toBe(n.toLocaleString("en-US"));
    }
  });
});

describe("what an output says", () => {
  it("error lines start with an error's kind, after an optional place", () => {
    for (const line of [
      "TypeError: x is not a function",
      "src/a.ts(3,7): error TS2322: Type 'string' is not assignable",
      "src/a.ts:3:7: error: expected ';'",
      "npm ERR! code ELIFECYCLE",
      "fatal: not a git repository",
      "FAIL src/x.test.ts > parses",
      "Traceback (most recent call last):",
      "✗ renders the header",
      "ls: cannot access 'x': No such file or directory",
      "bash: foo: command not found",
    ]) {
      expect(isErrorLine(line), line).toBe(true);
    }
    for (const line of ["throw new Error('x')", "isError: true,", "  assert.equal(a, b)", "// errors are handled below", "if (error) return;"]) {
      expect(isErrorLine(line), line).toBe(false);
    }
  });

  it("an error's kind also counts after one short prefix: a line or row number, a timestamp", () => {
    for (const line of [
      "row 12: ERROR failed to connect to host-3.example:443 (ECONNREFUSED)",
      "line 7: Error: unexpected token",
      "L42: TypeError: x is not a function",
      "2024-05-01T12:00:03.120Z ERROR failed to connect",
      "2024-05-01 12:00:03,123 - ERROR - failed to connect",
      "[2024-05-01 12:00:03] ERROR failed to connect",
      "[12:00:03] FATAL out of memory",
      "2024/05/01 12:00:03 panic: runtime error: index out of range",
    ]) {
      expect(isErrorLine(line), line).toBe(true);
    }
    for (const line of [
      "no errors found",
      "0 errors",
      "row 12: no errors",
      "row 12: ok",
      "2 FAILED",
      "2024-05-01T12:00:03Z INFO connected, 0 errors",
      "[INFO] retried after an error",
      "12:00:03 retrying: ERROR budget not reached",
      "line 7: throw new Error('x')",
      // Listings of code and prose (grep -n, cat -n), checklists and tags: no prefix of a log.
      "3:  ValidationError,",
      "  12\t    ValueError,",
      "14:    FAILED = 'failed'",
      "9: Failed login attempts are rate-limited.",
      "[x] Failed login test fixed",
      "#3 Error messages should be clear",
      "[INFO] Error budget: 99.9%",
      "[main] FAILED=0",
      "2\tFAILED",
    ]) {
      expect(isErrorLine(line), line).toBe(false);
    }
  });

  it("a long run of digits after a prefix's first characters costs no more than its length (was quadratic: 12 s at 64k)", () => {
    const digits = "7".repeat(64_000);
    for (const line of [`L${digits}`, `#${digits}`, `row ${digits}`, `12:00:03.${digits}:${digits}`, `2024-05-01 12:00:03,${digits}`, `[${digits}`]) {
      expect(isErrorLine(line), line.slice(0, 12)).toBe(false);
    }
  }, 2_000);

  it("totals, exit codes, paths and the reason of a failure", () => {
    expect(isTotalsLine("Tests: 1 failed, 3 passed, 4 total")).toBe(true);
    expect(isTotalsLine("Found 2 errors in 1 file.")).toBe(true);
    expect(isTotalsLine("12 passing (3s)")).toBe(true);
    expect(isTotalsLine("the tests passed")).toBe(false);
    expect(exitStatus("…\nCommand exited with code 2")).toBe("2");
    expect(exitStatus("exit status 127\n…\nexit code: 1")).toBe("1");
    expect(filePaths("see src/a.ts:3 and ./b/c.js, then ~/.pi/agent/settings.json (and https://x.io/y/z.html)")).toEqual([
      "src/a.ts",
      "./b/c.js",
      "~/.pi/agent/settings.json",
    ]);
    // With a limit: the first paths of the whole list, distinct (a repeat does not count), and the scan stops there.
    expect(filePaths("a/x.ts b/y.ts a/x.ts https://h.io/p/q.js c/z.ts d/w.ts", 3)).toEqual(["a/x.ts", "b/y.ts", "c/z.ts"]);
    expect(filePaths("a/x.ts b/y.ts", 5)).toEqual(["a/x.ts", "b/y.ts"]);
    expect(failureReason('Validation failed for tool "edit":\n  - oldText: required\n\nReceived: {}')).toEqual([
      'Validation failed for tool "edit":',
      "- oldText: required",
    ]);
    // An output with error lines says why itself.
    expect(failureReason("building…\nError: boom")).toEqual([]);
  });
});

const at = 1000;
const user = (text: string): AgentMessage => ({ role: "user", content: [{ type: "text", text }], timestamp: at });
const call = (id: string, command: string): AgentMessage =>
  ({ role: "assistant", content: [{ type: "toolCall", id, name: "bash", arguments: { command } }], timestamp: at }) as Partial<AgentMessage> as AgentMessage;
const result = (id: string, text: string, isError = false): ToolResultMessage => ({
  role: "toolResult",
  toolCallId: id,
  toolName: "bash",
  content: [{ type: "text", text }],
  isError,
  timestamp: at + Number(id.slice(1)),
});

describe("the quality figure", () => {
  const log = "compiling src/a.ts\nsrc/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\nCommand exited with code 2";
  const before = [user("build it"), call("c1", "npm run build"), result("c1", log, true), call("c2", "ls"), result("c2", "a.ts b.ts")];

  it("counts each path, error line (first 60 chars) and exit code of the pruned outputs once", () => {
    const facts = outputFacts({ toolName: "bash", text: log, isError: true });
    expect([...facts.paths]).toEqual(["src/a.ts"]);
    expect([...facts.errors]).toEqual(["src/a.ts(3,7): error TS2322: Type 'string' is not"]);
    expect([...facts.exits]).toEqual(["exit 2"]);
    // A successful read is file contents: nothing in it is a fact.
    expect(outputFacts({ toolName: "read", text: "import x from './y.js';\nthrow new Error('z')" }).paths.size).toBe(0);
  });

  it("what a stubbed output's summary keeps is kept; plain masking keeps only what the rest of the context says", () => {
    const stub = { ...(before[2] as ToolResultMessage), content: [{ type: "text" as const, text: "[Summarized in pruner summary, ref `t1`.]" }] };
    const summary: AgentMessage = {
      role: "custom",
      customType: CUSTOM_TYPES.summary,
      content: "- `t1` bash `npm run build` — ERROR, exit 2\n  - src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.",
      display: false,
      timestamp: at,
    } as AgentMessage;
    const after = [before[0], before[1], stub, before[3], before[4], summary];
    expect(prunedOutputs(before, after)).toEqual([before[2]]);
    const q = pruneQuality(before, after);
    expect(q.pruned).toBe(1);
    expect(q.condense).toMatchObject({ facts: 3, kept: 3, share: 1 });
    // Masking: the path is gone with the output; nothing else in the context names it.
    expect(q.masking).toMatchObject({ facts: 3, kept: 0, share: 0 });
    expect(q.masking.tokensAfter).toBeLessThan(q.condense.tokensBefore);
    const masked = maskOutputs(before, [before[2] as ToolResultMessage]);
    expect(contextText(masked)).not.toContain("TS2322");
    expect(keptFacts(outputFacts({ toolName: "bash", text: log }), "src/a.ts   exit 2").kept).toBe(2);
  });
});

describe("the recovery hint, once per run", () => {
  const summary = (ref: string, text: string): NewEntry =>
    ({
      type: "custom_message",
      customType: CUSTOM_TYPES.summary,
      content: text,
      display: false,
      details: { toolCallRefs: [{ shortId: ref, toolCallId: ref }], toolNames: ["bash"], turnIndex: 0, timestamp: 0 },
    }) as NewEntry;
  const chain = (refs: string[], body?: string): NewEntry =>
    ({ type: "custom", customType: CUSTOM_TYPES.chain, data: { blockId: "b1", toolRefs: refs, ...(body ? { rangeSummaryText: body } : {}) } }) as NewEntry;

  it("goes to the last summary no chain of the run hides, when it fits the batch's raw size", () => {
    const a = summary("t1", "- `t1` a");
    const b = summary("t2", "- `t2` b");
    const c = summary("t3", "- `t3` c");
    const room = new Map([
      [a, 1000],
      [b, 1000],
      [c, 20], // too small for the hint
    ]);
    const placed = placeRecoveryHint([a, b, c], room);
    expect(placed.entries.map((e) => (e as { content: string }).content)).toEqual(["- `t1` a", `- \`t2\` b\n\n---\n${RECOVERY_HINT}`, "- `t3` c"]);
    expect(placed.summaryCharsAdded).toBe(`\n\n---\n${RECOVERY_HINT}`.length);
    // A chain of this run hides t2: the hint moves to t1.
    const hidden = placeRecoveryHint([a, b, c, chain(["t2"])], room);
    expect((hidden.entries[0] as { content: string }).content.endsWith(RECOVERY_HINT)).toBe(true);
    expect((hidden.entries[1] as { content: string }).content).toBe("- `t2` b");
  });

  it("without a summary to carry it, ends the last chain body; else goes nowhere", () => {
    const placed = placeRecoveryHint([chain(["t1"], "body one"), chain(["t2"], "body two")], new Map());
    expect((placed.entries[1] as { data: { rangeSummaryText: string } }).data.rangeSummaryText).toBe(`body two\n\n---\n${RECOVERY_HINT}`);
    expect((placed.entries[0] as { data: { rangeSummaryText: string } }).data.rangeSummaryText).toBe("body one");
    expect(placeRecoveryHint([chain(["t1"])], new Map()).entries).toEqual([chain(["t1"])]);
  });
});

describe.skipIf(!existsSync(SHARED_SESSIONS))("the quality figure on the shared sessions", () => {
  const files = sharedSessionFiles();

  it.each(files)("%s: at least 90% kept when it has 150 tool calls or more, and more than plain masking keeps", async (name) => {
    // The header-less one fails every read-only command (Pi cannot open it); measured as read.
    const file = path.join(SHARED_SESSIONS, name);
    const session = name === HEADERLESS_SHARED ? await loadSession(file) : await openSession(file, "read");
    const view = sessionView(session, defaultConfig());
    const calls = session.branch.reduce((n, e) => n + (e.type === "message" && e.message.role === "assistant" ? toolCallsOf(e.message).length : 0), 0);
    const q = pruneQuality(view.rendered.afterAgent, (await renderAfterRun(view.fork())).afterAgent);
    if (calls >= 150) expect(q.condense.share).toBeGreaterThanOrEqual(0.9);
    expect(q.condense.kept).toBeGreaterThanOrEqual(q.masking.kept);
    expect(q.condense.tokensAfter).toBeLessThanOrEqual(q.condense.tokensBefore);
  });
});
