/**
 * Streaming reader for Pi session files.
 *
 * Reads the file in large chunks, splits on the newline byte (0x0A never occurs inside a UTF-8
 * multi-byte sequence, so splitting raw bytes is safe) and parses each line once, recording its
 * 1-based line number and byte offset. Malformed lines are skipped the way Pi's
 * `loadEntriesFromFile` skips them, and reported as warnings.
 */
import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { notRegularFile, socketAsNotRegular } from "../util/files.js";
import type { EntryLocation, SessionEntry, SessionHeader } from "./types.js";

/** A line Pi would skip, with where it is. */
export interface ReadWarning {
  kind: "malformed-line" | "glued-objects" | "not-an-object" | "truncated-final-line" | "duplicate-header" | "newer-version" | "interrupted-write" | "too-deep";
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
  kind: "empty" | "not-jsonl" | "missing-header" | "truncated-final-line" | "line-too-long" | "too-deep";
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
  /**
   * Only when `options.limit` stopped the read before the end: the whole file's size (bytes) when
   * read — `size` is then the bytes read (a write in progress, or unsettled, lies beyond them).
   */
  fileSize?: number;
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

/** Longest line read (bytes): 256 MiB, or `CONDENSE_MAX_LINE_BYTES` (tests). Below V8's 512 MiB string limit. */
export function maxLineBytes(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number(env.CONDENSE_MAX_LINE_BYTES);
  return Number.isSafeInteger(n) && n > 0 ? n : 256 * 1024 * 1024;
}

/** A line under construction across chunks: its pieces are joined once, at its newline. */
class PendingLine {
  parts: Buffer[] = [];
  length = 0;
  start = 0;

  add(piece: Buffer, start: number): void {
    if (this.length === 0) this.start = start;
    this.parts.push(Buffer.from(piece));
    this.length += piece.length;
  }

  take(last: Buffer): Buffer {
    const whole = this.parts.length === 0 ? last : Buffer.concat([...this.parts, last], this.length + last.length);
    this.parts = [];
    this.length = 0;
    return whole;
  }
}

/** Thrown inside the read loop when a line is longer than the limit. */
class LineTooLong {
  constructor(readonly offset: number) {}
}

/**
 * Read and parse a session file, with bounded memory: a line longer than {@link maxLineBytes} is
 * never held whole; reading stops there with a `line-too-long` problem naming its line and offset.
 *
 * @param path file to read (a regular file: a FIFO or device is refused without blocking)
 * @param options.limit read only the first `limit` bytes (a write in progress beyond them)
 * @returns header, entries with locations, per-line warnings and whole-file problems
 * @throws NodeJS.ErrnoException when the file cannot be opened or read (ENOENT, EISDIR, EACCES;
 *   code `ENOTREG` for something that is not a regular file)
 */
export async function readSessionFile(path: string, options: { limit?: number } = {}): Promise<RawSession> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK).catch((error: unknown) => {
    throw socketAsNotRegular(error);
  });
  try {
    const stats = await handle.stat();
    if (stats.isDirectory()) throw Object.assign(new Error("is a directory"), { code: "EISDIR" });
    if (!stats.isFile()) throw notRegularFile();
    const size = Math.min(stats.size, options.limit ?? Number.POSITIVE_INFINITY);
    const parser = new LineParser(path);
    const max = maxLineBytes();
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    const pending = new PendingLine();
    let fileOffset = 0; // byte offset of buffer[0]
    let lastByte = -1;
    try {
      while (fileOffset < size) {
        const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, size - fileOffset), fileOffset);
        if (bytesRead === 0) break;
        lastByte = buffer[bytesRead - 1];
        splitChunk(buffer.subarray(0, bytesRead), fileOffset, pending, parser, max);
        fileOffset += bytesRead;
      }
    } catch (error) {
      if (!(error instanceof LineTooLong)) throw error;
      return parser.tooLong(error.offset, max, stats.size, stats.mtimeMs);
    }
    if (pending.length > 0) {
      const start = pending.start;
      const line = pending.take(Buffer.alloc(0));
      parser.line(line, 0, line.length, start, false);
    }
    const raw = parser.finish(fileOffset, stats.mtimeMs, fileOffset === 0 || lastByte === 10);
    if (stats.size > size) raw.fileSize = stats.size;
    return raw;
  } finally {
    await handle.close();
  }
}

