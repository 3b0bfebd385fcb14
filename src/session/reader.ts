/**
 * Streaming reader for Pi session files.
 *
 * Reads the file in large chunks, splits on the newline byte (0x0A never occurs inside a UTF-8
 * multi-byte sequence, so splitting raw bytes is safe) and parses each line once, recording its
 * 1-based line number and byte offset. Malformed lines are skipped the way Pi's
 * `loadEntriesFromFile` skips them, and reported as warnings.
 */
import { open } from "node:fs/promises";
import type { EntryLocation, SessionEntry, SessionHeader } from "./types.js";

/** A line Pi would skip, with where it is. */
export interface ReadWarning {
  kind: "malformed-line" | "glued-objects" | "not-an-object" | "truncated-final-line" | "duplicate-header" | "newer-version";
  file: string;
  line: number;
  /** Byte offset of the line start. */
  offset: number;
  /** The first characters of the line (at most 60). */
  excerpt: string;
  message: string;
}

/**
 * A defect of the file as a whole. Read-only commands may go on after `missing-header` and
 * `truncated-final-line`; writing commands refuse on any problem.
 */
export interface ReadProblem {
  kind: "empty" | "not-jsonl" | "missing-header" | "truncated-final-line";
  message: string;
}

/** A parsed session file, before version migration. */
export interface RawSession {
  path: string;
  header: SessionHeader | null;
  /** Every parsed entry after the header, in file order. */
  entries: SessionEntry[];
  /** `locations[i]` is where `entries[i]` sits in the file. */
  locations: EntryLocation[];
  warnings: ReadWarning[];
  problems: ReadProblem[];
  /** File size in bytes and modification time (epoch ms) when read. */
  size: number;
  mtimeMs: number;
  /** False when the last byte is not a newline (Pi adds one on open). */
  endsWithNewline: boolean;
  /** Number of physical lines (a final line without newline counts). */
  lineCount: number;
}

const CHUNK_BYTES = 4 * 1024 * 1024;
const EXCERPT_CHARS = 60;

function excerptOf(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > EXCERPT_CHARS ? `${flat.slice(0, EXCERPT_CHARS)}…` : flat;
}

/**
 * Read and parse a session file.
 *
 * @param path file to read
 * @returns header, entries with locations, per-line warnings and whole-file problems
 * @throws NodeJS.ErrnoException when the file cannot be opened or read (ENOENT, EISDIR, EACCES)
 */
export async function readSessionFile(path: string): Promise<RawSession> {
  const handle = await open(path, "r");
  try {
    const stats = await handle.stat();
    const parser = new LineParser(path);
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    let carry: Buffer | null = null;
    let fileOffset = 0; // byte offset of buffer[0] (or of carry[0] when carrying)
    let lastByte = -1;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      lastByte = buffer[bytesRead - 1];
      let chunk = buffer.subarray(0, bytesRead);
      let chunkStart = fileOffset;
      if (carry) {
        chunk = Buffer.concat([carry, chunk]);
        chunkStart = fileOffset - carry.length;
        carry = null;
      }
      let lineStart = 0;
      let nl = chunk.indexOf(10, lineStart);
      while (nl !== -1) {
        parser.line(chunk, lineStart, nl, chunkStart + lineStart, true);
        lineStart = nl + 1;
        nl = chunk.indexOf(10, lineStart);
      }
      if (lineStart < chunk.length) carry = Buffer.from(chunk.subarray(lineStart));
      fileOffset += bytesRead;
    }
    if (carry && carry.length > 0) parser.line(carry, 0, carry.length, fileOffset - carry.length, false);
    return parser.finish(stats.size, stats.mtimeMs, stats.size === 0 || lastByte === 10);
  } finally {
    await handle.close();
  }
}

/** Parse session text held in memory (tests, `--output` previews). Same rules as {@link readSessionFile}. */
export function parseSessionText(path: string, text: string): RawSession {
  const bytes = Buffer.from(text, "utf8");
  const parser = new LineParser(path);
  let lineStart = 0;
  let nl = bytes.indexOf(10);
  while (nl !== -1) {
    parser.line(bytes, lineStart, nl, lineStart, true);
    lineStart = nl + 1;
    nl = bytes.indexOf(10, lineStart);
  }
  if (lineStart < bytes.length) parser.line(bytes, lineStart, bytes.length, lineStart, false);
  return parser.finish(bytes.length, 0, bytes.length === 0 || bytes[bytes.length - 1] === 10);
}

class LineParser {
  readonly entries: SessionEntry[] = [];
  readonly locations: EntryLocation[] = [];
  readonly warnings: ReadWarning[] = [];
  header: SessionHeader | null = null;
  firstParsedIsHeader: boolean | null = null;
  /** The first line starts with a byte-order mark. */
  bom = false;
  /** Line and kind of the first value Pi would take for the header. */
  firstValue: { line: number; what: string } | null = null;
  lineNo = 0;
  nonBlank = 0;
  parsed = 0;
  truncatedFinal = false;

