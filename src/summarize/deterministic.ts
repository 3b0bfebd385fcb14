/**
 * The deterministic summarizer (docs/design.md §6 step 6, "Summary quality"): no model, no network,
 * no key. Per tool call one labelled bullet with the tool, its key argument, status, exit code and
 * size, then what a later turn needs, chosen for information (`facts.ts`), not position: the reason
 * of a failure, error lines, totals, the file paths the output names, and for searches a few
 * matches. Lines are copied without control characters and cut only between words. The answer
 * stays shorter than the outputs it replaces: what it keeps is taken by importance (reasons, then
 * errors, totals, paths, matches), each kind spread over the calls, until the room is used.
 */
import { cropAtWord, groupDigits, stripControl } from "../util/text.js";
import { exitStatus, failureReason, filePaths, isErrorLine, isFileRead, isTotalsLine } from "./facts.js";
import type { Summarizer, SummaryBatch, SummaryCall, SummarizerResult } from "./types.js";

export { isFileRead };

const MAX_LINE_CHARS = 160;
const MAX_ARG_CHARS = 160;
const MAX_ERROR_LINES = 80;
const MAX_TOTALS_LINES = 3;
const MAX_PATHS = 60;
const MAX_MATCH_LINES = 3;
/** An output this short is quoted whole on its call's line (newlines as ⏎). */
const SHORT_OUTPUT_CHARS = 120;
const SHORT_OUTPUT_LINES = 3;
/** Room left for the footer and the recovery hint the summary may get later. */
const FOOTER_ALLOWANCE = 170;
const FOOTER_PER_CALL = 6;

/** What a call acted on, most telling first; a pattern or query is followed by the path it searched. */
const KEY_ARGS = ["command", "cmd", "pattern", "query", "url", "glob", "path", "file_path", "filePath", "file"];
const SEARCH_ARGS = new Set(["pattern", "query", "glob"]);
const PATH_ARGS = ["path", "file_path", "filePath", "file"];
/** Lines that only decorate (rules, box drawing). */
const DECORATION = /^[\s\-=_*#~⎯─━│┃┌┐└┘├┤┬┴┼.]*$/;
/** A search hit: `path:line: text` or `path:line:col: text`. */
const MATCH = /^[\w./@~+-]+:\d+(?::\d+)?[:-]\s?\S/;

/** One line on one line: control characters gone, whitespace runs as one space, no leading bullet. */
function clean(line: string): string {
  return stripControl(line)
    .replace(/\s+/g, " ")
    .trim()
    .replace(/^[-*•]\s+/, "");
}

/** The argument that says what a call did: a path, command, pattern, query or URL. */
export function keyArgument(args: unknown): string | undefined {
  if (!args || typeof args !== "object") return undefined;
  const a = args as Record<string, unknown>;
  // The first line that says something: a shell comment (`# Test 1: …`) only when nothing else does.
  const str = (name: string) => {
    const v = a[name];
    if (typeof v !== "string") return undefined;
    const lines = v.split("\n").filter((l) => l.trim() !== "");
    const first = clean((name === "command" || name === "cmd" ? lines.find((l) => !l.trim().startsWith("#")) : undefined) ?? lines[0] ?? "");
    return first !== "" ? first : undefined;
  };
  let primary: string | undefined;
  let value: string | undefined;
  for (const name of KEY_ARGS) {
    value = str(name);
    if (value !== undefined) {
      primary = name;
      break;
    }
  }
  if (primary !== undefined && value !== undefined) {
    const where = SEARCH_ARGS.has(primary) ? PATH_ARGS.map(str).find((v) => v !== undefined) : undefined;
    return cropAtWord(where ? `${value} in ${where}` : value, MAX_ARG_CHARS);
  }
  const first = Object.values(a).find((v) => typeof v === "string" && v.trim() !== "") as string | undefined;
  return first ? cropAtWord(clean(first.split("\n")[0]), MAX_ARG_CHARS) : undefined;
}

function lineCount(text: string): number {
  if (text === "") return 0;
  let n = 1;
  for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) n++;
  return text.endsWith("\n") ? n - 1 : n;
}

