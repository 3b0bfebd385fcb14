/**
 * What `compact` reports for one session (and prints as `--json`, `sessions[]` of
 * `condense.compact/2`; docs/json-schemas.md): the status and why, the settings and window used,
 * Pi's trigger, the preparation (first kept entry, split turn, counts, file lists), the context
 * before and after, the summary's size and usage, and what was written.
 */
import type { CompactionSettings } from "../compact/settings.js";
import { computeFileLists } from "../compact/file-ops.js";
import type { ContextViews } from "../context/size.js";
import { lineOf } from "../report/session-metrics.js";
import type { MigrationReport } from "../session/commit.js";
import { sessionLabel, type SessionLabel } from "../session/label.js";
import type { Session } from "../session/session.js";
import type { CompactionPlan, CompactionStatus } from "./compact-plan.js";
import type { TargetDecision } from "./target.js";

/** Where the context window came from: `--context-window`, pi-ai's model registry, or nowhere. */
export type WindowSource = "override" | "registry" | "unknown";

/** The report of one session (`compact --json`: `sessions[]`). */
export interface CompactFileResult extends MigrationReport {
  session: string;
  /** How a person knows the session: short id, date, name or first prompt. */
  label: SessionLabel;
  status: CompactionStatus;
  reason: string | null;
  summarizer: string;
  model: string | null;
  settings: CompactionSettings;
  settingsFiles: string[];
  contextWindow: number | null;
  contextWindowFrom: WindowSource;
  trigger: { piWouldCompact: boolean | null; reason: "overflow" | "threshold" | null; level: number | null; contextTokens: number };
  firstKeptEntryId: string | null;
  firstKeptLine: number | null;
  isSplitTurn: boolean | null;
  messagesToSummarize: number | null;
  turnPrefixMessages: number | null;
  previousSummary: boolean | null;
  readFiles: string[];
  modifiedFiles: string[];
  tokensBefore: number | null;
  /** Pi's estimate of the context (tokens; `estimateProjectedContextTokens`) before and after the entry: what Pi's trigger compares. */
  piEstimate: { before: number; after: number };
  /**
   * The context Pi sends before and after the entry, in the measure every command reports
   * (`context/size.ts`): with the extension's phases, and as stock Pi sends it (`piOnly`).
   */
  context: ContextViews;
  /** Whom `run --target auto` writes for in the session's project: which of the two contexts its Pi sends (`pi`: `piOnly`). */
  target: TargetDecision;
  /** Whether Pi's estimate after fits `window − reserveTokens` (null when the window is unknown). */
  fits: boolean | null;
  summaryChars: number | null;
  usage: { input: number; output: number; cost: number } | null;
  entryId: string | null;
  dryRun: boolean;
  written: string | null;
  bytesAppended: number;
  warnings: string[];
  /** Dry runs: why the real run would refuse to write this session (it looks live; Pi or another process has it open). */
  wouldRefuse?: string;
  wallMs: number;
}

/** What the report needs besides the plan. */
export interface CompactFacts {
  summarizer: string;
  model: string | null;
  settingsFiles: string[];
  contextWindow: number | null;
  contextWindowFrom: WindowSource;
  /** Whom `run --target auto` writes for (the Pi the session's project runs). */
  target: TargetDecision;
  migration: MigrationReport;
  dryRun: boolean;
  written: string | null;
  bytesAppended: number;
  warnings: string[];
  wouldRefuse?: string;
  /** When the work on the session started (epoch ms). */
  started: number;
}

/** Pi's trigger as reported: would Pi compact this session on its own (null: the window is unknown)? */
function triggerOf(plan: CompactionPlan, level: number | null): CompactFileResult["trigger"] {
  const { trigger, settings } = plan;
  return {
    piWouldCompact: trigger.over === null ? null : trigger.reason === "overflow" || (level !== null && settings.enabled && trigger.contextTokens > level),
    reason: trigger.reason,
    level: trigger.level,
    contextTokens: trigger.contextTokens,
  };
}

/** The report of one planned (and possibly written) compaction. */
export function compactReport(session: Session, plan: CompactionPlan, facts: CompactFacts): CompactFileResult {
  const prep = plan.preparation;
  const firstKept = prep ? session.byId.get(prep.firstKeptEntryId) : undefined;
  const details = prep ? computeFileLists(prep.fileOps) : undefined;
  const level = facts.contextWindow === null ? null : facts.contextWindow - plan.settings.reserveTokens;
  const u = plan.usage;
  return {
    session: session.path,
    label: sessionLabel(session),
    status: plan.status,
    reason: plan.reason,
    summarizer: facts.summarizer,
    model: facts.model,
    settings: plan.settings,
    settingsFiles: facts.settingsFiles,
    contextWindow: facts.contextWindow,
    contextWindowFrom: facts.contextWindowFrom,
    trigger: triggerOf(plan, level),
    firstKeptEntryId: prep?.firstKeptEntryId ?? null,
    firstKeptLine: firstKept ? lineOf(session, firstKept) : null,
    isSplitTurn: prep?.isSplitTurn ?? null,
    messagesToSummarize: prep ? prep.messagesToSummarize.length : null,
    turnPrefixMessages: prep ? prep.turnPrefixMessages.length : null,
    previousSummary: prep ? prep.previousSummary !== undefined : null,
    readFiles: details?.readFiles ?? [],
    modifiedFiles: details?.modifiedFiles ?? [],
    tokensBefore: prep?.tokensBefore ?? null,
    piEstimate: plan.piEstimate,
    context: plan.context,
    target: facts.target,
    fits: level === null ? null : plan.piEstimate.after <= level,
    summaryChars: plan.entry?.summary.length ?? null,
    usage: u ? { input: u.input, output: u.output, cost: u.cost?.total ?? 0 } : null,
    entryId: plan.entry?.id ?? null,
    dryRun: facts.dryRun,
    written: facts.written,
    bytesAppended: facts.bytesAppended,
    ...facts.migration,
    warnings: facts.warnings,
    ...(facts.wouldRefuse ? { wouldRefuse: facts.wouldRefuse } : {}),
    wallMs: Date.now() - facts.started,
  };
}
