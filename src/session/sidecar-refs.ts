/**
 * Which other session files name a session's sidecars, so that `undo` never removes a sidecar
 * another file still needs. A sidecar lives in `<session id>-blobs/` beside the session, so every
 * session file of that folder with the same id shares it (a `run --output` copy written beside the
 * session), and a fork of the session (Pi's `/fork`: header `parentSession` naming it) reads its
 * copied records' sidecars from there (session/fork.ts).
 */
import { readdir, readFile, realpath } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { peekHeader } from "./locate.js";

/**
 * The sidecars among `paths` that another `*.jsonl` file in the session's folder names (its text
 * holds `<blobs folder>/<file name>`, as a record's `spillPath` does), when that file is a session
 * with the same id or a fork of this session. Only those files are read whole; of the others, only
 * the header.
 * @param session the session's real path
 * @param sessionId its header id
 * @returns sidecar path → the first other file naming it
 */
export async function sidecarsNamedElsewhere(session: string, sessionId: string, paths: readonly string[]): Promise<Map<string, string>> {
  const named = new Map<string, string>();
  if (paths.length === 0) return named;
  const folder = dirname(session);
  const names = (await readdir(folder).catch(() => [] as string[])).filter((n) => n.endsWith(".jsonl")).sort();
  for (const name of names) {
    const other = join(folder, name);
    if ((await realpath(other).catch(() => session)) === session) continue;
    const header = await peekHeader(other).catch(() => null);
    if (!header) continue;
    const forkOf = typeof header.parentSession === "string" ? await realpath(resolve(folder, header.parentSession)).catch(() => null) : null;
    if (header.id !== sessionId && forkOf !== session) continue;
    const text = await readFile(other, "utf8").catch(() => "");
    for (const p of paths) if (!named.has(p) && text.includes(`${basename(dirname(p))}/${basename(p)}`)) named.set(p, other);
  }
  return named;
}
