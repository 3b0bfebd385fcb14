/**
 * Appending entries to a session file: the only place condense writes to a session.
 *
 * Rules (issue "Foundations", docs/design.md §5): new entries go after the current leaf, each the
 * child of the one before; a missing final newline is added first, as Pi does on open; existing
 * bytes are never changed. The commit protocol (ARCHITECTURE.md "The commit protocol"): under the
 * session's lock, settle any journal left by a crash; check the file is still the one read (size,
 * mtime, inode); write the journal durably; write the sidecars atomically; open the file for
 * appending without O_CREAT and write every byte with one `fs.writeSync` call; fsync; a short or failed write,
 * or another writer's bytes found next to ours, is settled by the same code that settles a crash
 * (session/recover.ts: only condense's own bytes are removed); a complete write turns the journal
 * into an undo record.
 */
import { closeSync, constants, fstatSync, fsyncSync, openSync, readSync, realpathSync, statSync, writeSync } from "node:fs";
import { stat } from "node:fs/promises";
import { hostname } from "node:os";
import { dirname } from "node:path";
import { CondenseError } from "../util/errors.js";
import { faultAppendLimit, faultKill, faultPoint } from "./fault.js";
import {
  commitJournal,
  fsyncDir,
  type JournalRecord,
  journalPath,
  lineTable,
  type MigrationFacts,
  newWriteId,
  removeJournal,
  type SidecarRecord,
  sha256Hex,
  undoPath,
  writeDurable,
} from "./journal.js";
import { FileLockedError, type SessionLock, withSessionLock } from "./lock.js";
import { removeCreatedSidecars, settleJournal } from "./recover.js";
import { readRegularFileSync } from "../util/files.js";
import type { Session } from "./session.js";
import { removeDeadTemporaries, writeFileAtomic } from "./sidecars.js";
import type { NewEntry, SessionEntry, SessionEntryBase } from "./types.js";

export { FileLockedError, withSessionLock };

/** Thrown when the file changed between read and write; nothing was written (exit 1). */
export class FileChangedError extends CondenseError {
  constructor(
    readonly path: string,
    detail: string,
  ) {
    super(`${path} changed since it was read (${detail}); nothing was written — run again`, 1);
    this.name = "FileChangedError";
  }
}

/** errno codes that say the user may not write there (mode bits or ACLs, an immutable file, a read-only mount), not that the file changed. */
const NOT_WRITABLE_CODES: Record<string, string> = { EACCES: "permission denied", EPERM: "operation not permitted", EROFS: "read-only file system" };

/**
 * True when `error` is this user being refused (a permission, a read-only mount: the codes of
 * {@link notWritableMessage}) rather than a missing or damaged file.
 */
export function isPermissionError(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code !== undefined && Object.hasOwn(NOT_WRITABLE_CODES, code);
}

/** How `run` and `compact` end a not-writable refusal: both take `--output`, which only reads the session. */
export const NOT_WRITTEN_USE_OUTPUT = "nothing was written — use --output FILE to write the result to another file";

/**
 * The refusal for a session this user cannot write, or null when `code` is no such errno code
 * (see NOT_WRITABLE_CODES). `folder`: the session's folder is the one refused (condense creates its
 * lock, journal and sidecars beside the session). `outcome` ends the message: by default the
 * `--output` hint of `run` and `compact` ({@link NOT_WRITTEN_USE_OUTPUT}); `undo`, which has no
 * `--output`, says `nothing was changed`.
 */
export function notWritableMessage(path: string, code: string | undefined, folder?: string, outcome: string = NOT_WRITTEN_USE_OUTPUT): string | null {
  const why = code === undefined ? undefined : NOT_WRITABLE_CODES[code];
  if (why === undefined) return null;
  const what =
    folder === undefined
      ? `is not writable (${code}: ${why})`
      : `cannot be written: its folder ${folder} is not writable (${code}: ${why}), and condense keeps its lock and journal beside the session`;
  return `${path} ${what}; ${outcome}`;
}

/**
 * The error for a failed open of the session for appending: not writable (permissions, read-only
 * mount: {@link notWritableMessage}) or else {@link FileChangedError} (removed or replaced meanwhile).
 */
