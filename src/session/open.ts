/**
 * Opening a session for a command: load it, then decide whether the command may go on.
 *
 * Read-only commands go on after a cut-off final line (with a warning; Pi repairs it on open) and
 * fail (exit 1) on a file Pi cannot open — no header, a parent cycle or a message entry without a
 * message on the active branch; an empty file or one that is not JSONL is unusable for every
 * command (exit 2). Writing commands refuse on any file problem (exit 2), and on v1/v2 files
 * unless migration was asked for (docs/design.md §4).
 */
import { CondenseError, UsageError } from "../util/errors.js";
import type { ReadWarning } from "./reader.js";
import { loadSession, whereIs, type Session } from "./session.js";

/**
 * @param path session file
 * @param mode `read` for render/query/metrics/budget, `write` for run and compact
 * @throws UsageError (exit 2) when the file cannot be used in this mode, naming the file and why;
 *   CondenseError (exit 1) for a file Pi cannot open, in `read` mode
 */
export async function openSession(path: string, mode: "read" | "write"): Promise<Session> {
  let session: Session;
  try {
    session = await loadSession(path);
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    const why = e.code === "ENOENT" ? "no such file" : e.code === "EISDIR" ? "is a directory" : e.message;
    throw new UsageError(`${path}: cannot read: ${why}`);
  }
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
  if (missingHeader) throw new CondenseError(`${path}: ${missingHeader.message}`, 1);
  if (broken) throw new CondenseError(`${path}: ${broken}; Pi cannot open this session`, 1);
  return session;
}

/** One line per skipped line: `file:line (byte N): message: "excerpt"`. */
export function formatWarning(w: ReadWarning): string {
  return `${w.file}:${w.line} (byte ${w.offset}): ${w.message}: ${JSON.stringify(w.excerpt)}`;
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
