/**
 * Oracle test: for every real session in ../shared/sessions, our projection of the active branch
 * must equal Pi 1.6's own (`SessionManager.open(...).buildSessionContext().messages`, then Pi's
 * `convertToLlm`), message for message. Pi rewrites v1/v2 files on open and repairs a missing
 * final newline, so Pi only ever sees a temp copy.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { convertToLlm, projectBranch } from "../src/context/projection.js";
import { openSession } from "../src/session/open.js";
import { loadSession, type Session } from "../src/session/session.js";
import { UsageError } from "../src/util/errors.js";
import { byteOffsetOfLine, copyInto, HEX8, importPiMessages, importPiSessionManager, makeTempDir, SHARED_SESSIONS, unparseableLines } from "./helpers.js";

const present = existsSync(SHARED_SESSIONS);
if (!present) {
  console.warn(`oracle.test.ts: skipped — the shared sessions folder ${SHARED_SESSIONS} is absent`);
}
const files = present
  ? readdirSync(SHARED_SESSIONS)
      .filter((f) => f.endsWith(".jsonl"))
      .sort()
  : [];
const HEADERLESS = "gjc-01-youtube-transcript-extraction.v3.jsonl";

/** The one line each gjc file loses to a broken secret mask: [1-based line, byte offset of its start]. */
const GJC_BAD: Record<string, [number, number]> = {
  "gjc-01-youtube-transcript-extraction.v3.jsonl": [60, 147037],
  "gjc-02-inline-agent-design.v3.jsonl": [118, 353618],
  "gjc-03-raddit-dashboard-pr.v3.jsonl": [31, 29373],
  "gjc-04-awesome-agent-ide.v3.jsonl": [44, 286466],
};

/** Lines holding two glued JSON objects (SOURCES.md): [line, byte offset]. */
const GLUED: Record<string, [number, number]> = {
  "pimono-compact-hooks.v1.jsonl": [1013, 1606828],
  "pimono-custom-tool-session.v1.jsonl": [440, 918629],
};

const sharedPath = (name: string) => path.join(SHARED_SESSIONS, name);

function ourContext(session: Session) {
  const agentMessages = projectBranch(session.branch).map((i) => i.message);
  return { agentMessages, llm: convertToLlm(agentMessages) };
}

function expectSameMessages(ours: unknown[], theirs: unknown[], label: string) {
  expect(ours.length, `${label}: message count`).toBe(theirs.length);
  for (let i = 0; i < theirs.length; i++) expect(ours[i], `${label}: message ${i}`).toStrictEqual(theirs[i]);
}

