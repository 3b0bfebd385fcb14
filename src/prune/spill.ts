/**
 * Eager spill of one huge result (SPEC.md section 6 step 3; seeds/PRUNING.md "Eager single-result
 * spill"): a result of `spillThreshold` characters or more goes to
 * `<session folder>/<session id>-blobs/<sanitized occurrence key>.txt`, and its record keeps a head
 * preview instead of the text.
 */
import { basename, dirname, join, resolve, sep } from "node:path";

const MAX_NAME_BYTES = 255;

/** Occurrence key → file name: only `[A-Za-z0-9._-]`, at most 255 bytes with the `.txt` suffix. */
export function sidecarName(key: string): string {
  let stem = key.replace(/[^A-Za-z0-9._-]/g, "_");
  if (stem === "" || /^\.+$/.test(stem)) stem = `_${stem}`;
  return `${stem.slice(0, MAX_NAME_BYTES - ".txt".length)}.txt`;
}

/**
 * Absolute sidecar path for an occurrence of a session.
 * @throws Error if the result would fall outside the blobs folder (cannot happen with sanitized names; checked anyway)
 */
export function sidecarPath(sessionPath: string, sessionId: string, key: string): string {
  const folder = resolve(dirname(sessionPath), `${sidecarName(sessionId).slice(0, -4)}-blobs`);
  const path = resolve(folder, sidecarName(key));
  if (dirname(path) !== folder || basename(path).includes(sep)) throw new Error(`sidecar path escapes ${folder}: ${path}`);
  return path;
}

/** The blobs folder of a session. */
export function blobsFolder(sessionPath: string, sessionId: string): string {
  return join(resolve(dirname(sessionPath)), `${sidecarName(sessionId).slice(0, -4)}-blobs`);
}

/**
 * The first `maxBytes` UTF-8 bytes of a text, cut back to a character boundary and then to the
 * last newline when there is one past the first byte (the extension's `headPreview`).
 */
export function headPreview(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  const head = bytes.subarray(0, end).toString("utf8");
  const nl = head.lastIndexOf("\n");
  return nl > 0 ? head.slice(0, nl) : head;
}
