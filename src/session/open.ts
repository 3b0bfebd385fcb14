/**
 * Opening a session for a command: load it, then decide whether the command may go on.
 *
 * Read-only commands go on after a cut-off final line (with a warning; Pi repairs it on open). A
 * file Pi cannot open — empty, not JSONL, no header, a parent cycle or a message entry without a
 * message on the active branch — is unusable input for every command (exit 2; among several files
 * the batch makes that one failure exit 1), so a CI gate never passes on it. Writing commands also
 * refuse on any other file problem (exit 2), and on v1/v2 files unless migration was asked for
 * (docs/design.md §4).
 */
import { existsSync, realpathSync } from "node:fs";
import { CondenseError, errnoWords, UsageError } from "../util/errors.js";
import { journalPath, readJournal, temporaryOf, undoPath } from "./journal.js";
import { acquireSessionLock, FileLockedError } from "./lock.js";
import { isPermissionError } from "./writer.js";
import type { ReadWarning } from "./reader.js";
import { type Settled, settleJournal } from "./recover.js";
import { loadSession, whereIs, type Session } from "./session.js";

/**
 * @param path session file
 * @param mode `read` for render/query/metrics/budget, `write` for run and compact
 * @throws UsageError (exit 2) when the file cannot be used in this mode, naming the file and why
 */
export async function openSession(path: string, mode: "read" | "write"): Promise<Session> {
  let session: Session;
  let interrupted: { settled?: Settled; readLimit?: number; note?: string } = {};
  try {
    interrupted = await settleOnOpen(path, mode);
    session = await loadSession(path, { limit: interrupted.readLimit });
  } catch (error) {
    if (error instanceof CondenseError) throw error;
    throw new UsageError(`${path}: cannot read: ${errnoWords(error)}`);
  }
  noteInterruptedWrite(session, interrupted);
  const tooLong = session.problems.find((p) => p.kind === "line-too-long");
  if (tooLong) throw new UsageError(`${path}: ${tooLong.message}`);
  const version = session.header?.version;
  if (typeof version === "number" && version > 3) {
    session.warnings.push({
      kind: "newer-version",
      file: path,
      line: 1,
      offset: 0,
      excerpt: `"version":${version}`,
      message: `session format version ${version} is newer than the version 3 condense knows; entries are read as version 3`,
    });
  }
  const broken = unopenableByPi(session);
  if (broken && mode === "write") throw new UsageError(`${path}: ${broken}; Pi cannot open this session, so condense will not write to it`);
  for (const problem of session.problems) {
    if (problem.kind === "empty" || problem.kind === "not-jsonl") throw new UsageError(`${path}: ${problem.message}`);
    if (mode === "write") throw new UsageError(`${path}: ${problem.message}; refusing to write to it`);
  }
  // What Pi cannot open fails every read-only command too, so a CI gate never passes on it (issue 16).
  const missingHeader = session.problems.find((p) => p.kind === "missing-header");
  if (missingHeader) throw new UsageError(`${path}: ${missingHeader.message}`);
  if (broken) throw new UsageError(`${path}: ${broken}; Pi cannot open this session`);
  return session;
}

/**
 * For a v1/v2 session, which a read-only command reads as Pi would after rewriting it as v3: the
 * note that `run` and `compact` refuse it without `--migrate` (commit.ts `migrateIfAsked`), so the
 * figures "after condense run" it prints are what a run with `--migrate` would give. None for v3.
 */
export function migrationWarnings(session: Pick<Session, "path" | "fileVersion">): string[] {
  if (session.fileVersion >= 3) return [];
  return [
    `${session.path}: a v${session.fileVersion} session; Pi rewrites such files as v3 when it opens them. ` +
      "`condense run` and `condense compact` refuse it without --migrate (which backs it up and rewrites it as v3 first); " +
      "the figures after them here are what they would give with --migrate.",
  ];
}