export function appendOpenError(path: string, error: NodeJS.ErrnoException): CondenseError {
  const notWritable = notWritableMessage(path, error.code);
  return notWritable ? new CondenseError(notWritable, 1) : new FileChangedError(path, `cannot be opened for appending: ${error.code ?? error}`);
}

/**
 * Thrown when another writer (Pi) appended while condense wrote: condense removed its own bytes (the
 * other writer's entries stay, theirs the leaf), so nothing was written (exit 1).
 */
export class ConcurrentAppendError extends CondenseError {
  constructor(
    readonly path: string,
    removedBytes: number,
  ) {
    super(
      `${path}: another writer (Pi?) appended to the session while condense wrote; condense removed its own ${removedBytes} bytes, ` +
        "so the other writer's entries stay and theirs is the leaf; nothing was written — run again once the session is idle",
      1,
    );
    this.name = "ConcurrentAppendError";
  }
}

/**
 * Allocates entry ids: 8 hex characters, unique in the file, deterministic for the same seed
 * (session id, leaf id and clock), so two runs on identical input append identical bytes.
 */
export class IdAllocator {
  private counter = 0;
  private readonly given = new Set<string>();
  /** @param taken ids already in the file (read, never copied) */
  constructor(
    private readonly taken: { has(id: string): boolean },
    private readonly seed: string,
  ) {}

  next(): string {
    for (;;) {
      const id = sha256Hex(`${this.seed}\0${this.counter++}`).slice(0, 8);
      if (!this.taken.has(id) && !this.given.has(id)) {
        this.given.add(id);
        return id;
      }
    }
  }
}

/** Kinds Pi writes with id, parentId and timestamp after the payload. */
const IDS_LAST = new Set<string>(["custom", "custom_message"]);

/** An entry placed on the branch: its payload with id, parent and timestamp. */
export type Placed<P extends NewEntry> = P & Pick<SessionEntryBase, "id" | "parentId" | "timestamp">;

/**
 * Entries appended one group after another after a session's leaf: each group continues where the
 * one before it stopped (ids, parents), so placing `[a, b]` then `[c]` gives exactly the entries
 * {@link chainEntries} gives for `[a, b, c]` — a plan places its entries as it decides them, once.
 */
export class EntryChain {
  private readonly ids: IdAllocator;
  private parentId: string | null;

  /**
   * @param session the session as read (its leaf becomes the first parent)
   * @param nowIso ISO timestamp for every new entry
   */
  constructor(
    session: Pick<Session, "leaf" | "byId" | "id">,
    private readonly nowIso: string,
  ) {
    this.ids = new IdAllocator(session.byId, `${session.id}\0${session.leaf?.id ?? ""}\0${nowIso}`);
    this.parentId = session.leaf?.id ?? null;
  }

  /** Place `entries` after everything placed so far, in order (see {@link chainEntries}). */
  append<P extends NewEntry>(entries: P[]): Placed<P>[] {
    const timestamp = this.nowIso;
    return entries.map((payload) => {
      const id = this.ids.next();
      const parentId = this.parentId;
      // The same fields, in Pi's order for this kind (JSON keeps insertion order).
      const entry = IDS_LAST.has(payload.type) ? { ...payload, id, parentId, timestamp } : idsFirst(payload, id, parentId, timestamp);
      this.parentId = id;
      return entry as Placed<P>;
    });
  }
}

/**
 * `payload` with type, id, parentId and timestamp first, then its other fields in order. Built
 * field by field: `Object.assign` onto an object that already has some of the keys takes V8's
 * slow path (about 20× slower, for every context edit a run plans).
 */
function idsFirst(payload: NewEntry, id: string, parentId: string | null, timestamp: string): Record<string, unknown> {
  const out: Record<string, unknown> = { type: payload.type, id, parentId, timestamp };
  const source: object = payload;
  const fields = source as Record<string, unknown>;
  for (const key of Object.keys(fields)) if (key !== "type" && key !== "id" && key !== "parentId" && key !== "timestamp") out[key] = fields[key];
  return out;
}

