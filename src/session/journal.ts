/**
 * The write journal and the undo record: the two small files beside a session that make an append
 * crash-proof (ARCHITECTURE.md "The commit protocol").
 *
 * - `<session>.condense-journal` — written (temporary file, fsync, rename, fsync of the folder)
 *   before the first appended byte; its presence means "a write started and its outcome is not
 *   settled". It records the file's identity, its size before the append, a hash of the 4 KiB before
 *   that, and every appended line's length, hash and entry id, plus the sidecars written.
 * - `<session>.condense-undo` — JSONL, one {@link UndoRecord} per completed write, newest last (at
 *   most {@link UNDO_KEEP}); what `condense undo` needs to truncate back exactly.
 *
 * Neither name ends in `.jsonl`, so Pi's session list and condense's folder scan never see them.
 * The pure part ({@link classifyTail}) decides, from the bytes after the recorded size, which of them
 * are condense's own; {@link settleJournal} (session/recover.ts) acts on it.
 */
import { createHash, hash, randomBytes } from "node:crypto";
import { closeSync, fsyncSync, openSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { CondenseError, errnoWords } from "../util/errors.js";
import { readRegularFileSync } from "../util/files.js";

/**
 * One appended line: byte length (newline included), first 32 hex of its sha256, entry id (null
 * for the repair newline), and its first {@link PREFIX_BYTES} bytes in base64 (a cut-off fragment
 * of it must start with them).
 */
export type JournalLine = [length: number, hash: string, id: string | null, prefix: string];

/** Bytes of each line's start kept in the journal. */
const PREFIX_BYTES = 48;

/** A sidecar written by the write: created (new file) or already there with the same bytes. */
export interface SidecarRecord {
  /** Absolute path, inside the session's `<id>-blobs/` folder. */
  path: string;
  /** True when this write created the file (undo and recovery remove only those). */
  created: boolean;
  bytes: number;
  sha256: string;
}

/** What the journal and the undo record both say about one write. */
export interface WriteFacts {
  /** Random id of this write (ties the journal to its undo record). */
  writeId: string;
  /** The command that wrote: `run`, `compact`, … */
  op: string;
  /** Real path of the session. */
  session: string;
  dev: number;
  ino: number;
  /** File size before the append (bytes). */
  preSize: number;
  /** sha256 (hex) of the bytes [max(0, preSize − 4096), preSize): the file is still the one written to. */
  preTailSha256: string;
  /** Bytes appended and their sha256 (hex). */
  length: number;
  sha256: string;
  sidecars: SidecarRecord[];
  /** ISO time the write started. */
  startedAt: string;
  /** The write followed a `--migrate` of the same command (see {@link MigrationFacts}). */
  migration?: MigrationFacts;
}

/**
 * A session rewritten as v3 by `--migrate` right before a write: its bytes before (v1/v2) are in
 * `backup`, `bytes` long with sha256 `sha256`. Undoing the write puts those bytes back.
 */
export interface MigrationFacts {
  backup: string;
  fromVersion: number;
  bytes: number;
  sha256: string;
}

/** The journal of a write in progress (format "condense-journal", version 1). */
export interface JournalRecord extends WriteFacts {
  format: "condense-journal";
  v: 1;
  lines: JournalLine[];
  owner: { pid: number; host: string };
}

/**
 * One completed write, as `condense undo` uses it: truncate to `preSize` when the file's size is
 * `postSize` and the bytes after `preSize` hash to `sha256`; remove the `created` sidecars whose
 * bytes still hash to their `sha256`.
 */
export interface UndoRecord extends WriteFacts {
  format: "condense-write";
  v: 1;
  /** preSize + length. */
  postSize: number;
  /** Ids of the appended entries, in file order. */
  entryIds: string[];
  /** ISO time the write was settled as complete. */
  committedAt: string;
}

/** Completed writes kept in the undo record file. */
export const UNDO_KEEP = 20;

export const journalPath = (session: string): string => `${session}.condense-journal`;
export const undoPath = (session: string): string => `${session}.condense-undo`;

/**
 * sha256 of bytes (or of a string's UTF-8), hex: Node's one-shot `crypto.hash` where it exists
 * (20.12+: no hash object per call, which entry ids make tens of thousands of), else a hash object.
 */
export const sha256Hex: (data: Uint8Array | string) => string =
  typeof hash === "function" ? (data) => hash("sha256", data, "hex") : (data) => createHash("sha256").update(data).digest("hex");

/** The line table of an append: `parts[i]` is one line (ending in "\n"); `ids[i]` its entry id or null. */
export function lineTable(parts: Buffer[], ids: (string | null)[]): JournalLine[] {
  return parts.map((p, i) => [p.length, sha256Hex(p).slice(0, 32), ids[i] ?? null, p.subarray(0, PREFIX_BYTES).toString("base64")]);
}

/** fsync a folder, so a rename or unlink in it is durable. Errors (platforms without folder fsync) are ignored. */
export function fsyncDir(dir: string): void {
  let fd = -1;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch {
    // not supported here
  } finally {
    if (fd >= 0) closeSync(fd);
  }
}

/** The temporary name of a file written by {@link writeDurable} (one writer at a time: the lock holder). */
export const temporaryOf = (path: string): string => `${path}.tmp`;

/**
 * Write a small file durably: a temporary name (a leftover of a killed writer is replaced — only
 * the lock holder writes these), fsync, rename, fsync of the folder. The caller holds the lock.
 * Mode 0600, plus read access for the group and others where `session` grants it (the umask may
 * narrow it): whoever may read the session may read its journal and undo records, which readers
 * read around an interrupted write and `undo` reads.
 * @param session the session the file sits beside
 */
export function writeDurable(path: string, text: string, session: string, onWritten: () => void = () => undefined): void {
  const tmp = temporaryOf(path);
  rmSync(tmp, { force: true });
  const readable = (statSync(session, { throwIfNoEntry: false })?.mode ?? 0) & 0o044;
  try {
    const fd = openSync(tmp, "wx", 0o600 | readable); // the umask may narrow it
    try {
      writeFileSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    rmSync(tmp, { force: true });
    throw error;
  }
  onWritten();
  renameSync(tmp, path);
  fsyncDir(dirname(path));
}

/** Shape check of a parsed journal. */
function isJournal(v: unknown): v is JournalRecord {
  const j = v as JournalRecord;
  return (
    !!j &&
    j.format === "condense-journal" &&
    j.v === 1 &&
    Number.isSafeInteger(j.preSize) &&
    Number.isSafeInteger(j.length) &&
    typeof j.preTailSha256 === "string" &&
    Array.isArray(j.lines) &&
    j.lines.every((l) => Array.isArray(l) && Number.isSafeInteger(l[0]) && l[0] > 0 && typeof l[1] === "string" && typeof l[3] === "string") &&
    Array.isArray(j.sidecars)
  );
}

/**
 * The journal of a session, or null when there is none.
 * @throws CondenseError (exit 2) when it exists but is not a journal (it is left in place)
 */
export function readJournal(session: string): JournalRecord | null {
  let text: string;
  try {
    text = readRegularFileSync(journalPath(session), "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return null;
    if (code === "ENOTREG" || code === "EISDIR") {
      throw new CondenseError(`${journalPath(session)}: cannot read: ${errnoWords(error)}; nothing was changed`, 2);
    }
    throw error;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = null;
  }
  if (!isJournal(value)) {
    throw new CondenseError(
      `${journalPath(session)}: not a condense write journal (it was edited or damaged); nothing was changed. ` +
        "It records an interrupted write to the session: remove it only after checking the end of the session",
      2,
    );
  }
  return value;
}

/** The completed writes recorded for a session, oldest first (unreadable lines skipped). */
export function readUndoRecords(session: string): UndoRecord[] {
  return readUndoFile(session).records;
}

/**
 * The undo records file of a session: its records, oldest first, and how many of its non-blank
 * lines are not records (edited or damaged). A file that cannot be read holds none; when one is
 * there but cannot be read (a FIFO, a folder, no permission), `unreadable` says why, in words.
 */
export function readUndoFile(session: string): { records: UndoRecord[]; damaged: number; unreadable?: string } {
  let text: string;
  try {
    text = readRegularFileSync(undoPath(session), "utf8");
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
    return missing ? { records: [], damaged: 0 } : { records: [], damaged: 0, unreadable: errnoWords(error) };
  }
  const records: UndoRecord[] = [];
  let damaged = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    let v: UndoRecord | null = null;
    try {
      v = JSON.parse(line) as UndoRecord;
    } catch {
      // counted below
    }
    if (v?.format === "condense-write" && Number.isSafeInteger(v.preSize) && Number.isSafeInteger(v.length)) records.push(v);
    else damaged++;
  }
  return { records, damaged };
}

/**
 * Settle a journal as complete: add its {@link UndoRecord} to the undo file (rewritten atomically,
 * at most {@link UNDO_KEEP} records; idempotent by `writeId`), then remove the journal.
 */
export function commitJournal(journal: JournalRecord, onRecorded: () => void = () => undefined): UndoRecord {
  const { format: _format, v: _v, lines, owner: _owner, ...facts } = journal;
  const record: UndoRecord = {
    format: "condense-write",
    v: 1,
    ...facts,
    postSize: journal.preSize + journal.length,
    entryIds: lines.map((l) => l[2]).filter((id): id is string => id !== null),
    committedAt: new Date().toISOString(),
  };
  const kept = readUndoRecords(journal.session).filter((r) => r.writeId !== journal.writeId);
  const all = [...kept, record].slice(-UNDO_KEEP);
  writeDurable(undoPath(journal.session), all.map((r) => `${JSON.stringify(r)}\n`).join(""), journal.session);
  onRecorded();
  removeJournal(journal.session);
  return record;
}

/** Remove the journal (durably). */
export function removeJournal(session: string): void {
  try {
    unlinkSync(journalPath(session));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  fsyncDir(dirname(session));
}

/** Where condense's bytes sit in the tail `[preSize, EOF)` (offsets relative to preSize). */
export interface TailLayout {
  /** Bytes of complete foreign lines before ours (a writer that slipped in after the check). */
  foreignBefore: number;
  /** Our complete lines found, in order. */
  completeLines: number;
  /** True when every recorded line is there, complete. */
  complete: boolean;
  /** Start of our bytes and end of them (complete lines plus a torn fragment). */
  oursStart: number;
  oursEnd: number;
  /** Our leading lines that a later foreign entry is parented on: they stay. Their byte count. */
  keptLines: number;
  keptBytes: number;
  /** Bytes after ours (another writer's). */
  foreignAfter: number;
  /** End offsets (relative) of our complete lines, for blanking line by line. */
  lineEnds: number[];
}

const isEntryLine = (tail: Buffer, a: number, b: number): boolean => {
  try {
    const v = JSON.parse(tail.toString("utf8", a, b));
    return !!v && typeof v === "object" && !Array.isArray(v) && typeof v.type === "string";
  } catch {
    return false;
  }
};

const isOurLine = (tail: Buffer, pos: number, line: JournalLine): boolean =>
  pos + line[0] <= tail.length && tail[pos + line[0] - 1] === 10 && sha256Hex(tail.subarray(pos, pos + line[0])).slice(0, 32) === line[1];

/** True when `length` bytes at `pos` can be the start of `line`: shorter than it, and its recorded first bytes match. */
function couldBeStartOf(tail: Buffer, pos: number, length: number, line: JournalLine): boolean {
  if (length <= 0 || length >= line[0]) return false;
  const prefix = Buffer.from(line[3], "base64");
  const n = Math.min(length, prefix.length);
  return tail.subarray(pos, pos + n).equals(prefix.subarray(0, n));
}

/**
 * The length of the fragment of our line starting at `pos` (its first bytes, cut by a crash), or 0
 * when the bytes there are not one. A fragment is shorter than the line and starts with its recorded
 * first bytes; it may be followed by EOF, by Pi's open-time repair (a bare "\n"), or by a foreign
 * line glued to it (the first `{` from which the rest parses as an entry).
 */
function fragmentAt(tail: Buffer, pos: number, line: JournalLine): number {
  if (pos >= tail.length) return 0;
  const nl = tail.indexOf(10, pos);
  if (nl === -1) return couldBeStartOf(tail, pos, tail.length - pos, line) ? tail.length - pos : 0;
  if (isEntryLine(tail, pos, nl)) return 0; // a whole foreign entry sits where our next line would
  for (let p = tail.indexOf(0x7b, pos + 1); p !== -1 && p < nl && p - pos < line[0]; p = tail.indexOf(0x7b, p + 1)) {
    if (isEntryLine(tail, p, nl)) return couldBeStartOf(tail, pos, p - pos, line) ? p - pos : 0;
  }
  // A bare newline after the fragment (Pi's repair): one byte shorter than the line at least, or the
  // bytes would be the whole line and its hash would have matched.
  return nl - pos < line[0] - 1 && couldBeStartOf(tail, pos, nl - pos, line) ? nl - pos : 0;
}

/** How many of our first lines a foreign entry after `from` names as its parent (those must stay). */
function keptByParents(tail: Buffer, from: number, lines: JournalLine[], found: number): number {
  const index = new Map<string, number>();
  lines.slice(0, found).forEach((l, i) => {
    if (l[2] !== null) index.set(l[2], i);
  });
  let keep = 0;
  for (let q = from; q < tail.length; ) {
    const e = tail.indexOf(10, q);
    const end = e === -1 ? tail.length : e;
    try {
      const parent = (JSON.parse(tail.toString("utf8", q, end)) as { parentId?: unknown })?.parentId;
      if (typeof parent === "string" && index.has(parent)) keep = Math.max(keep, (index.get(parent) ?? 0) + 1);
    } catch {
      // not an entry
    }
    q = end + 1;
  }
  return keep;
}

/**
 * Split the bytes after the recorded size into [foreign before][ours: complete lines + fragment]
 * [foreign after]. Every complete line of ours is matched by position, length and hash; a fragment
 * must start where our next line starts, be shorter than it and begin with its recorded first bytes.
 * Bytes that are none of these are another writer's and are left alone.
 */
export function classifyTail(tail: Buffer, lines: JournalLine[]): TailLayout {
  let pos = 0;
  while (pos < tail.length && !(lines.length > 0 && isOurLine(tail, pos, lines[0]))) {
    const nl = tail.indexOf(10, pos);
    if (nl === -1 || !isEntryLine(tail, pos, nl)) break;
    pos = nl + 1;
  }
  const foreignBefore = pos;
  const lineEnds: number[] = [];
  let k = 0;
  while (k < lines.length && isOurLine(tail, pos, lines[k])) {
    pos += lines[k][0];
    lineEnds.push(pos);
    k++;
  }
  const fragment = k < lines.length ? fragmentAt(tail, pos, lines[k]) : 0;
  const oursEnd = pos + fragment;
  const keptLines = keptByParents(tail, oursEnd, lines, k);
  const keptBytes = lines.slice(0, keptLines).reduce((n, l) => n + l[0], 0);
  return {
    foreignBefore,
    completeLines: k,
    complete: k === lines.length,
    oursStart: foreignBefore,
    oursEnd,
    keptLines,
    keptBytes,
    foreignAfter: tail.length - oursEnd,
    lineEnds,
  };
}

/** A new journal id. */
export function newWriteId(): string {
  return randomBytes(8).toString("hex");
}
