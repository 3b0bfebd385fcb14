/**
 * Settling an interrupted write (ARCHITECTURE.md "The commit protocol"): run under the session's
 * lock by the writer itself after a failed or raced append, and by any condense command that finds
 * a journal beside the session. It touches only bytes condense wrote:
 *
 * | bytes after the recorded size                   | action                                   | state            |
 * | ----------------------------------------------- | ---------------------------------------- | ---------------- |
 * | none                                            | drop the journal                         | before           |
 * | all our lines, nothing else                     | journal → undo record                    | before + entries |
 * | ours torn or raced, nothing after them          | truncate back to the end of the foreign lines | before (+ theirs) |
 * | anything of ours with another writer's lines after | blank ours in place (spaces, newlines) unless an entry after builds on them | before (+ theirs) |
 *
 * Blank lines are skipped by Pi's loader and by condense's reader, so blanking is invisible to both.
 */
import { closeSync, fstatSync, fsyncSync, ftruncateSync, openSync, readSync, rmSync, unlinkSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { CondenseError } from "../util/errors.js";
import { faultPoint } from "./fault.js";
import {
  classifyTail,
  commitJournal,
  fsyncDir,
  type JournalRecord,
  journalPath,
  readJournal,
  removeJournal,
  type SidecarRecord,
  sha256Hex,
  type TailLayout,
  temporaryOf,
  undoPath,
} from "./journal.js";
import { readRegularFileSync } from "../util/files.js";
import { removeDeadTemporaries } from "./sidecars.js";

/** How an interrupted write was settled. */
export type SettledState = "none" | "not-started" | "committed" | "rolled-back" | "raced" | "stale";

export interface Settled {
  state: SettledState;
  /** Bytes of condense's that were removed (truncated or blanked). */
  removedBytes: number;
  /** One sentence for the user (empty for `none`). */
  message: string;
  journal: JournalRecord | null;
}

/** The bytes `[start, end)` of an open file (fewer when it ends sooner). */
export function readRange(fd: number, start: number, end: number): Buffer {
  const buf = Buffer.allocUnsafe(Math.max(0, end - start));
  let off = 0;
  while (off < buf.length) {
    const n = readSync(fd, buf, off, buf.length - off, start + off);
    if (n === 0) break;
    off += n;
  }
  return buf.subarray(0, off);
}

/**
 * Remove the sidecars this write created, each only while its bytes are still the ones written.
 * @returns the paths removed (one already gone, or changed, is not among them)
 */
export function removeCreatedSidecars(session: string, sidecars: SidecarRecord[]): string[] {
  const folders = new Set<string>();
  const removed: string[] = [];
  for (const s of sidecars) {
    const folder = dirname(s.path);
    // Only inside a `-blobs` folder beside the session: a journal names no other file.
    if (!s.created || dirname(folder) !== dirname(session) || !folder.endsWith("-blobs")) continue;
    if (!sidecarAsWritten(s)) continue; // gone already, changed, or unreadable (a FIFO is not waited on): left
    try {
      unlinkSync(s.path);
      removed.push(s.path);
      folders.add(folder);
    } catch {
      // gone meanwhile: leave it
    }
  }
  for (const f of folders) fsyncDir(f);
  return removed;
}

/** True when a sidecar a write created is still there with the bytes written (read without blocking). */
export function sidecarAsWritten(s: SidecarRecord): boolean {
  try {
    return sha256Hex(readRegularFileSync(s.path)) === s.sha256;
  } catch {
    return false;
  }
}

/** Bytes to write over our part: spaces, a newline where each of our lines ended, a newline last. */
function blankOver(layout: TailLayout, from: number): Buffer {
  const blank = Buffer.alloc(layout.oursEnd - from, 0x20);
  for (const end of layout.lineEnds) if (end > from && end <= layout.oursEnd) blank[end - 1 - from] = 0x0a;
  blank[blank.length - 1] = 0x0a;
  return blank;
}

/** Apply the decision for one reading of the tail; null when the file grew meanwhile (read again). */
function applyLayout(fd: number, journal: JournalRecord, size: number, layout: TailLayout, failed: boolean): Omit<Settled, "journal"> | null {
  const S = journal.preSize;
  if (fstatSync(fd).size !== size) return null;
  if (!failed && layout.complete && layout.foreignBefore === 0 && layout.foreignAfter === 0) {
    commitJournal(journal);
    return { state: "committed", removedBytes: 0, message: `a condense ${journal.op} write that was not confirmed is complete; kept` };
  }
  const ours = layout.oursEnd - layout.oursStart;
  if (ours === 0) {
    // Nothing of ours after the recorded size: the write never started; the bytes there are another writer's.
    return { state: "not-started", removedBytes: 0, message: `an interrupted condense ${journal.op} write had not started appending; nothing to undo` };
  }
  if (layout.foreignAfter === 0) {
    ftruncateSync(fd, S + layout.foreignBefore);
    fsyncSync(fd);
    faultPoint("recover-truncated");
    const raced = layout.foreignBefore > 0;
    return {
      state: raced ? "raced" : "rolled-back",
      removedBytes: ours,
      message: raced
        ? `another writer appended while condense ${journal.op} wrote; condense's ${ours} bytes were removed, the other writer's entries kept`
        : `an interrupted condense ${journal.op} write was rolled back (${ours} bytes removed); the file is as before it`,
    };
  }
  const from = layout.oursStart + layout.keptBytes;
  if (layout.oursEnd > from) {
    writeSync(fd, blankOver(layout, from), 0, layout.oursEnd - from, S + from);
    fsyncSync(fd);
  }
  return {
    state: "raced",
    removedBytes: Math.max(0, layout.oursEnd - from),
    message:
      `another writer appended after condense ${journal.op} wrote; condense's ${Math.max(0, layout.oursEnd - from)} bytes were blanked in place` +
      (layout.keptLines > 0 ? ` (${layout.keptLines} entries kept: the other writer's entries build on them)` : "") +
      ", the other writer's entries kept",
  };
}

/**
 * Settle the journal of `session` (a real path). The caller holds the session's lock.
 * @param known the journal when the caller has it (the writer), else it is read from disk
 * @param options.failed the writer's own write failed (short, error, fsync error): roll back even a complete-looking append
 * @throws CondenseError (exit 2) when the journal is damaged (nothing is changed then)
 */
export function settleJournal(session: string, known?: JournalRecord, options: { failed?: boolean } = {}): Settled {
  for (const tmp of [temporaryOf(journalPath(session)), temporaryOf(undoPath(session))]) rmSync(tmp, { force: true });
  const journal = known ?? readJournal(session);
  if (!journal) return { state: "none", removedBytes: 0, message: "", journal: null };
  for (const folder of new Set(journal.sidecars.map((s) => dirname(s.path)))) removeDeadTemporaries(folder, ".");
  let fd: number;
  try {
    fd = openSync(session, "r+"); // O_RDWR without O_APPEND: a positioned write stays where it is put
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    removeJournal(session);
    return { state: "stale", removedBytes: 0, message: "the session is gone; its write journal was dropped", journal };
  }
  try {
    return { ...settleOpen(fd, session, journal, !!options.failed), journal };
  } finally {
    closeSync(fd);
  }
}

function settleOpen(fd: number, session: string, journal: JournalRecord, failed: boolean): Omit<Settled, "journal"> {
  const S = journal.preSize;
  for (let attempt = 0; attempt < 5; attempt++) {
    const st = fstatSync(fd);
    if (st.ino !== journal.ino || st.size < S || sha256Hex(readRange(fd, Math.max(0, S - 4096), S)) !== journal.preTailSha256) {
      removeJournal(session);
      return {
        state: "stale",
        removedBytes: 0,
        message: `the session was rewritten after an interrupted condense ${journal.op} write; nothing was changed and its journal was dropped`,
      };
    }
    if (st.size === S) {
      removeCreatedSidecars(session, journal.sidecars);
      removeJournal(session);
      return { state: "not-started", removedBytes: 0, message: `an interrupted condense ${journal.op} write had not started appending; nothing to undo` };
    }
    const layout = classifyTail(readRange(fd, S, st.size), journal.lines);
    const done = applyLayout(fd, journal, st.size, layout, failed);
    if (!done) continue;
    if (done.state !== "committed" && layout.keptLines === 0) removeCreatedSidecars(session, journal.sidecars);
    if (done.state !== "committed") removeJournal(session);
    return done;
  }
  throw new CondenseError(`${session}: another writer keeps appending; the interrupted condense write could not be settled — run again`, 1);
}