/**
 * Give entries ids, parents and timestamps: the first is a child of the session's leaf, each next
 * one a child of the one before. Field order is Pi's (`SessionManager.append*`): `custom` and
 * `custom_message` entries put id, parentId and timestamp after their payload; every other kind
 * (`compaction`, …) right after `type`.
 *
 * @param session the session as read (its leaf becomes the first parent)
 * @param entries payloads, in append order
 * @param nowIso ISO timestamp for every new entry
 */
export function chainEntries<P extends NewEntry>(session: Pick<Session, "leaf" | "byId" | "id">, entries: P[], nowIso: string): Placed<P>[] {
  return new EntryChain(session, nowIso).append(entries);
}

/** How many bytes {@link serializeAppend} gives, entry by entry (the whole text is never one string). */
export function appendedBytes(session: Pick<Session, "endsWithNewline">, entries: SessionEntry[]): number {
  let bytes = session.endsWithNewline ? 0 : 1;
  for (const e of entries) bytes += Buffer.byteLength(JSON.stringify(e), "utf8") + 1;
  return bytes;
}

/** The bytes {@link appendEntries} would write, newline repair included. */
export function serializeAppend(session: Pick<Session, "endsWithNewline">, entries: SessionEntry[]): string {
  const body = entries.map((e) => `${JSON.stringify(e)}\n`).join("");
  return session.endsWithNewline ? body : `\n${body}`;
}

export interface AppendOptions {
  /** Called under the lock, after the journal and sidecars are written, right before the append (tests inject crashes here). */
  beforeWrite?: () => void | Promise<void>;
  /** The command writing (`run`, `compact`, …), kept in the journal and the undo record. */
  op?: string;
  /** Sidecar files the entries point at, written (atomically, under the lock) before the append. */
  sidecars?: { path: string; text: string }[];
  /** The session was migrated by this command right before (kept in the undo record: undo restores the original). */
  migration?: MigrationFacts;
  /** Tests make another writer race the append here: after the last check / right after the write. */
  race?: { beforeAppend?: () => void; afterAppend?: () => void };
}

/**
 * Append entries (and write their sidecars) under the session's lock, crash-safely (see the
 * module comment).
 *
 * @returns the number of bytes appended (0 when `entries` is empty: nothing is touched)
 * @throws FileChangedError when size, mtime or inode differ from what was read (nothing written)
 * @throws CondenseError (exit 1) when the file cannot be opened for writing (permissions, read-only
 *   mount: {@link appendOpenError}); nothing written, the journal removed
 * @throws FileLockedError when a live process holds the lock
 * @throws ConcurrentAppendError when another writer appended meanwhile (condense's bytes removed)
 * @throws CondenseError (exit 1) when the write failed (disk full, file-size limit, I/O error): the
 *   file is back to its original bytes, the sidecars this write created are removed
 */
export async function appendEntries(
  session: Pick<Session, "path" | "size" | "mtimeMs" | "endsWithNewline">,
  entries: SessionEntry[],
  options: AppendOptions = {},
): Promise<number> {
  if (entries.length === 0) return 0;
  const real = realpathSync(session.path);
  return withSessionLock(real, (lock) => commitAppend({ ...session, path: real }, entries, options, lock), options.op ?? "run");
}

/** The append as bytes, one buffer per line (the repair newline first when needed). */
function appendParts(session: Pick<Session, "endsWithNewline">, entries: SessionEntry[]): { parts: Buffer[]; ids: (string | null)[] } {
  const parts = entries.map((e) => Buffer.from(`${JSON.stringify(e)}\n`, "utf8"));
  const ids: (string | null)[] = entries.map((e) => e.id);
  if (!session.endsWithNewline) {
    parts.unshift(Buffer.from("\n"));
    ids.unshift(null);
  }
  return { parts, ids };
}

