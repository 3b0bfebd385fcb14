/**
 * The reader, migration, tree and projection on hand-written fixtures (fixtures/*.jsonl, each
 * named for the shape it covers), with exact warnings, problems and projected messages; where Pi
 * accepts the file, Pi's own projection is checked too. Then the CLI on some of them.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { main } from "../src/cli/main.js";
import { buildContextEntries, convertToLlm, projectBranch } from "../src/context/projection.js";
import { migrateEntries } from "../src/session/migrate.js";
import { openSession } from "../src/session/open.js";
import { nestedDeeperThan, parseSessionText, readSessionFile, type RawSession } from "../src/session/reader.js";
import { childrenOf, entriesWithMissingParent, getBranch, loadSession, type Session } from "../src/session/session.js";
import { UsageError } from "../src/util/errors.js";
import {
  byteOffsetOfLine,
  copyInto,
  lineStarts,
  FIXTURES,
  HEX8,
  importPiCompaction,
  importPiMessages,
  importPiSessionManager,
  makeTempDir,
  loose,
} from "./helpers.js";

const fx = (name: string) => path.join(FIXTURES, name);
const load = (name: string) => loadSession(fx(name));
const llmOf = (s: Session) => convertToLlm(projectBranch(s.branch).map((i) => i.message));
const agentOf = (s: Session) => projectBranch(s.branch).map((i) => i.message);
const ids = (entries: { id: string }[]) => entries.map((e) => e.id);
const offsetOf = (name: string, line: number) => byteOffsetOfLine(readFileSync(fx(name)), line);

// Message builders for the expected values (2026-01-01T00:00:00Z plus s seconds).
const T0 = 1767225600000;
const ms = (s: number) => T0 + s * 1000;
const iso = (s: number) => new Date(ms(s)).toISOString();
const MODEL = { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5" };
const user = (content: unknown, s: number) => ({ role: "user", content, timestamp: ms(s) });
const asst = (content: unknown[], s: number, stopReason = "stop") => ({
  role: "assistant",
  content,
  ...MODEL,
  stopReason,
  timestamp: ms(s),
});
const text = (t: string) => ({ type: "text", text: t });
const asstText = (t: string, s: number) => asst([text(t)], s);

async function expectUsageError(p: Promise<unknown>, message: string) {
  let thrown: unknown;
  try {
    await p;
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(UsageError);
  expect((thrown as UsageError).exitCode).toBe(2);
  expect((thrown as UsageError).message).toBe(message);
}

let tmp: ReturnType<typeof makeTempDir>;
let Pi: any;
let PiMessages: any;
beforeAll(async () => {
  tmp = makeTempDir("reader");
  Pi = await importPiSessionManager();
  PiMessages = await importPiMessages();
});
afterAll(() => tmp?.cleanup());

/** Pi's LLM context for a fixture, computed on a temp copy (Pi may rewrite the file it opens). */
function piContext(name: string): { llm: unknown[]; copy: string; sm: any } {
  const copy = copyInto(tmp.dir, fx(name), `pi-${Math.random().toString(16).slice(2)}-${name}`);
  const sm = Pi.SessionManager.open(copy);
  return { llm: PiMessages.convertToLlm(sm.buildSessionContext().messages), copy, sm };
}

