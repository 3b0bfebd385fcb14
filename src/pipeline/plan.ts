/**
 * The main job for one session, computed in memory (docs/design.md §5, §6): capture, flush,
 * chain compression, then the bookkeeping tail — frontier, stats, flush metrics — then, for the
 * `pi` target, the context edits that make stock Pi send the pruned context and the entry listing
 * them (docs/design.md §11), then any diagnostics not recorded yet. Nothing is written
 * here; `session/commit.ts` writes the sidecars and appends `entries`.
 */
import { compressChains, type CompressResult } from "../chain/compress.js";
import type { Batch, CaptureResult } from "../prune/capture.js";
import { flushBatches, type BatchOutcome, type FlushProgress, type FlushResult, type Sidecar } from "../prune/flush.js";
import type { RecoveryOptions } from "../context/vocabulary.js";
import { contextEditEntry, contextEditsEntry, diagnosticEntry, flushMetricsEntry, frontierEntry, statsEntry } from "../entries/build.js";
import { ownContextEditIds } from "../entries/read.js";
import { planContextEdits, type ContextEditPlan } from "../render/context-edits.js";
import { ToolCallIndexer } from "../prune/indexer.js";
import type { ContextMetrics, FlushMetricsData, StatsData } from "../entries/types.js";
import { recordedDiagnosticKeys, unrecordedDiagnostics } from "../render/diagnostics.js";
import { renderBranch, type Rendered } from "../render/render.js";
import { computeContextMetrics } from "../report/context-metrics.js";
import type { NewEntry, SessionEntry } from "../session/types.js";
import { chainEntries } from "../session/writer.js";
import type { Summarizer } from "../summarize/types.js";
import { sumUsage } from "../summarize/usage.js";
import { runReport, type RunReport } from "./report.js";
import type { TargetDecision } from "./target.js";
import type { SessionView } from "./view.js";

export interface PlanOptions {
  summarizer: Summarizer;
  concurrency: number;
  /** Epoch ms used for every timestamp written. */
  nowMs: number;
  /** Where the entries will be written (sidecars go beside it). */
  targetPath: string;
  signal?: AbortSignal;
  onProgress?: (progress: FlushProgress) => void;
  /** Whom the run writes for (default: the extension only). */
  target?: TargetDecision;
  /** For the `pi` target: how the recovery command in stubs names the session (`--session` when needed). */
  recovery?: RecoveryOptions;
}

const EXTENSION_ONLY: TargetDecision = { used: "extension", reason: "--target extension" };

export interface RunPlan {
  /** Entries with ids, parents and timestamps, ready to append. */
  entries: SessionEntry[];
  sidecars: Sidecar[];
  outcomes: BatchOutcome[];
  report: RunReport;
  /** The branch after the run (for `render --dry-run`). */
  afterBranch: SessionEntry[];
}

/**
 * Plan the main job on a session. Reads the capture and the render of the session as read, then
 * advances `view.indexer` through the flush and the chain compression.
 * @throws CondenseError (exit 130) when `signal` aborts during summarization
 */
export async function planRun(view: SessionView, options: PlanOptions): Promise<RunPlan> {
  // Everything that reads the index as read comes before the flush advances it.
  const metrics = computeContextMetrics(view.branchMessages, view.indexer.frontier, view.indexer, view.isProtected);
  const before = view.rendered;
  const capture = view.capture;
  const flush = await flushBatches(capture.batches, view.indexer, {
    config: view.config,
    summarizer: options.summarizer,
    concurrency: options.concurrency,
    targetPath: options.targetPath,
    sessionId: view.session.id,
    signal: options.signal,
    onProgress: options.onProgress,
  });
  const chains = await compressStep(view, options, failedKeys(capture.batches, flush.outcomes));
  const payloads: NewEntry[] = [
    ...flush.entries,
    ...(chains?.entries ?? []),
    ...bookkeeping(view.indexer, { capture, flush, chains, metrics, nowMs: options.nowMs }),
    ...(chains?.diagnostics ?? []),
  ];
  const target = options.target ?? EXTENSION_ONLY;
  const edits = target.used === "pi" ? nativeStep(view, payloads, options) : null;
  if (edits) payloads.push(...edits.payloads);
  const { entries, after } = chainWithDiagnostics(view, payloads, before, options.nowMs);
  const sidecars = [...flush.sidecars, ...(chains?.sidecars ?? [])];
  const report = runReport({
    session: view.session.path,
    summarizer: options.summarizer.name,
    target,
    contextEdits: edits?.plan ?? null,
    capture,
    flush,
    chains,
    before,
    after,
    entriesAppended: entries.length,
    sidecars: sidecars.length,
  });
  return { entries, sidecars, outcomes: flush.outcomes, report, afterBranch: [...view.branch, ...entries] };
}

/**
 * Native mode: the context edits that make Pi's projection of the branch after `payloads` the
 * render of it (render/context-edits.ts), then the `condense-context-edits` entry listing their ids.
 * Chaining is deterministic, so the ids found here are the ids the edits get when everything is
 * chained again with the diagnostics after them.
 * @returns the payloads to append, and the plan (for the report)
 */