/** Which sidecars to write: a file already there with the same bytes is kept (not created); other bytes → refused. */
function planSidecars(sidecars: { path: string; text: string }[]): { records: SidecarRecord[]; toWrite: { path: string; bytes: Buffer }[] } {
  const records: SidecarRecord[] = [];
  const toWrite: { path: string; bytes: Buffer }[] = [];
  for (const s of sidecars) {
    const bytes = Buffer.from(s.text, "utf8");
    let existing: Buffer | null = null;
    try {
      existing = readRegularFileSync(s.path); // a FIFO in its place is not waited on
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // A FIFO, a socket or a folder in the sidecar's place: never replaced by the rename.
      if (code === "ENOTREG" || code === "EISDIR") {
        throw new CondenseError(`${s.path} already exists and is not a regular file; condense does not replace it — nothing was written`, 1);
      }
      // The blobs folder's name taken by a file, FIFO or socket (or a link to one).
      if (code === "ENOTDIR") {
        throw new CondenseError(`${dirname(s.path)} already exists and is not a folder; condense does not replace it — nothing was written`, 1);
      }
      existing = null;
    }
    if (existing && !existing.equals(bytes)) {
      throw new CondenseError(`${s.path} already exists with other content; condense does not replace it — nothing was written`, 1);
    }
    records.push({ path: s.path, created: !existing, bytes: bytes.length, sha256: sha256Hex(bytes) });
    if (!existing) toWrite.push({ path: s.path, bytes });
  }
  return { records, toWrite };
}

/**
 * The undo records file is rewritten by a rename at the commit, after the append: a folder there
 * would fail it with the bytes appended and the journal left, and a FIFO, socket or device (or a
 * link to one) would be replaced. Such a file is refused before anything is written.
 */
function assertUndoFileReplaceable(session: string): void {
  const path = undoPath(session);
  let kind: "file" | "other" | "none";
  try {
    kind = statSync(path).isFile() ? "file" : "other";
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // Missing, or a dangling link: created (or replaced) as before; a looping link is refused.
    kind = code === "ELOOP" ? "other" : "none";
  }
  if (kind === "other") {
    throw new CondenseError(`${path} already exists and is not a regular file; condense does not replace it — nothing was written`, 1);
  }
}

function tailHash(path: string, size: number): string {
  const fd = openSync(path, "r");
  try {
    const start = Math.max(0, size - 4096);
    const buf = Buffer.alloc(size - start);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, start + off);
      if (n === 0) break;
      off += n;
    }
    return sha256Hex(buf.subarray(0, off));
  } finally {
    closeSync(fd);
  }
}

async function commitAppend(
  session: Pick<Session, "path" | "size" | "mtimeMs" | "endsWithNewline">,
  entries: SessionEntry[],
  options: AppendOptions,
  lock: SessionLock,
): Promise<number> {
  faultPoint("lock-held");
  settleJournal(session.path);
  await assertUnchanged(session);
  const { parts, ids } = appendParts(session, entries);
  const bytes = Buffer.concat(parts);
  const st = statSync(session.path);
  const plan = planSidecars(options.sidecars ?? []);
  assertUndoFileReplaceable(session.path);
  const journal: JournalRecord = {
    format: "condense-journal",
    v: 1,
    writeId: newWriteId(),
    op: options.op ?? "run",
    session: session.path,
    dev: st.dev,
    ino: st.ino,
    preSize: session.size,
    preTailSha256: tailHash(session.path, session.size),
    length: bytes.length,
    sha256: sha256Hex(bytes),
    lines: lineTable(parts, ids),
    sidecars: plan.records,
    owner: { pid: process.pid, host: hostname() },
    startedAt: new Date().toISOString(),
    ...(options.migration ? { migration: options.migration } : {}),
  };
  try {
    writeDurable(journalPath(session.path), JSON.stringify(journal), session.path, () => faultPoint("journal-tmp"));
  } catch (error) {
    throw new CondenseError(
      `${session.path}: cannot write ${journalPath(session.path)}: ${describeError(error as NodeJS.ErrnoException)}; nothing was written`,
      1,
    );
  }
  faultPoint("journal");
  try {
    await writeSidecars(plan.toWrite);
    await options.beforeWrite?.();
    lock.assertHeld();
    await assertUnchanged(session);
  } catch (error) {
    abandon(session.path, journal);
    throw error;
  }
  return appendBytes(session.path, journal, bytes, options.race);
}

