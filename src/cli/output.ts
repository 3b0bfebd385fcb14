/**
 * Where output goes (docs/design.md §2): data to stdout, progress and warnings to stderr; colors
 * only on a TTY (chalk honors NO_COLOR / FORCE_COLOR); spinners only on a TTY stderr and never
 * with --json; tables with cli-table3.
 *
 * Terminal safety (issue "Crash-proof and hostile-input-proof"): on a stream that is a terminal,
 * and unless `--raw`, every control character a terminal would act on is shown escaped (`\e`,
 * `\u009b`, …) — whatever its source: stored tool output, a file name, an error message. condense's
 * own colours survive because the chalk instances given out here mark their escape sequences with
 * a per-process random marker that no input can contain; only marked sequences are turned back into
 * real ones. `--json` on a terminal escapes the characters `JSON.stringify` leaves raw (DEL, C1,
 * U+2028/9, bidi controls) as `\uXXXX`, so the document parses to the same value. Pipes and files
 * get the bytes exactly as stored.
 */
import { randomBytes } from "node:crypto";
import { Chalk, type ChalkInstance } from "chalk";
import Table from "cli-table3";
import stringWidth from "string-width";
import { formatLabel, type SessionLabel } from "../session/label.js";
import { jsonPieces } from "../util/json.js";
import { cropAtWord } from "../util/text.js";
import { fittedTable, outputWidth, type TableLayout } from "./table.js";

export interface OutputOptions {
  json?: boolean;
  quiet?: boolean;
  /** Print stored bytes as they are, even to a terminal. */
  raw?: boolean;
}

/** Characters a terminal acts on: C0 but tab and newline, a CR not before LF, DEL, C1, line/paragraph separators, bidi overrides. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]|\r(?!\n)/g;
const NAMED: Record<string, string> = { "\x1b": "\\e", "\x07": "\\a", "\b": "\\b", "\f": "\\f", "\v": "\\v", "\0": "\\0", "\r": "\\r" };
const hex4 = (ch: string) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** Show control characters as escapes (`\e`, `\r`, `\u009b`); tab, newline and CRLF stay. */
export function escapeControls(text: string): string {
  return text.replace(CONTROL, (ch) => NAMED[ch] ?? hex4(ch));
}

