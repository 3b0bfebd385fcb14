/**
 * What in a tool output is information a later turn needs (docs/design.md "Summary quality"):
 * the reason a call failed, error lines, test and error totals, exit codes, and the file paths it
 * names. One definition, read by the deterministic summarizer (which keeps these) and by the
 * quality figure (which checks they were kept). Texts are read without control characters.
 */
import { stripControl } from "../util/text.js";

/** Tools whose successful output is a file's contents: code and prose, not results. */
const READ_TOOLS = new Set(["read", "read_file", "view", "cat", "open", "fetch", "web_fetch", "webfetch"]);

/** True for a tool whose successful output is a file's contents (`read`, `view`, …). */
export function isFileRead(toolName: string): boolean {
  return READ_TOOLS.has(toolName.toLowerCase());
}

/** An optional place before a message: `src/a.ts:3:7: `, `src/a.ts(3,7): `, a bullet, `1) `. */
const PLACE = String.raw`(?:[\w./@~+-]+(?::\d+(?::\d+)?|\(\d+,\d+\)):?\s*|[-*•>]\s+|\d+\)\s+)?`;

/**
 * One short prefix a log or a numbered listing puts before a line's message, with the spaces (and
 * a ` - `) after it: a row or line number with its word and colon (`row 12:`, `line 7:`, `L42:`),
 * or a timestamp, bracketed or not (`2024-05-01T12:00:03.120Z`, `2024-05-01 12:00:03,123`,
 * `2024/05/01 12:00:03`, `[12:00:03]`). Every part has a bounded length, so the match costs a few
 * steps whatever follows (a prefix whose parts could end at any digit made long digit runs
 * quadratic). Bare numbers (`3:` of grep -n) and brackets (`[main]`) are not prefixes: listings of
 * code (`3:  ValidationError,`) and tags (`[INFO] Error budget`) would read as errors.
 */