/** Undo a write that never appended a byte: its created sidecars and its journal go; the file is not touched. */
function abandon(path: string, journal: JournalRecord): void {
  removeCreatedSidecars(path, journal.sidecars);
  removeJournal(path);
}

async function writeSidecars(files: { path: string; bytes: Buffer }[]): Promise<void> {
  const folders = new Set(files.map((f) => dirname(f.path)));
  for (const folder of folders) removeDeadTemporaries(folder, ".");
  for (const [i, f] of files.entries()) {
    await writeFileAtomic(f.path, f.bytes);
    faultPoint(`sidecars:${i}`);
  }
  for (const folder of folders) fsyncDir(folder);
}

/** A failed write's cause in words (disk full, size limit, quota), else the system's message. */
export function describeError(error: NodeJS.ErrnoException | null): string {
  const code = error?.code;
  if (code === "EFBIG") return "the file size limit (ulimit -f) was reached";
  if (code === "ENOSPC") return "no space left on the device";
  if (code === "EDQUOT") return "the disk quota is exceeded";
  return error ? error.message : "the write stopped short (disk full or the file size limit)";
}

function writeFailure(error: NodeJS.ErrnoException | null, written: number, length: number): string {
  return `${describeError(error)} after ${written} of ${length} bytes`;
}

/**
 * Steps 7–10 of the protocol: one `fs.writeSync` of every byte on a descriptor opened for appending
 * (never creating the file), fsync, then commit — or settle what is there.
 */
function appendBytes(path: string, journal: JournalRecord, bytes: Buffer, race: AppendOptions["race"] = {}): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_APPEND);
  } catch (error) {
    abandon(path, journal);
    throw appendOpenError(path, error as NodeJS.ErrnoException);
  }
  if (fstatSync(fd).ino !== journal.ino) {
    closeSync(fd);
    abandon(path, journal);
    throw new FileChangedError(path, "replaced by another file");
  }
  let written = 0;
  let failure: NodeJS.ErrnoException | null = null;
  let size = -1;
  try {
    const cut = faultAppendLimit();
    if (cut >= 0) {
      writeSync(fd, bytes, 0, Math.min(cut, bytes.length));
      faultKill();
    }
    race.beforeAppend?.();
    try {
      written = writeSync(fd, bytes, 0, bytes.length);
      race.afterAppend?.();
      faultPoint("appended");
      if (written === bytes.length) fsyncSync(fd);
      faultPoint("fsynced");
    } catch (error) {
      failure = error as NodeJS.ErrnoException;
    }
    size = fstatSync(fd).size;
  } catch (error) {
    closeSync(fd);
    settleJournal(path, journal);
    throw error;
  }
  closeSync(fd);
  return settleAppend(path, journal, { written, failure, size });
}

function settleAppend(path: string, journal: JournalRecord, r: { written: number; failure: NodeJS.ErrnoException | null; size: number }): number {
  const ok = !r.failure && r.written === journal.length;
  if (ok && r.size === journal.preSize + journal.length) {
    commitJournalNow(journal);
    return journal.length;
  }
  const settled = settleJournal(path, journal, { failed: !ok });
  if (settled.state === "committed") return journal.length;
  if (!ok) {
    throw new CondenseError(
      `${path}: ${writeFailure(r.failure, r.written, journal.length)}; condense removed what it wrote — the file is as before, nothing was written`,
      1,
    );
  }
  throw new ConcurrentAppendError(path, settled.removedBytes);
}

function commitJournalNow(journal: JournalRecord): void {
  commitJournal(journal);
  faultPoint("committed");
}

/**
 * Check that the file is still the one that was read (same size — the whole file's, when only its
 * first bytes were read — and modification time).
 * @throws FileChangedError when it is not
 */
export async function assertUnchanged(session: Pick<Session, "path" | "size" | "mtimeMs" | "fileSize">): Promise<void> {
  const now = await stat(session.path);
  const size = session.fileSize ?? session.size;
  if (now.size !== size) throw new FileChangedError(session.path, `size ${size} → ${now.size} bytes`);
  if (now.mtimeMs !== session.mtimeMs) throw new FileChangedError(session.path, "modification time moved");
}
