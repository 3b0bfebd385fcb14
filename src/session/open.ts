/**
 * Opening a session for a command: load it, then decide whether the command may go on.
 *
 * Read-only commands go on after a missing header or a cut-off final line (with a warning);
 * an empty file or one that is not JSONL is unusable for every command. Writing commands refuse
 * on any file problem, and on v1/v2 files unless migration was asked for (SPEC.md section 4).
 */
import { UsageError } from "../util/errors.js";
import type { ReadWarning } from "./reader.js";
import { loadSession, type Session } from "./session.js";

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
