/**
 * Turning `<session>` arguments into session files (docs/design.md §2): a path to a `.jsonl` file,
 * a directory (every `*.jsonl` below it), a glob, or a session id / unique id prefix looked up in
 * Pi's sessions folder; no argument means the session Pi's bash tool names in `$PI_SESSION_FILE`
 * (inside Pi), else the most recent session of the current directory, the one `pi --continue` would open.
 */
import { constants, type Dirent, existsSync, readdirSync, realpathSync, type Stats, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import pLimit from "p-limit";
import { errnoWords, UsageError } from "../util/errors.js";
import { customSessionDir, expandPiPath } from "./pi-session-dir.js";

/** `$PI_CODING_AGENT_DIR` (`~` expanded, as Pi does), default `~/.pi/agent`. */
export function agentDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.PI_CODING_AGENT_DIR ? resolve(expandPiPath(env.PI_CODING_AGENT_DIR)) : join(homedir(), ".pi", "agent");
}

/**
 * Pi's sessions folder for `cwd` and whether it is flat (`$PI_CODING_AGENT_SESSION_DIR` or the
 * `sessionDir` setting, see pi-session-dir.ts) or holds one subfolder per cwd (`<agent dir>/sessions`).
 */
export function sessionsRoot(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): { dir: string; flat: boolean } {
  const custom = customSessionDir(cwd, agentDir(env), env);
  if (custom) return { dir: custom.dir, flat: true };
  return { dir: join(agentDir(env), "sessions"), flat: false };
}

