/**
 * The main job for one session, computed in memory (SPEC.md sections 5 and 6): rebuild the index
 * from existing entries, capture, flush, then the bookkeeping tail — frontier, stats, flush
 * metrics. Nothing is written here; `run` writes the sidecars and appends `entries`.
 */
import type { PruneConfig } from "../config/config.js";
import { branchMessages } from "../context/branch-messages.js";
import { renderBranch } from "../render/render.js";
import { sizeMessages } from "../report/counts.js";
import { computeContextMetrics } from "../report/context-metrics.js";
import type { Session } from "../session/session.js";
import type { SessionEntry } from "../session/types.js";
import { chainEntries, type NewEntry } from "../session/writer.js";
import type { Summarizer, SummarizerUsage } from "../summarize/types.js";
import { captureBatches } from "./capture.js";
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
  const before = renderBranch(session.branch, config);
  const capture = captureBatches(session.branch, indexer, isProtected, config.batchingMode);
  const flush = await flushBatches(capture.batches, indexer, {
    config,
    summarizer: options.summarizer,
    concurrency: options.concurrency,
    targetPath: options.targetPath,
    sessionId: session.id,
    signal: options.signal,
    onProgress: options.onProgress,
  });

  const payloads: NewEntry[] = [...flush.entries];
  if (flush.frontier) {
    const stats: StatsData = {
      totalInputTokens: indexer.stats.totalInputTokens + flush.usage.input,
      totalOutputTokens: indexer.stats.totalOutputTokens + flush.usage.output,
      totalCost: indexer.stats.totalCost + flush.usage.cost,
      callCount: indexer.stats.callCount + flush.modelCalls,
      chainsCompressed: indexer.stats.chainsCompressed,
      rangesSummarized: indexer.stats.rangesSummarized,
    };
    const flushMetrics: FlushMetricsData = {
      ts: options.nowMs,
      trigger: "offline",
      capturedBatches: capture.batches.length,
      processedBatches: flush.processedBatches,
      outcome: flush.frontier.outcome,
      metrics,
    };
    payloads.push(
      { type: "custom", customType: CUSTOM_TYPES.frontier, data: flush.frontier },
      { type: "custom", customType: CUSTOM_TYPES.stats, data: stats },
      { type: "custom", customType: CUSTOM_TYPES.flushMetrics, data: flushMetrics },
    );
  }
  const entries = chainEntries(session, payloads, new Date(options.nowMs).toISOString());
  const afterBranch = [...session.branch, ...entries];
  const after = entries.length > 0 ? renderBranch(afterBranch, config) : before;
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
    context: { before: sizeMessages(before.after), after: sizeMessages(after.after) },
    usage: { ...flush.usage, calls: flush.modelCalls },
    failures: flush.outcomes.filter((o) => o.outcome === "failed").map((o) => ({ turnIndex: o.turnIndex, reason: o.reason ?? "" })),
    entriesAppended: entries.length,
    sidecars: flush.sidecars.length,
  };
  return { entries, sidecars: flush.sidecars, outcomes: flush.outcomes, report, afterBranch };
}
