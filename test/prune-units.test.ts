/**
 * Unit tests of the pipeline's building blocks: the glob contract, sidecar names, head previews,
 * the dedup hash, label → ref substitution, the deterministic summarizer, and where refs are read.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { contentHash, normalizeResult } from "../src/prune/content-hash.js";
import { ToolCallIndexer } from "../src/prune/indexer.js";
import type { SessionEntry } from "../src/session/types.js";
import { compileGlob, protectionTest } from "../src/prune/protect.js";
import { headPreview, sidecarName, sidecarPath } from "../src/prune/spill.js";
import { callNotes, fuseDeterministically, keyArgument, notableLines, summarizeDeterministically } from "../src/summarize/deterministic.js";
import { exceedsHead, HEAD_MAX_BYTES, HEAD_MAX_LINES, RECOVERY_HINT } from "../src/context/vocabulary.js";
import { composeSummary, substituteInlineRefs, withoutRecoveryHint, withRecoveryHint } from "../src/summarize/refs.js";

describe("protectedPaths glob contract", () => {
  const cases: [string, string, boolean][] = [
    ["**/skills/**/*.md", "/home/u/.pi/agent/skills/release/SKILL.md", true],
    ["**/skills/**/*.md", "skills/a.md", true],
    ["**/SKILL.md", "SKILL.md", true],
    ["*.md", "docs/a.md", false],
    ["a?.md", "ab.md", true],
    ["a?.md", "a/.md", false],
    ["**/Skills/*.md", "x/skills/a.md", false],
    ["{a,b}.md", "a.md", false],
    ["{a,b}.md", "{a,b}.md", true],
    ["[ab].md", "[ab].md", true],
    ["/abs/**", "/abs/x/y.txt", true],
  ];
  it.each(cases)("%s vs %s → %s", (glob, file, expected) => {
    expect(compileGlob(glob)(file)).toBe(expected);
  });

  it("reads backslashes as slashes and ignores non-string paths", () => {
    const isProtected = protectionTest({ protectedTools: ["todoread"], protectedPaths: ["**/skills/**/*.md"] });
    expect(isProtected("read", { path: "C:\\Users\\u\\skills\\x\\SKILL.md" })).toBe(true);
    expect(isProtected("read", { path: 42 })).toBe(false);
    expect(isProtected("read", undefined)).toBe(false);
    expect(isProtected("todoread", {})).toBe(true);
  });
});

describe("sidecars", () => {
  it("names sidecars <id>_<resultTimestamp>.txt, hashing ids that had to change, within 200 bytes", () => {
    expect(sidecarName("call_1@1767261602300")).toBe("call_1_1767261602300.txt");
    expect(sidecarName("functions.read:0@1767261602300")).toBe("functions.read_0-c164e594b7_1767261602300.txt");
    // Two ids that sanitize alike never share a file.
    expect(sidecarName("a/b@1")).toBe("a_b-0e2411d8f9_1.txt");
    expect(sidecarName("a_b@1")).toBe("a_b_1.txt");
    expect(sidecarName("..")).toBe("_..-5ec1f7e700.txt");
    const long = sidecarName(`${"é".repeat(300)}@1`);
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(200);
    expect(long.endsWith("_1.txt")).toBe(true);
  });

  it("never leaves <session id>-blobs beside the session", () => {
    const p = sidecarPath("/s/dir/sess.jsonl", "abc/../../x", "../../up@1");
    expect(path.dirname(p).startsWith("/s/dir/abc_.._.._x-")).toBe(true);
    expect(path.dirname(p).endsWith("-blobs")).toBe(true);
    expect(path.basename(p)).toBe(`${sidecarName("../../up@1")}`);
    expect(path.basename(p).startsWith(".._.._up-")).toBe(true);
  });

  it("cuts the head preview at a character boundary and then at the last newline", () => {
    expect(headPreview("short", 2048)).toBe("short");
    expect(headPreview("line one\nline two\nline three", 20)).toBe("line one\nline two");
    expect(headPreview("ééééé", 5)).toBe("éé");
    expect(headPreview("\nabcdef", 4)).toBe("\nabc");
  });
});

describe("content hash", () => {
  it("normalizes CRLF, trailing spaces and tabs per line, and outer whitespace — nothing else", () => {
    expect(normalizeResult("  a \t\r\nb  \n\n")).toBe("a\nb");
    expect(normalizeResult("a  b")).toBe("a  b");
    expect(contentHash("bash", "x\r\ny  ")).toBe(contentHash("bash", "x\ny"));
    expect(contentHash("bash", "x")).not.toBe(contentHash("read", "x"));
    expect(contentHash("bash", "X")).not.toBe(contentHash("bash", "x"));
    // sha1 of "bash" NUL "ok", computed with sha1sum
    expect(contentHash("bash", " ok \r\n")).toBe("03588a97ee873c34b2f0d5dd4dccf410e8698c52");
  });
});

