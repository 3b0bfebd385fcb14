/**
 * `condense undo` for one session (issue 16): remove the entries (and sidecars) of the last `run` or
 * `compact` that wrote to it in place — only when nothing was appended after them, by truncating
 * the file back to exactly its size before that write, under the session's lock. Otherwise it
 * refuses and says why: no write recorded, the file rewritten or replaced, condense's bytes
 * changed, entries appended after them (by Pi, typically), or Pi (or another process) having the
 * session open now. The records are issue 15's undo records (session/journal.ts); the bytes are
 * handled in session/undo.ts; this module decides. A sidecar the write created stays when another
 * session file names it (a `run --output` copy beside the session, a fork: session/sidecar-refs.ts).
 */
import { existsSync } from "node:fs";
import { realpath, stat } from "node:fs/promises";
import { shellWord } from "../context/vocabulary.js";
import { withSessionLock } from "../session/lock.js";
import { peekHeader } from "../session/locate.js";
import { sidecarsNamedElsewhere } from "../session/sidecar-refs.js";
import { checkSessionOpen } from "../session/pi-running.js";
import { settleJournal, sidecarAsWritten } from "../session/recover.js";
import { type AppendedAfter, earlierWrites, inspectLastWrite, type LastWrite, migrationBackupProblem, removeWrite, restoreMigrated } from "../session/undo.js";
import { journalPath, type MigrationFacts, readJournal, readUndoFile, undoPath, type UndoRecord } from "../session/journal.js";
import { notWritableRefusal } from "../session/commit.js";
import { isPermissionError } from "../session/writer.js";
import { CondenseError, UsageError } from "../util/errors.js";

export interface UndoOptions {
  /** Say what would be removed; change nothing (an interrupted write is still settled, as by any command). */
  dryRun: boolean;
  /** Undo even while Pi or another process has the session open. */
  force: boolean;
}

/** What `undo` removed (or would remove), as `--json` prints it (docs/json-schemas.md `condense.undo/1`). */
export interface UndoResult {
  session: string;
  dryRun: boolean;
  /** The write undone: the command, its id and times (ISO). */
  op: string;
  writeId: string;
  startedAt: string;
  committedAt: string;
  /** Entries and bytes removed; the file's size before and after. */
  entries: number;
  bytes: number;
  sizeBefore: number;
  sizeAfter: number;
  /** Sidecar files the write had created that undo removes: those still there with the bytes written. */
  sidecars: string[];
  /** Sidecar files the write had created that another session file names, left in place. */
  keptSidecars: { path: string; namedBy: string }[];
  /** True when the bytes were already gone (an undo interrupted before) and this undo finished it. */
  finished: boolean;
  /** Earlier recorded writes, which further `undo` calls remove one by one. */
  earlier: number;
  /**
   * The write followed a `--migrate`: the original (v1/v2) bytes put back from the backup (which
   * takes the v3 rewrite and the entries with it), or null.
   */
  restored: { backup: string; fromVersion: number; bytes: number } | null;
  /** Why a migrated session's original could not be put back (the entries are removed, the file stays v3). */
  restoreProblem?: string;
  /**
   * What settling an interrupted write found before the undo (session/recover.ts `settleJournal`:
   * `an interrupted condense run write was rolled back (5000 bytes removed); …`), when there was one.
   */
  settled?: string;
  /**
   * Dry runs only: the refusal the real undo would make because this user cannot write the session
   * or its folder (session/commit.ts `notWritableRefusal`), or because Pi or another process has it
   * open (without `--force`), as `run --dry-run` reports `wouldRefuse`.
   */
  wouldRefuse?: string;
}

/** How every refusal of `undo` ends. */
const NOTHING_CHANGED = "nothing was changed";

/** `2026-03-01 12:00:00 UTC` */
const clock = (iso: string) => (Number.isFinite(Date.parse(iso)) ? `${new Date(iso).toISOString().slice(0, 19).replace("T", " ")} UTC` : iso);

/** `condense run of 2026-03-01 12:00:00 UTC` */
export const writeName = (r: Pick<UndoRecord, "op" | "committedAt">) => `condense ${r.op} of ${clock(r.committedAt)}`;

/** The entries appended after condense's: `2 entries (the first a message (user), 2026-03-01 12:05:00 UTC)`. */
function describeAfter(after: AppendedAfter): string {
  const first = after.entries[0];
  const n = after.entries.length;
  if (!first) return `${after.bytes.toLocaleString("en-US")} bytes that are not complete entries`;
  return `${n} ${n === 1 ? "entry" : "entries"} (the first a ${first.type} entry${first.timestamp ? `, ${clock(first.timestamp)}` : ""})`;
}