describe("unusable files", () => {
  it("bad-empty.jsonl: problem 'empty', nothing parsed, unusable for every command", async () => {
    const s = await load("bad-empty.jsonl");
    expect(s.problems).toEqual([{ kind: "empty", message: "the file is empty: there is no session header and no entry" }]);
    expect(s.warnings).toEqual([]);
    expect(s.header).toBeNull();
    expect(s.entries).toEqual([]);
    expect(s.branch).toEqual([]);
    expect(s.leaf).toBeNull();
    expect(s.size).toBe(0);
    expect(s.lineCount).toBe(0);
    expect(s.endsWithNewline).toBe(true);
    expect(llmOf(s)).toEqual([]);
    const msg = `${fx("bad-empty.jsonl")}: the file is empty: there is no session header and no entry`;
    await expectUsageError(openSession(fx("bad-empty.jsonl"), "read"), msg);
    await expectUsageError(openSession(fx("bad-empty.jsonl"), "write"), msg);
  });

  it("bad-not-jsonl.jsonl (Markdown): problem 'not-jsonl', one malformed-line warning per non-blank line", async () => {
    const name = "bad-not-jsonl.jsonl";
    const s = await load(name);
    const p = fx(name);
    expect(s.problems).toEqual([{ kind: "not-jsonl", message: "not a JSONL session: none of its 4 non-blank line(s) is a JSON object" }]);
    const malformed = (line: number, excerpt: string) => ({
      kind: "malformed-line",
      file: p,
      line,
      offset: offsetOf(name, line),
      excerpt,
      message: "line is not valid JSON; skipped, as Pi skips it",
    });
    expect(s.warnings).toEqual([
      malformed(1, "# Session notes"),
      malformed(3, "This is a Markdown file that was saved with a .jsonl name."),
      malformed(5, "- first point"),
      malformed(6, "- second point"),
    ]);
    expect(s.warnings.map((w) => w.offset)).toEqual([0, 17, 77, 91]);
    expect(s.entries).toEqual([]);
    expect(s.lineCount).toBe(6);
    await expectUsageError(openSession(p, "read"), `${p}: not a JSONL session: none of its 4 non-blank line(s) is a JSON object`);
    // Pi refuses it too, without touching it.
    const copy = copyInto(tmp.dir, p, "pi-not-jsonl.jsonl");
    expect(() => Pi.SessionManager.open(copy)).toThrow(/not a valid pi session/);
    expect(readFileSync(copy).equals(readFileSync(p))).toBe(true);
  });

  it("bad-no-header.jsonl: problem 'missing-header'; every command refuses it (exit 2: unusable input); Pi refuses it", async () => {
    const name = "bad-no-header.jsonl";
    const p = fx(name);
    const s = await load(name);
    const message = 'no session header: the first entry (line 1, a "message" entry) should be {"type":"session","id",...}; Pi refuses to open such a file';
    expect(s.problems).toEqual([{ kind: "missing-header", message }]);
    expect(s.warnings).toEqual([]);
    expect(s.header).toBeNull();
    expect(s.id).toBe("");
    expect(s.fileVersion).toBe(3);
    expect(ids(s.branch)).toEqual(["aa000001", "aa000002"]);
    expect(llmOf(s)).toStrictEqual([user("Hello without a header.", 1), asstText("Hi.", 2)]);
    await expect(openSession(p, "read")).rejects.toMatchObject({ exitCode: 2, message: `${p}: ${message}` });
    await expectUsageError(openSession(p, "write"), `${p}: ${message}; refusing to write to it`);
    expect(() => Pi.SessionManager.open(copyInto(tmp.dir, p, "pi-no-header.jsonl"))).toThrow(/not a valid pi session/);
  });

  it("bad-truncated-final-line.jsonl: warning and problem 'truncated-final-line'; readable, not writable", async () => {
    const name = "bad-truncated-final-line.jsonl";
    const p = fx(name);
    const s = await load(name);
    expect(s.warnings).toEqual([
      {
        kind: "truncated-final-line",
        file: p,
        line: 3,
        offset: offsetOf(name, 3),
        excerpt: '{"type":"message","id":"aa000002","parentId":"aa000001","tim…',
        message: "the final line is cut off mid-object (no newline, not valid JSON); skipped",
      },
    ]);
    expect(s.warnings[0].offset).toBe(318);
    const problem = "the final line (line 3, byte 318) is cut off mid-object (the file may still be being written)";
    expect(s.problems).toEqual([{ kind: "truncated-final-line", message: problem }]);
    expect(s.endsWithNewline).toBe(false);
    expect(s.lineCount).toBe(3);
    expect(ids(s.entries)).toEqual(["aa000001"]);
    expect(llmOf(s)).toStrictEqual([user("Is this file complete?", 1)]);
    expect((await openSession(p, "read")).entries).toHaveLength(1);
    await expectUsageError(openSession(p, "write"), `${p}: ${problem}; refusing to write to it`);
    expect(llmOf(s)).toStrictEqual(piContext(name).llm);
  });
});

