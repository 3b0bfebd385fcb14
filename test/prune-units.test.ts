/**
 * Unit tests of the pipeline's building blocks: the glob contract, sidecar names, head previews,
 * the dedup hash, label → ref substitution and the deterministic summarizer.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { contentHash, normalizeResult } from "../src/prune/content-hash.js";
import { compileGlob, protectionTest } from "../src/prune/protect.js";
import { headPreview, sidecarName, sidecarPath } from "../src/prune/spill.js";
import { keyArgument, notableLines, summarizeDeterministically } from "../src/summarize/deterministic.js";
import { composeSummary, substituteInlineRefs } from "../src/summarize/refs.js";

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
  it("sanitizes occurrence keys to [A-Za-z0-9._-] and caps the name at 255 bytes", () => {
    expect(sidecarName("functions.read:0@1767261602300")).toBe("functions.read_0_1767261602300.txt");
    expect(sidecarName("../../etc/passwd@1")).toBe(".._.._etc_passwd_1.txt");
    expect(sidecarName("..")).toBe("_...txt");
    const long = sidecarName(`${"é".repeat(300)}@1`);
    expect(Buffer.byteLength(long)).toBe(255);
    expect(long.endsWith(".txt")).toBe(true);
  });

  it("never leaves <session id>-blobs beside the session", () => {
    const p = sidecarPath("/s/dir/sess.jsonl", "abc/../../x", "../../up@1");
    expect(path.dirname(p)).toBe("/s/dir/abc_.._.._x-blobs");
    expect(path.basename(p)).toBe(".._.._up_1.txt");
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

  it("appends a footer listing every ref", () => {
    expect(composeSummary("- [[1:read]] x", refs, ["read", "bash"])).toBe(
      "- `t7` x\n\n---\nPruned tool outputs: `t7`, `t8`\n" +
        "Full original outputs: call `context_tree_query` with these refs (or run `condense query <ref>`).",
    );
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

  it("keeps error lines first, verbatim, and skips file contents of reads", () => {
    const out = ["ok 1", "FAIL src/x.test.ts > parses", "TypeError: x is not a function", "    at src/x.ts:3:7", "Command exited with code 1"].join("\n");
    expect(notableLines({ toolName: "bash", args: {}, resultText: out, isError: true })).toEqual([
      "FAIL src/x.test.ts > parses",
      "TypeError: x is not a function",
      "at src/x.ts:3:7",
      "Command exited with code 1",
    ]);
    expect(notableLines({ toolName: "read", args: {}, resultText: "throw new Error('x')", isError: false })).toEqual([]);
  });

  it("writes one labelled bullet per call with status, exit code and size", () => {
    const text = summarizeDeterministically({
      assistantText: "",
      calls: [
        { toolName: "read", args: { path: "src/a.ts" }, resultText: "x".repeat(1500), isError: false },
        { toolName: "bash", args: { command: "npm test" }, resultText: `${"ok\n".repeat(300)}Error: boom\nCommand exited with code 2`, isError: true },
      ],
    });
    expect(text).toBe(
      "- [[1:read]] read `src/a.ts` — OK, 1,500 chars, 1 line\n" +
        "- [[2:bash]] bash `npm test` — ERROR, exit 2, 938 chars, 302 lines\n" +
        "  - Error: boom\n" +
        "  - Command exited with code 2",
    );
  });

  it("drops notable lines until the summary fits in the raw size", () => {
    const lines = Array.from({ length: 6 }, (_, i) => `Error: failure number ${i} ${"z".repeat(150)}`);
    const call = { toolName: "bash", args: { command: "x" }, resultText: lines.join("\n"), isError: true };
    const text = summarizeDeterministically({ assistantText: "", calls: [call] });
    expect(text.length).toBeLessThanOrEqual(call.resultText.length - 170 - 6);
    expect(text.split("\n").length).toBeLessThan(7);
  });
});