const LOG_PREFIX =
  /^(?:(?:[Rr]ow|ROW|[Ll]ine|LINE|L) ?\d{1,9}:|\[?(?:\d{4}[-/]\d{2}[-/]\d{2}(?:[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?)?|\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?)(?:Z|[+-]\d{2}:?\d{2})?\]?:?)[ \t]+(?:-[ \t]+)?/;

/**
 * A line that reports an error: after an optional place it starts with an error's name or kind —
 * `TypeError: …`, `error TS2322: …`, `error: …`, `Error: …`, `npm ERR! …`, `fatal: …`, `panic: …`,
 * `FAIL …`, `Traceback …`, `✗ …` — or it says a file, command or permission was missing. Source
 * code that merely mentions errors (`throw new Error(…)`, `isError: true`) is not one. Also after
 * one {@link LOG_PREFIX log prefix} (`row 12: ERROR …`, `2024-05-01 12:00:03 ERROR …`).
 */
const ERROR_LINE = new RegExp(
  `^${PLACE}(?:[A-Z]\\w*(?:Error|Exception)\\b(?![(=.])|[Ee]rror(?:\\[\\w+\\])?(?:\\s+TS\\d+)?:|Error\\b(?![(=.])|ERROR\\b|npm ERR!|ERR!|[Ff]atal\\b:|FATAL\\b|[Pp]anic\\b:|PANIC\\b|FAIL(?:ED)?\\b|Failed\\b|Traceback\\b|[✗✘×]\\s)`,
);
/** Messages that report a failure wherever they stand in a line. */
const FAILURE_ANYWHERE = /No such file or directory|command not found|Permission denied|Cannot find module/i;

/** A line that totals a run: `Tests: 1 failed, 3 passed`, `Found 2 errors`, `12 passing`, `FAILED (failures=2)`. */
const TOTALS_LINE = /\b\d+ (?:tests? )?(?:passed|failed|failing|passing|skipped|errors?|warnings?|problems?)\b|\b(?:failures|errors)=\d+|\bTests?:\s+\d+/i;

/** An exit status as tools print it: `exit code 2`, `exited with code 1`, `Command exited with code 1`, `exit status 127`. */
const EXIT = /\b(?:exit(?:ed)?(?: with)?(?: code| status)|exit code:?|Command exited with code)\s*[:=]?\s*(-?\d+)/gi;

/**
 * A file path: folders and a file name with an extension (`src/a.ts`, `./x.js`, `/etc/hosts.conf`,
 * `~/.pi/agent/settings.json`, `src/a.ts(3,7)` as a compiler prints it), not inside a URL. As one
 * search over a text:
 * `(?:^|[\s"'\`(=[,:<])((?:\.{1,2}\/|~\/|\/)?(?:[\w@.+-]+\/)+[\w@+-]+(?:\.[A-Za-z]\w{0,7})+)(?=$|[\s"'\`(),:;\]>])`.
 * {@link filePaths} finds the same paths without running it at every position: a path is made
 * only of {@link isPathChar path characters}, and the characters allowed before and after it are
 * none of them, so a path is always a whole run of path characters; the run is tested whole.
 */
const PATH = /^(?:\.{1,2}\/|~\/|\/)?(?:[\w@.+-]+\/)+[\w@+-]+(?:\.[A-Za-z]\w{0,7})+$/;
/** What may stand just before a path (or the text's start). */
const BEFORE_PATH = /[\s"'`(=[,:<]/;
/** What may stand just after a path (or the text's end). */
const AFTER_PATH = /[\s"'`(),:;\]>]/;

/** Per ASCII code: 1 for a character a path may hold (`\w`, `@`, `.`, `+`, `-`, `/`, `~`). */
const PATH_CHARS = new Uint8Array(128);
for (const c of "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@.+-/~") PATH_CHARS[c.charCodeAt(0)] = 1;

/** True when the UTF-16 code unit `code` may be part of a path (see {@link PATH_CHARS}). */
function isPathChar(code: number): boolean {
  return code < 128 && PATH_CHARS[code] === 1;
}

/** True for a line that reports an error (see {@link ERROR_LINE}). */
export function isErrorLine(line: string): boolean {
  const t = line.trim();
  if (ERROR_LINE.test(t) || FAILURE_ANYWHERE.test(t)) return true;
  const prefix = LOG_PREFIX.exec(t);
  return prefix !== null && ERROR_LINE.test(t.slice(prefix[0].length));
}

/** True for a line that totals tests, errors or warnings. */
export function isTotalsLine(line: string): boolean {
  return TOTALS_LINE.test(line);
}

/** The last exit status an output prints, or undefined. */
export function exitStatus(text: string): string | undefined {
  let last: string | undefined;
  // `exec` on the shared pattern from 0 (what `matchAll` does on a copy it makes per call).
  EXIT.lastIndex = 0;
  for (let m = EXIT.exec(text); m !== null; m = EXIT.exec(text)) last = m[1];
  return last;
}

/** Every exit status an output prints, in order, each once. */
export function exitStatuses(text: string): string[] {
  return [...new Set([...text.matchAll(EXIT)].map((m) => m[1]))];
}

/**
 * The distinct file paths an output names, in order of first appearance.
 * @param limit stop once this many are found (the first `limit` of the whole list; default all)
 */
export function filePaths(text: string, limit = Number.POSITIVE_INFINITY): string[] {
  const out = new Set<string>();
  // Every path has a folder: each run of path characters holding a slash, from left to right.
  for (let slash = text.indexOf("/"); slash !== -1 && out.size < limit; ) {
    let start = slash;
    while (start > 0 && isPathChar(text.charCodeAt(start - 1))) start--;
    let end = slash + 1;
    while (end < text.length && isPathChar(text.charCodeAt(end))) end++;
    if ((start === 0 || BEFORE_PATH.test(text[start - 1])) && (end === text.length || AFTER_PATH.test(text[end]))) {
      const run = text.slice(start, end);
      if (PATH.test(run) && !run.includes("//")) out.add(run);
    }
    slash = text.indexOf("/", end);
  }
  return [...out];
}

/**
 * The reason a failed call gives when no line of it reads as an error line (those are kept as
 * such): its first non-empty line, and the next one too when the first only announces it (ends
 * with `:`, as `Validation failed for tool "edit":` does).
 */
export function failureReason(text: string): string[] {
  const lines = stripControl(text)
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
  if (lines.length === 0 || lines.some(isErrorLine)) return [];
  return lines[0].endsWith(":") && lines.length > 1 ? [lines[0], lines[1]] : [lines[0]];
}