/** What one call's bullet may keep, by kind, most important kind first. */
export interface CallNotes {
  reason: string[];
  errors: string[];
  totals: string[];
  paths: string[];
  matches: string[];
}

const KINDS = ["reason", "errors", "totals", "paths", "matches"] as const;

/** Notes that keep nothing (what {@link callNotes} gives for an empty output). */
const noNotes = (): CallNotes => ({ reason: [], errors: [], totals: [], paths: [], matches: [] });

/**
 * Everything worth keeping from one output, verbatim (cut at a word boundary), without repeats:
 * a failure's reason, error lines, totals, file paths (not of a file read's contents), and for
 * search output its first matches. The contents of a successful file read keep nothing.
 * @param stripped the output without control characters, when the caller has it (`stripControl`)
 */
export function callNotes(call: SummaryCall, stripped?: string): CallNotes {
  const notes = noNotes();
  const text = stripped ?? stripControl(call.resultText);
  if (text.trim() === "") return notes;
  const seen = new Set<string>();
  const keep = (list: string[], line: string, max: number) => {
    const t = cropAtWord(clean(line), MAX_LINE_CHARS);
    if (t === "" || seen.has(t) || list.length >= max) return;
    seen.add(t);
    list.push(t);
  };
  if (call.isError) for (const line of failureReason(text)) keep(notes.reason, line, 2);
  if (isFileRead(call.toolName) && !call.isError) return notes;
  const lines = text.split("\n").filter((l) => !DECORATION.test(l));
  for (const line of lines) {
    if (isErrorLine(line)) keep(notes.errors, line, MAX_ERROR_LINES);
    else if (isTotalsLine(line)) keep(notes.totals, line, MAX_TOTALS_LINES);
  }
  const searched = lines.filter((l) => MATCH.test(l));
  if (searched.length * 2 >= lines.length) for (const line of searched) keep(notes.matches, line, MAX_MATCH_LINES);
  notes.paths = filePaths(text, MAX_PATHS);
  return notes;
}

/** The lines a call keeps that are not the header: for compatibility, every kind but paths, in order. */
export function notableLines(call: SummaryCall): string[] {
  const n = callNotes(call);
  return [...n.reason, ...n.errors, ...n.totals, ...n.matches];
}

/** A short output, whole, on one line (lines joined by ⏎), or undefined when it is not short. */
function shortOutput(call: SummaryCall, stripped: string): string | undefined {
  if (call.spilledBytes !== undefined) return undefined;
  const text = stripped.trim();
  if (text === "" || text.length > SHORT_OUTPUT_CHARS) return undefined;
  const lines = text.split("\n").map((l) => l.replace(/\s+/g, " ").trim());
  return lines.length > SHORT_OUTPUT_LINES ? undefined : lines.filter((l) => l !== "").join(" ⏎ ");
}

/**
 * The line that opens a call's bullet: label, tool, key argument, status, exit code, and either
 * the whole output when it is short or its size.
 */