describe.skipIf(!present)("oracle: our projection equals Pi 1.6's on every shared session", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let Pi: any;
  let PiMessages: any;

  beforeAll(async () => {
    tmp = makeTempDir("oracle");
    Pi = await importPiSessionManager();
    PiMessages = await importPiMessages();
  });
  afterAll(() => tmp?.cleanup());

  it("finds the shared sessions", () => {
    expect(files.length).toBe(19);
    expect(files).toContain(HEADERLESS);
  });

  for (const name of files.filter((f) => f !== HEADERLESS)) {
    it(`${name}: context messages equal Pi's`, async () => {
      const original = sharedPath(name);
      const before = readFileSync(original);
      const copy = copyInto(tmp.dir, original);
      const sm = Pi.SessionManager.open(copy);
      const piAgent = sm.buildSessionContext().messages;
      const piLlm = PiMessages.convertToLlm(piAgent);

      const session = await loadSession(original);
      const { agentMessages, llm } = ourContext(session);

      expect(session.problems).toEqual([]);
      const bad = GJC_BAD[name] ?? GLUED[name];
      expect(session.warnings.map((w) => w.line)).toEqual(bad === undefined ? [] : [bad[0]]);
      expect(llm.length).toBeGreaterThan(0);
      expectSameMessages(agentMessages, piAgent, `${name} (agent messages)`);
      expectSameMessages(llm, piLlm, `${name} (LLM messages)`);
      // Same tree: entry count, leaf position and branch length.
      expect(session.entries.length).toBe(sm.getEntries().length);
      expect(session.branch.length).toBe(sm.getBranch().length);
      if (session.fileVersion === 3) expect(session.leaf?.id).toBe(sm.getLeafId());
      // The shared file itself is untouched by anything above.
      expect(readFileSync(original).equals(before)).toBe(true);
    });
  }

  it(`${HEADERLESS}: Pi refuses it; openSession(write) throws a UsageError about the missing header, openSession(read) fails (exit 2)`, async () => {
    const original = sharedPath(HEADERLESS);
    const copy = copyInto(tmp.dir, original);
    expect(() => Pi.SessionManager.open(copy)).toThrow(/not a valid pi session/);
    // Pi left the copy alone when refusing it.
    expect(readFileSync(copy).equals(readFileSync(original))).toBe(true);

    const session = await loadSession(original);
    expect(session.header).toBeNull();
    expect(session.problems.map((p) => p.kind)).toEqual(["missing-header"]);
    expect(session.problems[0].message).toBe(
      'no session header: the first entry (line 1, a "message" entry) should be {"type":"session","id",...}; Pi refuses to open such a file',
    );

    let thrown: unknown;
    try {
      await openSession(original, "write");
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(UsageError);
    expect((thrown as UsageError).exitCode).toBe(2);
    expect((thrown as UsageError).message).toBe(`${original}: ${session.problems[0].message}; refusing to write to it`);
    expect((thrown as UsageError).message).toContain("no session header");

    // Read-only commands fail on it too (exit 2, unusable input), so a CI gate never passes on a file Pi cannot open.
    await expect(openSession(original, "read")).rejects.toMatchObject({ exitCode: 2, message: `${original}: ${session.problems[0].message}` });
  });

  it(`${HEADERLESS}: with a header prepended, Pi's context equals ours for the header-less original`, async () => {
    const original = sharedPath(HEADERLESS);
    const header = { type: "session", version: 3, id: "0123abcd-header-for-oracle", timestamp: "2025-01-01T00:00:00.000Z", cwd: "/tmp" };
    const withHeader = path.join(tmp.dir, `with-header-${HEADERLESS}`);
    writeFileSync(withHeader, Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), readFileSync(original)]));
    const sm = Pi.SessionManager.open(withHeader);
    const piLlm = PiMessages.convertToLlm(sm.buildSessionContext().messages);
    const { llm } = ourContext(await loadSession(original));
    expect(llm.length).toBeGreaterThan(0);
    expectSameMessages(llm, piLlm, HEADERLESS);
  });

  for (const [name, [line, offset]] of Object.entries(GJC_BAD)) {
    it(`${name}: the one malformed line is reported at line ${line}`, async () => {
      const file = sharedPath(name);
      expect(unparseableLines(file)).toEqual([line]);
      const session = await loadSession(file);
      expect(session.warnings.length).toBe(1);
      const w = session.warnings[0];
      expect(w.kind).toBe("malformed-line");
      expect(w.line).toBe(line);
      expect(w.offset).toBe(byteOffsetOfLine(readFileSync(file), line));
      expect(w.offset).toBe(offset);
      expect(w.file).toBe(file);
      expect(w.message).toBe("line is not valid JSON; skipped, as Pi skips it");
    });
  }

  for (const [name, [line, knownOffset]] of Object.entries(GLUED)) {
    it(`${name}: glued objects on line ${line} are reported with their byte offset`, async () => {
      const file = sharedPath(name);
      const bytes = readFileSync(file);
      expect(unparseableLines(file)).toEqual([line]);
      const session = await loadSession(file);
      expect(session.warnings).toHaveLength(1);
      const w = session.warnings[0];
      expect(w.kind).toBe("glued-objects");
      expect(w.line).toBe(line);
      const offset = byteOffsetOfLine(bytes, line);
      expect(w.offset).toBe(offset);
      expect(w.offset).toBe(knownOffset);
      // The offset really is the start of the line: preceded by a newline, begins an object.
      expect(bytes[offset - 1]).toBe(0x0a);
      expect(String.fromCharCode(bytes[offset])).toBe("{");
      expect(w.message).toBe("two JSON objects glued on one line; the line is skipped, as Pi skips it");
    });
  }

  it("v1 files: in-memory migration is deterministic and matches Pi's structure", async () => {
    const v1 = files.filter((f) => f.endsWith(".v1.jsonl"));
    expect(v1).toHaveLength(4);
    for (const name of v1) {
      const file = sharedPath(name);
      const a = await loadSession(file);
      const b = await loadSession(file);
      expect(a.fileVersion).toBe(1);
      const ids = a.entries.map((e) => e.id);
      expect(b.entries.map((e) => e.id)).toEqual(ids);
      expect(b.entries.map((e) => e.parentId)).toEqual(a.entries.map((e) => e.parentId));
      expect(ids.every((id) => HEX8.test(id))).toBe(true);
      expect(new Set(ids).size).toBe(ids.length);
      // Linear chain: each entry's parent is the one before it.
      expect(a.entries[0].parentId).toBeNull();
      for (let i = 1; i < a.entries.length; i++) expect(a.entries[i].parentId).toBe(ids[i - 1]);
      expect(a.branch.length).toBe(a.entries.length);

      // Compactions point at the same position as in Pi's (random-id) migration.
      const sm = Pi.SessionManager.open(copyInto(tmp.dir, file, `det-${name}`));
      const piEntries = sm.getEntries();
      const piIndex = new Map<string, number>(piEntries.map((e: any, i: number) => [e.id, i]));
      const ourIndex = new Map(ids.map((id, i) => [id, i]));
      const ourKept = a.entries.filter((e) => e.type === "compaction").map((e) => ourIndex.get(e.firstKeptEntryId as string));
      const piKept = piEntries.filter((e: any) => e.type === "compaction").map((e: any) => piIndex.get(e.firstKeptEntryId));
      expect(ourKept).toEqual(piKept);
      expect(a.entries.every((e) => !("firstKeptEntryIndex" in e))).toBe(true);
    }
  });

  it("v1 files and their migrated-v3 twins project to the same context", async () => {
    for (const name of files.filter((f) => f.endsWith(".v1.jsonl"))) {
      const twin = name.replace(".v1.jsonl", ".migrated-v3.jsonl");
      const a = ourContext(await loadSession(sharedPath(name))).llm;
      const b = ourContext(await loadSession(sharedPath(twin))).llm;
      expectSameMessages(a, b, `${name} vs ${twin}`);
    }
  });
});
