/**
 * `report` for one session (docs/json-schemas.md `condense.report/1`): every figure from the
 * function the other commands print it with — the metrics (`metrics --json`), the budget replay with
 * Pi's auto-compaction (`budget --json`), a run planned in memory with the deterministic summarizer
 * (`run --dry-run --json`, and what stock Pi sends before and after it), a compaction planned in
 * memory with the zero-model summary (`compact --dry-run --json`) — plus the session's usage, its
 * compactions and model switches, and its largest tool outputs with the refs that recover them.
 * Nothing is written; no model is called.
 */
import type { PruneConfig } from "../config/config.js";
import type { ToolCallIndexer } from "../prune/indexer.js";
import { recoveryCommand } from "../context/vocabulary.js";
import { contextSize } from "../context/size.js";
import type { Rendered } from "../render/render.js";
import { compactionMarkers, largestOutputs, modelSwitches, sessionUsage, turnLocator } from "../report/session-facts.js";
import { computeSessionMetrics, lineOf } from "../report/session-metrics.js";
import type { CompactFigures, ReportedOutput, RunFigures, SessionReport } from "../report/session-report.js";
import { sessionLabel } from "../session/label.js";
import { formatWarning, migrationWarnings } from "../session/open.js";
import type { Session } from "../session/session.js";
import { createSummarizer } from "../summarize/select.js";
import { nowMs } from "../util/clock.js";
import { budgetSession, unknownModelWarnings } from "./budget.js";
import { planSessionCompaction } from "./compact.js";
import { compactReport } from "./compact-report.js";
import { idleReport } from "./pending.js";
import { planRun } from "./plan.js";
import { recoveryFromHere, type RunFor, runFor } from "./target.js";
import { sentMessages } from "./render.js";
import type { RunReport } from "./report.js";
import { sessionView, type SessionView } from "./view.js";

export interface SessionReportOptions {
  /** `--context-window` (tokens) for every turn and for compaction, instead of pi-ai's registry. */
  contextWindow?: number;
  /** `--reserve-tokens`: Pi's `compaction.reserveTokens`, instead of Pi's settings. */
  reserveTokens?: number;
  /** How many of the largest tool outputs to list. */
  top: number;
}

/** Summarizer calls in parallel for the planned run (`run`'s default `--concurrency`). */
const RUN_CONCURRENCY = 4;

/**
 * Whom the planned run writes for, when its report does not say: the extension's entries. A run
 * report that names its target (and stock Pi's context) is taken as it is.
 */
const RUN_TARGET: RunFigures["target"] = { used: "extension", reason: "condense run appends the pi-condense extension's entries" };

type Size = RunFigures["context"]["before"];

/**
 * The run's figures: its report, with whom it writes for and stock Pi's context before → after
 * where the report does not carry them (a report that does is taken as it is).
 */
function runFigures(report: RunReport, piOnly: { before: Size; after: Size }): RunReport & RunFigures {
  const own: RunReport & Partial<Pick<RunFigures, "target">> & { context: Partial<Pick<RunFigures["context"], "piOnly">> } = report;
  return { ...own, target: own.target ?? RUN_TARGET, context: { ...own.context, piOnly: own.context.piOnly ?? piOnly } };
}

/**
 * `run --dry-run` with the deterministic summarizer for `planned` (its report, as `run` prints it), and the
 * render after it, and the index after it (null when the run has nothing to do). Advances
 * `view`'s index: pass a fork.
 */
async function plannedRun(view: SessionView, planned: RunFor): Promise<{ report: RunReport; after: Rendered; index: ToolCallIndexer | null }> {
  const idle = idleReport(view, planned);
  if (idle) return { report: idle, after: view.rendered, index: null };
  const summarizer = await createSummarizer({ kind: "deterministic" }, view.config, view.session);
  const plan = await planRun(view, {
    summarizer,
    concurrency: RUN_CONCURRENCY,
    nowMs: nowMs(),
    targetPath: view.session.path,
    target: planned.target,
    recovery: planned.recovery,
  });
  return { report: plan.report, after: plan.after, index: view.indexer };
}

/** `compact --dry-run` with the zero-model summary, as `compact` prints it (without `wallMs`). */
async function plannedCompaction(session: Session, options: SessionReportOptions): Promise<{ figures: CompactFigures; warnings: string[] }> {
  const flags = options.reserveTokens !== undefined ? { reserveTokens: options.reserveTokens } : {};
  const planned = await planSessionCompaction(session, { flags, summarizer: { kind: "deterministic" }, contextWindow: options.contextWindow });
  const facts = { ...planned.facts, migration: {}, dryRun: true, written: null, bytesAppended: 0, warnings: planned.warnings, started: Date.now() };
  const { wallMs: _wallMs, ...figures } = compactReport(session, planned.plan, facts);
  return { figures, warnings: planned.warnings };
}

/**
 * The report of one loaded session under the pruning configuration (`anchor` is left empty: it
 * depends on the other sessions of the document).
 * @throws UsageError for invalid compaction settings in Pi's settings files
 */
export async function reportSession(session: Session, config: PruneConfig, options: SessionReportOptions): Promise<SessionReport> {
  const view = sessionView(session, config);
  const where = (e: Parameters<typeof lineOf>[1]) => lineOf(session, e);
  const budget = await budgetSession(view, { contextWindow: options.contextWindow, reserveTokens: options.reserveTokens });
  // The run is planned on a fork: this view's index stays as read (metrics, refs now) — for the
  // target `run` would pick, as `run`, `metrics` and `budget` plan it.
  const planned = runFor("auto", session.path, session.header?.cwd);
  const run = await plannedRun(view.fork(), planned);
  const metrics = computeSessionMetrics(view, run.after, undefined, planned.target);
  const readWarnings = [...session.warnings.map(formatWarning), ...session.problems.map((p) => `${session.path}: ${p.message}`), ...migrationWarnings(session)];
  metrics.warnings = readWarnings;
  const indexAfter = run.index ?? view.indexer;
  const largest: ReportedOutput[] = largestOutputs(view.items, options.top, where).map((o) => {
    const ref = indexAfter.shortRefFor(o.key) ?? null;
    return { ...o, refNow: view.indexer.shortRefFor(o.key) ?? null, ref, query: ref ? recoveryCommand(ref, recoveryFromHere(session.path)) : null };
  });
  const compact = await plannedCompaction(session, options);
  const label = sessionLabel(session);
  const turnAt = turnLocator(view.branch, budget.report.rows);
  // What stock Pi sends, as `render --as pi-only` measures it: now, and after the run.
  const piOnly = { before: contextSize(sentMessages(view.rendered, "pi-only")), after: contextSize(sentMessages(run.after, "pi-only")) };
  return {
    session: session.path,
    anchor: "",
    label,
    fileVersion: session.fileVersion,
    bytes: session.size,
    usage: sessionUsage(session.entries),
    metrics,
    // As `budget --json` prints it: the context Pi sends now → after the run, then the replay.
    budget: {
      label,
      contextWindow: options.contextWindow ?? null,
      target: planned.target,
      context: { before: contextSize(view.rendered.afterAgent), after: contextSize(run.after.afterAgent), piOnly },
      ...budget.report,
    },
    run: runFigures(run.report, piOnly),
    compact: compact.figures,
    markers: { compactions: compactionMarkers(view.branch, turnAt, where), modelSwitches: modelSwitches(view.branch, turnAt, where) },
    largestOutputs: largest,
    warnings: [...readWarnings, ...new Set([...budget.warnings, ...compact.warnings]), ...unknownModelWarnings(session.path, budget.report)],
  };
}
