/**
 * The human report of `condense run` (docs/design.md §2): one table row per session — fitted to
 * the terminal, compact below 100 columns — then totals, the wall time, what grew on disk, model
 * usage, the batches that stay raw, and a closing count of failed sessions.
 */
import { recoveryCommand } from "../context/vocabulary.js";
import type { RunFileResult } from "../pipeline/run.js";
import { recoveryFromHere } from "../pipeline/target.js";
import { type Output, sessionLabels, wrapWords } from "./output.js";
import { formatBytes, n, percentChange, shortCount } from "./format.js";
import type { Column } from "./table.js";
import { type ContextSize, sentContext } from "../context/size.js";

type Counts = Pick<RunFileResult, "batches" | "calls" | "chains" | "entriesAppended" | "disk" | "dryRun" | "written" | "backup"> & {
  /** What Pi sends for the target the run used: stock Pi's for `pi`, the extension's for `extension`. */
  shown: { before: ContextSize; after: ContextSize };
};

function entriesCell(r: Counts, compact: boolean): string {
  if (r.dryRun) return compact ? `(${n(r.entriesAppended)})` : `would add ${n(r.entriesAppended)}`;
  if (r.written) return `+${n(r.entriesAppended)}`;
  if (r.backup) return "migrated only";
  // Batches whose summary failed are work left undone, not "nothing to do".
  return compact ? "—" : r.batches.failed > 0 ? "not written" : "nothing to do";
}

function contextCell(r: Counts, compact = false): string {
  const { before, after } = r.shown;
  const f = compact ? shortCount : n;
  return `${f(before.tokens)} → ${f(after.tokens)} (${percentChange(before.tokens, after.tokens)})`;
}

/** Outputs spilled, and after them the batches spilled whole when there are any (the legend says so). */
function spilledCell(r: Counts): string {
  return r.batches.spilled > 0 ? `${n(r.calls.spilled)} (${n(r.batches.spilled)})` : n(r.calls.spilled);
}

/** `1,534/12/0` (trivial / deduplicated / oversized), `, 3 failed` after it when batches failed; counts grouped as every other cell's. */
function skippedCell(r: Counts): string {
  const b = r.batches;
  return `${n(b.skippedTrivial)}/${n(b.skippedDeduped)}/${n(b.skippedOversized)}${b.failed ? `, ${n(b.failed)} failed` : ""}`;
}

/** `1 chain block`, `2 chain blocks`, `1,234 stubs`: a count, grouped, and its noun in the number it takes. */
function counted(k: number, one: string, many = `${one}s`): string {
  return `${n(k)} ${k === 1 ? one : many}`;
}

/** The sums over several sessions, shaped like one session's counts. */
function totals(results: RunFileResult[]): Counts {
  const sum = (f: (r: RunFileResult) => number) => results.reduce((t, r) => t + f(r), 0);
  const sent = results.map((r) => sentContext(r.context, r.target));
  const size = (f: (s: Counts["shown"]) => ContextSize) => ({
    messages: sent.reduce((t, s) => t + f(s).messages, 0),
    chars: sent.reduce((t, s) => t + f(s).chars, 0),
    tokens: sent.reduce((t, s) => t + f(s).tokens, 0),
  });
  return {
    batches: {
      captured: sum((r) => r.batches.captured),
      summarized: sum((r) => r.batches.summarized),
      skippedTrivial: sum((r) => r.batches.skippedTrivial),
      skippedDeduped: sum((r) => r.batches.skippedDeduped),
      skippedOversized: sum((r) => r.batches.skippedOversized),
      failed: sum((r) => r.batches.failed),
      spilled: sum((r) => r.batches.spilled),
    },
    calls: { spilled: sum((r) => r.calls.spilled), deduped: 0, protected: 0, summarized: 0, unanswered: 0, swept: 0, ambiguous: 0, keptForErrorPurge: 0 },
    chains: { compressed: sum((r) => r.chains.compressed), rangesSummarized: 0, backfilledCalls: 0, waiting: 0 },
    shown: { before: size((s) => s.before), after: size((s) => s.after) },
    entriesAppended: sum((r) => r.entriesAppended),
    disk: {
      fileBytes: sum((r) => r.disk.fileBytes),
      appendBytes: sum((r) => r.disk.appendBytes),
      sidecarFiles: sum((r) => r.disk.sidecarFiles),
      sidecarBytes: sum((r) => r.disk.sidecarBytes),
      sidecarDirs: [],
    },
    dryRun: results.every((r) => r.dryRun),
    written: results.some((r) => r.written) ? "yes" : null,
  };
}

