/**
 * The main job for one session, computed in memory (SPEC.md sections 5 and 6): rebuild the index
 * from existing entries, capture, flush, chain compression, then the bookkeeping tail — frontier,
 * stats, flush metrics — then any diagnostics not recorded yet. Nothing is written here; `run`
 * writes the sidecars and appends `entries`.
 */
import { compressChains, type CompressResult } from "../chain/compress.js";
import type { PruneConfig } from "../config/config.js";
import { branchMessages } from "../context/branch-messages.js";
import { projectBranch } from "../context/projection.js";
import { recordedDiagnosticKeys, unrecordedDiagnostics } from "../render/diagnostics.js";
import { renderBranch, type Rendered } from "../render/render.js";
import { sizeMessages } from "../report/counts.js";
import { computeContextMetrics } from "../report/context-metrics.js";
import type { Session } from "../session/session.js";
import type { SessionEntry } from "../session/types.js";
import { chainEntries, type NewEntry } from "../session/writer.js";
import type { Summarizer, SummarizerUsage } from "../summarize/types.js";
import { captureBatches, type Batch, type CaptureResult } from "./capture.js";
import { flushBatches, type BatchOutcome, type FlushProgress, type Sidecar } from "./flush.js";
import { ToolCallIndexer } from "./indexer.js";
import { protectionTest } from "./protect.js";
import { CUSTOM_TYPES, type FlushMetricsData, type StatsData } from "./types.js";

export interface PlanOptions {
  config: PruneConfig;
  summarizer: Summarizer;
  concurrency: number;
  /** Epoch ms used for every timestamp written. */
  nowMs: number;
  /** Where the entries will be written (sidecars go beside it). */
  targetPath: string;
  signal?: AbortSignal;
  onProgress?: (progress: FlushProgress) => void;
  /**
   * The capture and the render of the session as read, when the caller already made them (`run`'s
   * quick check, `pendingWork`): same session, same configuration, so they are not done again.
   */
  prepared?: { capture: CaptureResult; rendered: Rendered };
}

/** What `run` reports (and prints as `--json`). */
export interface RunReport {
  session: string;
  summarizer: string;
  batches: {
    captured: number;
    summarized: number;
    skippedTrivial: number;
    skippedDeduped: number;
    skippedOversized: number;
    failed: number;
  };
  calls: { spilled: number; deduped: number; protected: number; summarized: number; unanswered: number };
  chars: { raw: number; summary: number };
  chains: { compressed: number; rangesSummarized: number; backfilledCalls: number; waiting: number };
  context: { before: { chars: number; tokens: number }; after: { chars: number; tokens: number } };
  usage: SummarizerUsage & { calls: number };
  failures: { turnIndex: number; reason: string }[];
  entriesAppended: number;
  sidecars: number;
}

export interface RunPlan {
  /** Entries with ids, parents and timestamps, ready to append. */
  entries: SessionEntry[];
  sidecars: Sidecar[];
  outcomes: BatchOutcome[];
  report: RunReport;
  /** The rendered context after the run (for `render --dry-run`). */
  afterBranch: SessionEntry[];
}

/**
 * Plan the main job on a loaded session.
 * @throws CondenseError (exit 130) when `signal` aborts during summarization
 */