describe("damaged but usable files", () => {
  it("bad-glued-objects.jsonl: the glued line is skipped and reported; the next entry starts a new root", async () => {
    const name = "bad-glued-objects.jsonl";
    const p = fx(name);
    const s = await load(name);
    expect(s.warnings).toEqual([
      {
        kind: "glued-objects",
        file: p,
        line: 3,
        offset: offsetOf(name, 3),
        excerpt: '{"type":"message","id":"aa000002","parentId":"aa000001","tim…',
        message: "two JSON objects glued on one line; the line is skipped, as Pi skips it",
      },
    ]);
    expect(s.warnings[0].offset).toBe(311);
    expect(s.problems).toEqual([]);
    expect(ids(s.entries)).toEqual(["aa000001", "aa000004", "aa000005"]);
    expect(s.locations).toEqual([
      { line: 2, offset: offsetOf(name, 2) },
      { line: 4, offset: offsetOf(name, 4) },
      { line: 5, offset: offsetOf(name, 5) },
    ]);
    expect(ids(entriesWithMissingParent(s))).toEqual(["aa000004"]);
    expect(ids(s.branch)).toEqual(["aa000004", "aa000005"]);
    const expected = [asstText("Second answer.", 4), user("Third question.", 5)];
    expect(llmOf(s)).toStrictEqual(expected);
    expect(piContext(name).llm).toStrictEqual(expected);
  });

  it("warnings-mixed.jsonl: CRLF, blank lines, not-an-object, duplicate header, malformed line", async () => {
    const name = "warnings-mixed.jsonl";
    const p = fx(name);
    const s = await load(name);
    const w = (kind: string, line: number, excerpt: string, message: string) => ({
      kind,
      file: p,
      line,
      offset: offsetOf(name, line),
      excerpt,
      message,
    });
    expect(s.warnings).toEqual([
      w("not-an-object", 4, "[1,2,3]", "line is valid JSON but not an object; skipped"),
      w("duplicate-header", 5, '{"type":"session","version":3,"id":"90000000-0000-4000-8000-…', "a second session header; ignored, as Pi ignores it"),
      w("malformed-line", 7, '{"type":"message","id":"aa000003", this line is broken', "line is not valid JSON; skipped, as Pi skips it"),
    ]);
    expect(s.problems).toEqual([]);
    expect(s.header?.id).toBe("90000000-0000-4000-8000-000000000001");
    expect(s.lineCount).toBe(9);
    expect(s.locations.map((l) => l.line)).toEqual([2, 6, 9]);
    expect(s.locations[0].offset).toBe(offsetOf(name, 2));
    expect(readFileSync(p)[s.locations[0].offset - 2]).toBe(0x0d); // line 1 ends in CRLF
    const expected = [user("A CRLF line came before me.", 1), asstText("Ok.", 2), user("Still here.", 4)];
    expect(llmOf(s)).toStrictEqual(expected);
    expect(piContext(name).llm).toStrictEqual(expected);
  });

  it("no-final-newline.jsonl: fine to read, endsWithNewline false; Pi appends the newline on open", async () => {
    const name = "no-final-newline.jsonl";
    const s = await load(name);
    expect(s.warnings).toEqual([]);
    expect(s.problems).toEqual([]);
    expect(s.endsWithNewline).toBe(false);
    expect(s.lineCount).toBe(3);
    expect(s.size).toBe(readFileSync(fx(name)).length);
    const expected = [user("No newline at the end of this file.", 1), asstText("Noted.", 2)];
    expect(llmOf(s)).toStrictEqual(expected);
    const pi = piContext(name);
    expect(pi.llm).toStrictEqual(expected);
    expect(readFileSync(pi.copy).equals(Buffer.concat([readFileSync(fx(name)), Buffer.from("\n")]))).toBe(true);
  });
});

