/**
 * Turning `<session>` arguments into session files (docs/design.md §2): a path to a `.jsonl` file,
 * a directory (every `*.jsonl` below it), a glob, or a session id / unique id prefix looked up in
 * Pi's sessions folder; no argument means the most recent session of the current directory, the
 * one `pi --continue` would open.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, join, resolve } from "node:path";
import { UsageError } from "../util/errors.js";

/** `$PI_CODING_AGENT_DIR`, default `~/.pi/agent`. */
export function agentDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.PI_CODING_AGENT_DIR ? resolve(env.PI_CODING_AGENT_DIR) : join(homedir(), ".pi", "agent");
}

/** Pi's sessions folder and whether it is flat (`$PI_CODING_AGENT_SESSION_DIR`) or per-cwd. */
export function sessionsRoot(env: NodeJS.ProcessEnv = process.env): { dir: string; flat: boolean } {
  if (env.PI_CODING_AGENT_SESSION_DIR) return { dir: resolve(env.PI_CODING_AGENT_SESSION_DIR), flat: true };
  return { dir: join(agentDir(env), "sessions"), flat: false };
}

/** Pi's per-cwd subfolder name: `--<cwd without its leading slash, / \ : replaced by ->--`. */
export function cwdFolderName(cwd: string): string {
  return `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
}

/** Every `*.jsonl` file below `dir`, sorted by path. */
export function jsonlFilesBelow(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, name.name);
      if (name.isDirectory()) walk(full);
      else if (name.isFile() && name.name.endsWith(".jsonl")) out.push(full);
    }
  };
  walk(dir);
  return out.sort();
}

/** The header of a session file (first line), or null when it has none. Reads at most 1 MiB. */
export async function peekHeader(path: string): Promise<{ id?: unknown; cwd?: unknown; type?: unknown } | null> {
  const handle = await open(path, "r");
  try {
    const buf = Buffer.alloc(1024 * 1024);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    const text = buf.toString("utf8", 0, bytesRead);
    const firstLine = text.split("\n").find((l) => l.trim() !== "");
    if (!firstLine) return null;
    const value = JSON.parse(firstLine);
    return value && value.type === "session" && typeof value.id === "string" ? value : null;
  } catch {
    return null;
  } finally {
    await handle.close();
  }
}

/** Session id encoded in a Pi file name `<timestamp>_<id>.jsonl`. */
function idFromFileName(path: string): string | undefined {
  const name = basename(path, ".jsonl");
  const cut = name.indexOf("_");
  return cut >= 0 ? name.slice(cut + 1) : undefined;
}

/**
 * The most recently modified session with a valid header in the current directory's folder
 * (Pi's `findMostRecentSession`); in a flat sessions folder, only sessions whose header `cwd` is `cwd`.
 * @throws UsageError when there is none
 */
export async function latestSessionFor(cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const root = sessionsRoot(env);
  const dir = root.flat ? root.dir : join(root.dir, cwdFolderName(resolve(cwd)));
  const files = existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith(".jsonl"))
        .map((f) => join(dir, f))
        .map((p) => ({ p, mtime: statSync(p).mtimeMs }))
        .sort((a, b) => b.mtime - a.mtime || (a.p < b.p ? 1 : -1))
    : [];
  for (const { p } of files) {
    const header = await peekHeader(p);
    if (header && (!root.flat || (typeof header.cwd === "string" && resolve(header.cwd) === resolve(cwd)))) return p;
  }
  throw new UsageError(`no session argument given and no Pi session found for ${resolve(cwd)} in ${dir}; pass a session file, directory, glob or session id`);
}

/**
 * Resolve command-line session arguments to files, in argument order, without duplicates.
 * @throws UsageError for an argument that matches nothing, or an ambiguous id prefix
 */
export async function resolveSessionArgs(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<string[]> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  if (args.length === 0) return [await latestSessionFor(cwd, env)];
  const seen = new Set<string>();
  const out: string[] = [];
  const add = (p: string) => {
    const full = resolve(cwd, p);
    if (!seen.has(full)) {
      seen.add(full);
      out.push(full);
    }
  };
  for (const arg of args) {
    const full = resolve(cwd, arg);
    if (existsSync(full)) {
      const st = statSync(full);
      if (st.isDirectory()) {
        const files = jsonlFilesBelow(full);
        if (files.length === 0) throw new UsageError(`${arg}: directory holds no *.jsonl session file`);
        files.forEach(add);
      } else add(full);
      continue;
    }
    if (/[*?[\]{}]/.test(arg)) {
      const { glob } = await import("tinyglobby");
      const files = (await glob(arg, { cwd, absolute: true, onlyFiles: true })).sort();
      if (files.length === 0) throw new UsageError(`${arg}: the glob matches no file`);
      files.forEach(add);
      continue;
    }
    add(await findById(arg, env));
  }
  return out;
}

/** A session file in Pi's sessions folder whose id is `idOrPrefix` or starts with it. */
async function findById(idOrPrefix: string, env: NodeJS.ProcessEnv): Promise<string> {
  const root = sessionsRoot(env);
  const files = existsSync(root.dir) ? jsonlFilesBelow(root.dir) : [];
  const exact = files.filter((p) => idFromFileName(p) === idOrPrefix);
  const matches = exact.length > 0 ? exact : files.filter((p) => idFromFileName(p)?.startsWith(idOrPrefix));
  if (matches.length === 1) return matches[0];
  if (matches.length > 1) {
    const list = matches
      .slice(0, 10)
      .map((p) => `  ${p}`)
      .join("\n");
    throw new UsageError(`${idOrPrefix}: session id prefix is ambiguous, ${matches.length} sessions match:\n${list}`);
  }
  throw new UsageError(`${idOrPrefix}: no such file or directory, no glob match, and no session with that id in ${root.dir}`);
}