describe("label substitution", () => {
  const refs = [
    { shortId: "t7", toolCallId: "a" },
    { shortId: "t8", toolCallId: "b" },
  ];
  it("turns matching labels into refs, removes the others, leaves fences alone", () => {
    const answer = [
      "- [[1:read]] read src/a.ts: 3 exports",
      "* [[2:BASH]]   ran the tests, 2 failed",
      "- [[3:bash]] a label past the batch",
      "- [[2:read]] a label with the wrong tool",
      "1. **[[1:read]]** decorated label",
      "```",
      "[[1:read]] inside a fence",
      "```",
    ].join("\n");
    expect(substituteInlineRefs(answer, refs, ["read", "bash"])).toBe(
      [
        "- `t7` read src/a.ts: 3 exports",
        "* `t8` ran the tests, 2 failed",
        "- a label past the batch",
        "- a label with the wrong tool",
        "1. **** decorated label",
        "```",
        "[[1:read]] inside a fence",
        "```",
      ].join("\n"),
    );
  });

  it("adds a footer only for the refs the text does not name; strips control characters", () => {
    expect(composeSummary("- [[1:read]] x", refs, ["read", "bash"])).toBe("- `t7` x\n\n---\nAlso pruned here: `t8`.");
    expect(composeSummary("- [[1:read]] x\n- [[2:bash]] \u001b[31mred\u001b[0m\n", refs, ["read", "bash"])).toBe("- `t7` x\n- `t8` red");
  });

  it("says how to recover an output, naming both ways, at the end of the footer; fusion leaves it out", () => {
    expect(RECOVERY_HINT).toContain("`context_tree_query`");
    expect(RECOVERY_HINT).toContain("`condense query <ref>`");
    expect(withRecoveryHint("- `t7` x")).toBe(`- \`t7\` x\n\n---\n${RECOVERY_HINT}`);
    expect(withRecoveryHint("- `t7` x\n\n---\nAlso pruned here: `t8`.")).toBe(`- \`t7\` x\n\n---\nAlso pruned here: \`t8\`.\n${RECOVERY_HINT}`);
    for (const text of ["- `t7` x", "- `t7` x\n\n---\nAlso pruned here: `t8`."]) expect(withoutRecoveryHint(withRecoveryHint(text))).toBe(text);
    expect(fuseDeterministically([withRecoveryHint("- `t7` x"), "- `t8` y\n\n---\nAlso pruned here: `t9`."])).toBe("- `t7` x\n- `t8` y");
  });
});