/** One line per skipped line: `file:line (byte N): message: "excerpt"` (no excerpt when there is none). */
export function formatWarning(w: ReadWarning): string {
  return `${w.file}:${w.line} (byte ${w.offset}): ${w.message}${w.excerpt === "" ? "" : `: ${JSON.stringify(w.excerpt)}`}`;
}

/**
 * Settle a write journal left beside the session by an interrupted condense (any command does
 * this, under the lock). When a live condense holds the lock, a reader reads only the bytes before
 * its write; a writer is refused.
 * @throws FileLockedError (writers, while a live condense writes); CondenseError (exit 2) for a damaged journal
 */
async function settleOnOpen(path: string, mode: "read" | "write"): Promise<{ settled?: Settled; readLimit?: number; note?: string }> {
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    return {}; // the read reports it
  }
  // A journal, a temporary of the journal or undo record, or a lock: something may need settling.
  const marks = [journalPath(real), temporaryOf(journalPath(real)), temporaryOf(undoPath(real)), `${real}.lock`];
  if (!marks.some((p) => existsSync(p))) return {};
  let lock: Awaited<ReturnType<typeof acquireSessionLock>>;
  try {
    lock = await acquireSessionLock(real, "recover", mode === "write" ? 1_000 : 0);
  } catch (error) {
    // A writer this user may not write for reads as a reader does; the write itself is refused
    // later, saying why (commit.ts notWritableRefusal); `--dry-run` and `--output` go on.
    if (mode === "write" && !isPermissionError(error)) throw error;
    return readBeforeWrite(real, error as Error);
  }
  try {
    return { settled: settleJournal(real) };
  } catch (error) {
    // The lock was taken but the session itself may not be written (settling truncates it).
    if (!isPermissionError(error)) throw error;
    return readBeforeWrite(real, error as Error);
  } finally {
    await lock.release();
  }
}

/**
 * A journal that cannot be settled now (`why`): read the session up to the write it records — or,
 * when this user may not read the journal either (another user's, from before journals took the
 * session's read access), the whole file, saying so.
 */
function readBeforeWrite(real: string, why: Error): { readLimit?: number; note?: string } {
  const cause = why instanceof FileLockedError ? "a condense write to it is in progress" : `its interrupted write cannot be settled here (${why.message})`;
  let journal: ReturnType<typeof readJournal>;
  try {
    journal = readJournal(real);
  } catch (error) {
    if (!isPermissionError(error)) throw error;
    return {
      note: `${cause}, and its journal ${journalPath(real)} cannot be read (${(error as NodeJS.ErrnoException).code}); reading the whole file, that write's bytes too`,
    };
  }
  return journal ? { readLimit: journal.preSize, note: `${cause}; reading the session as it was before that write` } : {};
}

/** Tell the user what was settled (a warning at the offset of the write). */
function noteInterruptedWrite(session: Session, found: { settled?: Settled; readLimit?: number; note?: string }): void {
  const message = found.note ?? (found.settled && found.settled.state !== "none" ? found.settled.message : "");
  if (!message) return;
  const offset = found.readLimit ?? found.settled?.journal?.preSize ?? session.size;
  const at = session.locations.find((l) => l.offset >= offset);
  session.warnings.unshift({ kind: "interrupted-write", file: session.path, line: at?.line ?? session.lineCount + 1, offset, excerpt: "", message });
}

/**
 * Why Pi 1.6 would fail on this session, or null: a `parentId` cycle on the active branch (Pi's
 * `getBranch` never ends) or a message entry on it without a message object (Pi reads `.role`).
 */
export function unopenableByPi(session: Session): string | null {
  const first = session.branch[0];
  if (first?.parentId && session.byId.has(first.parentId)) {
    return `the active branch runs in a cycle: ${whereIs(session, first)} names parent ${first.parentId}, which is on the same branch`;
  }
  for (const entry of session.branch) {
    if (entry.type === "message" && (typeof entry.message !== "object" || entry.message === null)) {
      return `a message entry without a message object at ${whereIs(session, entry)}`;
    }
  }
  return null;
}