const WIDE: Column[] = [
  { head: "session", fit: true, minWidth: 24 },
  { head: "batches", align: "right" },
  { head: "summarized", align: "right" },
  { head: "skipped t/d/o", align: "right" },
  { head: "spilled", align: "right" },
  { head: "chains", align: "right" },
  { head: "context ~tokens", align: "right" },
  { head: "file", align: "right" },
  { head: "entries" },
];

const COMPACT: Column[] = [
  { head: "session", fit: true, minWidth: 12 },
  { head: "batches", align: "right" },
  { head: "context ~tokens", align: "right" },
  { head: "added", align: "right" },
];

function wideRow(r: Counts, label: string): string[] {
  const growth = r.disk.appendBytes + r.disk.sidecarBytes;
  return [
    label,
    n(r.batches.captured),
    n(r.batches.summarized),
    skippedCell(r),
    spilledCell(r),
    n(r.chains.compressed),
    contextCell(r),
    growth > 0 ? `+${formatBytes(growth)}` : "—",
    entriesCell(r, false),
  ];
}

function compactRow(r: Counts, label: string): string[] {
  const failed = r.batches.failed ? `!${n(r.batches.failed)}` : "";
  return [label, `${n(r.batches.summarized)}/${n(r.batches.captured)}${failed}`, contextCell(r, true), entriesCell(r, true)];
}

/** The table: wide when the terminal has room, else compact; a totals row for several sessions. */
function runTable(results: RunFileResult[], out: Output, failed: number): { text: string; layout: number } {
  const labels = sessionLabels(results);
  const counts = results.map((r) => ({ ...r, shown: sentContext(r.context, r.target) }));
  const wide = counts.map((r, i) => wideRow(r, labels[i]));
  const compact = counts.map((r, i) => compactRow(r, labels[i]));
  if (results.length + failed > 1) {
    const total = totals(results);
    const idle = results.filter((r) => !r.dryRun && !r.written && r.batches.failed === 0).length;
    const more = [idle ? `${n(idle)} with nothing to do` : "", failed ? `${n(failed)} failed` : ""].filter((x) => x !== "");
    const name = out.c.bold(`total (${n(results.length)}${more.map((x) => `, ${x}`).join("")})`);
    wide.push(wideRow(total, name));
    compact.push(compactRow(total, name));
  }
  return out.fitted([
    { columns: WIDE, rows: wide },
    { columns: COMPACT, rows: compact },
  ]);
}

/** A dry run that would append entries. */
const wouldWrite = (r: Pick<RunFileResult, "dryRun" | "entriesAppended">) => r.dryRun && r.entriesAppended > 0;

/**
 * What grew on disk, one line: the session files (or, with `--output`, the output against its
 * input, which is untouched) and the sidecar folders; for a run that wrote nothing, that nothing
 * was written.
 * @param output the `--output` file, when given
 */