export async function planRun(session: Session, options: PlanOptions): Promise<RunPlan> {
  const { config } = options;
  const isProtected = protectionTest(config);
  const indexer = ToolCallIndexer.fromBranch(session.branch);
  const metrics = computeContextMetrics(
    branchMessages(session.branch).map((m) => m.message),
    indexer.frontier,
    indexer,
    isProtected,
  );
  const before = options.prepared?.rendered ?? renderBranch(session.branch, config);
  const capture = options.prepared?.capture ?? captureBatches(session.branch, indexer, isProtected, config.batchingMode);
  const flush = await flushBatches(capture.batches, indexer, {
    config,
    summarizer: options.summarizer,
    concurrency: options.concurrency,
    targetPath: options.targetPath,
    sessionId: session.id,
    signal: options.signal,
    onProgress: options.onProgress,
  });

  // Chain compression (step 8) on the context as it stands after the flush: the flush has updated
  // the in-memory index (records, refs, per-batch summaries), which decides each chain's body.
  const chains: CompressResult | null = config.chainCompression.enabled
    ? await compressChains(projectBranch(session.branch), indexer, {
        config,
        summarizer: options.summarizer,
        isProtected,
        concurrency: options.concurrency,
        nowMs: options.nowMs,
        targetPath: options.targetPath,
        sessionId: session.id,
        existingDiagnostics: recordedDiagnosticKeys(session.branch),
        pendingKeys: failedKeys(capture.batches, flush.outcomes),
        signal: options.signal,
      })
    : null;
  const chainsCompressed = chains?.chainsCompressed ?? 0;

  const payloads: NewEntry[] = [...flush.entries, ...(chains?.entries ?? [])];
  if (flush.frontier || chainsCompressed > 0) {
    const stats: StatsData = {
      totalInputTokens: indexer.stats.totalInputTokens + flush.usage.input + (chains?.usage.input ?? 0),
      totalOutputTokens: indexer.stats.totalOutputTokens + flush.usage.output + (chains?.usage.output ?? 0),
      totalCost: indexer.stats.totalCost + flush.usage.cost + (chains?.usage.cost ?? 0),
      callCount: indexer.stats.callCount + flush.modelCalls + (chains?.modelCalls ?? 0),
      chainsCompressed: indexer.stats.chainsCompressed + chainsCompressed,
      rangesSummarized: indexer.stats.rangesSummarized + (chains?.rangesSummarized ?? 0),
    };
    const flushMetrics: FlushMetricsData = {
      ts: options.nowMs,
      trigger: "offline",
      capturedBatches: capture.batches.length,
      processedBatches: flush.processedBatches,
      outcome: flush.frontier?.outcome ?? (capture.batches.length === 0 ? "empty" : "error"),
      metrics,
    };
    if (flush.frontier) payloads.push({ type: "custom", customType: CUSTOM_TYPES.frontier, data: flush.frontier });
    payloads.push(
      { type: "custom", customType: CUSTOM_TYPES.stats, data: stats },
      { type: "custom", customType: CUSTOM_TYPES.flushMetrics, data: flushMetrics },
    );
  }
  payloads.push(...(chains?.diagnostics ?? []));
  const sidecars = [...flush.sidecars, ...(chains?.sidecars ?? [])];
  const nowIso = new Date(options.nowMs).toISOString();
  let entries = chainEntries(session, payloads, nowIso);
  const after = entries.length > 0 ? renderBranch([...session.branch, ...entries], config) : before;
  // Diagnostics of the rendered result that the branch does not record yet go last. Re-chaining
  // gives the entries before them the same ids (ids are deterministic), and custom entries do not
  // change the render.
  const diagnostics = unrecordedDiagnostics(session.branch, after.diagnostics);
  if (diagnostics.length > 0) {
    for (const data of diagnostics) payloads.push({ type: "custom", customType: CUSTOM_TYPES.diagnostic, data });
    entries = chainEntries(session, payloads, nowIso);
  }
  const afterBranch = [...session.branch, ...entries];
  const count = (k: BatchOutcome["outcome"]) => flush.outcomes.filter((o) => o.outcome === k).length;
  const report: RunReport = {
    session: session.path,
    summarizer: options.summarizer.name,
    batches: {
      captured: capture.batches.length,
      summarized: count("summarized"),
      skippedTrivial: count("skipped-trivial"),
      skippedDeduped: count("skipped-deduped"),
      skippedOversized: count("skipped-oversized"),
      failed: count("failed"),
    },
    calls: {
      spilled: flush.spilledCalls,
      deduped: flush.dedupedCalls,
      protected: capture.protectedCalls,
      summarized: flush.summarizedCalls,
      unanswered: capture.unanswered,
    },
    chars: { raw: flush.rawChars, summary: flush.summaryChars },
    chains: {
      compressed: chainsCompressed,
      rangesSummarized: chains?.rangesSummarized ?? 0,
      backfilledCalls: chains?.backfilledCalls ?? 0,
      waiting: chains?.waiting ?? 0,
    },
    context: { before: sizeMessages(before.after), after: sizeMessages(after.after) },
    usage: {
      input: flush.usage.input + (chains?.usage.input ?? 0),
      output: flush.usage.output + (chains?.usage.output ?? 0),
      cost: flush.usage.cost + (chains?.usage.cost ?? 0),
      calls: flush.modelCalls + (chains?.modelCalls ?? 0),
    },
    failures: flush.outcomes.filter((o) => o.outcome === "failed").map((o) => ({ turnIndex: o.turnIndex, reason: o.reason ?? "" })),
    entriesAppended: entries.length,
    sidecars: sidecars.length,
  };
  return { entries, sidecars, outcomes: flush.outcomes, report, afterBranch };
}

/** Occurrence keys of the captured calls whose batch failed to summarize. */
function failedKeys(batches: Batch[], outcomes: BatchOutcome[]): Set<string> {
  const failed = new Set(outcomes.filter((o) => o.outcome === "failed").map((o) => o.turnIndex));
  return new Set(batches.filter((b) => failed.has(b.turnIndex)).flatMap((b) => b.calls.map((c) => c.key)));
}
