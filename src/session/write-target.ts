/**
 * Where a command may write a file the user named (`run --output`, `compact --output`,
 * `report --html`, `query --save-images`): one rule for all of them, checked before any work.
 * - never a session the command reads, and never any Pi session unless the command writes a
 *   session itself (`--output` with `--force`);
 * - an existing file only with `--force`, unless it is the command's own earlier output (a
 *   report page, an image with the same bytes);
 * - never a folder, and never into a folder that does not exist: missing folders are named in the
 *   error, not created behind the user's back;
 * - never over a symbolic link, a device, a FIFO or a socket, `--force` or not: the file is replaced
 *   whole (a new file renamed over the path), which would replace the link or the device itself
 *   (as root, `--output /dev/null --force` turned /dev/null into a regular file).
 */
import { lstatSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { UsageError } from "../util/errors.js";
import { peekHeader } from "./locate.js";

/** How {@link checkWriteTarget} judges a target. */
export interface WriteTargetRules {
  /** The option as typed, for the messages: `--output`, `--html`, `--save-images`. */
  flag: string;
  /** The sessions the command reads: never written. */
  inputs: string[];
  /** `--force` was given: an existing file (not a session the command reads) may be replaced. */
  force: boolean;
  /** The command writes a session (`--output`): an existing session other than the input may be replaced with `force`. */
  writesSession?: boolean;
  /** True when the existing file at the path is this command's own earlier output: replaced without `force`. */
  isOwnOutput?: (path: string) => boolean;
  /** What to do instead when the target is the input, for the message (default `name another file`). */
  instead?: string;
}

/** `stat` (or `lstat`, which does not follow a symbolic link) of `path`, or null when it cannot be had. */
const statOrNull = (path: string, stat: typeof statSync | typeof lstatSync = statSync) => {
  try {
    return stat(path);
  } catch {
    return null;
  }
};

/**
 * Check that `target` may be written under {@link WriteTargetRules}. Reads at most the first MiB
 * of an existing file (its session header); writes nothing.
 * @throws UsageError (exit 2) naming the flag, the path and what is wrong: an empty path, a
 *   symbolic link, a folder, a device, FIFO or socket, a session the command reads, a Pi session (unless the command writes sessions), an
 *   existing file without `force` (unless its own earlier output), a missing or non-folder parent
 */
export async function checkWriteTarget(target: string, rules: WriteTargetRules): Promise<void> {
  const { flag } = rules;
  if (target.trim() === "") throw new UsageError(`${flag}: empty path (is the variable you passed unset?)`);
  if (statOrNull(target, lstatSync)?.isSymbolicLink()) {
    throw new UsageError(
      `${flag} ${target} is a symbolic link; condense writes a new file in its place, which would replace the link — name the file itself (nothing was written)`,
    );
  }
  const existing = statOrNull(target);
  if (!existing) {
    const folder = dirname(resolve(target));
    const parent = statOrNull(folder);
    if (!parent) throw new UsageError(`${flag} ${target}: the folder ${folder} does not exist; create it first (nothing was written)`);
    if (!parent.isDirectory()) throw new UsageError(`${flag} ${target}: ${folder} is not a folder (nothing was written)`);
    return;
  }
  if (existing.isDirectory()) throw new UsageError(`${flag} ${target} is a directory; name a file`);
  for (const input of rules.inputs) {
    const read = statOrNull(input);
    if (read && read.dev === existing.dev && read.ino === existing.ino) {
      throw new UsageError(`${flag} ${target} is the input session itself; ${rules.instead ?? "name another file"} (nothing was written)`);
    }
  }
  if (!existing.isFile()) {
    throw new UsageError(
      `${flag} ${target} already exists and is not a regular file (a device, FIFO or socket); condense does not replace it — name a file (nothing was written)`,
    );
  }
  if (!rules.writesSession && (await peekHeader(target))) {
    throw new UsageError(
      `${flag} ${target} is a Pi session file; condense never overwrites a session with its ${flag} output — name another file (nothing was written)`,
    );
  }
  if (rules.force || rules.isOwnOutput?.(target)) return;
  throw new UsageError(`${flag} ${target} already exists; use --force to overwrite it`);
}
