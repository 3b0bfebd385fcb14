/**
 * Sidecar files: writing them (and whole files) atomically — a temporary file in the same folder,
 * fsync, then rename, so a reader never sees a half-written file — and reading one named by a
 * session, confined to that session's own blobs folder.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, realpathSync, unlinkSync } from "node:fs";
import { mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { pidIsDead } from "./lock.js";

/** Remove temporaries (`.<name>.<pid>.<n>.tmp`, `<name>.<pid>.tmp`) left in `folder` by dead processes. */
export function removeDeadTemporaries(folder: string, prefix = ""): void {
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const m = /\.(\d+)(?:\.\d+)?\.tmp$/.exec(name);
    if (!m || !pidIsDead(Number(m[1]))) continue;
    try {
      unlinkSync(join(folder, name));
    } catch {
      // removed meanwhile
    }
  }
}

/**
 * Write `data` to `path` atomically (creating its folder); `mode` sets the new file's permissions.
 * Temporaries of the same target left by dead processes are removed first.
 * @throws NodeJS.ErrnoException on I/O failure (the temporary file is removed)
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode?: number): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  removeDeadTemporaries(dirname(path), `.${basename(path).slice(0, 200)}.`);
  // Short, so a long target name still leaves room (names are limited to 255 bytes).
  const tmp = join(dirname(path), `.${basename(path).slice(0, 200)}.${process.pid}.${Date.now() % 1e6}.tmp`);
  try {
    const handle = await open(tmp, "wx", mode);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
}

/** Why a sidecar path from a session was not read. */
export class SidecarRefused extends Error {
  constructor(
    readonly spillPath: string,
    readonly reason: string,
    /** `missing`: the file (or folder) is not there; `refused`: it is not read for safety. */
    readonly kind: "refused" | "missing" = "refused",
  ) {
    super(`${kind}: ${spillPath}: ${reason}`);
    this.name = "SidecarRefused";
  }
}

/** Largest sidecar read (bytes): 256 MiB, or `CONDENSE_MAX_SIDECAR_BYTES` (tests). */
export function maxSidecarBytes(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number(env.CONDENSE_MAX_SIDECAR_BYTES);
  return Number.isSafeInteger(n) && n > 0 ? n : 256 * 1024 * 1024;
}

const SIDECAR_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}\.txt$/;

/**
 * Read a sidecar named by a session (a record's `spillPath`), confined to the session's own blobs
 * folder: only the file name of `spillPath` is used (a session moved with its folder keeps
 * working); it must look like a sidecar name, be a regular file with one link inside `folder`
 * (a real folder, not a symlink; the file not a symlink), and be at most `maxBytes` long. On Linux
 * the opened descriptor's path is checked again, so swapping the folder meanwhile does not help.
 *
 * @param folder the session's blobs folder (next to the session's real path)
 * @param allowed when given, the folders `folder` must be one of (else refused)
 * @throws SidecarRefused naming the path and the reason (nothing outside `folder` is ever opened)
 */
export function readSidecar(folder: string, spillPath: string, allowed?: readonly string[], maxBytes = maxSidecarBytes()): string {
  if (allowed && !allowed.includes(folder)) throw new SidecarRefused(spillPath, "not in the session's sidecar folders");
  const name = basename(spillPath);
  if (!SIDECAR_NAME.test(name)) throw new SidecarRefused(spillPath, "not a sidecar file name (<name>.txt)");
  let realFolder: string;
  try {
    if (!lstatSync(folder).isDirectory()) throw new SidecarRefused(spillPath, `${folder} is not a folder`);
    realFolder = realpathSync(folder);
  } catch (error) {
    if (error instanceof SidecarRefused) throw error;
    throw new SidecarRefused(spillPath, `the session's sidecar folder ${folder} does not exist`, "missing");
  }
  let fd: number;
  try {
    fd = openSync(join(realFolder, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new SidecarRefused(spillPath, `no such file in ${folder}`, "missing");
    throw new SidecarRefused(spillPath, code === "ELOOP" ? "a symbolic link" : String(code));
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new SidecarRefused(spillPath, "not a regular file");
    if (st.nlink !== 1) throw new SidecarRefused(spillPath, `a file with ${st.nlink} hard links`);
    if (st.size > maxBytes) throw new SidecarRefused(spillPath, `${st.size} bytes, over the ${maxBytes}-byte limit`);
    confirmInside(fd, realFolder, spillPath);
    const buf = Buffer.alloc(st.size);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, off);
      if (n === 0) break;
      off += n;
    }
    return buf.toString("utf8", 0, off);
  } finally {
    closeSync(fd);
  }
}

/**
 * Read a sidecar by the file name of `spillPath` from the first of `folders` that has it
 * ({@link readSidecar} in each; a refusal is final, only a missing file moves on to the next).
 * @throws SidecarRefused the refusal, or the first folder's `missing`
 */
export function readSidecarIn(folders: readonly string[], spillPath: string): string {
  let missing: SidecarRefused | undefined;
  for (const folder of folders) {
    try {
      return readSidecar(folder, spillPath);
    } catch (error) {
      if (!(error instanceof SidecarRefused) || error.kind !== "missing") throw error;
      missing ??= error;
    }
  }
  throw missing ?? new SidecarRefused(spillPath, "no sidecar folder", "missing");
}

/** Linux: the open descriptor must name a file directly inside `realFolder`. */
function confirmInside(fd: number, realFolder: string, spillPath: string): void {
  let target: string;
  try {
    target = readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return; // no /proc here: the checks above stand
  }
  if (dirname(target) !== realFolder) throw new SidecarRefused(spillPath, `resolves outside the session's sidecar folder (${target})`);
}
