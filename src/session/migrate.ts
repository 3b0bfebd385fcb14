/**
 * In-memory migration of v1 and v2 session entries to v3, the way Pi 1.6 migrates them
 * (`migrateV1ToV2`, `migrateV2ToV3` in Pi's session-manager), except that ids are
 * deterministic: the same file always yields the same ids.
 */
import { createHash } from "node:crypto";
import type { AgentMessage, CompactionEntry, SessionEntry, SessionHeader } from "./types.js";

export const CURRENT_SESSION_VERSION = 3;

/**
 * Deterministic 8-hex id for the `index`-th entry of session `sessionId`, avoiding `taken`.
 * Collisions are resolved by hashing again with an attempt counter.
 */
export function deterministicId(seed: string, index: number, taken: Set<string>): string {
  for (let attempt = 0; ; attempt++) {
    const id = createHash("sha256").update(`${seed}\0${index}\0${attempt}`).digest("hex").slice(0, 8);
    if (!taken.has(id)) {
      taken.add(id);
      return id;
    }
  }
}

/**
 * Bring entries to version 3. Returns new entry objects (the input is not mutated) and the
 * version the file had.
 *
 * - v1 → v2: each entry gets an id (deterministic, from the header id and the entry's position)
 *   and the previous entry as parent; a compaction's `firstKeptEntryIndex` (an index into the
 *   file's parsed lines, header included) becomes `firstKeptEntryId`.
 * - v2 → v3: message role `hookMessage` becomes `custom`.
 */
export function migrateEntries(header: SessionHeader | null, entries: SessionEntry[]): { entries: SessionEntry[]; fromVersion: number } {
  // Pi reads `header.version ?? 1` and compares with `<` / `>=`, so "3" counts as 3; a value that is
  // no number at all compares false both ways, and Pi then migrates nothing.
  const declared = header ? Number(header.version ?? 1) : CURRENT_SESSION_VERSION;
  const fromVersion = Number.isNaN(declared) ? CURRENT_SESSION_VERSION : declared;
  if (fromVersion >= CURRENT_SESSION_VERSION) return { entries, fromVersion };
  let out = entries;
  if (fromVersion < 2) {
    const taken = new Set<string>();
    const seed = header?.id ?? "";
    let prevId: string | null = null;
    out = entries.map((entry, i) => {
      const id = deterministicId(seed, i, taken);
      const migrated = { ...entry, id, parentId: prevId } as SessionEntry;
      prevId = id;
      return migrated;
    });
    for (const entry of out) {
      if (entry.type !== "compaction") continue;
      const v1: CompactionEntry & { firstKeptEntryIndex?: unknown } = entry;
      const index = v1.firstKeptEntryIndex;
      if (typeof index === "number") {
        // Pi indexes the parsed lines with the header at 0.
        const target = index >= 1 ? out[index - 1] : undefined;
        if (target && (target.type as string) !== "session") v1.firstKeptEntryId = target.id;
        delete v1.firstKeptEntryIndex;
      }
    }
  }
  if (fromVersion < 3) {
    out = out.map((entry): SessionEntry => {
      if (entry.type !== "message") return entry;
      // v2 called Pi's `custom` role `hookMessage` (a role the v3 types do not have).
      const message: { role?: string } | undefined = entry.message;
      if (message && message.role === "hookMessage") return { ...entry, message: { ...message, role: "custom" } as AgentMessage };
      return entry;
    });
  }
  return { entries: out, fromVersion };
}

/**
 * A session rewritten as v3 the way Pi rewrites a v1/v2 file on open: the header with `version: 3`,
 * then one JSON line per (migrated) entry.
 */
export function serializeMigrated(header: SessionHeader | null, entries: SessionEntry[]): string {
  return [{ ...header, version: CURRENT_SESSION_VERSION }, ...entries].map((e) => `${JSON.stringify(e)}\n`).join("");
}
