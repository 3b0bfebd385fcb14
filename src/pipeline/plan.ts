/**
 * The main job for one session, computed in memory (docs/design.md §5, §6): capture, flush,
 * chain compression, then the bookkeeping tail — frontier, stats, flush metrics — then any
 * diagnostics not recorded yet. Nothing is written here; `session/commit.ts` writes the sidecars
 * and appends `entries`.
 */
import { compressChains, type CompressResult } from "../chain/compress.js";
import type { Batch, CaptureResult } from "../prune/capture.js";
import { flushBatches, type BatchOutcome, type FlushProgress, type FlushResult, type Sidecar } from "../prune/flush.js";
import type { ToolCallIndexer } from "../prune/indexer.js";
import { diagnosticEntry, flushMetricsEntry, frontierEntry, statsEntry } from "../entries/build.js";
import { type ChainEntryData, type ContextMetrics, CUSTOM_TYPES, type FlushMetricsData, type StatsData, type SummaryDetails } from "../entries/types.js";
import { recordedDiagnosticKeys, unrecordedDiagnostics } from "../render/diagnostics.js";
import { renderBranch, type Rendered } from "../render/render.js";
import { computeContextMetrics } from "../report/context-metrics.js";
import type { NewEntry, SessionEntry } from "../session/types.js";
import { chainEntries } from "../session/writer.js";
import { withRecoveryHint } from "../summarize/refs.js";
import type { Summarizer } from "../summarize/types.js";
import { sumUsage } from "../summarize/usage.js";
import { runReport, type RunReport } from "./report.js";
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
}

export interface RunPlan {
  /** Entries with ids, parents and timestamps, ready to append. */
  entries: SessionEntry[];
  sidecars: Sidecar[];
  outcomes: BatchOutcome[];
  report: RunReport;
  /** The branch after the run (for `render --dry-run`). */
  afterBranch: SessionEntry[];
  /** The render of `afterBranch`. */
  after: Rendered;
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
  const flushed = await flushBatches(capture.batches, view.indexer, {
    config: view.config,
    summarizer: options.summarizer,
    concurrency: options.concurrency,
    targetPath: options.targetPath,
    sessionId: view.session.id,
    signal: options.signal,
    onProgress: options.onProgress,
  });
  const chains = await compressStep(view, options, failedKeys(capture.batches, flushed.outcomes));
  const hinted = placeRecoveryHint([...flushed.entries, ...(chains?.entries ?? [])], flushed.summaryRoom);
  const authored = hinted.entries;
  // A summary that carries the hint is that much longer: the frontier and the report count it.
  const flush = withSummaryChars(flushed, hinted.summaryCharsAdded);
  const payloads: NewEntry[] = [
    ...authored,
    ...bookkeeping(view.indexer, { capture, flush, chains, metrics, nowMs: options.nowMs }),
    ...(chains?.diagnostics ?? []),
  ];
  const { entries, after } = chainWithDiagnostics(view, payloads, before, options.nowMs);
  const sidecars = [...flush.sidecars, ...(chains?.sidecars ?? [])];
  const report = runReport({
    session: view.session.path,
    summarizer: options.summarizer.name,
    capture,
    flush,
    chains,
    before,
    after,
    entriesAppended: entries.length,
    sidecars: sidecars.length,
  });
  return { entries, sidecars, outcomes: flush.outcomes, report, afterBranch: [...view.branch, ...entries], after };
}

/**
 * Chain compression (step 8) on the context as it stands after the flush: the flush has updated
 * the in-memory index (records, refs, per-batch summaries), which decides each chain's body.
 * @returns null when chain compression is off
 */
async function compressStep(view: SessionView, options: PlanOptions, pendingKeys: Set<string>): Promise<CompressResult | null> {
  if (!view.config.chainCompression.enabled) return null;
  return compressChains(view.items, view.indexer, {
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

/**
 * The recovery hint, once per run (docs/design.md "Recovery hints"): at the end of the last summary
 * this run writes that no chain compressed in this run hides and that stays within its batch's raw
 * size with it; without one, at the end of the last chain body this run writes; else nowhere
 * (the extension's stubs name `context_tree_query` themselves).
 * @param entries the flush's entries, then the chain step's, in order
 * @param room each summary entry's batch raw chars
 */
export function placeRecoveryHint(entries: NewEntry[], room: Map<NewEntry, number>): { entries: NewEntry[]; summaryCharsAdded: number } {
  const hidden = new Set<string>();
  for (const e of entries)
    if (e.type === "custom" && e.customType === CUSTOM_TYPES.chain) for (const ref of (e.data as ChainEntryData).toolRefs ?? []) hidden.add(ref);
  const fits = (e: NewEntry): e is NewEntry & { type: "custom_message"; content: string } => {
    if (e.type !== "custom_message" || typeof e.content !== "string" || !room.has(e)) return false;
    const refs = (e.details as SummaryDetails).toolCallRefs;
    return !refs.some((r) => hidden.has(r.shortId)) && withRecoveryHint(e.content).length <= (room.get(e) ?? 0);
  };
  const out = [...entries];
  for (let i = out.length - 1; i >= 0; i--) {
    const e = out[i];
    if (fits(e)) {
      const content = withRecoveryHint(e.content);
      out[i] = { ...e, content };
      return { entries: out, summaryCharsAdded: content.length - e.content.length };
    }
  }
  for (let i = out.length - 1; i >= 0; i--) {
    const e = out[i];
    if (e.type !== "custom" || e.customType !== CUSTOM_TYPES.chain) continue;
    const data = e.data as ChainEntryData;
    if (data.rangeSummaryText === undefined) continue;
    out[i] = { ...e, data: { ...data, rangeSummaryText: withRecoveryHint(data.rangeSummaryText) } };
    return { entries: out, summaryCharsAdded: 0 };
  }
  return { entries: out, summaryCharsAdded: 0 };
}

/** The flush result with `added` more summary characters (in its totals and its frontier). */
function withSummaryChars(flush: FlushResult, added: number): FlushResult {
  if (added === 0) return flush;
  const frontier = flush.frontier ? { ...flush.frontier, summaryCharCount: flush.frontier.summaryCharCount + added } : null;
  return { ...flush, summaryChars: flush.summaryChars + added, frontier };
}

/** Occurrence keys of the captured calls whose batch failed to summarize. */
function failedKeys(batches: Batch[], outcomes: BatchOutcome[]): Set<string> {
  const failed = new Set(outcomes.filter((o) => o.outcome === "failed").map((o) => o.turnIndex));
  return new Set(batches.filter((b) => failed.has(b.turnIndex)).flatMap((b) => b.calls.map((c) => c.key)));
}
