/**
 * Opening a session for a command: load it, then decide whether the command may go on.
 *
 * Read-only commands go on after a missing header or a cut-off final line (with a warning);
 * an empty file or one that is not JSONL is unusable for every command. Writing commands refuse
 * on any file problem, and on v1/v2 files unless migration was asked for (docs/design.md §4).
 */
import { UsageError } from "../util/errors.js";
import type { ReadWarning } from "./reader.js";
import { loadSession, whereIs, type Session } from "./session.js";

/**
 * @param path session file
 * @param mode `read` for render/query/metrics/budget, `write` for run
 * @throws UsageError (exit 2) when the file cannot be used in this mode, naming the file and why
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
  if (mode === "write") {
    const broken = unopenableByPi(session);
    if (broken) throw new UsageError(`${path}: ${broken}; Pi cannot open this session, so condense will not write to it`);
  }
  for (const problem of session.problems) {
    if (problem.kind === "empty" || problem.kind === "not-jsonl") throw new UsageError(`${path}: ${problem.message}`);
    if (mode === "write") throw new UsageError(`${path}: ${problem.message}; refusing to write to it`);
  }
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