describe("deterministic summarizer", () => {
  it("names the key argument of common tools", () => {
    expect(keyArgument({ path: "src/a.ts", offset: 10 })).toBe("src/a.ts");
    expect(keyArgument({ command: "npm test\n# second line" })).toBe("npm test");
    expect(keyArgument({ pattern: "TODO", path: "src" })).toBe("TODO in src");
    expect(keyArgument({ path: "src/a.ts", command: "cat" })).toBe("cat");
    expect(keyArgument({ todos: ["a"] })).toBeUndefined();
  });

  it("keeps what informs — error lines, totals, paths — not what merely mentions errors", () => {
    const out = [
      "ok 1",
      "FAIL src/x.test.ts > parses",
      "TypeError: x is not a function",
      "    at src/x.ts:3:7",
      "  assert.equal(a, b) // asserts are code, not results",
      "throw new Error('in a stack excerpt')",
      "Tests: 1 failed, 3 passed, 4 total",
      "Command exited with code 1",
    ].join("\n");
    const notes = callNotes({ toolName: "bash", args: {}, resultText: out, isError: true });
    expect(notes).toEqual({
      reason: [], // the error lines say why
      errors: ["FAIL src/x.test.ts > parses", "TypeError: x is not a function"],
      totals: ["Tests: 1 failed, 3 passed, 4 total"],
      paths: ["src/x.test.ts", "src/x.ts"],
      matches: [],
    });
    expect(notableLines({ toolName: "read", args: {}, resultText: "throw new Error('x')\nerror: in a comment", isError: false })).toEqual([]);
  });

  it("keeps the reason of a failure that prints no error line, with the line it announces", () => {
    const out = 'Validation failed for tool "edit":\n  - oldText: must NOT have fewer than 1 characters\n\nReceived arguments: {}';
    expect(callNotes({ toolName: "edit", args: {}, resultText: out, isError: true }).reason).toEqual([
      'Validation failed for tool "edit":',
      "oldText: must NOT have fewer than 1 characters",
    ]);
  });

  it("strips escape sequences and never cuts inside a word", () => {
    const long = `\u001b[31mError:\u001b[0m ${"word ".repeat(60)}end`;
    const [line] = callNotes({ toolName: "bash", args: {}, resultText: long, isError: false }).errors;
    expect(line.startsWith("Error: word word")).toBe(true);
    expect(line.endsWith(" word…")).toBe(true);
    expect(line.length).toBeLessThanOrEqual(160);
    expect(keyArgument({ command: "# step 1: build\nnpm run build" })).toBe("npm run build");
    expect(keyArgument({ command: `echo ${"x".repeat(150)} ${"y".repeat(30)}` })).toBe(`echo ${"x".repeat(150)}…`);
  });

  it("writes one labelled bullet per call with status, exit code and size; a short output whole", () => {
    const text = summarizeDeterministically({
      assistantText: "",
      calls: [
        { toolName: "read", args: { path: "src/a.ts" }, resultText: "x".repeat(1500), isError: false },
        { toolName: "bash", args: { command: "npm test" }, resultText: `${"ok\n".repeat(300)}Error: boom\nCommand exited with code 2`, isError: true },
        { toolName: "edit", args: { path: "src/b.ts" }, resultText: "Edited src/b.ts\n(1 replacement)", isError: false },
      ],
    });
    expect(text).toBe(
      "- [[1:read]] read `src/a.ts` — OK, 1,500 chars, 1 line\n" +
        "- [[2:bash]] bash `npm test` — ERROR, exit 2, 938 chars, 302 lines\n" +
        "  - Error: boom\n" +
        "- [[3:edit]] edit `src/b.ts` — OK: Edited src/b.ts ⏎ (1 replacement)",
    );
  });

  it("keeps error lines that follow a row number (`row N: ERROR …`), up to 80 of them", () => {
    // A user's 300-line log tail: every line an error after `row N:`; before, the summary was the header alone.
    const lines = Array.from({ length: 300 }, (_, i) => `row ${i + 1}: ERROR failed to connect to host-${i % 7}.example:443 (ECONNREFUSED)`);
    const call = { toolName: "bash", args: { command: "tail -200 app.log" }, resultText: lines.join("\n"), isError: false };
    expect(call.resultText.length).toBe(20_891);
    const text = summarizeDeterministically({ assistantText: "", calls: [call] }).split("\n");
    expect(text.length).toBe(81);
    expect(text[0]).toBe("- [[1:bash]] bash `tail -200 app.log` — OK, 20,891 chars, 300 lines");
    expect(text[1]).toBe("  - row 1: ERROR failed to connect to host-0.example:443 (ECONNREFUSED)");
    expect(text[80]).toBe("  - row 80: ERROR failed to connect to host-2.example:443 (ECONNREFUSED)");
  });

  it("drops notable lines until the summary fits in the raw size", () => {
    const lines = Array.from({ length: 6 }, (_, i) => `Error: failure number ${i} ${"z".repeat(150)}`);
    const call = { toolName: "bash", args: { command: "x" }, resultText: lines.join("\n"), isError: true };
    const text = summarizeDeterministically({ assistantText: "", calls: [call] });
    expect(text.length).toBeLessThanOrEqual(call.resultText.length - 170 - 6);
    expect(text.split("\n").length).toBeLessThan(7);
  });
});

describe("refs on index entries, read as the extension reads them", () => {
  const record = (id: string, ts: number) => ({
    toolCallId: id,
    toolName: "bash",
    args: {},
    resultText: "",
    isError: false,
    turnIndex: 0,
    timestamp: ts,
    resultTimestamp: ts,
    spillPath: `/s/${id}.txt`,
    spillBytes: 70000,
    resultPreview: "head",
  });
  const entry = (id: string, data: unknown): SessionEntry => ({
    type: "custom",
    id,
    parentId: null,
    timestamp: "2026-01-01T00:00:00.000Z",
    customType: "context-prune-index",
    data,
  });

  it("resolves refs of back-filled entries only; refs elsewhere (older condense spill entries) keep their numbers taken", () => {
    const branch = [
      entry("e1", { toolCalls: [record("call_1", 10)], refs: [{ shortId: "t35", toolCallId: "call_1", resultTimestamp: 10 }] }),
      entry("e2", { toolCalls: [record("call_2", 20)] }),
      entry("e3", { toolCalls: [], backfilled: true, refs: [{ shortId: "t7", toolCallId: "call_2", resultTimestamp: 20 }] }),
    ];
    const indexer = ToolCallIndexer.fromBranch(branch);
    expect(Object.fromEntries(indexer.shortRefToKey)).toEqual({ t7: "call_2@20" });
    expect(indexer.shortRefFor("call_1@10")).toBeUndefined();
    expect(indexer.nextShortRef).toBe(36);
    expect(indexer.isSummarized("call_1@10")).toBe(true);
    expect(indexer.allocateRef({ toolCallId: "call_3", resultTimestamp: 30 }).shortId).toBe("t36");
  });
});