/** Pi's per-cwd subfolder name: `--<cwd without its leading slash, / \ : replaced by ->--`. */
export function cwdFolderName(cwd: string): string {
  return `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
}

/**
 * Every `*.jsonl` file below `dir`, sorted by path: regular files and symbolic links to regular
 * files (Pi lists a session folder by name and follows links); linked folders are not entered, so
 * a link cycle cannot loop, and a link that leads nowhere (a missing target, a loop of links)
 * names no file; one to a target this user may not reach is listed (reading it fails, saying
 * why). A subfolder this user may not list is in `unlisted`, so that a command over many
 * sessions reports it and goes on.
 * @throws the error of listing `dir` itself (EACCES, ENOTDIR, …)
 */
export function jsonlFilesBelow(dir: string): { files: string[]; unlisted: string[] } {
  const files: string[] = [];
  const unlisted: string[] = [];
  const isFileBehindLink = (full: string) => {
    try {
      return statSync(full, { throwIfNoEntry: false })?.isFile() === true;
    } catch (error) {
      // A loop leads nowhere; a target this user may not reach is a session that fails, said so.
      return (error as NodeJS.ErrnoException).code === "EACCES";
    }
  };
  const walk = (d: string) => {
    let names: Dirent[];
    try {
      names = readdirSync(d, { withFileTypes: true });
    } catch (error) {
      if (d === dir) throw error;
      unlisted.push(d);
      return;
    }
    for (const name of names) {
      const full = join(d, name.name);
      if (name.isDirectory()) walk(full);
      else if (!name.name.endsWith(".jsonl")) continue;
      else if (name.isFile() || (name.isSymbolicLink() && isFileBehindLink(full))) files.push(full);
    }
  };
  walk(dir);
  return { files: files.sort(), unlisted: unlisted.sort() };
}

/** What `peekHeader` returns: the header line's fields, unchecked beyond `type` and `id`. */
export type PeekedHeader = { id?: unknown; cwd?: unknown; type?: unknown; parentSession?: unknown };

/** One line as a header candidate (Pi's `parseSessionHeaderCandidate`): undefined to skip it (blank, not JSON, JSON null), null when it is not a header. */
function headerCandidate(line: string): PeekedHeader | null | undefined {
  if (line.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!value || typeof value !== "object") return value ? null : undefined;
  const header = value as PeekedHeader;
  return header.type === "session" && typeof header.id === "string" ? header : null;
}

/**
 * The header of a session file as Pi's session discovery reads it (`readSessionHeader`): within the
 * first 1 MiB, blank lines and lines that are not JSON are skipped; the first JSON line is the header
 * when it has `type: "session"` and a string `id`, else the file has none (null). Something that is
 * not a regular file (a FIFO, a device) has none either: opened without blocking, never read.
 */
export async function peekHeader(path: string): Promise<PeekedHeader | null> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENXIO") return null; // a socket: the reader refuses it
    throw error;
  }
  try {
    if (!(await handle.stat()).isFile()) return null;
    // Read in small pieces: the header is the first line, and an archive peeks at every file.
    const buf = Buffer.alloc(HEADER_SCAN_BYTES);
    let read = 0;
    let lineStart = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, read, Math.min(HEADER_PIECE_BYTES, buf.length - read), read);
      read += bytesRead;
      const end = bytesRead === 0 || read === buf.length;
      for (let nl = buf.indexOf(10, lineStart); nl !== -1 && nl < read; nl = buf.indexOf(10, lineStart)) {
        const header = headerCandidate(buf.toString("utf8", lineStart, nl));
        if (header !== undefined) return header;
        lineStart = nl + 1;
      }
      // The window ends (1 MiB or the file): its last line is taken as it is, cut or not.
      if (end) return headerCandidate(buf.toString("utf8", lineStart, read)) ?? null;
    }
  } catch {
    return null;
  } finally {
    await handle.close();
  }
}

/** How far Pi's session discovery looks for the header (1 MiB), and the pieces it is read in. */
const HEADER_SCAN_BYTES = 1024 * 1024;
const HEADER_PIECE_BYTES = 16 * 1024;

/** Session id encoded in a Pi file name `<timestamp>_<id>.jsonl`. */
function idFromFileName(path: string): string | undefined {
  const name = basename(path, ".jsonl");
  const cut = name.indexOf("_");
  return cut >= 0 ? name.slice(cut + 1) : undefined;
}

/**
 * The folder `pi --continue` searches for `cwd` and whether it keeps only sessions whose header
 * `cwd` is `cwd` (a configured folder other than the per-cwd default), see `latestSessionFor`.
 */
export function continueFolder(cwd: string, env: NodeJS.ProcessEnv = process.env): { dir: string; filterCwd: boolean } {
  const root = sessionsRoot(env, cwd);
  const perCwd = join(agentDir(env), "sessions", cwdFolderName(resolve(cwd)));
  return root.flat ? { dir: root.dir, filterCwd: resolve(root.dir) !== perCwd } : { dir: perCwd, filterCwd: false };
}

/**
 * Whether `condense query` run in `cwd` without `$PI_SESSION_FILE` searches the folder that holds
 * `file` (the folder `pi --continue` searches for `cwd`, {@link continueFolder}). Inside Pi 1.6 the
 * bash tool names the current session in `$PI_SESSION_FILE` anyway; this decides whether the
 * recovery command written into stock-Pi stubs also needs `--session <file>`.
 * @param cwd the session's working directory (its header's `cwd`); undefined → false
 */
export function continueFolderHolds(file: string, cwd: string | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  if (!cwd) return false;
  return realOrResolved(dirname(resolve(file))) === realOrResolved(continueFolder(cwd, env).dir);
}

/** A path with its symbolic links resolved, or (when it does not exist) made absolute. */
export function realOrResolved(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/**
 * How a command is told which session to read, for the message when it was told none and none
 * was found: by `argument` (`condense metrics <session...>`) or by the `--session` option (`query`,
 * whose arguments are refs).
 */
export type SessionNaming = "argument" | "--session";

/** How to name a session to a command that takes it as {@link SessionNaming}. */
function howToName(naming: SessionNaming): string {
  return naming === "--session" ? "name it with --session FILE|id" : "pass a session file, directory, glob or session id";
}

/**
 * The session `pi --continue` opens in `cwd` (Pi 1.6 `SessionManager.continueRecent` →
 * `findMostRecentSession`): the most recently modified `*.jsonl` directly in the session folder whose
 * header is valid (ties keep directory order, as Pi's stable sort does). The folder is the configured
 * one (`$PI_CODING_AGENT_SESSION_DIR`, else the `sessionDir` setting) or the per-cwd default; in a
 * configured folder other than that default, only sessions whose header `cwd` is `cwd` count.
 * @param naming how the command takes a session, for the error
 * @throws UsageError when there is none, saying where condense looked and how to name a session
 */
export async function latestSessionFor(cwd: string, env: NodeJS.ProcessEnv = process.env, naming: SessionNaming = "argument"): Promise<string> {
  const { dir, filterCwd } = continueFolder(cwd, env);
  // A link that leads nowhere, or a file this user may not read, is no session to continue.
  const mtimeOf = (p: string) => {
    try {
      return statSync(p, { throwIfNoEntry: false })?.mtimeMs;
    } catch {
      return undefined;
    }
  };
  const files = existsSync(dir)
    ? listFolder(dir)
        .filter((f) => f.endsWith(".jsonl"))
        .map((f) => join(dir, f))
        .map((p) => ({ p, mtime: mtimeOf(p) }))
        .filter((f): f is { p: string; mtime: number } => f.mtime !== undefined)
        .sort((a, b) => b.mtime - a.mtime)
    : [];
  for (const { p } of files) {
    const header = await peekHeader(p).catch(() => null);
    if (header && (!filterCwd || (typeof header.cwd === "string" && header.cwd !== "" && resolve(cwd, header.cwd) === resolve(cwd)))) return p;
  }
  throw new UsageError(
    `no session given, $PI_SESSION_FILE is not set, and ${dir} holds no Pi session of ${resolve(cwd)} (the newest one there is what pi --continue opens); ${howToName(naming)}`,
  );
}

/**
 * Resolve command-line session arguments to files, in argument order, without duplicates. With no
 * argument: `$PI_SESSION_FILE` when set (Pi 1.6's bash tool sets it to the current session for
 * every command it runs), else `latestSessionFor(cwd)`. A `$PI_SESSION_FILE` naming no session is
 * an error, never a reason to read another session. condense's own records (`*.condense-undo`,
 * `*.condense-journal`) are never taken for sessions, nor a glob's match of a `--migrate` backup
 * (`*.v1.bak`): a shell's `dir/name*` names them beside the session.
 * @param options.naming how the command takes a session, for the errors (default `argument`)
 * @throws UsageError for an argument that matches nothing, an ambiguous id prefix, a
 *   `$PI_SESSION_FILE` that is missing or not a session, or no session found
 */
export async function resolveSessionArgs(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; naming?: SessionNaming } = {}): Promise<string[]> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const naming = options.naming ?? "argument";
  if (args.length === 0) {
    if (!env.PI_SESSION_FILE) return [await latestSessionFor(cwd, env, naming)];
    return [await currentSession(resolve(cwd, env.PI_SESSION_FILE), naming)];
  }
  const seen = new Set<string>();
  const out: string[] = [];
  let own = 0;
  const add = (p: string) => {
    const full = resolve(cwd, p);
    if (OWN_RECORD.test(full)) {
      own++;
      return;
    }
    if (!seen.has(full)) {
      seen.add(full);
      out.push(full);
    }
  };
  for (const arg of args) {
    if (arg.trim() === "") throw new UsageError(`an empty session argument names no session (is a shell variable unset?); ${howToName(naming)}`);
    const full = resolve(cwd, arg);
    const st = statArgument(arg, full);
    if (st?.isDirectory()) {
      const { files, unlisted } = listArgument(arg, full);
      if (files.length === 0 && unlisted.length === 0) throw new UsageError(`${arg}: directory holds no *.jsonl session file`);
      // A subfolder that cannot be listed stays a path of its own: reading it fails, as one session's failure.
      [...files, ...unlisted].sort().forEach(add);
      continue;
    }
    if (st) {
      add(full);
      continue;
    }
    if (/[*?[\]{}]/.test(arg)) {
      const { glob } = await import("tinyglobby");
      const files = (await glob(arg, { cwd, absolute: true, onlyFiles: true })).sort();
      if (files.length === 0) throw new UsageError(`${arg}: the glob matches no file`);
      // A glob's match of a --migrate backup (`x.jsonl*` → `x.jsonl.v1.bak`) is not meant: skip it.
      for (const f of files) if (!MIGRATE_BACKUP.test(f)) add(f);
      continue;
    }
    add(await findById(arg, env, cwd));
  }
  if (out.length === 0 && own > 0) {
    throw new UsageError(
      `the arguments name only condense's own undo and journal records (*.condense-undo, *.condense-journal), no session; ${howToName(naming)}`,
    );
  }
  return out;
}