describe("trees", () => {
  it("branched.jsonl: two branches; the leaf is the last line, not the deepest entry", async () => {
    const s = await load("branched.jsonl");
    expect(s.warnings).toEqual([]);
    expect(s.problems).toEqual([]);
    expect(s.leaf?.id).toBe("bb000002");
    expect(ids(s.branch)).toEqual(["aa000001", "aa000002", "bb000001", "bb000002"]);
    expect(ids(getBranch(s, "aa000006"))).toEqual(["aa000001", "aa000002", "aa000003", "aa000004", "aa000005", "aa000006"]);
    expect(ids(childrenOf(s).get("aa000002")!)).toEqual(["aa000003", "bb000001"]);
    expect(ids(childrenOf(s).get(null)!)).toEqual(["aa000001"]);
    expect(entriesWithMissingParent(s)).toEqual([]);
    const expected = [user("What is 2+2?", 1), asstText("4.", 2), user("Explain it instead.", 7), asstText("Two plus two is four.", 8)];
    expect(llmOf(s)).toStrictEqual(expected);
    const pi = piContext("branched.jsonl");
    expect(pi.llm).toStrictEqual(expected);
    expect(pi.sm.getLeafId()).toBe("bb000002");
  });

  it("missing-parent.jsonl: an entry whose parent is missing starts a new root", async () => {
    const s = await load("missing-parent.jsonl");
    expect(s.warnings).toEqual([]);
    expect(s.problems).toEqual([]);
    expect(ids(entriesWithMissingParent(s))).toEqual(["aa000004"]);
    expect(ids(s.branch)).toEqual(["aa000004", "aa000005"]);
    expect(ids(childrenOf(s).get(null)!)).toEqual(["aa000001"]);
    expect(ids(childrenOf(s).get("aa000003")!)).toEqual(["aa000004"]);
    const expected = [user("After the gap.", 4), asstText("Answer after the gap.", 5)];
    expect(llmOf(s)).toStrictEqual(expected);
    expect(piContext("missing-parent.jsonl").llm).toStrictEqual(expected);
  });

  it("getBranch stops before the first entry met twice on a parent cycle (a walk longer than the file)", () => {
    // c → b → a → c: the walk from c meets c again after a; from d (whose parent is b) it meets b again.
    const entry = (id: string, parentId: string): Session["entries"][number] => ({
      type: "thinking_level_change",
      id,
      parentId,
      timestamp: "2026-01-01T00:00:00.000Z",
      thinkingLevel: "low",
    });
    const byId = new Map([entry("a", "c"), entry("b", "a"), entry("c", "b"), entry("d", "b")].map((e) => [e.id, e]));
    expect(ids(getBranch({ byId }, "c"))).toEqual(["a", "b", "c"]);
    expect(ids(getBranch({ byId }, "d"))).toEqual(["c", "a", "b", "d"]);
    expect(ids(getBranch({ byId }, "x"))).toEqual([]);
    expect(ids(getBranch({ byId }, null))).toEqual([]);
  });
});

