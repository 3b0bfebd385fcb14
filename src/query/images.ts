/**
 * Images of a recovered output (docs/design.md §8): a record stores only the text of a tool
 * result, so the images of a summarized (stubbed) result are in the request no more and in the
 * index never. `query` says where they are — the session entry of the result, its line, the
 * content block — and can write them out (`--save-images DIR`).
 *
 * A hit is matched to the tool result(s) of the context by occurrence key: its own key, or for a
 * recovery record stored as `id#n@resultTimestamp` the n-th result with key `id@resultTimestamp`
 * (prune/recovery.ts).
 */
import { occurrenceKey, parseOccurrenceKey } from "../context/vocabulary.js";
import type { ContextOccurrences } from "../prune/occurrences.js";
import { sidecarName } from "../prune/spill.js";
import type { SessionEntry } from "../session/types.js";

/** One image block of a recovered tool result. */
export interface ResultImage {
  /** The session entry holding the tool result. */
  entryId: string;
  /** 1-based line of that entry in the session file, or null. */
  line: number | null;
  /** 0-based index of the image in the result's content blocks. */
  block: number;
  mimeType: string;
  /** Decoded size in bytes. */
  bytes: number;
  /** Base64 data as stored. */
  data: string;
  /** A file name for it: the sanitized occurrence key, the block, an extension from the MIME type. */
  fileName: string;
}

const EXTENSIONS: Record<string, string> = { "image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp", "image/svg+xml": "svg" };

/**
 * The image blocks of the tool result an occurrence key names, in block order.
 * @param occurrences the tool results of the session's context (`contextOccurrences` of its projection)
 * @param key the occurrence key of a query hit (`id@ts`, `id#n@ts`, or a bare id)
 * @param lineOf where an entry sits in the file
 */
export function imagesOf(occurrences: Pick<ContextOccurrences, "byKey">, key: string, lineOf: (entry: SessionEntry) => number | null): ResultImage[] {
  const { toolCallId, resultTimestamp } = parseOccurrenceKey(key);
  const ranked = /^(.*)#(\d+)$/.exec(toolCallId);
  const match = ranked
    ? (occurrences.byKey.get(occurrenceKey(ranked[1], resultTimestamp)) ?? []).filter((r) => r.ordinal === Number(ranked[2]))
    : (occurrences.byKey.get(key) ?? []);
  const out: ResultImage[] = [];
  for (const r of match) {
    const content = r.message.content as unknown;
    if (!Array.isArray(content)) continue;
    content.forEach((b: { type?: unknown; data?: unknown; mimeType?: unknown }, block) => {
      if (b?.type !== "image" || typeof b.data !== "string") return;
      const mimeType = typeof b.mimeType === "string" ? b.mimeType : "application/octet-stream";
      out.push({
        entryId: r.entry.id,
        line: lineOf(r.entry),
        block,
        mimeType,
        bytes: Buffer.from(b.data, "base64").length,
        data: b.data,
        fileName: `${sidecarName(key).slice(0, -4)}-${block}.${EXTENSIONS[mimeType] ?? "bin"}`,
      });
    });
  }
  return out;
}

/** One line per image for a query block: where it is, or where it was saved. */
export function imageLines(images: readonly ResultImage[], saved: ReadonlyMap<ResultImage, string>): string[] {
  return images.map((img) => {
    const what = `${img.mimeType}, ${img.bytes.toLocaleString("en-US")} bytes`;
    const path = saved.get(img);
    if (path) return `Image: ${what}, saved to ${path}`;
    const line = img.line === null ? "" : ` (line ${img.line})`;
    return `Image: ${what}, not in the text below: entry ${img.entryId}${line}, content block ${img.block}; write it with --save-images DIR`;
  });
}
