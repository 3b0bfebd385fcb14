/**
 * Content-hash dedup key (docs/design.md "Content-hash dedup"; docs/design.md §6 step 4):
 * `sha1(toolName + "\0" + normalize(resultText))`, normalize = CRLF → LF, trailing whitespace
 * stripped per line, whole text trimmed.
 */
import { createHash, hash } from "node:crypto";

/** The seed's conservative normalization; internal whitespace and case are kept. */
export function normalizeResult(text: string): string {
  const lf = text.includes("\r\n") ? text.replace(/\r\n/g, "\n") : text;
  // Spaces and tabs before a "\n" or the end (the lines' ends once CRLF is LF), in one pass — when
  // there are any (a blank before a line's end is found by a plain search, far quicker than the pattern).
  const blankEnd = lf.includes(" \n") || lf.includes("\t\n") || lf.endsWith(" ") || lf.endsWith("\t");
  return (blankEnd ? lf.replace(/[ \t]+(?=\n|$)/g, "") : lf).trim();
}

/** Hex SHA-1 of tool name, NUL, normalized result text. */
export function contentHash(toolName: string, resultText: string): string {
  return sha1Hex(`${toolName}\0${normalizeResult(resultText)}`);
}

/** Hex SHA-1 of a string: Node's one-shot `crypto.hash` where it exists (no Hash object per call). */
const sha1Hex: (data: string) => string =
  typeof hash === "function" ? (data) => hash("sha1", data, "hex") : (data) => createHash("sha1").update(data).digest("hex");