describe("old versions", () => {
  it("v1-with-compaction.jsonl: deterministic ids, linear parents, firstKeptEntryIndex → firstKeptEntryId", async () => {
    const name = "v1-with-compaction.jsonl";
    const s = await load(name);
    const again = await load(name);
    expect(s.fileVersion).toBe(1);
    expect(s.warnings).toEqual([]);
    expect(s.problems).toEqual([]);
    expect(s.entries.map((e) => e.type)).toEqual(["model_change", "message", "message", "message", "message", "compaction", "message", "message"]);
    const entryIds = ids(s.entries);
    expect(ids(again.entries)).toEqual(entryIds);
    expect(entryIds.every((id) => HEX8.test(id))).toBe(true);
    expect(new Set(entryIds).size).toBe(8);
    expect(s.entries.map((e) => e.parentId)).toEqual([null, ...entryIds.slice(0, -1)]);
    // firstKeptEntryIndex 4 counts the header as 0: the 4th entry, user "Continue." (line 5).
    const compaction = s.entries[5];
    expect(loose(compaction).firstKeptEntryId).toBe(entryIds[3]);
    expect("firstKeptEntryIndex" in compaction).toBe(false);
    expect(s.locations[3]).toEqual({ line: 5, offset: offsetOf(name, 5) });
    // Timestamps and other fields survive the migration.
    expect(s.entries[0]).toEqual({
      type: "model_change",
      timestamp: iso(1),
      provider: "anthropic",
      modelId: "claude-sonnet-4-5",
      id: entryIds[0],
      parentId: null,
    });
    const expected = [
      user(
        [
          text(
            "The conversation history before this point was compacted into the following summary:\n\n<summary>\n" +
              "The user asked to start the work; it was started.\n</summary>",
          ),
        ],
        6,
      ),
      user("Continue.", 4),
      asstText("Continued.", 5),
      user("Finish it.", 7),
      asstText("Done.", 8),
    ];
    expect(llmOf(s)).toStrictEqual(expected);
    const pi = piContext(name);
    expect(pi.llm).toStrictEqual(expected);
    // Pi rewrote its copy to v3 (which is why Pi only ever sees copies).
    expect(JSON.parse(readFileSync(pi.copy, "utf8").split("\n")[0]).version).toBe(3);
  });

  it("v2-hookmessage.jsonl: role hookMessage becomes custom, then a user message; the raw entries are not mutated", async () => {
    const name = "v2-hookmessage.jsonl";
    const s = await load(name);
    expect(s.fileVersion).toBe(2);
    expect(s.warnings).toEqual([]);
    expect(s.problems).toEqual([]);
    expect(ids(s.entries)).toEqual(["aa000001", "aa000002", "aa000003", "aa000004", "aa000005"]);
    expect(loose(s.entries).map((e) => (e.message as { role: string }).role)).toEqual(["user", "custom", "assistant", "custom", "user"]);
    expect(agentOf(s)[1]).toStrictEqual({
      role: "custom",
      customType: "my-hook",
      content: "Injected by a v2 hook.",
      display: true,
      details: { hook: "start" },
      timestamp: ms(2),
    });
    const raw = await readSessionFile(fx(name));
    const migrated = migrateEntries(raw.header, raw.entries);
    expect(migrated.fromVersion).toBe(2);
    expect((loose(raw.entries[1]).message as { role: string }).role).toBe("hookMessage");
    const expected = [
      user("Hello.", 1),
      user([text("Injected by a v2 hook.")], 2),
      asstText("Hi.", 3),
      user([text("A hidden hook note.")], 4),
      user("Bye.", 5),
    ];
    expect(llmOf(s)).toStrictEqual(expected);
    expect(piContext(name).llm).toStrictEqual(expected);
  });
});