/** JSON text for a terminal: the characters JSON.stringify leaves raw become `\uXXXX` (still the same JSON value). */
export function escapeJsonForTerminal(json: string): string {
  return json.replace(/[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, hex4);
}

/**
 * A chalk instance whose output marks its escape sequences with `marker` instead of ESC, and
 * whose arguments are escaped first: after {@link Output}'s cleaning, only its sequences are real.
 */
function markedChalk(chalk: ChalkInstance, marker: string): ChalkInstance {
  // The proxies stand on fresh targets: chalk caches builders as non-configurable properties,
  // which a proxy over chalk itself could not replace.
  const wrap = (real: object): object =>
    new Proxy(() => undefined, {
      get(_target, prop) {
        const value = Reflect.get(real, prop);
        return typeof value === "function" ? wrap(value) : value;
      },
      apply(_target, self, args: unknown[]) {
        const result = Reflect.apply(
          real as (...a: unknown[]) => unknown,
          self,
          args.map((a) => (typeof a === "string" ? escapeControls(a) : a)),
        );
        if (typeof result === "string") return result.replaceAll("\x1b[", marker);
        return typeof result === "function" ? wrap(result) : result;
      },
    });
  return wrap(chalk) as ChalkInstance;
}

/** Streams and switches shared by every command. */
export class Output {
  readonly json: boolean;
  readonly quiet: boolean;
  /** Stored bytes as they are, even on a terminal (`--raw`). */
  readonly raw: boolean;
  /** Colors for stdout. */
  readonly c: ChalkInstance;
  /** Colors for stderr. */
  readonly ce: ChalkInstance;
  /** Whether stdout / stderr get control characters escaped (a terminal, without --raw). */
  readonly escapeOut: boolean;
  readonly escapeErr: boolean;
  /** Every warning given, in order (printed or not), for `--json` documents. */
  readonly warnings: string[] = [];
  /** Stands for ESC "[" in text styled by {@link c} / {@link ce} until it is written. */
  private readonly marker = `\ue000${randomBytes(8).toString("hex")}[`;

  constructor(
    options: OutputOptions,
    readonly stdout: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout,
    readonly stderr: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
  ) {
    this.json = !!options.json;
    this.quiet = !!options.quiet;
    this.raw = !!options.raw;
    this.escapeOut = !!stdout.isTTY && !this.raw;
    this.escapeErr = !!stderr.isTTY && !this.raw;
    const c = new Chalk({ level: colorLevel(stdout) });
    const ce = new Chalk({ level: colorLevel(stderr) });
    this.c = this.escapeOut ? markedChalk(c, this.marker) : c;
    this.ce = this.escapeErr ? markedChalk(ce, this.marker) : ce;
  }

  /** Text as it may go to a stream: escaped on a terminal, with this Output's own styling made real. */
  private clean(text: string, escaping: boolean): string {
    return escaping ? escapeControls(text).replaceAll(this.marker, "\x1b[") : text;
  }

  /** Write data to stdout (a newline is added). */
  print(text: string): void {
    this.stdout.write(this.clean(text.endsWith("\n") ? text : `${text}\n`, this.escapeOut));
  }

  /** One JSON value on one line of stdout (NDJSON), escaped on a terminal as {@link printJson} escapes. */
  printLine(value: unknown): void {
    const line = `${JSON.stringify(value)}\n`;
    this.stdout.write(this.escapeOut ? escapeJsonForTerminal(line) : line);
  }

  /**
   * Text given in pieces, as {@link print} would write their concatenation (a newline added when it
   * does not end with one), in chunks of about 1 MiB. A piece must not end between `\r` and `\n`
   * nor inside a styled span (a transcript's message does neither).
   */
  printPieces(pieces: Iterable<string>): void {
    const last = writeChunks(this.stdout, pieces, this.escapeOut ? (text) => this.clean(text, true) : undefined);
    if (!last.endsWith("\n")) this.stdout.write("\n");
  }

  /** Write text to stdout exactly as given (no newline added; escaped on a terminal). */
  write(text: string): void {
    this.stdout.write(this.clean(text, this.escapeOut));
  }

  /**
   * One JSON document on stdout: `JSON.stringify(value, null, 2)` and a newline, written in chunks
   * of about 1 MiB so that a large document is never one string.
   */
  printJson(value: unknown): void {
    writeChunks(this.stdout, jsonPieces(value), this.escapeOut ? escapeJsonForTerminal : undefined);
    this.stdout.write("\n");
  }

  /** A warning on stderr, unless --quiet. */
  warn(text: string): void {
    this.warnings.push(text);
    if (!this.quiet) this.stderr.write(this.clean(`${this.ce.yellow("warning:")} ${text}\n`, this.escapeErr));
  }

  /** An informational line on stderr, unless --quiet or --json. */
  info(text: string): void {
    if (!this.quiet && !this.json) this.stderr.write(this.clean(`${text}\n`, this.escapeErr));
  }

  /** An error on stderr (always shown). */
  error(text: string): void {
    this.stderr.write(this.clean(`${this.ce.red("error:")} ${text}\n`, this.escapeErr));
  }

  /**
   * A spinner on a TTY stderr (not with --json or --quiet); otherwise null. `ora` is loaded on
   * first use, so commands that never show one do not pay for it at start-up. A terminal that
   * reports 0 columns (e.g. a pty without a size) gets none: ora would count its lines as infinite.
   */
  spinner(text: string): Spinner | null {
    if (this.json || this.quiet || !this.stderr.isTTY || (this.stderr as { columns?: number }).columns === 0) return null;
    return new Spinner(text, this.stderr);
  }

  /** Columns a table on stdout may take (see `table.ts` `outputWidth`). */
  get width(): number {
    return outputWidth(this.stdout as { isTTY?: boolean; columns?: number });
  }

  /** A cell as the table lays it out: on a terminal, escaped, with this Output's styling made real (so widths are right). */
  private cell(value: string): string {
    return this.escapeOut ? escapeControls(value).replaceAll(this.marker, "\x1b[") : value;
  }

  /** Table text as {@link print} takes it: on a terminal, the styling marked again. */
  private laidOut(text: string): string {
    return this.escapeOut ? text.replaceAll("\x1b[", this.marker) : text;
  }

  /**
   * The first of `layouts` that fits {@link width} (`table.ts` `fittedTable`), header cells bold on a
   * TTY, cells escaped as in {@link table}.
   * @returns the table and the index of the layout printed
   */
  fitted(layouts: TableLayout[]): { text: string; layout: number } {
    const prepared = layouts.map((l) => ({ ...l, rows: l.rows.map((r) => r.map((v) => this.cell(v))) }));
    const t = fittedTable(prepared, this.width, (h) => this.cell(this.c.bold(h)));
    return { text: this.laidOut(t.text), layout: t.layout };
  }

  /**
   * A table rendered to a string; header cells are bold on a TTY. On a terminal, cells are escaped
   * before the layout (so widths are right) and this Output's styling is marked again after it.
   */
  table(head: string[], rows: (string | number)[][], align?: ("left" | "right")[]): string {
    const cell = (value: string): string => (this.escapeOut ? escapeControls(value).replaceAll(this.marker, "\x1b[") : value);
    const table = new Table({
      head: head.map((h) => cell(this.c.bold(h))),
      style: { head: [], border: [], compact: true },
      ...(align ? { colAligns: align } : {}),
    });
    for (const row of rows) table.push(row.map((v) => (typeof v === "number" ? v.toLocaleString("en-US") : cell(v))));
    const text = table.toString();
    return this.escapeOut ? text.replaceAll("\x1b[", this.marker) : text;
  }
}

/** Bytes per write of {@link writeChunks}. */
const CHUNK_BYTES = 1 << 20;

/**
 * Write text given in pieces as UTF-8, gathered into buffers of about 1 MiB (each piece encoded
 * once, straight into the buffer; a piece larger than a buffer is written alone).
 * @param transform applied to each piece first (escaping for a terminal)
 * @returns the last piece written ("" when there was none)
 */
function writeChunks(stream: NodeJS.WritableStream, pieces: Iterable<string>, transform?: (text: string) => string): string {
  let buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  let used = 0;
  let last = "";
  const flush = () => {
    if (used === 0) return;
    stream.write(buffer.subarray(0, used));
    // A stream that took the bytes at once (a file or pipe on Linux) holds nothing back: the buffer
    // is free again. One that queued them keeps the buffer: take a fresh one.
    if ((stream as { writableLength?: number }).writableLength !== 0) buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    used = 0;
  };
  for (const piece of pieces) {
    const text = transform ? transform(piece) : piece;
    if (text === "") continue;
    last = text;
    // At most 3 bytes per UTF-16 unit.
    if (used + text.length * 3 > CHUNK_BYTES) flush();
    if (text.length * 3 > CHUNK_BYTES) stream.write(text);
    else used += buffer.write(text, used);
  }
  flush();
  return last;
}

function colorLevel(stream: { isTTY?: boolean }): 0 | 1 | 2 | 3 {
  const force = process.env.FORCE_COLOR;
  if (force !== undefined && force !== "0" && force !== "false") return force === "2" ? 2 : force === "3" ? 3 : 1;
  if ("NO_COLOR" in process.env && process.env.NO_COLOR !== "") return 0;
  if (force === "0" || force === "false") return 0;
  return stream.isTTY ? 1 : 0;
}

/**
 * Columns a spinner line leaves free at its end: the terminal echoes Ctrl-C as `^C` where the cursor
 * is, and a line that the echo wraps is two lines, of which ora clears only the last.
 */
export const SPINNER_SPARE_COLUMNS = 3;

/**
 * The spinner text cut from the right (`…`) so that frame, space and text stay
 * {@link SPINNER_SPARE_COLUMNS} short of `columns`.
 */
export function spinnerText(text: string, columns: number): string {
  return cutToColumns(text, Math.max(10, columns - 2 - SPINNER_SPARE_COLUMNS), "end");
}

/**
 * `text` cut with `…` to at most `columns` terminal columns (wide characters count 2, as
 * string-width measures them), dropping characters from its `end` or its `start`.
 */
export function cutToColumns(text: string, columns: number, from: "start" | "end"): string {
  if (stringWidth(text) <= columns) return text;
  const chars = [...text];
  if (from === "start") chars.reverse();
  const kept: string[] = [];
  let width = 1; // the ellipsis
  for (const c of chars) {
    const w = stringWidth(c);
    if (width + w > columns) break;
    kept.push(c);
    width += w;
  }
  return from === "end" ? `${kept.join("")}…` : `…${kept.reverse().join("")}`;
}

/** Least time between two frames drawn because the text changed (ms); ora's own timer draws the rest. */
const REDRAW_MS = 50;

/**
 * A progress line backed by `ora`, loaded lazily; `text` may be set before it has loaded. A new
 * text is drawn at once (at most every {@link REDRAW_MS}), not only on ora's timer: work that keeps
 * the event loop busy between files would otherwise leave an old count on screen.
 */
export class Spinner {
  private ora: { text: string; stop(): unknown; start(): unknown; clear(): unknown; render(): unknown } | null = null;
  private stopped = false;
  private current: string;
  private readonly columns: number;
  private drawnAt = 0;
  /**
   * Settles once ora is loaded and the line drawn (or the spinner stopped first). Loading ora takes
   * several turns of the event loop; work started before it settles can delay it to its end.
   */
  readonly ready: Promise<void>;

  constructor(text: string, stream: NodeJS.WritableStream) {
    this.columns = (stream as { columns?: number }).columns || 80;
    this.current = spinnerText(escapeControls(text), this.columns);
    this.ready = import("ora").then(({ default: ora }) => {
      if (this.stopped) return;
      // discardStdin off: ora's raw-mode stdin only turns Ctrl-C back into SIGINT while something reads
      // stdin, and nothing does here — with it on, Ctrl-C would be swallowed.
      this.ora = ora({ text: this.current, stream: stream as NodeJS.WritableStream & { isTTY: boolean }, discardStdin: false });
      this.ora.start();
      this.drawnAt = Date.now();
    });
  }

  get text(): string {
    return this.current;
  }

  set text(value: string) {
    this.setText(value, true);
  }

  /**
   * A new text, drawn at once when `drawNow` (and the last frame is {@link REDRAW_MS} old), else on
   * ora's next tick — for a state about to change again (a file done, the next not yet started).
   */
  setText(value: string, drawNow: boolean): void {
    this.current = spinnerText(escapeControls(value), this.columns);
    if (!this.ora || this.stopped) return; // stopped: a late update must not draw the line again
    this.ora.text = this.current;
    const now = Date.now();
    if (drawNow && now - this.drawnAt >= REDRAW_MS) {
      this.ora.render();
      this.drawnAt = now;
    }
  }

  stop(): void {
    this.stopped = true;
    this.ora?.stop();
  }

  /** Erase the line (before printing something else on stderr). */
  clear(): void {
    this.ora?.clear();
  }

  /** Draw the line again after {@link clear} (not once stopped). */
  render(): void {
    if (!this.stopped) this.ora?.render();
  }
}

/**
 * Short, unique labels for session paths: the file name, with as many parent folders as it takes
 * to tell two sessions apart (`a/s.jsonl` and `b/s.jsonl`).
 */
export function displayNames(paths: string[]): string[] {
  const parts = paths.map((p) => p.split(/[\\/]/).filter((x) => x !== ""));
  const depth = paths.map(() => 1);
  const label = (i: number) => parts[i].slice(-depth[i]).join("/");
  for (let round = 0; round < 64; round++) {
    const seen = new Map<string, number[]>();
    paths.forEach((_, i) => {
      const l = label(i);
      seen.set(l, [...(seen.get(l) ?? []), i]);
    });
    let changed = false;
    for (const group of seen.values()) {
      if (group.length < 2) continue;
      for (const i of group) {
        if (depth[i] < parts[i].length) {
          depth[i]++;
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  return paths.map((_, i) => label(i));
}

/**
 * How each session is shown in a table: `<short id> <date> <name or first prompt>`; the file's
 * shortest unique name stands in for the short id when that is missing or shared by two rows (a
 * file and its migrated copy).
 */
export function sessionLabels(rows: { session: string; label?: SessionLabel }[]): string[] {
  const names = displayNames(rows.map((r) => r.session));
  const count = new Map<string, number>();
  for (const r of rows) if (r.label?.shortId) count.set(r.label.shortId, (count.get(r.label.shortId) ?? 0) + 1);
  return rows.map((r, i) => {
    if (!r.label) return names[i];
    const unique = r.label.shortId !== "" && count.get(r.label.shortId) === 1;
    return formatLabel(r.label, unique ? undefined : names[i]);
  });
}

/** Words of `text` on lines of at most `width` terminal columns (a word longer than that stands alone). */
export function wrapWords(text: string, width: number): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line !== "" && stringWidth(line) + 1 + stringWidth(word) > width) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  if (line !== "") lines.push(line);
  return lines.join("\n");
}

/** `text` on one line of at most `width` terminal columns, cut at a word boundary with `…`. */
export function fitLine(text: string, width: number): string {
  if (stringWidth(text) <= width) return text;
  let cut = cropAtWord(text, width);
  while (cut.length > 1 && stringWidth(cut) > width) cut = cropAtWord(cut, cut.length - 1);
  return cut;
}
