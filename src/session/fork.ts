/**
 * The session a fork was made from. Pi's `/fork` (`SessionManager.createBranchedSession`) writes
 * a new session file with the branch copied into it and the parent's path in its header
 * (`parentSession`); the copied index entries still name the parent's sidecars. `query` may read
 * those from the parent's blobs folder — a session file's sibling folder, under the same rules as
 * the session's own (session/sidecars.ts `readSidecar`) — and from nowhere else.
 */
import { realpath, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { peekHeader } from "./locate.js";

/** A fork's parent: its real path and its session id. */
export interface ForkParent {
  path: string;
  id: string;
}

/**
 * The parent of a fork, when `parentSession` names a session file: a regular file named `*.jsonl`
 * (after links) with a session header, read as Pi's session discovery reads it (locate.ts
 * `peekHeader`: within its first 1 MiB). Nothing else of it is read.
 * @param parentSession the fork header's `parentSession` (anything: it comes from the file)
 * @param fork the fork's path (a relative `parentSession` is taken from its folder)
 * @returns null when there is no such parent (no value, no file, not a session file)
 */
export async function forkParent(parentSession: unknown, fork: string): Promise<ForkParent | null> {
  if (typeof parentSession !== "string" || parentSession === "") return null;
  const path = await realpath(resolve(dirname(fork), parentSession)).catch(() => null);
  if (path === null || !path.endsWith(".jsonl") || !(await stat(path).catch(() => null))?.isFile()) return null;
  const header = await peekHeader(path).catch(() => null);
  return header && typeof header.id === "string" && header.id !== "" ? { path, id: header.id } : null;
}