describe("compaction-and-context-edit.jsonl", () => {
  const name = "compaction-and-context-edit.jsonl";
  const compactionSummaryText =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n" +
    "New summary: the user asked for a file listing.\n</summary>";
  const branchSummaryText =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n" + "Tried approach X; it failed.</summary>";
  const listCall = asst([text("Listing."), { type: "toolCall", id: "toolu_01", name: "bash", arguments: { command: "ls" } }], 3, "toolUse");
  const listResult = {
    role: "toolResult",
    toolCallId: "toolu_01",
    toolName: "bash",
    content: [text("a.txt\nb.txt")],
    isError: false,
    timestamp: ms(4),
  };
  const readCall = asst([{ type: "toolCall", id: "toolu_02", name: "read", arguments: { path: "b.txt" } }], 15, "toolUse");
  const readResultEdited = {
    role: "toolResult",
    toolCallId: "toolu_02",
    toolName: "read",
    content: [text("[b.txt output trimmed by an edit]")],
    isError: false,
    timestamp: ms(16),
  };
  const bash = (command: string, output: string, exitCode: number, s: number, extra: object = {}) => ({
    role: "bashExecution",
    command,
    output,
    exitCode,
    cancelled: false,
    truncated: false,
    ...extra,
    timestamp: ms(s),
  });

  it("entries kept by the latest compaction: from firstKeptEntryId, system messages excluded", async () => {
    const s = await load(name);
    expect(s.warnings).toEqual([]);
    expect(s.problems).toEqual([]);
    expect(s.entries).toHaveLength(27);
    expect(s.branch).toHaveLength(25);
    expect(ids(s.branch)).not.toContain("e0000017");
    expect(ids(s.branch)).not.toContain("e0000018");
    expect(ids(buildContextEntries(s.branch))).toEqual([
      "e0000008",
      "e0000003",
      "e0000004",
      "e0000006",
      "e0000007",
      ...["e0000009", "e000000a", "e000000b", "e000000c", "e000000d", "e000000e", "e000000f", "e0000010"],
      ...["e0000011", "e0000012", "e0000013", "e0000014", "e0000015", "e0000016", "e0000019", "e000001a", "e000001b"],
    ]);
    // Only the newest compaction contributes; custom entries and the null-edited custom_message contribute nothing.
    expect(projectBranch(s.branch).map((i) => i.entry.id)).toEqual([
      "e0000008",
      "e0000003",
      "e0000004",
      "e0000007",
      "e0000009",
      "e000000a",
      "e000000b",
      "e000000d",
      "e000000f",
      "e0000010",
      "e0000019",
      "e000001a",
      "e000001b",
    ]);
  });

  it("agent messages before convertToLlm", async () => {
    const s = await load(name);
    expect(agentOf(s)).toStrictEqual([
      { role: "compactionSummary", summary: "New summary: the user asked for a file listing.", tokensBefore: 2000, timestamp: ms(8) },
      listCall,
      listResult,
      asstText("Two files (edited).", 7),
      bash("ls -la", "total 8", 0, 9), // the non-null edit of a bashExecution is ignored
      bash("cat .env", "SECRET=1", 0, 10, { excludeFromContext: true }),
      bash("false", "", 1, 11),
      {
        role: "custom",
        customType: "my-ext",
        content: "Extension note: tests are slow.",
        display: true,
        details: { source: "fixture" },
        timestamp: ms(13),
      },
      readCall,
      readResultEdited, // the later of two edits wins; a string becomes one text block
      { role: "branchSummary", summary: "Tried approach X; it failed.", fromId: "e0000018", timestamp: ms(25) },
      user("Go with approach Y.", 26),
      asstText("Done with approach Y.", 27),
    ]);
  });

  it("LLM messages equal the hand-written expectation and Pi's", async () => {
    const s = await load(name);
    const expected = [
      user([text(compactionSummaryText)], 8),
      listCall,
      listResult,
      asstText("Two files (edited).", 7),
      user([text("Ran `ls -la`\n```\ntotal 8\n```")], 9),
      user([text("Ran `false`\n(no output)\n\nCommand exited with code 1")], 11),
      user([text("Extension note: tests are slow.")], 13),
      readCall,
      readResultEdited,
      user([text(branchSummaryText)], 25),
      user("Go with approach Y.", 26),
      asstText("Done with approach Y.", 27),
    ];
    expect(llmOf(s)).toStrictEqual(expected);
    expect(piContext(name).llm).toStrictEqual(expected);
  });
});