describe("ToolCallIndexer.extendedWith: the index of a longer branch without rebuilding it", () => {
  const record = (id: string, ts: number) => ({
    toolCallId: id,
    toolName: "bash",
    args: {},
    resultText: `out ${id}`,
    isError: false,
    turnIndex: 0,
    timestamp: ts,
    resultTimestamp: ts,
  });
  const custom = (id: string, customType: string, data: unknown): SessionEntry => ({
    type: "custom",
    id,
    parentId: null,
    timestamp: "2026-01-01T00:00:00.000Z",
    customType,
    data,
  });
  const alias = custom("a1", "context-prune-dedup-alias", {
    newToolCallId: "call_2",
    newResultTimestamp: 20,
    originalToolCallId: "call_1",
    originalResultTimestamp: 10,
  });
  const head = [
    custom("e1", "context-prune-index", { toolCalls: [record("call_1", 10), record("call_2", 20)] }),
    custom("e2", "context-prune-index", { toolCalls: [], backfilled: true, refs: [{ shortId: "t1", toolCallId: "call_1", resultTimestamp: 10 }] }),
    alias,
  ];
  // Every map in insertion order but keyToShortRef, which is only looked up (an alias's entry goes in earlier when extended).
  const plain = (indexer: ToolCallIndexer) =>
    JSON.parse(JSON.stringify(indexer, (k, v) => (v instanceof Map ? (k === "keyToShortRef" ? [...v].sort() : [...v]) : v)));

  it("equals fromBranch of the whole branch when the new entries name no aliased key", () => {
    const tail = [
      custom("e3", "context-prune-index", { toolCalls: [record("call_3", 30)] }),
      custom("e4", "context-prune-index", { toolCalls: [], backfilled: true, refs: [{ shortId: "t9", toolCallId: "call_3", resultTimestamp: 30 }] }),
      custom("e5", "context-prune-frontier", { lastAttemptedToolCallId: "call_3", lastAttemptedTurnIndex: 2 }),
    ];
    const extended = ToolCallIndexer.fromBranch(head).extendedWith(tail);
    expect(extended).not.toBeNull();
    expect(plain(extended as ToolCallIndexer)).toEqual(plain(ToolCallIndexer.fromBranch([...head, ...tail])));
  });

  it("declines (null, index untouched) for a dedup alias or a ref to an aliased key, whose order fromBranch decides", () => {
    const indexer = ToolCallIndexer.fromBranch(head);
    const before = plain(indexer);
    const refToOriginal = custom("e3", "context-prune-index", {
      toolCalls: [],
      backfilled: true,
      refs: [{ shortId: "t5", toolCallId: "call_2", resultTimestamp: 20 }],
    });
    expect(indexer.extendedWith([refToOriginal])).toBeNull();
    expect(indexer.extendedWith([{ ...alias, id: "a2" }])).toBeNull();
    expect(plain(indexer)).toEqual(before);
  });
});

describe("exceedsHead: past the head condense query prints by default", () => {
  it("counts UTF-8 bytes, not characters, and lines without the trailing newline", () => {
    expect(exceedsHead("")).toBe(false);
    expect(exceedsHead("a".repeat(HEAD_MAX_BYTES))).toBe(false);
    expect(exceedsHead("a".repeat(HEAD_MAX_BYTES + 1))).toBe(true);
    // 3 bytes each: 17,066 of them and two ASCII characters are 51,200 bytes, one more is past.
    expect(exceedsHead("€".repeat(Math.floor(HEAD_MAX_BYTES / 3)))).toBe(false);
    expect(exceedsHead(`${"€".repeat(Math.floor(HEAD_MAX_BYTES / 3))}ab`)).toBe(false);
    expect(exceedsHead(`${"€".repeat(Math.floor(HEAD_MAX_BYTES / 3))}abc`)).toBe(true);
    // A surrogate pair: 4 bytes for 2 code units.
    expect(exceedsHead("😀".repeat(HEAD_MAX_BYTES / 4))).toBe(false);
    expect(exceedsHead(`${"😀".repeat(HEAD_MAX_BYTES / 4)}a`)).toBe(true);
    expect(exceedsHead("x\n".repeat(HEAD_MAX_LINES))).toBe(false);
    expect(exceedsHead(`${"x\n".repeat(HEAD_MAX_LINES)}x`)).toBe(true);
  });
});