function nativeStep(view: SessionView, payloads: NewEntry[], options: PlanOptions): { payloads: NewEntry[]; plan: ContextEditPlan } {
  const nowIso = new Date(options.nowMs).toISOString();
  const branch = [...view.branch, ...chainEntries(view.session, payloads, nowIso)];
  const ctx = {
    indexer: ToolCallIndexer.fromBranch(branch),
    config: view.config,
    isProtected: view.isProtected,
    wording: { target: "pi" as const, recovery: options.recovery ?? {} },
  };
  const plan = planContextEdits(branch, ctx, ownContextEditIds(view.branch));
  if (plan.edits.length === 0) return { payloads: [], plan };
  const edits = plan.edits.map((e) => contextEditEntry(e.targetId, e.replacement));
  const chained = chainEntries(view.session, [...payloads, ...edits], nowIso).slice(payloads.length);
  return { payloads: [...edits, contextEditsEntry({ editIds: chained.map((e) => e.id) })], plan };
}

/**
 * Chain compression (step 8) on the context as it stands after the flush: the flush has updated
 * the in-memory index (records, refs, per-batch summaries), which decides each chain's body.
 * @returns null when chain compression is off
 */
async function compressStep(view: SessionView, options: PlanOptions, pendingKeys: Set<string>): Promise<CompressResult | null> {
  if (!view.config.chainCompression.enabled) return null;
  return compressChains(view.sourceContext.items, view.indexer, {
    config: view.config,
    summarizer: options.summarizer,
    isProtected: view.isProtected,
    concurrency: options.concurrency,
    nowMs: options.nowMs,
    targetPath: options.targetPath,
    sessionId: view.session.id,
    existingDiagnostics: recordedDiagnosticKeys(view.branch),
    pendingKeys,
    signal: options.signal,
  });
}

/**
 * The bookkeeping tail (step 9): the frontier (when the flush moved it), cumulative stats and the
 * flush metrics — only when the flush attempted a batch or a chain was compressed.
 */
function bookkeeping(
  indexer: ToolCallIndexer,
  run: { capture: CaptureResult; flush: FlushResult; chains: CompressResult | null; metrics: ContextMetrics; nowMs: number },
): NewEntry[] {
  const { capture, flush, chains } = run;
  const chainsCompressed = chains?.chainsCompressed ?? 0;
  if (!flush.frontier && chainsCompressed === 0) return [];
  const previous = indexer.stats;
  const total = sumUsage({ input: previous.totalInputTokens, output: previous.totalOutputTokens, cost: previous.totalCost }, flush.usage, chains?.usage);
  const stats: StatsData = {
    totalInputTokens: total.input,
    totalOutputTokens: total.output,
    totalCost: total.cost,
    callCount: previous.callCount + flush.modelCalls + (chains?.modelCalls ?? 0),
    chainsCompressed: previous.chainsCompressed + chainsCompressed,
    rangesSummarized: previous.rangesSummarized + (chains?.rangesSummarized ?? 0),
  };
  const flushMetrics: FlushMetricsData = {
    ts: run.nowMs,
    trigger: "offline",
    capturedBatches: capture.batches.length,
    processedBatches: flush.processedBatches,
    outcome: flush.frontier?.outcome ?? (capture.batches.length === 0 ? "empty" : "error"),
    metrics: run.metrics,
  };
  return [...(flush.frontier ? [frontierEntry(flush.frontier)] : []), statsEntry(stats), flushMetricsEntry(flushMetrics)];
}

/**
 * Give the payloads ids, render the branch with them, and add the diagnostics of that render that
 * the branch does not record yet. Re-chaining gives the entries before them the same ids (ids are
 * deterministic), and custom entries do not change the render.
 */
function chainWithDiagnostics(view: SessionView, payloads: NewEntry[], before: Rendered, nowMs: number): { entries: SessionEntry[]; after: Rendered } {
  const nowIso = new Date(nowMs).toISOString();
  const entries = chainEntries(view.session, payloads, nowIso);
  const after = entries.length > 0 ? renderBranch([...view.branch, ...entries], view.config) : before;
  const diagnostics = unrecordedDiagnostics(view.branch, after.diagnostics);
  if (diagnostics.length === 0) return { entries, after };
  const withDiagnostics = [...payloads, ...diagnostics.map(diagnosticEntry)];
  return { entries: chainEntries(view.session, withDiagnostics, nowIso), after };
}

/** Occurrence keys of the captured calls whose batch failed to summarize. */
function failedKeys(batches: Batch[], outcomes: BatchOutcome[]): Set<string> {
  const failed = new Set(outcomes.filter((o) => o.outcome === "failed").map((o) => o.turnIndex));
  return new Set(batches.filter((b) => failed.has(b.turnIndex)).flatMap((b) => b.calls.map((c) => c.key)));
}
