/**
 * The document `condense report` prints with `--json` and embeds in its HTML page (schema
 * `condense.report/1`, docs/json-schemas.md): per session, the figures other commands print —
 * `metrics --json`, `budget --json`, `run --dry-run --json`, `compact --dry-run --json` — taken from
 * the same functions, plus the facts only the report shows (session-facts.ts). The page is a view
 * of this document: every number on it comes from here.
 */
import type { ContextSize, ContextViews } from "../context/size.js";
import type { SessionLabel } from "../session/label.js";
import type { PiCompactionReport } from "./budget-compaction.js";
import type { CompactionMarker, LargestOutput, ModelSwitchMarker, SessionUsage } from "./session-facts.js";
import type { SessionMetrics } from "./session-metrics.js";

/** Version of the document; bumped only on an incompatible change. */
export const REPORT_SCHEMA = "condense.report/1";

/** The one context measure (`context/size.ts`): messages that reach the provider, Pi's characters, Σ ceil(chars / 4). */
export type Size = ContextSize;

/** Whom `run --target auto` writes for: which context the session's Pi sends (`pi`: stock Pi's, `piOnly`). */
export type RunTargetFigure = { used: "extension" | "pi"; reason: string };

/** `budget --json` of the session, without `schema` and `session`. */
export type BudgetDocument = PiCompactionReport & { label: SessionLabel; contextWindow: number | null; target: RunTargetFigure; context: ContextViews };

/** What the report reads of `run --dry-run --json` for the session (the object holds every field run prints). */
export interface RunFigures {
  summarizer: string;
  /** Whom `run` writes for and why. */
  target: RunTargetFigure;
  batches: { captured: number; summarized: number; skippedTrivial: number; skippedDeduped: number; skippedOversized: number; failed: number; spilled: number };
  calls: { spilled: number; deduped: number; protected: number; summarized: number; unanswered: number };
  /** With the extension switched on (`before`, `after`), and as stock Pi sends it (`piOnly`). */
  context: ContextViews;
  entriesAppended: number;
}

/** What the report reads of `compact --dry-run --json` for the session (the object holds every field compact prints but `wallMs`). */
export interface CompactFigures {
  status: string;
  reason: string | null;
  summarizer: string;
  settings: { enabled: boolean; reserveTokens: number; keepRecentTokens: number };
  contextWindow: number | null;
  trigger: { piWouldCompact: boolean | null; reason: "overflow" | "threshold" | null; level: number | null; contextTokens: number };
  firstKeptEntryId: string | null;
  firstKeptLine: number | null;
  messagesToSummarize: number | null;
  tokensBefore: number | null;
  /** Pi's estimate (what its trigger compares) before and after the entry. */
  piEstimate: { before: number; after: number };
  /** The context Pi sends before and after the entry (the one measure): with the extension, and as stock Pi sends it (`piOnly`). */
  context: ContextViews;
  /** Whom `run --target auto` writes for: which of the two the session's Pi sends. */
  target: RunTargetFigure;
  fits: boolean | null;
}

/** One tool output of {@link SessionReport.largestOutputs}. */
export interface ReportedOutput extends LargestOutput {
  /** Short ref that recovers it now (`condense query tN`), or null when it is not indexed. */
  refNow: string | null;
  /** Short ref after `run` (the same as now when indexed already), or null when run leaves it raw. */
  ref: string | null;
  /** The command that prints it whole after `run`, or null. */
  query: string | null;
}

export interface SessionReport {
  session: string;
  /** HTML id of its section in the page (`s-<short id>`, or `s-<n>` when that is missing or shared). */
  anchor: string;
  label: SessionLabel;
  /** Version the file is written in (1, 2, 3); run and compact need `--migrate` below 3, the figures are for the migrated session. */
  fileVersion: number;
  /** File size. */
  bytes: number;
  usage: SessionUsage;
  metrics: SessionMetrics;
  budget: BudgetDocument;
  run: RunFigures;
  compact: CompactFigures;
  markers: { compactions: CompactionMarker[]; modelSwitches: ModelSwitchMarker[] };
  largestOutputs: ReportedOutput[];
  /** Reader warnings, file problems, settings files that could not be read, models with no known window. */
  warnings: string[];
}

export interface ReportTotals {
  sessions: number;
  failed: number;
  bytes: number;
  requests: number;
  cost: number;
  /** Sums of the `tokens` of `run.context.before/after`, `run.context.piOnly.before/after` and `compact.context.before/after`. */
  runBeforeTokens: number;
  runAfterTokens: number;
  piOnlyBeforeTokens: number;
  piOnlyAfterTokens: number;
  compactBeforeTokens: number;
  compactAfterTokens: number;
}

export interface ReportDocument {
  schema: typeof REPORT_SCHEMA;
  /** condense's version. */
  version: string;
  sessions: SessionReport[];
  totals: ReportTotals;
  failures: { session: string; error: string }[];
}

/** Section ids: `s-<short id>` when it is unique among the sessions, else `s-<1-based position>`. */
export function sectionAnchors(labels: SessionLabel[]): string[] {
  const count = new Map<string, number>();
  for (const l of labels) count.set(l.shortId, (count.get(l.shortId) ?? 0) + 1);
  return labels.map((l, i) => (/^[A-Za-z0-9_-]+$/.test(l.shortId) && count.get(l.shortId) === 1 ? `s-${l.shortId}` : `s-${i + 1}`));
}

/** Sums over the sessions reported. */
export function reportTotals(sessions: SessionReport[], failed: number): ReportTotals {
  const sum = (f: (s: SessionReport) => number) => sessions.reduce((n, s) => n + f(s), 0);
  return {
    sessions: sessions.length,
    failed,
    bytes: sum((s) => s.bytes),
    requests: sum((s) => s.usage.requests),
    cost: sum((s) => s.usage.cost),
    runBeforeTokens: sum((s) => s.run.context.before.tokens),
    runAfterTokens: sum((s) => s.run.context.after.tokens),
    piOnlyBeforeTokens: sum((s) => s.run.context.piOnly.before.tokens),
    piOnlyAfterTokens: sum((s) => s.run.context.piOnly.after.tokens),
    compactBeforeTokens: sum((s) => s.compact.context.before.tokens),
    compactAfterTokens: sum((s) => s.compact.context.after.tokens),
  };
}