describe("reader internals", () => {
  const strip = (r: RawSession) => ({ ...r, mtimeMs: 0 });

  it("nestedDeeperThan: a line with at most `limit` brackets is not too deep; brackets in strings do not nest", () => {
    const deeper = (json: string, limit: number) => {
      // Inside a larger buffer, as the reader passes a line of its read chunk: nothing around it is read.
      const buf = Buffer.from(`[[[[[[${json}]]]]]]`);
      return nestedDeeperThan(buf, 6, buf.length - 6, limit);
    };
    expect(deeper('{"a":[{"b":1}]}', 3)).toBe(false); // depth 3, three openers
    expect(deeper('{"a":[{"b":[1]}]}', 3)).toBe(true); // depth 4
    expect(deeper("[[[[]]]]", 3)).toBe(true);
    expect(deeper('[{"s":"{{{{[[[["},[]]', 3)).toBe(false); // 10 openers, 8 of them in a string: depth 2
    expect(deeper('[{"s":"\\"{{{{"},{"t":[[1]]}]', 3)).toBe(true); // an escaped quote inside the string; depth 4 after it
  });

  it("parseSessionText and readSessionFile agree on every fixture", async () => {
    for (const name of [
      "bad-empty.jsonl",
      "bad-no-header.jsonl",
      "bad-not-jsonl.jsonl",
      "bad-truncated-final-line.jsonl",
      "bad-glued-objects.jsonl",
      "no-final-newline.jsonl",
      "branched.jsonl",
      "missing-parent.jsonl",
      "v1-with-compaction.jsonl",
      "v2-hookmessage.jsonl",
      "compaction-and-context-edit.jsonl",
      "warnings-mixed.jsonl",
    ]) {
      const p = fx(name);
      expect(strip(parseSessionText(p, readFileSync(p, "utf8"))), name).toEqual(strip(await readSessionFile(p)));
    }
  });

  it("lines across the 4 MiB read-chunk boundary, with multi-byte characters, keep exact line numbers and offsets", async () => {
    const header = { type: "session", version: 3, id: "chunk-test", timestamp: iso(0), cwd: "/tmp" };
    const lines = [JSON.stringify(header)];
    let parent: string | null = null;
    let total = lines[0].length;
    for (let i = 0; total < 9 * 1024 * 1024; i++) {
      const id = (0x10000000 + i).toString(16);
      // Vary line lengths so some line straddles each 4 MiB boundary; include 2-, 3- and 4-byte characters.
      const filler = "é€😀".repeat(50 + (i % 97)) + "x".repeat(i % 13);
      lines.push(JSON.stringify({ type: "message", id, parentId: parent, timestamp: iso(1), message: { role: "user", content: filler, timestamp: ms(1) } }));
      total += Buffer.byteLength(lines[lines.length - 1]) + 1;
      parent = id;
    }
    // A glued line and a malformed line somewhere past the first boundary.
    const gluedAt = Math.floor(lines.length * 0.6);
    lines[gluedAt] = lines[gluedAt] + lines[gluedAt + 1];
    lines[gluedAt + 2] = lines[gluedAt + 2].slice(0, 40);
    const file = path.join(tmp.dir, "chunked.jsonl");
    writeFileSync(file, `${lines.join("\n")}\n`);
    const bytes = readFileSync(file);
    expect(bytes.length).toBeGreaterThan(8 * 1024 * 1024);

    const raw = await readSessionFile(file);
    expect(strip(raw)).toEqual(strip(parseSessionText(file, bytes.toString("utf8"))));
    expect(raw.warnings.map((w) => [w.kind, w.line, w.offset])).toEqual([
      ["glued-objects", gluedAt + 1, byteOffsetOfLine(bytes, gluedAt + 1)],
      ["malformed-line", gluedAt + 3, byteOffsetOfLine(bytes, gluedAt + 3)],
    ]);
    expect(raw.entries).toHaveLength(lines.length - 3);
    const MiB4 = 4 * 1024 * 1024;
    for (const boundary of [MiB4, 2 * MiB4]) {
      expect(raw.locations.some((l) => l.offset < boundary && bytes.indexOf(0x0a, l.offset) > boundary)).toBe(true);
    }
    const starts = lineStarts(bytes);
    raw.locations.forEach((loc, i) => {
      expect(loc.offset).toBe(starts[loc.line - 1]);
      const end = bytes.indexOf(0x0a, loc.offset);
      expect(JSON.parse(bytes.toString("utf8", loc.offset, end))).toEqual(raw.entries[i]);
    });
  });
});