/**
 * Why the last write cannot be undone, or null when it can (its bytes are intact and last, or
 * already gone).
 * @param outcome how a refusal says what happened to the file (default `nothing was changed`)
 */
export function undoRefusal(path: string, last: LastWrite, outcome: string = NOTHING_CHANGED): string | null {
  switch (last.state) {
    case "intact":
    case "already-undone":
      return null;
    case "none": {
      // A --migrate that appended nothing records no write; its backup still holds the original.
      const backup = [1, 2].map((v) => `${path}.v${v}.bak`).find((b) => existsSync(b));
      const hint = backup ? `; the original of a --migrate is in ${backup} (\`mv ${shellWord(backup)} ${shellWord(path)}\` puts it back)` : "";
      // The records file is named only where it exists (a migrate that appended nothing leaves none).
      const { damaged, unreadable } = readUndoFile(path);
      // Records that cannot be read may hold a write: say that, not that none was recorded.
      if (unreadable !== undefined) {
        return `${path}: cannot tell which condense write to undo: ${undoPath(path)}, where the records of the last writes are kept, cannot be read (${unreadable}); ${outcome}${hint}`;
      }
      const records = !existsSync(undoPath(path))
        ? ""
        : damaged > 0
          ? ` (${undoPath(path)}, where the records of the last writes are kept, holds ${damaged} ${damaged === 1 ? "line" : "lines"} that ${damaged === 1 ? "is" : "are"} no record: edited or damaged)`
          : ` (the records of the last writes are kept in ${undoPath(path)})`;
      return `${path}: no condense write to this session is recorded${records}; ${outcome}${hint}`;
    }
    case "replaced":
    case "changed":
      return `${path}: cannot undo ${writeName(last.record)}: ${last.why}; ${outcome}`;
    case "appended-after":
      return (
        `${path}: cannot undo ${writeName(last.record)}: ${describeAfter(last.after)} ${last.after.entries.length === 1 ? "was" : "were"} appended after its ` +
        `${last.record.entryIds.length} entries (from byte ${last.record.postSize.toLocaleString("en-US")}), and undo only removes condense's own bytes at ` +
        `the end of the file; ${outcome}. If Pi wrote them from before condense's entries, those are already off Pi's branch (condense run applies them again)`
      );
  }
}

/**
 * Undo the last write to one session (see the module comment). A session this user may not write
 * — the file, or its folder, where the lock goes — is refused before the lock is taken
 * (session/commit.ts `notWritableRefusal`, the check of `run` and `compact`); a dry run reports that
 * refusal as `wouldRefuse` instead, inspecting the file without the lock — unless an interrupted
 * write is pending, which only settling (a write) resolves: then the dry run refuses too, saying so.
 * @throws UsageError (exit 2) when the file cannot be read; CondenseError (exit 1) for every refusal,
 *   naming why; FileLockedError (exit 1) while another condense holds the session
 */
export async function undoSession(file: string, options: UndoOptions): Promise<UndoResult> {
  const path = await realpath(file).catch(() => {
    throw new UsageError(`${file}: cannot read: no such file`);
  });
  // As every command refuses it: a FIFO or device is never opened (its open or read would wait).
  if (!(await stat(path)).isFile()) throw new UsageError(`${file}: cannot read: not a regular file`);
  const notWritable = await notWritableRefusal(path, NOTHING_CHANGED);
  if (notWritable && !options.dryRun) throw new CondenseError(notWritable, 1);
  if (notWritable) {
    // Settling an interrupted write needs writing; until then no one can say what undo would remove.
    const pending = pendingJournal(path);
    if (pending) throw new CondenseError(`${notWritable}, and a dry run cannot say what undo would remove: ${pendingWrite(path, pending.op)}`, 1);
    return { ...(await planUndo(path, options)).result, wouldRefuse: notWritable };
  }
  return withSessionLock(
    path,
    async (lock) => {
      // An interrupted write is settled first (as every command does); a refusal then says what that changed.
      const settled = settleJournal(path);
      const outcome = settled.removedBytes > 0 ? `nothing else was changed (${settled.message})` : NOTHING_CHANGED;
      const { result, record, restore, keep } = await planUndo(path, options, outcome);
      if (settled.state !== "none") result.settled = settled.message;
      if (options.dryRun) return result;
      lock.assertHeld();
      // Finishing: nothing to truncate (the file is its size before, or the original is back).
      const removed =
        restore && !result.finished
          ? restoreMigrated(path, record, restore, result.sizeBefore, keep)
          : removeWrite(path, record, result.finished ? record.preSize : result.sizeBefore, keep);
      // What was removed: a sidecar already gone (or changed since) is not counted.
      result.sidecars = result.sidecars.filter((p) => removed.includes(p));
      return result;
    },
    "undo",
  );
}