/**
 * The stat of a session argument, or null when nothing is there (ENOENT, ENOTDIR: then it may be a
 * glob or an id).
 * @throws UsageError (exit 2) when something is there that this user cannot reach, saying why
 */
function statArgument(arg: string, full: string): Stats | null {
  try {
    return statSync(full, { throwIfNoEntry: false }) ?? null;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOTDIR") return null;
    throw new UsageError(`${arg}: cannot read: ${errnoWords(error)}`);
  }
}

/**
 * The names in a folder, in directory order.
 * @throws UsageError (exit 2) when this user may not list it, saying why
 */
function listFolder(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (error) {
    throw new UsageError(`${dir}: cannot list the folder: ${errnoWords(error)}`);
  }
}

/**
 * {@link jsonlFilesBelow} for a folder the user named.
 * @throws UsageError (exit 2) when the folder itself cannot be listed, saying why
 */
function listArgument(arg: string, full: string): ReturnType<typeof jsonlFilesBelow> {
  try {
    return jsonlFilesBelow(full);
  } catch (error) {
    throw new UsageError(`${arg}: cannot list the folder: ${errnoWords(error)}`);
  }
}

/** condense's own records beside a session (session/journal.ts): JSONL, never a session, so never taken for one. */
const OWN_RECORD = /\.condense-(?:undo|journal)$/;
/** The v1/v2 original `--migrate` keeps (session/commit.ts `<file>.v<N>.bak`). */
const MIGRATE_BACKUP = /\.v\d+\.bak$/;