describe("CLI", () => {
  let stdout: string[];
  let stderr: string[];
  const savedEnv = { NO_COLOR: process.env.NO_COLOR, FORCE_COLOR: process.env.FORCE_COLOR };

  async function run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    stdout = [];
    stderr = [];
    vi.spyOn(process.stdout, "write").mockImplementation((chunk: unknown) => {
      stdout.push(String(chunk));
      return true;
    });
    vi.spyOn(process.stderr, "write").mockImplementation((chunk: unknown) => {
      stderr.push(String(chunk));
      return true;
    });
    const code = await main(["node", "condense", ...args]);
    vi.restoreAllMocks();
    return { code, stdout: stdout.join(""), stderr: stderr.join("") };
  }

  beforeAll(() => {
    process.env.NO_COLOR = "1";
    delete process.env.FORCE_COLOR;
  });
  afterEach(() => vi.restoreAllMocks());
  afterAll(() => {
    for (const [k, v] of Object.entries(savedEnv)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it("render on an empty file: exit 2 and the reason", async () => {
    const p = fx("bad-empty.jsonl");
    const r = await run("render", p);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`error: ${p}: the file is empty: there is no session header and no entry\n`);
  });

  it("render on a Markdown file: exit 2 and the reason", async () => {
    const p = fx("bad-not-jsonl.jsonl");
    const r = await run("render", p);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`error: ${p}: not a JSONL session: none of its 4 non-blank line(s) is a JSON object\n`);
  });

  it("render, query, metrics and budget on a header-less file: exit 2 with Pi's reason, nothing on stdout", async () => {
    const p = fx("bad-no-header.jsonl");
    const why = `${p}: no session header: the first entry (line 1, a "message" entry) should be {"type":"session","id",...}; Pi refuses to open such a file`;
    for (const args of [
      ["render", p],
      ["render", p, "--format", "json"],
      ["query", "t1", "--session", p],
      ["metrics", p],
      ["budget", p],
    ]) {
      const r = await run(...args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout, args.join(" ")).toBe("");
      expect(r.stderr, args.join(" ")).toBe(`error: ${why}\n`);
    }
    const j = await run("metrics", p, "--json");
    expect(j.code).toBe(2);
    expect(JSON.parse(j.stdout).failures).toEqual([{ session: p, error: why }]);
  });

  it("metrics --json on compaction-and-context-edit.jsonl", async () => {
    const p = fx("compaction-and-context-edit.jsonl");
    const r = await run("metrics", p, "--json");
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    const doc = JSON.parse(r.stdout);
    const s = await load("compaction-and-context-edit.jsonl");
    // What Pi sends, as Pi estimates it: ceil(chars / 4) per message of its own projection
    // (the excluded `!!command` reaches no provider and counts 0).
    const Compaction = await importPiCompaction();
    const agent = projectBranch(s.branch).map((i) => i.message);
    const piTokens = agent.filter((m) => !(m.role === "bashExecution" && m.excludeFromContext)).reduce((t: number, m) => t + Compaction.estimateTokens(m), 0);
    expect(piTokens).toBe(73);
    expect(doc.failures).toEqual([]);
    expect(doc.sessions).toHaveLength(1);
    expect(doc.sessions[0]).toMatchObject({
      session: p,
      entries: 27,
      branchEntries: 25,
      entryTypes: {
        model_change: 1,
        message: 14,
        compaction: 2,
        custom: 1,
        custom_message: 2,
        context_edit: 6,
        branch_summary: 1,
      },
      roles: { user: 2, assistant: 4, toolResult: 2, system: 1, bashExecution: 3 },
      toolCalls: 2,
      toolResults: 2,
      // 12 messages reach the provider; 275 of their characters count; no batch to capture.
      context: { before: { messages: 12, chars: 275, tokens: 73 }, after: { messages: 12, chars: 275, tokens: 73 } },
      warnings: [],
    });
  });

  it("metrics --json reports the warnings of a damaged file", async () => {
    const p = fx("bad-glued-objects.jsonl");
    const r = await run("metrics", p, "--json");
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.sessions[0].warnings).toEqual([
      `${p}:3 (byte 311): two JSON objects glued on one line; the line is skipped, as Pi skips it: "{\\"type\\":\\"message\\",\\"id\\":\\"aa000002\\",\\"parentId\\":\\"aa000001\\",\\"tim…"`,
    ]);
    expect(doc.sessions[0]).toMatchObject({ entries: 3, branchEntries: 2, context: { before: { messages: 2 } } });
  });
});

describe("a JSON value before the header", () => {
  it("counts as Pi's first entry: the file has no header and writing commands refuse", async () => {
    const raw = await readSessionFile(fx("bad-number-before-header.jsonl"));
    expect(raw.header).toBeNull();
    expect(raw.problems).toEqual([
      {
        kind: "missing-header",
        message: 'no session header: the first entry (line 1, a JSON number) should be {"type":"session","id",...}; Pi refuses to open such a file',
      },
    ]);
    expect(raw.warnings.map((w) => [w.kind, w.line])).toEqual([
      ["not-an-object", 1],
      ["duplicate-header", 2],
    ]);
    await expect(openSession(fx("bad-number-before-header.jsonl"), "write")).rejects.toThrow(UsageError);
  });
});
