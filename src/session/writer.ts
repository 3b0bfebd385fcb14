/**
 * Appending entries to a session file: the only place condense writes to a session.
 *
 * Rules (issue "Foundations", docs/design.md §5): new entries go after the current leaf, each the
 * child of the one before; one write on a file opened for appending, then fsync; a lock first
 * (`proper-lockfile`); nothing is written when the file changed since it was read (size or mtime);
 * a missing final newline is added first, as Pi does on open; existing bytes are never changed —
 * on a failed write the file is truncated back to its original size.
 */
import { createHash } from "node:crypto";
import { open, stat } from "node:fs/promises";
import { CondenseError } from "../util/errors.js";
import type { Session } from "./session.js";
import type { NewEntry, SessionEntry, SessionEntryBase } from "./types.js";

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

/**
 * Thrown when another writer appended between the check and the write: both appends are in the
 * file, so nothing is undone (exit 1).
 */
export class ConcurrentAppendError extends CondenseError {
  constructor(
    readonly path: string,
    expected: number,
    found: number,
  ) {
    super(
      `${path}: another writer appended while condense wrote (expected ${expected} bytes, found ${found}); ` +
        "both appends are in the file and condense's entries may not be on the active branch — run `condense render` to check",
      1,
    );
    this.name = "ConcurrentAppendError";
  }
}

/** Thrown when another process holds the session's lock; nothing was written (exit 1). */
export class FileLockedError extends CondenseError {
  constructor(readonly path: string) {
    super(`${path} is locked by another process (is Pi or another condense writing it?); nothing was written`, 1);
    this.name = "FileLockedError";
  }
}

/**
 * Allocates entry ids: 8 hex characters, unique in the file, deterministic for the same seed
 * (session id, leaf id and clock), so two runs on identical input append identical bytes.
 */
export class IdAllocator {
  private counter = 0;
  constructor(
    private readonly taken: Set<string>,
    private readonly seed: string,
  ) {}

  next(): string {
    for (;;) {
      const id = createHash("sha256")
        .update(`${this.seed}\0${this.counter++}`)
        .digest("hex")
        .slice(0, 8);
      if (!this.taken.has(id)) {
        this.taken.add(id);
        return id;
      }
    }
  }
}

/** Kinds Pi writes with id, parentId and timestamp after the payload. */
const IDS_LAST = new Set<string>(["custom", "custom_message"]);

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
export function chainEntries<P extends NewEntry>(
  session: Pick<Session, "leaf" | "byId" | "id">,
  entries: P[],
  nowIso: string,
): (P & Pick<SessionEntryBase, "id" | "parentId" | "timestamp">)[] {
  const ids = new IdAllocator(new Set(session.byId.keys()), `${session.id}\0${session.leaf?.id ?? ""}\0${nowIso}`);
  let parentId: string | null = session.leaf?.id ?? null;
  return entries.map((payload) => {
    const id = ids.next();
    const placed = { ...payload, id, parentId, timestamp: nowIso };
    // The same fields, in Pi's order for this kind (JSON keeps insertion order).
    const entry = IDS_LAST.has(payload.type) ? placed : Object.assign({ type: payload.type, id, parentId, timestamp: nowIso }, placed);
    parentId = id;
    return entry;
  });
}

/** The bytes {@link appendEntries} would write, newline repair included. */
export function serializeAppend(session: Pick<Session, "endsWithNewline">, entries: SessionEntry[]): string {
  const body = entries.map((e) => `${JSON.stringify(e)}\n`).join("");
  return session.endsWithNewline ? body : `\n${body}`;
}

export interface AppendOptions {
  /** Called after the lock is taken and the file checked, right before writing (tests inject crashes here). */
  beforeWrite?: () => void | Promise<void>;
}

/**
 * Append entries to the session file under a lock.
 *
 * @returns the number of bytes written (0 when `entries` is empty: nothing is touched)
 * @throws FileChangedError when size or mtime differ from what was read
 * @throws FileLockedError when another writer holds the lock
 * @throws NodeJS.ErrnoException on I/O failure (the file is truncated back to its original size)
 */
export async function appendEntries(
  session: Pick<Session, "path" | "size" | "mtimeMs" | "endsWithNewline">,
  entries: SessionEntry[],
  options: AppendOptions = {},
): Promise<number> {
  if (entries.length === 0) return 0;
  return withSessionLock(session.path, async () => {
    await assertUnchanged(session);
    const bytes = Buffer.from(serializeAppend(session, entries), "utf8");
    await options.beforeWrite?.();
    const handle = await open(session.path, "a");
    try {
      try {
        // A short write (disk full, file-size limit) is not an error in Node: keep writing until
        // every byte is out, and treat a write that makes no progress as a failure.
        let written = 0;
        while (written < bytes.length) {
          const { bytesWritten } = await handle.write(bytes, written, bytes.length - written);
          if (bytesWritten <= 0) throw Object.assign(new Error("no space left: the write made no progress"), { code: "ENOSPC" });
          written += bytesWritten;
        }
        await handle.sync();
        const after = await handle.stat();
        if (after.size !== session.size + bytes.length) {
          // Someone appended between our check and our write: their bytes and ours are both in the
          // file now, so truncating would destroy theirs. Say so instead.
          throw new ConcurrentAppendError(session.path, session.size + bytes.length, after.size);
        }
      } catch (error) {
        if (!(error instanceof ConcurrentAppendError)) await handle.truncate(session.size).catch(() => undefined);
        throw error;
      }
    } finally {
      await handle.close();
    }
    return bytes.length;
  });
}

/**
 * Run `work` while holding the session file's lock (`proper-lockfile`, a `<file>.lock` folder).
 * @throws FileLockedError when another writer holds it
 */
export async function withSessionLock<T>(path: string, work: () => Promise<T>): Promise<T> {
  let release: () => Promise<void>;
  try {
    const { default: lockfile } = await import("proper-lockfile");
    release = await lockfile.lock(path, { retries: { retries: 5, minTimeout: 50, maxTimeout: 500 }, stale: 30_000 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ELOCKED") throw new FileLockedError(path);
    throw error;
  }
  try {
    return await work();
  } finally {
    await release();
  }
}

/**
 * Check that the file is still the one that was read (same size and modification time).
 * @throws FileChangedError when it is not
 */
export async function assertUnchanged(session: Pick<Session, "path" | "size" | "mtimeMs">): Promise<void> {
  const now = await stat(session.path);
  if (now.size !== session.size) throw new FileChangedError(session.path, `size ${session.size} → ${now.size} bytes`);
  if (now.mtimeMs !== session.mtimeMs) throw new FileChangedError(session.path, "modification time moved");
}
