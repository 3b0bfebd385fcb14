/**
 * The write side of `run` and `compact` (docs/design.md §4, §5, §10): the checks before anything
 * is written (a session Pi may be writing, an `--output` that is not a new file), the migration of
 * a v1/v2 file that `--migrate` asks for (in place with its backup), and the commit of a planned
 * write — the entries and their sidecars through the crash-safe locked append (writer.ts), or the
 * sidecars and then the original (or migrated) bytes plus the entries into `--output`.
 */
import { constants, existsSync, realpathSync } from "node:fs";
import { access, copyFile, readFile, realpath, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { CondenseError, UsageError } from "../util/errors.js";
import { serializeMigrated } from "./migrate.js";
import { type MigrationFacts, readUndoRecords, sha256Hex } from "./journal.js";
import { formatWarning, openSession } from "./open.js";
import { checkSessionOpen, refusalMessage } from "./pi-running.js";
import { parseSessionText } from "./reader.js";
import { buildSession, type Session } from "./session.js";
import { writeFileAtomic } from "./sidecars.js";
import { checkWriteTarget } from "./write-target.js";
import type { SessionEntry } from "./types.js";
import { appendEntries, assertUnchanged, describeError, notWritableMessage, serializeAppend, withSessionLock } from "./writer.js";

/** Milliseconds within which a session whose leaf waits for tool results is taken as live (Pi running). */
const LIVE_WINDOW_MS = 60_000;

/** Tool calls of the last message (an assistant message) that no result answers. */
function unansweredAtLeaf(session: Session): number {
  const leaf = session.branch[session.branch.length - 1];
  const m = leaf?.type === "message" ? (leaf.message as { role?: string; content?: unknown }) : undefined;
  if (m?.role !== "assistant" || !Array.isArray(m.content)) return 0;
  return m.content.filter((b) => b?.type === "toolCall").length;
}

/**
 * Why a session looks live — its last message has tool calls without results and the file changed
 * less than a minute ago (wall clock, not `CONDENSE_NOW`) — or null.
 */
export function liveSessionRefusal(session: Session): string | null {
  const waiting = unansweredAtLeaf(session);
  if (waiting === 0 || Date.now() - session.mtimeMs >= LIVE_WINDOW_MS) return null;
  return (
    `${session.path}: the last message has ${waiting} tool call(s) still without a result and the file changed ` +
    `${Math.round((Date.now() - session.mtimeMs) / 1000)} s ago — Pi may be running those tools now; ` +
    "nothing was written. Run again once Pi is done, or pass --force"
  );
}

/**
 * Why the session must not be written now, or null: it looks live ({@link liveSessionRefusal}), or
 * Pi or another process has it open (pi-running.ts; not for `--output`, which leaves it alone).
 * Warnings of the check (a Pi in the same folder, a platform where nothing can be checked) go to `warn`.
 * @param fresh scan the open files anew (see pi-running.ts `checkSessionOpen`)
 */
export async function writeRefusal(
  session: Session,
  options: Pick<WriteOptions, "output">,
  warn: (message: string) => void,
  fresh = false,
): Promise<string | null> {
  const live = liveSessionRefusal(session);
  if (live) return live;
  if (options.output) return null;
  const last = readUndoRecords(session.path).pop();
  const check = await checkSessionOpen(
    {
      path: session.path,
      cwd: typeof session.header?.cwd === "string" ? session.header.cwd : null,
      mtimeMs: session.mtimeMs,
      lastChangeByCondense: last !== undefined && last.postSize === session.size,
    },
    { fresh },
  );
  for (const w of check.warnings) warn(w);
  return check.refusals.length > 0 ? refusalMessage(session.path, check) : null;
}

/**
 * Why this user cannot write the session in place, or null: the file (appended to) or its folder
 * (the lock, journal and sidecars go beside it) refuses writing — access(2) with W_OK, which asks
 * the kernel (mode bits, ACLs, a read-only mount) without opening anything. `--force` does not
 * lift it; `--output` does not need it (the session is only read then). The append maps the same
 * errors the same way should the answer change before it (writer.ts `appendOpenError`).
 * @param outcome how the message ends (writer.ts {@link notWritableMessage}; default: the `--output`
 *   hint of `run` and `compact`)
 */
export async function notWritableRefusal(path: string, outcome?: string): Promise<string | null> {
  const refused = (target: string) =>
    access(target, constants.W_OK).then(
      () => undefined,
      (error: NodeJS.ErrnoException) => error.code,
    );
  const folder = dirname(path);
  return notWritableMessage(path, await refused(path), undefined, outcome) ?? notWritableMessage(path, await refused(folder), folder, outcome);
}

/**
 * Right before a write: refuse (unless `force`) when Pi or another process has the session open
 * now — minutes may have passed since it was opened (model calls).
 * @throws CondenseError (exit 1) naming the process; nothing was written
 */
export async function refuseIfOpenNow(session: Session, options: Pick<WriteOptions, "force" | "output">): Promise<void> {
  if (options.force || options.output) return;
  const refusal = await writeRefusal(session, options, () => undefined, true);
  if (refusal) throw new CondenseError(refusal, 1);
}

/**
 * `--output` must name a new file in an existing folder (or an existing file with --force), never
 * a folder and never the input itself (that would replace it without the lock and the
 * changed-file check) — the rule of every file the user names (write-target.ts).
 * @param options.inPlace what the command does without `--output`, for the message (`prune it in place`)
 * @throws UsageError naming the problem
 */
export async function checkOutputPath(output: string, files: string[], options: { force: boolean; inPlace?: string }): Promise<void> {
  if (files.length !== 1 && output.trim() !== "") throw new UsageError(`--output takes one session; the arguments name ${files.length} files`);
  await checkWriteTarget(output, {
    flag: "--output",
    inputs: files,
    force: options.force,
    writesSession: true,
    instead: `run without --output to ${options.inPlace ?? "prune it in place"}`,
  });
}

/** @throws UsageError when `--output` exists and `force` is not set */
export function refuseExistingOutput(output: string, force: boolean): void {
  if (existsSync(output) && !force) throw new UsageError(`--output ${output} already exists; use --force to overwrite it`);
}

/** A migrated session and where the original went. */
export interface Migrated {
  session: Session;
  /** The v1/v2 bytes' new name (`<file>.v<N>.bak`); absent when the file was not rewritten. */
  backup?: string;
  /** The migrated file's bytes, when they were not written (dry run, `--output`). */
  bytes?: Buffer;
}

/**
 * Migrate a v1/v2 session to v3. In memory only when `inPlace` is false (dry run, `--output`);
 * otherwise, under the lock and only while the file is still the one read, copy it to
 * `<file>.v<N>.bak`, replace it atomically with the v3 text (same mode), and read it again.
 * @throws UsageError when the backup exists and `force` is not set
 * @throws FileChangedError, FileLockedError when the file changed or is locked
 */
export async function migrateSession(session: Session, options: { inPlace: boolean; force: boolean }): Promise<Migrated> {
  const migrated = serializeMigrated(session.header, session.entries);
  if (!options.inPlace) {
    const raw = parseSessionText(session.path, migrated);
    raw.mtimeMs = session.mtimeMs;
    return { session: buildSession(raw), bytes: Buffer.from(migrated, "utf8") };
  }
  const path = session.path;
  const backup = `${path}.v${session.fileVersion}.bak`;
  if (existsSync(backup) && !options.force) throw new UsageError(`${path}: backup ${backup} already exists; use --force to overwrite it`);
  // Under the lock, and only if the file is still the one read: a concurrent writer (or a second
  // condense) must never turn the backup into anything but the original bytes.
  await withSessionLock(realpathSync(path), async () => {
    await assertUnchanged(session);
    const mode = (await stat(path)).mode & 0o7777;
    await copyFile(path, backup);
    await writeFileAtomic(path, migrated, mode);
  });
  return { session: await openSession(path, "write"), backup };
}

/** What `--migrate` did to a session (a command reports it). */
export interface MigrationReport {
  migratedFrom?: number;
  backup?: string;
}

/**
 * Migrate a v1/v2 session when `--migrate` asks for it (in memory for a dry run or `--output`,
 * in place with a backup otherwise — see {@link migrateSession}); refuse it otherwise. A v3
 * session comes back as it is.
 * @returns the session to plan on, what was done, and the migrated bytes to start `--output` from
 * @throws UsageError for a v1/v2 session without `migrate`, or an existing backup without `force`
 */
export async function migrateIfAsked(session: Session, options: WriteOptions): Promise<{ session: Session; migration: MigrationReport; base?: Buffer }> {
  if (session.fileVersion >= 3) return { session, migration: {} };
  if (!options.migrate) {
    const ids =
      options.idsNamed && session.fileVersion === 1
        ? " Context edits for stock Pi name entries by id, and a v1 file has none: Pi gives its entries new random ids when it rewrites it, so edits written without --migrate would point nowhere."
        : "";
    const how = options.dryRun
      ? "Add --migrate to read it as Pi does (this run still writes nothing; a real run with --migrate backs it up and rewrites it as v3 first)."
      : "Run with --migrate to back it up and rewrite it as v3 first (nothing was written).";
    throw new UsageError(`${session.path}: a v${session.fileVersion} session; Pi rewrites such files as v3 when it opens them. ${how}${ids}`);
  }
  const inPlace = !options.dryRun && !options.output;
  const migrated = await migrateSession(session, { inPlace, force: options.force });
  return {
    session: migrated.session,
    migration: { migratedFrom: session.fileVersion, ...(migrated.backup ? { backup: migrated.backup } : {}) },
    base: migrated.bytes,
  };
}

/** How a writing command treats a session before it plans anything. */
export interface WriteOptions {
  /** Rewrite v1/v2 sessions as v3 first. */
  migrate: boolean;
  dryRun: boolean;
  /** Overwrite `output` or a migration backup; write a session that looks live. */
  force: boolean;
  /** Write the original bytes plus the new entries here instead of appending. */
  output?: string;
  /** The command writes entries that name others by id (context edits): the refusal of a v1 file says why ids matter. */
  idsNamed?: boolean;
  /**
   * Return a live or open-in-another-process refusal of a v3 session as `deferred` instead of
   * throwing it: the caller throws it only once it knows it has something to write (`run` on an
   * already condensed session writes nothing, so nothing else having it open does not matter).
   */
  deferOpenRefusal?: boolean;
}

/**
 * Open a session for a writing command (`run`, `compact`): through a symlink to the file it names
 * (as Pi does, with the blobs folder beside it), read and checked for writing, reader warnings
 * passed to `warn`, refused when this user cannot write it ({@link notWritableRefusal}; not with
 * `output`) or Pi may be writing it or has it open ({@link writeRefusal}; not with `force`); with
 * `dryRun` the refusal is returned as a prediction instead (with `deferOpenRefusal`, a live or open
 * v3 session's refusal is returned as `deferred`, dry run or not: the caller throws or predicts it
 * only when it has something to write); migrated when asked
 * ({@link migrateIfAsked}), and an existing `--output` refused without `force`.
 * @returns the session to plan on, with `refusal`: what a real run would refuse (dry runs only)
 * @throws UsageError (exit 2) for a file that cannot be written; CondenseError (exit 1) for a live
 *   session, one that Pi or another process has open, or one this user cannot write
 */
export async function openForWrite(
  file: string,
  options: WriteOptions,
  warn: (message: string) => void,
): Promise<{ session: Session; migration: MigrationReport; base?: Buffer; refusal?: string; deferred?: string }> {
  const path = await realpath(file).catch(() => file);
  const opened = await openSession(path, "write");
  for (const w of opened.warnings) warn(formatWarning(w));
  const notWritable = options.output ? null : await notWritableRefusal(opened.path);
  const open = notWritable || options.force ? null : await writeRefusal(opened, options, warn);
  const refusal = notWritable ?? open;
  // Only a v3 file's: nothing is migrated in place while a refusal waits.
  const defer = open !== null && options.deferOpenRefusal === true && opened.fileVersion >= 3;
  if (defer && !options.dryRun) return { session: opened, migration: {}, deferred: open };
  if (refusal && !options.dryRun) throw new CondenseError(refusal, 1);
  const migrated = await migrateIfAsked(opened, options);
  if (options.output) refuseExistingOutput(options.output, options.force);
  if (defer) return { ...migrated, deferred: open };
  return refusal ? { ...migrated, refusal } : migrated;
}

/** The backup of an in-place migration, as the undo record keeps it (none when nothing was migrated in place). */
async function migrationFacts(migration: MigrationReport | undefined): Promise<MigrationFacts | undefined> {
  if (!migration?.backup || migration.migratedFrom === undefined) return undefined;
  const bytes = await readFile(migration.backup);
  return { backup: migration.backup, fromVersion: migration.migratedFrom, bytes: bytes.length, sha256: sha256Hex(bytes) };
}

/** What a planned run writes. */
export interface RunWrite {
  entries: SessionEntry[];
  sidecars: { path: string; text: string }[];
}

/**
 * Commit a planned run: the entries and their sidecars appended to the session by the crash-safe
 * locked append, or (sidecars first) written with the original bytes to `output`.
 * @param options.op the command, recorded in the journal and the undo record (default `run`)
 * @param options.migration what `--migrate` did to the session in place before (its backup is
 *   recorded with the write, so `undo` restores the original bytes)
 * @param base the migrated bytes to start `output` from (instead of the file as read)
 * @returns where the entries went and how many bytes they took
 * @throws CondenseError (exit 1) for any failure, naming the session; nothing half-written
 */
export async function commitRun(
  session: Session,
  write: RunWrite,
  target: { output?: string; base?: Buffer },
  options: { op?: string; migration?: MigrationReport } = {},
): Promise<{ written: string; bytesAppended: number }> {
  try {
    if (!target.output) {
      const migration = await migrationFacts(options.migration);
      const appended = await appendEntries(session, write.entries, { op: options.op ?? "run", sidecars: write.sidecars, ...(migration ? { migration } : {}) });
      return { written: session.path, bytesAppended: appended };
    }
    for (const sidecar of write.sidecars) await writeFileAtomic(sidecar.path, sidecar.text);
    if (!target.base) await assertUnchanged(session);
    const whole = target.base ?? (await readFile(session.path));
    if (!target.base && whole.length !== (session.fileSize ?? session.size)) {
      throw new CondenseError(`${session.path} changed while it was copied to --output; nothing was written — run again`, 1);
    }
    // Read only up to an interrupted write that could not be settled: the output leaves that write out.
    const original = target.base ? whole : whole.subarray(0, session.size);
    const appended = write.entries.length > 0 ? Buffer.from(serializeAppend(session, write.entries), "utf8") : Buffer.alloc(0);
    await writeFileAtomic(target.output, Buffer.concat([original, appended]));
    return { written: target.output, bytesAppended: appended.length };
  } catch (error) {
    if (error instanceof CondenseError) throw error;
    throw new CondenseError(`${session.path}: ${describeError(error as NodeJS.ErrnoException)}`, 1);
  }
}
