/**
 * Eager spill of one huge result (docs/design.md §6 step 3; docs/design.md "Eager single-result
 * spill"): a result of `spillThreshold` characters or more goes to
 * `<session folder>/<session id>-blobs/<sanitized occurrence key>.txt`, and its record keeps a head
 * preview instead of the text.
 */
import { createHash } from "node:crypto";
import { contentHash } from "./content-hash.js";
import { recordKeyOf } from "../context/vocabulary.js";
import type { ToolCallRecord } from "../entries/types.js";
import { basename, dirname, join, resolve, sep } from "node:path";

/** Longest sidecar name: 255 bytes less room for the temporary suffix of an atomic write. */
const MAX_NAME_BYTES = 200;

/**
 * Occurrence key → file name: `<id>_<resultTimestamp>.txt` using only `[A-Za-z0-9._-]`, at most 200
 * bytes. When the id had to be changed (other characters, too long), a short hash of the whole key
 * is appended so that two keys never share a file (`a/b@1` and `a_b@1` differ).
 */
export function sidecarName(key: string): string {
  const at = key.lastIndexOf("@");
  const keyed = at > 0 && /^\d+$/.test(key.slice(at + 1));
  const id = keyed ? key.slice(0, at) : key;
  const suffix = keyed ? `_${key.slice(at + 1)}` : "";
  let stem = id.replace(/[^A-Za-z0-9._-]/g, "_");
  if (stem === "" || /^\.+$/.test(stem)) stem = `_${stem}`;
  const limit = MAX_NAME_BYTES - ".txt".length - suffix.length;
  if (stem !== id || stem.length > limit) {
    const hash = createHash("sha256").update(key).digest("hex").slice(0, 10);
    stem = `${stem.slice(0, limit - hash.length - 1)}-${hash}`;
  }
  return `${stem}${suffix}.txt`;
}

/**
 * Absolute sidecar path for an occurrence of a session.
 * @throws Error if the result would fall outside the blobs folder (cannot happen with sanitized names; checked anyway)
 */
export function sidecarPath(sessionPath: string, sessionId: string, key: string): string {
  const folder = blobsFolder(sessionPath, sessionId);
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

/**
 * Move a record's output to its sidecar: the record keeps `resultText: ""`, the sidecar path, the
 * size in UTF-8 bytes, a head preview of `previewBytes` and the content hash of the full text.
 * @returns the sidecar to write (before the entry that points at it)
 */
export function spillRecord(
  record: ToolCallRecord,
  target: { sessionPath: string; sessionId: string; previewBytes: number },
  hash: string = contentHash(record.toolName, record.resultText),
): { path: string; text: string } {
  const text = record.resultText;
  const path = sidecarPath(target.sessionPath, target.sessionId, recordKeyOf(record));
  record.resultText = "";
  record.spillPath = path;
  record.spillBytes = Buffer.byteLength(text, "utf8");
  record.resultPreview = headPreview(text, target.previewBytes);
  record.contentHash = hash;
  return { path, text };
}
