/**
 * Reading a file the user names, or one a session keeps beside it, without waiting on what is not
 * a regular file: the open or read of a FIFO or device can block for ever (several commands hung,
 * some past SIGTERM), and opening a Unix socket fails with the system's "no such device or address".
 */
import { closeSync, constants, fstatSync, openSync, readFileSync } from "node:fs";

/** The error for a FIFO, socket or device where a file was expected: code `ENOTREG`, "not a regular file". */
export function notRegularFile(): NodeJS.ErrnoException {
  return Object.assign(new Error("not a regular file"), { code: "ENOTREG" });
}

/** Opening a Unix socket fails with ENXIO (O_NONBLOCK or not): said as for any other non-regular file ({@link notRegularFile}). */
export function socketAsNotRegular(error: unknown): unknown {
  return (error as NodeJS.ErrnoException)?.code === "ENXIO" ? notRegularFile() : error;
}

/**
 * The whole of a small file (Pi's settings, models and credentials, --config, a journal, the undo
 * records, an archive's NDJSON): opened with O_NONBLOCK, refused before any read unless it is a
 * regular file.
 * @throws NodeJS.ErrnoException as readFileSync throws (ENOENT, EACCES), code `EISDIR` for a folder,
 *   `ENOTREG` ({@link notRegularFile}) for anything else that is not a regular file
 */
export function readRegularFileSync(path: string): Buffer;
export function readRegularFileSync(path: string, encoding: "utf8"): string;
export function readRegularFileSync(path: string, encoding?: "utf8"): Buffer | string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw socketAsNotRegular(error);
  }
  try {
    const stats = fstatSync(fd);
    if (stats.isDirectory()) throw Object.assign(new Error("is a directory"), { code: "EISDIR" });
    if (!stats.isFile()) throw notRegularFile();
    return encoding ? readFileSync(fd, encoding) : readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}
