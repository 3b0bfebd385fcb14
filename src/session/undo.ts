/**
 * The byte side of `condense undo` (issue 16 "no way back"): what the file holds now against the
 * last completed write recorded in `<session>.condense-undo` (journal.ts `UndoRecord`), and its
 * removal — the file truncated back to exactly the size it had before that write, the sidecars the
 * write created removed (each only while its bytes are the ones written), the record dropped. The
 * caller holds the session's lock (lock.ts) and has settled any journal first (recover.ts), so the
 * record describes a complete write. Whether to remove is decided in pipeline/undo.ts.
 *
 * The removal is ordered so that a crash at any point leaves a state the next `undo` finishes:
 * truncate and fsync, then the sidecars, then the record. A record whose write is already gone (the
 * file is exactly its size before, or — after a `--migrate` — the original is back) is finished by
 * removing its sidecars and dropping it.
 */
import { closeSync, fstatSync, fsyncSync, ftruncateSync, openSync, readFileSync, renameSync, rmdirSync, rmSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { faultPoint } from "./fault.js";
import { fsyncDir, type MigrationFacts, readUndoRecords, sha256Hex, type UndoRecord, UNDO_KEEP, undoPath, writeDurable } from "./journal.js";
import { readRange, removeCreatedSidecars } from "./recover.js";

/** Bytes appended after a recorded write, as far as they can be told apart. */
export interface AppendedAfter {
  bytes: number;
  /** Complete lines that parse as entries: their type (`message` with the role), id and timestamp. */
  entries: { type: string; id: string | null; timestamp: string | null }[];
}

/** What the file holds now, against the last recorded write. */
export type LastWrite =
  | { state: "none" }
  | { state: "replaced"; record: UndoRecord; why: string }
  | { state: "already-undone"; record: UndoRecord; restored?: true }
  | { state: "changed"; record: UndoRecord; why: string }
  | { state: "appended-after"; record: UndoRecord; after: AppendedAfter }
  | { state: "intact"; record: UndoRecord; size: number };

/** The last completed write of `session` (a real path), and what became of its bytes. */
export function inspectLastWrite(session: string): LastWrite {
  const records = readUndoRecords(session);
  const record = records[records.length - 1];
  if (!record) return { state: "none" };
  const fd = openSync(session, "r");
  try {
    const st = fstatSync(fd);
    if (st.ino !== record.ino || st.dev !== record.dev) {
      // An undo that put a migrated session's original back and stopped before dropping the record.
      if (record.migration && isOriginal(fd, st.size, record.migration)) return { state: "already-undone", record, restored: true };
      return { state: "replaced", record, why: "it is another file now (its inode changed)" };
    }
    if (st.size < record.preSize || sha256Hex(readRange(fd, Math.max(0, record.preSize - 4096), record.preSize)) !== record.preTailSha256) {
      return { state: "replaced", record, why: "the bytes before condense's entries changed (the file was rewritten)" };
    }
    if (st.size === record.preSize) return { state: "already-undone", record };
    if (st.size < record.postSize) return { state: "changed", record, why: `it is shorter than condense left it (${st.size} bytes, not ${record.postSize})` };
    if (sha256Hex(readRange(fd, record.preSize, record.postSize)) !== record.sha256) {
      return { state: "changed", record, why: "the bytes condense appended were changed since" };
    }
    if (st.size > record.postSize) return { state: "appended-after", record, after: describeAppended(readRange(fd, record.postSize, st.size)) };
    return { state: "intact", record, size: st.size };
  } finally {
    closeSync(fd);
  }
}

/** True when the open file holds exactly the bytes a `--migrate` backed up. */
function isOriginal(fd: number, size: number, migration: MigrationFacts): boolean {
  return size === migration.bytes && sha256Hex(readRange(fd, 0, size)) === migration.sha256;
}

/**
 * How many earlier writes `undo` can remove after `record`, one by one: the records before it
 * each of which ended where the next one began. Bytes anyone else appended between two writes
 * (Pi, resuming the session) end the count: undo never removes them, so it stops there.
 */
export function earlierWrites(session: string, record: UndoRecord): number {
  const records = readUndoRecords(session);
  const at = records.findIndex((r) => r.writeId === record.writeId);
  let n = 0;
  for (let i = at - 1; i >= 0 && records[i].postSize === records[i + 1].preSize; i--) n++;
  return n;
}

/**
 * Remove the recorded write: truncate to `record.preSize` (only while the file is still `from`
 * bytes long), fsync, remove the sidecars it created (and their folder once empty), drop the record.
 * @param from the size the file was inspected at (`postSize`), or `preSize` to finish an undo
 * @param keep sidecars left in place (another session file names them: sidecar-refs.ts)
 * @returns the sidecars removed
 * @throws Error when the file's size moved since it was inspected (nothing is changed then)
 */
export function removeWrite(session: string, record: UndoRecord, from: number, keep: ReadonlySet<string> = new Set()): string[] {
  if (from !== record.preSize) {
    const fd = openSync(session, "r+");
    try {
      const size = fstatSync(fd).size;
      if (size !== from) throw new Error(`${session} changed while undo worked (${from} → ${size} bytes); nothing was changed — run undo again`);
      // By descriptor: the file whose size was just checked.
      ftruncateSync(fd, record.preSize);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    faultPoint("undo-truncated");
  }
  const removed = removeSidecarsOf(session, record, keep);
  dropRecord(session, record);
  return removed;
}

/**
 * Why the bytes a `--migrate` replaced cannot be put back, or null when its backup still holds
 * exactly them (journal.ts `MigrationFacts`).
 */
export function migrationBackupProblem(migration: MigrationFacts): string | null {
  let bytes: Buffer;
  try {
    bytes = readFileSync(migration.backup);
  } catch {
    return `its backup ${migration.backup} is gone`;
  }
  if (bytes.length !== migration.bytes || sha256Hex(bytes) !== migration.sha256) return `its backup ${migration.backup} was changed since`;
  return null;
}

/**
 * Undo a write that followed a `--migrate` of the same command: remove the sidecars it created,
 * put the original (v1/v2) bytes back by renaming the backup over the session — atomic: the file is
 * either the migrated one with the entries or the original — and drop the record. A crash before
 * the rename leaves the write intact (the next undo does it all again).
 * @param from the size the file was inspected at (`postSize`)
 * @param keep sidecars left in place (another session file names them: sidecar-refs.ts)
 * @returns the sidecars removed
 * @throws Error when the file's size moved since it was inspected (nothing is changed then)
 */
export function restoreMigrated(session: string, record: UndoRecord, migration: MigrationFacts, from: number, keep: ReadonlySet<string> = new Set()): string[] {
  const size = statSync(session).size;
  if (size !== from) throw new Error(`${session} changed while undo worked (${from} → ${size} bytes); nothing was changed — run undo again`);
  const removed = removeSidecarsOf(session, record, keep);
  renameSync(migration.backup, session);
  fsyncDir(dirname(session));
  dropRecord(session, record);
  return removed;
}

/**
 * Remove the sidecars a write created (each only while its bytes are the ones written) except those
 * in `keep`, and their folder once empty; returns the ones removed.
 */
function removeSidecarsOf(session: string, record: UndoRecord, keep: ReadonlySet<string>): string[] {
  const removed = removeCreatedSidecars(
    session,
    record.sidecars.filter((x) => !keep.has(x.path)),
  );
  // The blobs folder the write made for them goes too once empty (never one holding other files).
  for (const folder of new Set(record.sidecars.filter((x) => x.created).map((x) => dirname(x.path)))) {
    try {
      rmdirSync(folder);
    } catch {
      // not empty, or gone
    }
  }
  return removed;
}

/** Drop a write's record from the session's undo file (the file goes when it was the last). */
function dropRecord(session: string, record: UndoRecord): void {
  const kept = readUndoRecords(session).filter((r) => r.writeId !== record.writeId);
  if (kept.length > 0)
    writeDurable(
      undoPath(session),
      kept
        .slice(-UNDO_KEEP)
        .map((r) => `${JSON.stringify(r)}\n`)
        .join(""),
      session,
    );
  else rmSync(undoPath(session), { force: true });
  fsyncDir(dirname(session));
}

/** The entries in bytes appended after a write (complete lines that parse as objects). */
function describeAppended(tail: Buffer): AppendedAfter {
  const entries: AppendedAfter["entries"] = [];
  for (const line of tail.toString("utf8").split("\n")) {
    if (line.trim() === "") continue;
    try {
      const e = JSON.parse(line) as { type?: unknown; id?: unknown; timestamp?: unknown; message?: { role?: unknown } };
      if (!e || typeof e !== "object") continue;
      const role = e.type === "message" && typeof e.message?.role === "string" ? ` (${e.message.role})` : "";
      entries.push({
        type: `${typeof e.type === "string" ? e.type : "?"}${role}`,
        id: typeof e.id === "string" ? e.id : null,
        timestamp: typeof e.timestamp === "string" ? e.timestamp : null,
      });
    } catch {
      // a torn or foreign line: counted in bytes only
    }
  }
  return { bytes: tail.length, entries };
}
