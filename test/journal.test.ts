/**
 * src/session/journal.ts and recover.ts on hand-made tails: which bytes after the recorded size
 * are condense's own (every complete line by position, length and hash; a fragment only where our
 * next line starts and shorter than it), and what settling leaves — exact bytes for each layout.
 */
import { chmodSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  classifyTail,
  type JournalRecord,
  journalPath,
  lineTable,
  readUndoRecords,
  sha256Hex,
  UNDO_KEEP,
  undoPath,
  writeDurable,
} from "../src/session/journal.js";
import { settleJournal } from "../src/session/recover.js";
import { makeTempDir } from "./helpers.js";

const line = (id: string, parentId: string | null, extra = "") =>
  Buffer.from(`${JSON.stringify({ type: "custom", customType: "t", data: extra, id, parentId, timestamp: "x" })}\n`);
const ours = [line("o1", "b2", "first"), line("o2", "o1", "second".repeat(20)), line("o3", "o2", "third")];
const table = lineTable(ours, ["o1", "o2", "o3"]);
const pi = (id: string, parentId: string) =>
  Buffer.from(`${JSON.stringify({ type: "message", id, parentId, timestamp: "y", message: { role: "user", content: "hi" } })}\n`);
const all = Buffer.concat(ours);

describe("classifyTail", () => {
  it("all of ours, nothing else", () => {
    expect(classifyTail(all, table)).toMatchObject({ foreignBefore: 0, completeLines: 3, complete: true, oursEnd: all.length, foreignAfter: 0 });
  });

  it("every cut of our bytes is a fragment of the right line", () => {
    for (let cut = 0; cut < all.length; cut++) {
      const l = classifyTail(all.subarray(0, cut), table);
      const whole = cut >= ours[0].length + ours[1].length ? 2 : cut >= ours[0].length ? 1 : 0;
      expect([l.completeLines, l.complete, l.oursEnd, l.foreignAfter]).toEqual([whole, false, cut, 0]);
    }
  });

  it("a foreign line before ours (it slipped in after the check)", () => {
    const p = pi("p1", "b2");
    expect(classifyTail(Buffer.concat([p, all]), table)).toMatchObject({ foreignBefore: p.length, complete: true, oursStart: p.length, foreignAfter: 0 });
  });

  it("a foreign line glued to our torn fragment, and one after", () => {
    const cut = ours[0].length + 30;
    const tail = Buffer.concat([all.subarray(0, cut), pi("p1", "b2"), pi("p2", "p1")]);
    expect(classifyTail(tail, table)).toMatchObject({ completeLines: 1, oursEnd: cut, keptLines: 0, foreignAfter: tail.length - cut });
  });

  it("Pi's open-time newline after our fragment, then Pi's entry built on our first line: that line is kept", () => {
    const cut = ours[0].length + 5;
    const tail = Buffer.concat([all.subarray(0, cut), Buffer.from("\n"), pi("p1", "o1")]);
    expect(classifyTail(tail, table)).toMatchObject({ completeLines: 1, oursEnd: cut, keptLines: 1, keptBytes: ours[0].length });
  });

  it("bytes that cannot be ours are left to their writer: not our line's start, or as long as our line", () => {
    const garbage = Buffer.from(`${"a torn line of another writer ".repeat(5)}`);
    expect(classifyTail(garbage, table)).toMatchObject({ completeLines: 0, oursStart: 0, oursEnd: 0, foreignAfter: garbage.length });
    const piTorn = pi("p1", "b2").subarray(0, 30); // Pi's own line, cut: starts differently from ours
    expect(classifyTail(piTorn, table)).toMatchObject({ oursEnd: 0, foreignAfter: 30 });
    const changed = Buffer.from(all);
    changed[3] ^= 1; // our first line damaged on disk: no longer provably ours, nothing after it is taken either
    expect(classifyTail(changed, table)).toMatchObject({ completeLines: 0, oursEnd: 0, foreignAfter: all.length });
    // After our complete first line, a foreign torn line: our line is ours, the rest is not.
    const mixed = Buffer.concat([ours[0], piTorn]);
    expect(classifyTail(mixed, table)).toMatchObject({ completeLines: 1, oursEnd: ours[0].length, foreignAfter: 30 });
  });
});