/**
 * The session `$PI_SESSION_FILE` names, when it is one.
 * @throws UsageError naming `$PI_SESSION_FILE` when the file is missing or has no session header
 */
async function currentSession(file: string, naming: SessionNaming): Promise<string> {
  const st = statSync(file, { throwIfNoEntry: false });
  const why = !st ? "which does not exist" : !st.isFile() || !(await peekHeader(file)) ? "which is not a Pi session (no session header)" : null;
  if (!why) return file;
  throw new UsageError(`$PI_SESSION_FILE names ${file}, ${why}; condense reads no other session in its place — unset it, or ${howToName(naming)}`);
}

/**
 * A session file in Pi's sessions folder whose id is `idOrPrefix` or starts with it. A file's ids
 * are the one in Pi's file name (`<timestamp>_<id>.jsonl`) and the one in its header
 * ({@link peekHeader}, a bounded read of the first line), so that a session renamed or copied in
 * under another name is found too, and a prefix that one file matches by name and another by
 * header is ambiguous. An exact id beats a prefix.
 * @throws UsageError when nothing matches, or several sessions match (listing them)
 */
async function findById(idOrPrefix: string, env: NodeJS.ProcessEnv, cwd: string): Promise<string> {
  const root = sessionsRoot(env, cwd);
  // Pi's own folder: what cannot be listed there holds no session this user can name.
  const files = existsSync(root.dir) ? listOrNothing(root.dir) : [];
  const headers = await headerIds(files);
  const ids = (p: string) => [idFromFileName(p), headers.get(p)].filter((id): id is string => id !== undefined);
  const exact = files.filter((p) => ids(p).includes(idOrPrefix));
  const matches = exact.length > 0 ? exact : files.filter((p) => ids(p).some((id) => id.startsWith(idOrPrefix)));
  if (matches.length === 1) return matches[0];
  if (matches.length > 1) {
    const list = matches
      .slice(0, 10)
      .map((p) => `  ${p}`)
      .join("\n");
    const what = exact.length > 0 ? "session id" : "session id prefix";
    throw new UsageError(`${idOrPrefix}: ${what} is ambiguous, ${matches.length} sessions match:\n${list}`);
  }
  throw new NoSuchSessionError(`${idOrPrefix}: no such file or directory, no glob match, and no session with that id in ${root.dir}`);
}

/** The sessions below one of Pi's folders; none when the folder itself cannot be listed. */
function listOrNothing(dir: string): string[] {
  try {
    return jsonlFilesBelow(dir).files;
  } catch {
    return [];
  }
}

/** A session argument that names nothing: no file, no glob match, no session id or id prefix (exit 2). */
export class NoSuchSessionError extends UsageError {
  constructor(message: string) {
    super(message);
    this.name = "NoSuchSessionError";
  }
}

/** How many headers {@link headerIds} reads at once. */
const HEADER_READS_AT_ONCE = 16;

/** The header id of each file that has a session header (files without one are left out). */
async function headerIds(files: string[]): Promise<Map<string, string>> {
  const limit = pLimit(HEADER_READS_AT_ONCE);
  const headers = await Promise.all(files.map((p) => limit(() => peekHeader(p))));
  const ids = new Map<string, string>();
  headers.forEach((h, i) => {
    if (typeof h?.id === "string") ids.set(files[i], h.id);
  });
  return ids;
}
