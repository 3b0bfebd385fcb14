/**
 * What the report says after a write (issue 16 "no way back"): where the entries went, how many,
 * how many bytes, and — for a session written in place — the command that removes them again.
 */

/** A word for a POSIX shell: as it is when it needs no quoting, else in single quotes. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}

/** The command that removes the last write to `session`. */
export function undoCommand(session: string): string {
  return `condense undo ${shellWord(session)}`;
}

/** One write, as the commands report it. */
export interface WriteFacts {
  /** The session read. */
  session: string;
  /** Where the entries went: the session itself, an `--output` file, or null (nothing written). */
  written: string | null;
  entries: number;
  bytes: number;
  /** The file version `--migrate` rewrote the session from (the `--output` file then starts with the v3 rewrite, not the session's bytes). */
  migratedFrom?: number;
}

/**
 * `wrote /p/s.jsonl: +56 entries, +164,368 bytes · undo: condense undo /p/s.jsonl`, or for
 * `--output` `wrote out.jsonl: the bytes of /p/s.jsonl + 56 entries (+164,368 bytes); /p/s.jsonl is
 * untouched` (after `--migrate`: `the v3 rewrite of /p/s.jsonl + …`); null when nothing was written.
 */
export function writtenLine(w: WriteFacts): string | null {
  if (w.written === null) return null;
  const n = (x: number) => x.toLocaleString("en-US");
  const entries = `${n(w.entries)} ${w.entries === 1 ? "entry" : "entries"}`;
  if (w.written !== w.session) {
    const base = w.migratedFrom !== undefined ? `the v3 rewrite of ${w.session}` : `the bytes of ${w.session}`;
    return `wrote ${w.written}: ${base} + ${entries} (+${n(w.bytes)} bytes); ${w.session} is untouched`;
  }
  return `wrote ${w.session}: +${entries}, +${n(w.bytes)} bytes · undo: ${undoCommand(w.session)}`;
}

/** A result with, when it wrote its session in place, the `undo` command that removes that write (for `--json`). */
export function withUndo<T extends { session: string; written: string | null }>(r: T): T & { undo?: string } {
  return r.written !== null && r.written === r.session ? { ...r, undo: undoCommand(r.session) } : r;
}