function diskLine(results: RunFileResult[], output?: string): string {
  const t = totals(results);
  const one = results.length === 1;
  if (!t.written && !results.some(wouldWrite)) {
    // --migrate rewrote a file in place (its original is in the backup) and nothing was appended.
    const migrated = results.filter((r) => r.backup).length;
    if (migrated > 0) return `nothing was appended; ${one ? "the session file was" : `${n(migrated)} session files were`} rewritten as v3 (--migrate)`;
    return `nothing ${t.dryRun ? "would be" : "was"} written: the session file${one ? " is" : "s are"} unchanged`;
  }
  const pct = t.disk.fileBytes > 0 ? ` (+${((100 * t.disk.appendBytes) / t.disk.fileBytes).toFixed(1)}%)` : "";
  const growth = `${formatBytes(t.disk.appendBytes)}${pct}`;
  let line =
    output !== undefined
      ? `${output} ${t.dryRun ? "would hold" : "holds"} ${results.some((r) => r.migratedFrom !== undefined) ? "the session's v3 rewrite" : "the session's bytes"} + ${growth}; the session file is untouched`
      : `${one ? "the session file" : "session files"} ${t.dryRun ? "would grow" : "grew"} by ${growth}`;
  if (t.disk.sidecarFiles > 0) {
    const dirs = results.flatMap((r) => r.disk.sidecarDirs);
    const where = dirs.length === 1 ? ` in ${dirs[0]}` : ` in ${dirs.length} folders`;
    line += `; ${n(t.disk.sidecarFiles)} sidecar file${t.disk.sidecarFiles === 1 ? "" : "s"} (${formatBytes(t.disk.sidecarBytes)})${where}`;
  }
  return line;
}

/**
 * Whom each session was written for and why — or would be (a dry run), or had nothing to write —
 * and the context edits for stock Pi:
 * `… written for stock Pi (target pi: <reason>) · 48 context edits (30 stubs, 2 assistant, 1 chain block, 15 omitted)`;
 * over several sessions for one target, one line with how many were written.
 */
function targetLines(results: RunFileResult[], out: Output): string[] {
  const whom = (r: RunFileResult) => `for ${r.target.used === "pi" ? "stock Pi" : "the pi-condense extension"} (target ${r.target.used}: ${r.target.reason})`;
  const state = (r: RunFileResult) =>
    r.written
      ? r.written === r.session
        ? "written"
        : `written to ${r.written}`
      : wouldWrite(r)
        ? "would be written"
        : r.batches.failed > 0
          ? r.dryRun
            ? "would not be written (batches failed)"
            : "not written (batches failed)"
          : "nothing to write";
  const edits = (r: RunFileResult) => {
    const e = r.contextEdits;
    if (!e || (!r.written && !wouldWrite(r))) return "";
    const kept = e.keptForeign > 0 ? `; ${n(e.keptForeign)} left as edited by someone else` : "";
    const cannot = e.unrepresentable > 0 ? `; ${counted(e.unrepresentable, "change")} no context edit can make` : "";
    const parts = `${counted(e.stubs, "stub")}, ${n(e.assistants)} assistant, ${counted(e.carriers, "chain block")}, ${n(e.omitted)} omitted`;
    return ` · ${counted(e.written, "context edit")} (${parts})${kept}${cannot}`;
  };
  const reasons = new Set(results.map(whom));
  const count = (s: string, label: string) => {
    const k = results.filter((r) => state(r) === s).length;
    return k > 0 ? [`${n(k)} ${label}`] : [];
  };
  const states = [
    ...count("written", "written"),
    ...count("would be written", "would be written"),
    ...count("not written (batches failed)", "not written (batches failed)"),
    ...count("would not be written (batches failed)", "would not be written (batches failed)"),
    ...count("nothing to write", "with nothing to write"),
  ].join(", ");
  const lines =
    reasons.size === 1 && results.length > 1
      ? [`all sessions ${[...reasons][0]}: ${states}`, ...results.filter((r) => r.contextEdits?.written).map((r) => `${r.session}${edits(r)}`)]
      : results.map((r) => `${r.session}: ${state(r)} ${whom(r)}${edits(r)}`);
  return lines.map((l) => out.c.dim(wrapWords(l, out.width)));
}

/** Socket and DNS error codes that mean the request never reached the model's server (or lost it). */
const UNREACHABLE = /\b(ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE)\b(?: ([\w.:[\]-]+))?/;
/** Connection failures pi-ai reports without a code. */
const CONNECTION = /connection error|connection closed|other side closed|socket hang up|fetch failed/i;

