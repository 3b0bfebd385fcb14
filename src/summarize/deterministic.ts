/**
 * The deterministic summarizer (docs/design.md §6 step 6): no model, no network, no key. Per tool
 * call one labelled bullet with the tool, its key argument, status, exit code and size, then the
 * lines a later turn needs (errors, failing tests, exit codes, file paths) copied verbatim. The
 * answer is kept shorter than the outputs it replaces by dropping notable lines, longest batch
 * member first, until it fits.
 */
import type { Summarizer, SummaryBatch, SummaryCall, SummarizerResult } from "./types.js";

const MAX_NOTABLE_LINES = 6;
const MAX_LINE_CHARS = 200;
const MAX_ARG_CHARS = 160;
/** Room left for the footer the summary gets later (its text plus one ref per call). */
const FOOTER_ALLOWANCE = 170;
const FOOTER_PER_CALL = 6;

/** What a call acted on, most telling first; a pattern or query is followed by the path it searched. */
const KEY_ARGS = ["command", "cmd", "pattern", "query", "url", "glob", "path", "file_path", "filePath", "file"];
const SEARCH_ARGS = new Set(["pattern", "query", "glob"]);
const PATH_ARGS = ["path", "file_path", "filePath", "file"];
/** Kinds of lines worth keeping, most important first. */
const NOTABLE: RegExp[] = [
  /\b[A-Za-z]*(Error|Exception)\b:|\berror(\[\w+\])?:|\bpanic(ked)?\b|\bfatal\b|Traceback|segmentation fault/i,
  /^\s*(FAIL|not ok)\b|✗|✘|×|^\s*● |\bfail(ed|ing|ure)?\b/i,
  /exit(ed)? (with )?(code|status)|exit code/i,
  /\b(errors?|cannot|can't|could not|not found|no such file|denied|refused|timed? ?out|assert(ion)?|warning)\b/i,
  /(?:^|[\s(])(?:\.{0,2}\/)?[\w.@-]+(?:\/[\w.@-]+)*\.[A-Za-z]\w*:\d+/,
];
/** Lines that only decorate (rules, box drawing). */
const DECORATION = /^[\s\-=_*#~⎯─━│┃┌┐└┘├┤┬┴┼.]*$/;
const EXIT_CODE = /(?:exit(?:ed)?(?: with)? (?:code|status)|exit code:?)\s*[:=]?\s*(-?\d+)/i;
const READ_TOOLS = new Set(["read", "read_file", "view", "cat", "open", "fetch", "web_fetch", "webfetch"]);

function crop(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The argument that says what a call did: a path, command, pattern, query or URL. */
export function keyArgument(args: unknown): string | undefined {
  if (!args || typeof args !== "object") return undefined;
  const a = args as Record<string, unknown>;
  const str = (name: string) => {
    const v = a[name];
    return typeof v === "string" && v.trim() !== "" ? v.split("\n")[0].trim() : undefined;
  };
  const primary = KEY_ARGS.find((name) => str(name) !== undefined);
  const value = primary === undefined ? undefined : str(primary);
  if (primary !== undefined && value !== undefined) {
    const where = SEARCH_ARGS.has(primary) ? PATH_ARGS.map(str).find((v) => v !== undefined) : undefined;
    return crop(where ? `${value} in ${where}` : value, MAX_ARG_CHARS);
  }
  const first = Object.values(a).find((v) => typeof v === "string" && v.trim() !== "") as string | undefined;
  return first ? crop(first.split("\n")[0].trim(), MAX_ARG_CHARS) : undefined;
}

function lineCount(text: string): number {
  if (text === "") return 0;
  const n = text.split("\n").length;
  return text.endsWith("\n") ? n - 1 : n;
}

/** Lines worth keeping from an output, verbatim (cropped), without repeats. */
export function notableLines(call: SummaryCall): string[] {
  const text = call.resultText;
  if (text === "") return [];
  if (READ_TOOLS.has(call.toolName.toLowerCase()) && !call.isError) return []; // file contents: path and size say enough
  const lines = text.split("\n");
  const ranked: { rank: number; index: number }[] = [];
  lines.forEach((line, index) => {
    if (DECORATION.test(line)) return;
    const rank = NOTABLE.findIndex((re) => re.test(line));
    if (rank >= 0) ranked.push({ rank, index });
  });
  ranked.sort((a, b) => a.rank - b.rank || a.index - b.index);
  const picked: { index: number; text: string }[] = [];
  const seen = new Set<string>();
  for (const { index } of ranked) {
    if (picked.length >= MAX_NOTABLE_LINES) break;
    const t = crop(lines[index].trim(), MAX_LINE_CHARS);
    if (t === "" || seen.has(t)) continue;
    seen.add(t);
    picked.push({ index, text: t });
  }
  if (picked.length === 0 && call.isError) {
    const first = lines.find((l) => l.trim() !== "");
    if (first) picked.push({ index: 0, text: crop(first.trim(), MAX_LINE_CHARS) });
  }
  return picked.sort((a, b) => a.index - b.index).map((p) => p.text);
}

function header(call: SummaryCall, label: number): string {
  const arg = keyArgument(call.args);
  const exit = EXIT_CODE.exec(call.resultText.slice(-4000));
  const status = call.isError ? "ERROR" : "OK";
  const lines = lineCount(call.resultText);
  const size = `${call.resultText.length.toLocaleString("en-US")} chars, ${lines.toLocaleString("en-US")} line${lines === 1 ? "" : "s"}`;
  const facts = [status, exit ? `exit ${exit[1]}` : undefined, size].filter(Boolean).join(", ");
  return `- [[${label}:${call.toolName}]] ${call.toolName}${arg ? ` \`${arg.replace(/`/g, "'")}\`` : ""} — ${facts}`;
}

/**
 * Summarize a batch without a model.
 * @returns labelled markdown bullets, at most the raw size minus room for the footer when possible
 */
export function summarizeDeterministically(batch: SummaryBatch): string {
  const raw = batch.calls.reduce((n, c) => n + c.resultText.length, 0);
  const budget = raw - FOOTER_ALLOWANCE - FOOTER_PER_CALL * batch.calls.length;
  const heads = batch.calls.map((c, i) => header(c, i + 1));
  const notes = batch.calls.map((c) => notableLines(c));
  const render = () => heads.map((h, i) => [h, ...notes[i].map((l) => `  - ${l}`)].join("\n")).join("\n");
  let text = render();
  while (text.length > budget) {
    // Drop the last notable line of the call that keeps the most.
    let widest = -1;
    for (let i = 0; i < notes.length; i++) if (notes[i].length > 0 && (widest < 0 || notes[i].length > notes[widest].length)) widest = i;
    if (widest < 0) break;
    notes[widest].pop();
    text = render();
  }
  return text;
}

/** Deterministic fusion of a chain's per-batch summaries: their bullets, footers removed, in order. */
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