  constructor(readonly path: string) {}

  line(buf: Buffer, start: number, end: number, offset: number, terminated: boolean): void {
    this.lineNo++;
    let text = buf.toString("utf8", start, end);
    if (text.length > 0 && text.charCodeAt(text.length - 1) === 13) text = text.slice(0, -1);
    if (text.trim() === "") return;
    this.nonBlank++;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      this.reject(text, offset, terminated);
      return;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      // Pi keeps any truthy value as an entry, so one before the header makes the file invalid there.
      if (value && this.firstParsedIsHeader === null) {
        this.firstParsedIsHeader = false;
        this.firstValue = { line: this.lineNo, what: `a JSON ${Array.isArray(value) ? "array" : typeof value}` };
      }
      this.warn("not-an-object", offset, text, "line is valid JSON but not an object; skipped");
      return;
    }
    this.parsed++;
    const record = value as Record<string, unknown>;
    if (this.firstParsedIsHeader === null) {
      this.firstParsedIsHeader = record.type === "session" && typeof record.id === "string";
      this.firstValue = { line: this.lineNo, what: typeof record.type === "string" ? `a ${JSON.stringify(record.type)} entry` : 'an object without a "type"' };
      if (this.firstParsedIsHeader) {
        this.header = record as SessionHeader;
        return;
      }
    } else if (record.type === "session") {
      this.warn("duplicate-header", offset, text, "a second session header; ignored, as Pi ignores it");
      return;
    }
    this.entries.push(record as SessionEntry);
    this.locations.push({ line: this.lineNo, offset });
  }

  private reject(text: string, offset: number, terminated: boolean): void {
    if (!terminated) {
      this.truncatedFinal = true;
      this.warn("truncated-final-line", offset, text, "the final line is cut off mid-object (no newline, not valid JSON); skipped");
      return;
    }
    if (text.charCodeAt(0) === 0xfeff) {
      this.bom = true;
      this.warn("malformed-line", offset, text, "the line starts with a UTF-8 byte-order mark, which Pi cannot parse; skipped");
      return;
    }
    if (/\}\s*\{/.test(text) && looksGlued(text)) {
      this.warn("glued-objects", offset, text, "two JSON objects glued on one line; the line is skipped, as Pi skips it");
      return;
    }
    this.warn("malformed-line", offset, text, "line is not valid JSON; skipped, as Pi skips it");
  }

  private warn(kind: ReadWarning["kind"], offset: number, text: string, message: string): void {
    this.warnings.push({ kind, file: this.path, line: this.lineNo, offset, excerpt: excerptOf(text), message });
  }

  finish(size: number, mtimeMs: number, endsWithNewline: boolean): RawSession {
    const problems: ReadProblem[] = [];
    if (size === 0 || this.nonBlank === 0) {
      problems.push({ kind: "empty", message: "the file is empty: there is no session header and no entry" });
    } else if (this.parsed === 0) {
      problems.push({
        kind: "not-jsonl",
        message: `not a JSONL session: none of its ${this.nonBlank} non-blank line(s) is a JSON object`,
      });
    } else if (!this.header) {
      const first = this.firstValue;
      problems.push({
        kind: "missing-header",
        message: this.bom
          ? "no usable session header: line 1 starts with a UTF-8 byte-order mark (bytes EF BB BF), so Pi cannot parse it " +
            "and refuses the file; remove the first three bytes"
          : `no session header: the first entry (line ${first?.line}, ${first?.what}) ` +
            `should be {"type":"session","id",...}; Pi refuses to open such a file`,
      });
    }
    if (this.truncatedFinal) {
      problems.push({
        kind: "truncated-final-line",
        message: "the final line is cut off mid-object (the file may still be being written)",
      });
    }
    return {
      path: this.path,
      header: this.header,
      entries: this.entries,
      locations: this.locations,
      warnings: this.warnings,
      problems,
      size,
      mtimeMs,
      endsWithNewline,
      lineCount: this.lineNo,
    };
  }
}

/** True when the text splits at a `}{` boundary into two parseable JSON objects. */
function looksGlued(text: string): boolean {
  const re = /\}\s*\{/g;
  // Tool output full of `}{` (Go's struct{}{}, minified code) would make trying every boundary
  // quadratic; glued lines in practice split at one of the first boundaries that closes an object.
  let attempts = 0;
  for (let m = re.exec(text); m !== null && attempts++ < 8; m = re.exec(text)) {
    const cut = m.index + 1;
    try {
      JSON.parse(text.slice(0, cut));
      JSON.parse(text.slice(cut));
      return true;
    } catch {
      // try the next boundary
    }
  }
  return false;
}