/**
 * One failed batch's reason in a few words: `anthropic/claude-haiku-4-5 could not be reached:
 * ENOTFOUND api.anthropic.com` for a connection failure, else the model's error without the
 * failure kind and the attempt count (flush.ts writes `kind: provider/id: error (N attempts)`,
 * with `; fallback provider/id: error` after it when the fallback failed too).
 */
export function failureCause(reason: string): { text: string; unreachable: boolean } {
  const parts = reason.replace(/^(?:transient|auth|unusable): /, "").split("; fallback ");
  const causes = parts.map((part) => {
    const model = /^([^\s:/]+\/[^\s:]+): /.exec(part);
    const who = model ? model[1] : "the model";
    const rest = (model ? part.slice(model[0].length) : part).replace(/ \(\d+ attempts\)$/, "");
    const code = UNREACHABLE.exec(rest);
    if (code) return { text: `${who} could not be reached: ${code[1]}${code[2] ? ` ${code[2]}` : ""}`, unreachable: true };
    if (CONNECTION.test(rest)) return { text: `${who} could not be reached: ${rest}`, unreachable: true };
    return { text: model ? `${who}: ${rest}` : rest, unreachable: false };
  });
  return { text: causes.map((c) => c.text).join("; fallback "), unreachable: causes.every((c) => c.unreachable) };
}

/** How many distinct causes the failed-batches line names before "…". */
const LISTED_CAUSES = 2;

/**
 * The line that says a session's batches failed, so that a run the model never answered does not
 * read as one with nothing to do: `s.jsonl: 14 of 72 batches failed (anthropic/claude-haiku-4-5
 * could not be reached: ENOTFOUND api.anthropic.com); nothing was written — run again when the
 * model is reachable`. Null when none failed.
 */
export function failedBatchesLine(r: RunFileResult): string | null {
  if (r.batches.failed === 0) return null;
  const causes = new Map<string, number>();
  let unreachable = true;
  for (const f of r.failures) {
    const cause = failureCause(f.reason);
    causes.set(cause.text, (causes.get(cause.text) ?? 0) + 1);
    unreachable &&= cause.unreachable;
  }
  const counted = [...causes].map(([text, k]) => (causes.size > 1 ? `${k} × ${text}` : text));
  const why = counted.length > LISTED_CAUSES ? [...counted.slice(0, LISTED_CAUSES), "…"] : counted;
  const state = r.written
    ? "they stay raw, the rest was written"
    : wouldWrite(r)
      ? "they would stay raw, the rest would be written"
      : r.dryRun
        ? "nothing would be written"
        : "nothing was written";
  const again = unreachable ? "run again when the model is reachable" : "run again to retry them";
  // A run again would find its own --output there and refuse it.
  const replace = r.written && r.written !== r.session ? `, with --force to replace ${r.written}` : "";
  return `${r.session}: ${n(r.batches.failed)} of ${n(r.batches.captured)} ${r.batches.captured === 1 ? "batch" : "batches"} failed (${why.join("; ")}); ${state} — ${again}${replace}`;
}

const LISTED_RECOVERIES = 5;

/**
 * What a run left as it was, and why: summaries withheld because the context would have grown,
 * results the render removes that were indexed for recovery (with the ref to query), calls left
 * raw for a shared occurrence key or for error purge.
 */
function keptLines(r: RunFileResult, out: Output): string[] {
  const lines: string[] = [];
  if (r.withheld) lines.push(out.c.yellow(`${r.session}: ${r.withheld.reason}`));
  for (const rec of r.recovered.slice(0, LISTED_RECOVERIES)) {
    // The command as the stubs name it, with --session unless `condense query` here finds the file by itself.
    const indexed = r.written ? `indexed as ${rec.ref} — ${recoveryCommand(rec.ref, recoveryFromHere(r.written))}` : `would be indexed as ${rec.ref}`;
    lines.push(`${r.session}: ${rec.key} (entry ${rec.entryId}) is removed by ${rec.removedBy}; ${indexed}`);
  }
  if (r.recovered.length > LISTED_RECOVERIES)
    lines.push(`${r.session}: and ${n(r.recovered.length - LISTED_RECOVERIES)} more removed results indexed (--json lists them)`);
  const { ambiguous, keptForErrorPurge: purged } = r.calls;
  // `call … its` for one, `calls … their` for more.
  const words = (k: number) => (k === 1 ? ["call", "its"] : ["calls", "their"]);
  if (ambiguous > 0) {
    const [calls, their] = words(ambiguous);
    lines.push(
      `${r.session}: ${n(ambiguous)} ${calls} left raw: ${their} result shares its id and timestamp with another result, so a stub could not tell them apart`,
    );
  }
  if (purged > 0) {
    const [calls, their] = words(purged);
    lines.push(`${r.session}: ${n(purged)} failed ${calls} left raw: error purge takes ${their} arguments, which a stub would bring back`);
  }
  return lines;
}

