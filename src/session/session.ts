/**
 * A loaded session: header, migrated entries, the tree they form, the leaf and the active branch.
 *
 * Rules (Pi 1.6, docs/design.md §4): the leaf is the last entry in file order; the active branch
 * is the `parentId` chain from the leaf to a root; an entry whose parent is missing starts a new
 * root (the walk stops there, as Pi's `getBranch` does).
 */
import { migrateEntries } from "./migrate.js";
import { readSessionFile, type RawSession } from "./reader.js";
import type { SessionEntry } from "./types.js";

/** A read file (see {@link RawSession}; its `entries` here are migrated to v3) with its tree indexed. */
export interface Session extends RawSession {
  /** Session id from the header ("" when the header is missing). */
  id: string;
  /** Version the file is written in (1, 2 or 3). Entries are always v3. */
  fileVersion: number;
  byId: Map<string, SessionEntry>;
  /** Position of each entry in `entries`, by object identity. */
  indexOf: Map<SessionEntry, number>;
  leaf: SessionEntry | null;
  /** Root → leaf. */
  branch: SessionEntry[];
}

/**
 * Read, migrate (in memory) and index a session file (`options.limit`: only its first bytes).
 * @throws NodeJS.ErrnoException when the file cannot be read
 */
export async function loadSession(path: string, options: { limit?: number } = {}): Promise<Session> {
  return buildSession(await readSessionFile(path, options));
}

/** Index an already-parsed file (see {@link loadSession}). */
export function buildSession(raw: RawSession): Session {
  const { entries, fromVersion } = migrateEntries(raw.header, raw.entries);
  const byId = new Map<string, SessionEntry>();
  const indexOf = new Map<SessionEntry, number>();
  entries.forEach((entry, i) => {
    byId.set(entry.id, entry);
    indexOf.set(entry, i);
  });
  const leaf = entries.length > 0 ? entries[entries.length - 1] : null;
  const session: Session = {
    path: raw.path,
    header: raw.header,
    id: raw.header?.id ?? "",
    fileVersion: fromVersion,
    entries,
    locations: raw.locations,
    byId,
    indexOf,
    leaf,
    branch: [],
    warnings: raw.warnings,
    problems: raw.problems,
    size: raw.size,
    mtimeMs: raw.mtimeMs,
    ...(raw.fileSize === undefined ? {} : { fileSize: raw.fileSize }),
    endsWithNewline: raw.endsWithNewline,
    lineCount: raw.lineCount,
  };
  session.branch = getBranch(session, leaf?.id ?? null);
  return session;
}

/**
 * The `parentId` chain from `fromId` up to its root, returned root first (Pi's `getBranch`).
 * A parent id that is not in the file ends the walk; a cycle (never written by Pi) also ends it.
 */
export function getBranch(session: Pick<Session, "byId">, fromId: string | null): SessionEntry[] {
  // Without a cycle the walk meets each entry of `byId` at most once: a walk longer than `byId` has
  // entries went round a cycle, and is walked again noting what it has seen (no set in the common case).
  const path: SessionEntry[] = [];
  let current = fromId !== null ? session.byId.get(fromId) : undefined;
  while (current) {
    if (path.length === session.byId.size) return branchUntilRepeat(session, fromId);
    path.push(current);
    current = current.parentId ? session.byId.get(current.parentId) : undefined;
  }
  return path.reverse();
}

/** {@link getBranch} for a walk that goes round a cycle: it stops before the first entry met twice. */
function branchUntilRepeat(session: Pick<Session, "byId">, fromId: string | null): SessionEntry[] {
  const path: SessionEntry[] = [];
  const seen = new Set<SessionEntry>();
  let current = fromId !== null ? session.byId.get(fromId) : undefined;
  while (current && !seen.has(current)) {
    seen.add(current);
    path.push(current);
    current = current.parentId ? session.byId.get(current.parentId) : undefined;
  }
  return path.reverse();
}

/** Children of each entry id (roots under `null`), in file order. */
export function childrenOf(session: Pick<Session, "entries">): Map<string | null, SessionEntry[]> {
  const children = new Map<string | null, SessionEntry[]>();
  for (const entry of session.entries) {
    const key = entry.parentId ?? null;
    const list = children.get(key);
    if (list) list.push(entry);
    else children.set(key, [entry]);
  }
  return children;
}

/** Entries whose `parentId` names an entry that is not in the file (they start a new root). */
export function entriesWithMissingParent(session: Pick<Session, "entries" | "byId">): SessionEntry[] {
  return session.entries.filter((e) => e.parentId != null && !session.byId.has(e.parentId));
}

/** "file:line (byte N)" for messages that point at an entry. */
export function whereIs(session: Pick<Session, "path" | "indexOf" | "locations">, entry: SessionEntry): string {
  const i = session.indexOf.get(entry);
  const loc = i === undefined ? undefined : session.locations[i];
  return loc ? `${session.path}:${loc.line} (byte ${loc.offset})` : session.path;
}