describe("settleJournal on a file", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  const before = Buffer.from(`${JSON.stringify({ type: "session", version: 3, id: "s", timestamp: "t", cwd: "/" })}\n${pi("b2", "b1").toString()}`);
  beforeAll(() => {
    tmp = makeTempDir("journal");
  });
  afterAll(() => tmp?.cleanup());
  let n = 0;

  function withJournal(tail: Buffer): { file: string; journal: JournalRecord } {
    const file = path.join(tmp.dir, `s${++n}.jsonl`);
    writeFileSync(file, Buffer.concat([before, tail]));
    const { ino, dev } = statSync(file);
    const journal: JournalRecord = {
      format: "condense-journal",
      v: 1,
      writeId: `w${n}`,
      op: "run",
      session: file,
      dev,
      ino,
      preSize: before.length,
      preTailSha256: sha256Hex(before),
      length: all.length,
      sha256: sha256Hex(all),
      lines: table,
      sidecars: [],
      owner: { pid: 1, host: "h" },
      startedAt: "2026-01-01T00:00:00.000Z",
    };
    writeDurable(journalPath(file), JSON.stringify(journal), file);
    return { file, journal };
  }

  it("complete → kept, the journal becomes an undo record", () => {
    const { file } = withJournal(all);
    expect(settleJournal(file).state).toBe("committed");
    expect(readFileSync(file).equals(Buffer.concat([before, all]))).toBe(true);
    const [r] = readUndoRecords(file);
    expect([r.preSize, r.postSize, r.length, r.sha256, r.entryIds]).toEqual([
      before.length,
      before.length + all.length,
      all.length,
      sha256Hex(all),
      ["o1", "o2", "o3"],
    ]);
  });

  it("torn → truncated to exactly the bytes before", () => {
    const { file } = withJournal(all.subarray(0, 50));
    expect(settleJournal(file)).toMatchObject({ state: "rolled-back", removedBytes: 50 });
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(readUndoRecords(file)).toEqual([]);
  });

  it("torn with a foreign line glued on → ours blanked in place, theirs kept where it is", () => {
    const p = pi("p1", "b2");
    const { file } = withJournal(Buffer.concat([all.subarray(0, ours[0].length + 7), p]));
    expect(settleJournal(file).state).toBe("raced");
    const blank = `${" ".repeat(ours[0].length - 1)}\n${" ".repeat(6)}\n`;
    expect(readFileSync(file).toString()).toBe(`${before.toString()}${blank}${p.toString()}`);
  });

  it("the file rewritten since (other bytes before the recorded size) → nothing touched, journal dropped", () => {
    const { file } = withJournal(all.subarray(0, 20));
    const text = readFileSync(file);
    text[5] = 0x41;
    writeFileSync(file, text);
    expect(settleJournal(file).state).toBe("stale");
    expect(readFileSync(file).equals(text)).toBe(true);
  });

  it("a journal whose write never started, with another writer's torn line after the recorded size: nothing touched", () => {
    const torn = pi("p1", "b2").subarray(0, 40);
    const { file } = withJournal(torn);
    expect(settleJournal(file)).toMatchObject({ state: "not-started", removedBytes: 0 });
    expect(readFileSync(file).equals(Buffer.concat([before, torn]))).toBe(true);
  });

  it("a damaged journal stops every command with its path (exit 2), touching nothing", () => {
    const { file } = withJournal(all.subarray(0, 20));
    writeFileSync(journalPath(file), "{not json");
    expect(() => settleJournal(file)).toThrow(`${journalPath(file)}: not a condense write journal`);
  });

  it(`the undo file keeps the last ${UNDO_KEEP} writes`, () => {
    let file = "";
    for (let i = 0; i < UNDO_KEEP + 3; i++) {
      const made = withJournal(all);
      if (file) writeFileSync(undoPath(made.file), readFileSync(undoPath(file)));
      settleJournal(made.file);
      file = made.file;
    }
    const records = readUndoRecords(file);
    expect(records.length).toBe(UNDO_KEEP);
    expect(records.at(-1)?.writeId).toBe(`w${n}`);
  });
});

describe("writeDurable's mode", () => {
  it("0600, plus the session's read access for group and others (so whoever reads the session reads its journal)", () => {
    const tmp = makeTempDir("journal-mode");
    const mask = process.umask(0o022);
    try {
      for (const [sessionMode, expected] of [
        [0o644, 0o644],
        [0o640, 0o640],
        [0o600, 0o600],
        [0o666, 0o644],
      ] as const) {
        const session = path.join(tmp.dir, `s${sessionMode.toString(8)}.jsonl`);
        writeFileSync(session, "{}\n");
        chmodSync(session, sessionMode);
        writeDurable(journalPath(session), "{}", session);
        expect((statSync(journalPath(session)).mode & 0o777).toString(8)).toBe(expected.toString(8));
      }
    } finally {
      process.umask(mask);
      tmp.cleanup();
    }
  });
});

describe("sha256Hex", () => {
  it("hashes bytes and a string's UTF-8 alike (the FIPS 180-2 vector for 'abc')", () => {
    const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    expect(sha256Hex("abc")).toBe(abc);
    expect(sha256Hex(Buffer.from("abc"))).toBe(abc);
    expect(sha256Hex("é\0x")).toBe(sha256Hex(Buffer.from("é\0x", "utf8")));
  });
});