/** Feed the complete lines of one chunk to the parser; keep the unterminated rest pending. */
function splitChunk(chunk: Buffer, chunkStart: number, pending: PendingLine, parser: LineParser, max: number): void {
  let lineStart = 0;
  for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, lineStart)) {
    const start = pending.length > 0 ? pending.start : chunkStart + lineStart;
    if (pending.length + nl - lineStart > max) throw new LineTooLong(start);
    if (pending.length > 0) {
      const line = pending.take(chunk.subarray(lineStart, nl));
      parser.line(line, 0, line.length, start, true);
    } else {
      parser.line(chunk, lineStart, nl, start, true);
    }
    lineStart = nl + 1;
  }
  if (lineStart < chunk.length) {
    const start = pending.length > 0 ? pending.start : chunkStart + lineStart;
    if (pending.length + chunk.length - lineStart > max) throw new LineTooLong(start);
    pending.add(chunk.subarray(lineStart), chunkStart + lineStart);
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
  /** Where the final line that is cut off mid-object starts, when there is one. */
  truncatedFinal: { line: number; offset: number } | null = null;
  tooDeep = false;

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
    if (end - start > 2 * MAX_DEPTH && nestedDeeperThan(buf, start, end, MAX_DEPTH)) {
      this.tooDeep = true;
      this.warn("too-deep", offset, text, `the line nests JSON more than ${MAX_DEPTH} levels deep; condense skips it (it would exhaust the stack)`);
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
      this.truncatedFinal = { line: this.lineNo, offset };
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

  /** The result when reading stopped at a line over the limit: that one problem, nothing else usable. */
  tooLong(offset: number, max: number, size: number, mtimeMs: number): RawSession {
    const raw = this.finish(size, mtimeMs, true);
    raw.problems = [
      {
        kind: "line-too-long",
        message:
          `line ${this.lineNo + 1} (byte ${offset}) is longer than ${max.toLocaleString("en-US")} bytes; ` +
          "condense does not read lines that long (Pi cannot load lines over 512 MiB either)",
      },
    ];
    return raw;
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
    if (this.tooDeep) {
      problems.push({ kind: "too-deep", message: `a line nests JSON more than ${MAX_DEPTH} levels deep (skipped here, but Pi reads it)` });
    }
    if (this.truncatedFinal) {
      problems.push({
        kind: "truncated-final-line",
        message: `the final line (line ${this.truncatedFinal.line}, byte ${this.truncatedFinal.offset}) is cut off mid-object (the file may still be being written)`,
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

/** Deepest JSON nesting condense processes; real sessions stay far below (tool arguments: tens). */
const MAX_DEPTH = 1000;

/**
 * True when the JSON in `buf[start, end)` (already parsed: well-formed) nests arrays/objects more
 * than `limit` deep. Strings are skipped with native searches, so the cost is in the structure.
 */
export function nestedDeeperThan(buf: Buffer, start: number, end: number, limit: number): boolean {
  if (openersAtMost(buf, start, end, limit)) return false;
  let depth = 0;
  for (let i = start; i < end; i++) {
    const b = buf[i];
    if (b === 0x22) {
      let j = buf.indexOf(0x22, i + 1);
      while (j !== -1 && j < end && isEscaped(buf, j)) j = buf.indexOf(0x22, j + 1);
      if (j === -1 || j >= end) return false;
      i = j;
    } else if (b === 0x5b || b === 0x7b) {
      if (++depth > limit) return true;
    } else if (b === 0x5d || b === 0x7d) {
      depth--;
    }
  }
  return false;
}

/**
 * True when `buf[start, end)` holds at most `limit` bytes `{` and `[`, in strings or not: then no
 * nesting goes deeper than `limit` (each level opens with one of them). Counted with native
 * searches, one per bracket — far fewer than the strings {@link nestedDeeperThan} skips one by one
 * (a real session's lines: 47 → 14 ms over the long lines of 100 MB).
 */
function openersAtMost(buf: Buffer, start: number, end: number, limit: number): boolean {
  // Searched within the line only: past its end a search could run to the end of the read chunk.
  const line = buf.subarray(start, end);
  let n = 0;
  for (let j = line.indexOf(0x7b); j !== -1; j = line.indexOf(0x7b, j + 1)) if (++n > limit) return false;
  for (let j = line.indexOf(0x5b); j !== -1; j = line.indexOf(0x5b, j + 1)) if (++n > limit) return false;
  return true;
}

/** The quote at `at` is escaped when an odd number of backslashes precede it. */
function isEscaped(buf: Buffer, at: number): boolean {
  let n = 0;
  for (let k = at - 1; buf[k] === 0x5c; k--) n++;
  return n % 2 === 1;
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