/**
 * `s.jsonl: 26 calls to p/m · 27,085 input + 438 output tokens · $0.0288 · 4 answers from the
 * summary cache` (`s.jsonl: deterministic summarizer · 26 summaries reused from the session`
 * without a model), or null when no model was asked and nothing was reused.
 */
export function usageLine(r: Pick<RunFileResult, "session" | "summarizer" | "usage">): string | null {
  const { calls, reused } = r.usage;
  const reusedParts = [
    reused.cache > 0 ? `${counted(reused.cache, "answer")} from the summary cache` : "",
    reused.session > 0 ? `${counted(reused.session, "summary", "summaries")} reused from the session` : "",
  ].filter((p) => p !== "");
  if (calls === 0 && reusedParts.length === 0) return null;
  const cost = r.usage.cost > 0 ? ` · $${r.usage.cost.toFixed(4)}` : "";
  // The deterministic summarizer asks no model: it is named, not "called".
  // Answers from the fallback are named with the model that gave them.
  const fallback = Object.entries(r.usage.answeredBy ?? {})
    .filter(([model]) => model !== r.summarizer)
    .map(([model, k]) => `${n(k)} answered by the fallback ${model}`);
  const by = fallback.length > 0 ? ` (${fallback.join(", ")})` : "";
  const asked =
    calls > 0
      ? `${counted(calls, "call")} to ${r.summarizer}${by} · ${n(r.usage.input)} input + ${n(r.usage.output)} output tokens${cost}`
      : r.summarizer === "deterministic"
        ? "deterministic summarizer"
        : `no call to ${r.summarizer}`;
  return `${r.session}: ${[asked, ...reusedParts].join(" · ")}`;
}

/**
 * The whole human report (stdout).
 * @param wallMs wall time of the whole command (not the sum of the sessions' times)
 * @param output the `--output` file, when given
 * @param failed sessions that failed (not in `results`; the totals row counts them, as `metrics` does)
 */
export function formatRunReport(results: RunFileResult[], out: Output, wallMs: number, output?: string, failed = 0): string {
  const width = out.width;
  const table = runTable(results, out, failed);
  const dry = results.some((r) => r.dryRun) ? " ((N): a dry run would add N)" : "";
  const failedNote = results.some((r) => r.batches.failed) ? " (!N: N failed)" : "";
  const spilledNote = results.some((r) => r.batches.spilled) ? " · spilled = outputs (batches spilled whole)" : "";
  const legend =
    table.layout === 1
      ? `batches = summarized / captured${failedNote} · context = what Pi sends for the target, now → after · added = entries${dry}`
      : `skipped t/d/o = trivial / deduplicated / oversized${spilledNote} · context = what Pi sends for the target, now → after`;
  const lines = [
    table.text,
    out.c.dim(wrapWords(`${legend} · ${(wallMs / 1000).toFixed(2)} s`, width)),
    out.c.dim(wrapWords(diskLine(results, output), width)),
    ...targetLines(results, out),
  ];
  for (const r of results) {
    const usage = usageLine(r);
    if (usage) lines.push(usage);
    for (const f of r.failures) lines.push(out.c.red(`${r.session}: batch at turn ${f.turnIndex} stays raw: ${f.reason}`));
    lines.push(...keptLines(r, out));
  }
  return lines.join("\n");
}