function header(call: SummaryCall, label: string, short: string | undefined, stripped: string): string {
  const arg = keyArgument(call.args);
  // The last 4,000 characters, stripped (a text without control characters is its own stripped form).
  const tail = call.resultText.slice(-4000);
  const exit = exitStatus(stripped === call.resultText ? tail : stripControl(tail));
  const status = call.isError ? "ERROR" : "OK";
  const lines = lineCount(call.resultText);
  const size =
    call.spilledBytes !== undefined
      ? `spilled, ${groupDigits(call.spilledBytes)} bytes`
      : `${groupDigits(call.resultText.length)} chars, ${groupDigits(lines)} line${lines === 1 ? "" : "s"}`;
  const facts = [status, exit !== undefined ? `exit ${exit}` : undefined, short === undefined ? size : undefined].filter(Boolean).join(", ");
  const what = `${call.toolName}${arg ? ` \`${arg.replace(/`/g, "'")}\`` : ""}`;
  return `- ${label} ${what} — ${facts}${short !== undefined ? `: ${short}` : call.resultText === "" ? " (no output)" : ""}`;
}

/** One call's bullet: the header, its lines, its paths on one line. */
function bullet(head: string, kept: CallNotes): string {
  // Concatenated in loops: spreading and mapping these small lists, empty or not, made the
  // optimized caller deoptimize again and again on their changing array kinds.
  let out = head;
  for (const l of kept.reason) out += `\n  - ${l}`;
  for (const l of kept.errors) out += `\n  - ${l}`;
  for (const l of kept.totals) out += `\n  - ${l}`;
  if (kept.paths.length > 0) out += `\n  - files: ${kept.paths.join(", ")}`;
  for (const l of kept.matches) out += `\n  - ${l}`;
  return out;
}

/** How {@link summarizeDeterministically} labels calls and how much room it leaves. */
export interface DeterministicOptions {
  /** The label each call's bullet starts with (default `[[N:tool]]`, which becomes its ref). */
  label?: (index: number, call: SummaryCall) => string;
  /** Characters kept free for what is added later (default: room for the summary footer and the recovery hint). */
  reserve?: number;
}

/**
 * Summarize a batch without a model.
 * @returns labelled markdown bullets, at most the raw size minus the reserve when possible
 */
export function summarizeDeterministically(batch: SummaryBatch, options: DeterministicOptions = {}): string {
  const label = options.label ?? ((i: number, c: SummaryCall) => `[[${i + 1}:${c.toolName}]]`);
  const raw = batch.calls.reduce((n, c) => n + c.resultText.length, 0);
  let room = raw - (options.reserve ?? FOOTER_ALLOWANCE + FOOTER_PER_CALL * batch.calls.length);
  // Each output without control characters, once.
  const stripped = batch.calls.map((c) => stripControl(c.resultText));
  const shorts = batch.calls.map((c, i) => shortOutput(c, stripped[i]));
  const heads = batch.calls.map((c, i) => header(c, label(i, c), shorts[i], stripped[i]));
  // A short output is quoted whole in its header: nothing more to keep.
  const notes = batch.calls.map((c, i) => (shorts[i] === undefined ? callNotes(c, stripped[i]) : noNotes()));
  const kept: CallNotes[] = batch.calls.map(noNotes);
  room -= heads.reduce((n, h) => n + h.length, 0) + heads.length - 1;
  // Kind by kind; inside a kind, the k-th item of every call before the (k+1)-th of any.
  for (const kind of KINDS) {
    // A reduce, not Math.max(...list): a chain may hold more calls than a call takes arguments.
    const longest = notes.reduce((n, x) => Math.max(n, x[kind].length), 0);
    for (let k = 0; k < longest; k++) {
      for (let i = 0; i < notes.length; i++) {
        const item = notes[i][kind][k];
        if (item === undefined) continue;
        // A kept line costs "\n  - " and itself; a path ", " and itself, the first one "\n  - files: ".
        const cost = kind === "paths" ? item.length + (kept[i].paths.length === 0 ? 11 : 2) : item.length + 5;
        if (cost > room) continue;
        kept[i][kind].push(item);
        room -= cost;
      }
    }
  }
  let out = "";
  for (let i = 0; i < heads.length; i++) out += i === 0 ? bullet(heads[i], kept[i]) : `\n${bullet(heads[i], kept[i])}`;
  return out;
}

/**
 * Deterministic fusion of a chain's per-batch summaries: their bullets, in order, without the
 * footers (refs lines and recovery hints: the chain block lists its refs).
 */
export function fuseDeterministically(bodies: string[]): string {
  return bodies
    .map((body) => body.split("\n\n---\n")[0].trim())
    .filter((b) => b !== "")
    .join("\n");
}

/** The deterministic {@link Summarizer}. */
export const deterministicSummarizer: Summarizer = {
  name: "deterministic",
  local: true,
  async summarizeBatch(batch: SummaryBatch): Promise<SummarizerResult> {
    return { ok: true, text: summarizeDeterministically(batch) };
  },
  async fuseRange(bodies: string[]): Promise<SummarizerResult> {
    return { ok: true, text: fuseDeterministically(bodies) };
  },
};
