/**
 * Head truncation of a recovered output (docs/design.md §8): keep whole lines from the start
 * while both limits hold — at most 2000 lines and 50 KB (51200 UTF-8 bytes). Line counting and the
 * byte budget follow Pi's own `truncateHead` so a count printed here matches what Pi's tools
 * print: "" has 0 lines, a trailing "\n" does not start a new line, each joining newline costs one
 * byte, and a first line longer than the byte limit leaves nothing.
 */

import { HEAD_MAX_BYTES, HEAD_MAX_LINES } from "../context/vocabulary.js";

export const MAX_LINES = HEAD_MAX_LINES;
export const MAX_BYTES = HEAD_MAX_BYTES;

export interface HeadTruncation {
  /** The kept text (the input itself when nothing was cut). */
  text: string;
  truncated: boolean;
  /** Which limit cut it; null when nothing was cut. */
  by: "lines" | "bytes" | null;
  shownLines: number;
  totalLines: number;
  totalBytes: number;
  /** True when the first line alone is over the byte limit (then nothing is kept). */
  firstLineTooLong: boolean;
}

function countedLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (text.endsWith("\n")) lines.pop();
  return lines;
}

/** Keep the head of `text` within `maxLines` lines and `maxBytes` UTF-8 bytes, whole lines only. */
export function truncateHead(text: string, maxLines = MAX_LINES, maxBytes = MAX_BYTES): HeadTruncation {
  const totalBytes = Buffer.byteLength(text, "utf8");
  const lines = countedLines(text);
  const totalLines = lines.length;
  if (totalLines <= maxLines && totalBytes <= maxBytes) {
    return { text, truncated: false, by: null, shownLines: totalLines, totalLines, totalBytes, firstLineTooLong: false };
  }
  if (Buffer.byteLength(lines[0], "utf8") > maxBytes) {
    return { text: "", truncated: true, by: "bytes", shownLines: 0, totalLines, totalBytes, firstLineTooLong: true };
  }
  let bytes = 0;
  let kept = 0;
  let by: "lines" | "bytes" = "lines";
  for (; kept < lines.length && kept < maxLines; kept++) {
    const cost = Buffer.byteLength(lines[kept], "utf8") + (kept > 0 ? 1 : 0);
    if (bytes + cost > maxBytes) {
      by = "bytes";
      break;
    }
    bytes += cost;
  }
  return {
    text: lines.slice(0, kept).join("\n"),
    truncated: true,
    by,
    shownLines: kept,
    totalLines,
    totalBytes,
    firstLineTooLong: false,
  };
}

/** `[Output truncated: a/b lines shown]` */
export function truncationNotice(t: Pick<HeadTruncation, "shownLines" | "totalLines">): string {
  return `[Output truncated: ${t.shownLines}/${t.totalLines} lines shown]`;
}