/**
 * Why a dry run cannot describe the undo of a session it may not write: an interrupted write's
 * journal is beside it, and which of its bytes stay is decided only by settling it (session/recover.ts
 * `settleJournal`), which writes.
 */
const pendingWrite = (path: string, op: string | undefined) =>
  `an interrupted condense ${op ? `${op} ` : ""}write is pending (${journalPath(path)}), and only settling it, which needs write access, decides which of its bytes stay`;

/** The journal beside the session, `{}` when it is there but this user may not read it, or null. */
function pendingJournal(path: string): { op?: string } | null {
  try {
    return readJournal(path);
  } catch (error) {
    if (isPermissionError(error)) return {};
    throw error;
  }
}

/**
 * What undoing the last write would do: the result as reported, the record, the migration to put
 * back (if any) and the sidecars to keep (another session file names them); nothing is changed.
 * @throws CondenseError (exit 1) for every refusal (undoRefusal; {@link whileOpenRefusal} but in a dry
 *   run, which reports it as `wouldRefuse`)
 */
async function planUndo(
  path: string,
  options: UndoOptions,
  outcome: string = NOTHING_CHANGED,
): Promise<{ result: UndoResult; record: UndoRecord; restore: MigrationFacts | undefined; keep: Set<string> }> {
  const last = inspectLastWrite(path);
  const refusal = undoRefusal(path, last, outcome);
  if (refusal) throw new CondenseError(refusal, 1);
  if (last.state !== "intact" && last.state !== "already-undone") throw new CondenseError(`${path}: nothing to undo`, 1);
  // A dry run reports the refusal of the real undo as `wouldRefuse`, as `run --dry-run` does.
  const openRefusal = !options.force && last.state === "intact" ? await whileOpenRefusal(path) : null;
  if (openRefusal && !options.dryRun) throw new CondenseError(openRefusal, 1);
  const { record } = last;
  // Only those still there as written: one deleted (or changed) since is neither removed nor counted.
  const created = record.sidecars.filter((s) => s.created && sidecarAsWritten(s)).map((s) => s.path);
  const header = await peekHeader(path).catch(() => null);
  const namedBy = typeof header?.id === "string" ? await sidecarsNamedElsewhere(path, header.id, created) : new Map<string, string>();
  const result: UndoResult = {
    session: path,
    dryRun: options.dryRun,
    op: record.op,
    writeId: record.writeId,
    startedAt: record.startedAt,
    committedAt: record.committedAt,
    entries: record.entryIds.length,
    bytes: record.length,
    sizeBefore: last.state === "intact" ? last.size : record.preSize,
    sizeAfter: record.preSize,
    sidecars: created.filter((p) => !namedBy.has(p)),
    keptSidecars: [...namedBy].map(([p, by]) => ({ path: p, namedBy: by })),
    finished: last.state === "already-undone",
    earlier: earlierWrites(path, record),
    restored: null,
    ...(openRefusal ? { wouldRefuse: openRefusal } : {}),
  };
  // After `--migrate`: the original bytes back from the backup, when it still holds them.
  const migration = last.state === "intact" ? record.migration : undefined;
  const problem = migration ? migrationBackupProblem(migration) : null;
  if (migration && problem) result.restoreProblem = `the v${migration.fromVersion} original cannot be put back: ${problem}; the file stays v3`;
  // An undo that put the original back and stopped before dropping the record: finished here.
  const restore = migration && !problem ? migration : last.state === "already-undone" && last.restored ? record.migration : undefined;
  if (restore) {
    result.restored = { backup: restore.backup, fromVersion: restore.fromVersion, bytes: restore.bytes };
    result.sizeAfter = restore.bytes;
    if (result.finished) result.sizeBefore = restore.bytes;
  }
  return { result, record, restore, keep: new Set(namedBy.keys()) };
}

/**
 * Why undo refuses while Pi or another process has the session open, or null: Pi may have read
 * condense's entries, and its next message would then name a removed entry as its parent.
 */
async function whileOpenRefusal(path: string): Promise<string | null> {
  const header = await peekHeader(path).catch(() => null);
  const { mtimeMs } = await stat(path);
  const check = await checkSessionOpen({ path, cwd: typeof header?.cwd === "string" ? header.cwd : null, mtimeMs }, { fresh: true });
  if (check.refusals.length === 0) return null;
  return (
    `${path}: ${check.refusals.join("; ")}; Pi may have read condense's entries, and its next message would then name a removed one as its parent; ` +
    `nothing was changed — ${check.insidePi ? "run condense undo after Pi has exited" : "exit Pi (or close the file) first, or pass --force"}`
  );
}
