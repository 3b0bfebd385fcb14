/**
 * The quick check `run` makes before planning, so that a second pass over an archive does no work
 * on files that are already condensed (issue 6): when capture finds no batch, no chain is waiting
 * to be compressed and the render finds no diagnostic that is not yet recorded, there is nothing
 * to append — the summarizer is not even created, the context metrics and the flush are skipped.
 *
 * The check uses the planner's own pieces (capture, chain selection, unrecorded diagnostics) and is
 * conservative: it may report work where the planner then finds none (e.g. a chain with nothing to
 * back-fill), never the other way round.
 */
import type { PruneConfig } from "../config/config.js";
import { selectEligibleChains } from "../chain/compress.js";
import { projectBranch } from "../context/projection.js";
import { unrecordedDiagnostics } from "../render/diagnostics.js";
import { renderBranch, type Rendered } from "../render/render.js";
import { sizeMessages } from "../report/counts.js";
import type { Session } from "../session/session.js";
import type { SessionEntry } from "../session/types.js";
import { captureBatches, type CaptureResult } from "./capture.js";
import { ToolCallIndexer } from "./indexer.js";
import type { RunReport } from "./plan.js";
import { protectionTest } from "./protect.js";

export interface PendingWork {
  /** Batches capture would hand to the flush. */
  batches: number;
  /** Closed chains older than the rolling window that have no chain entry yet. */
  chains: number;
  /** Render diagnostics not yet recorded as `context-prune-diagnostic` entries. */
  diagnostics: number;
}

/**
 * Chains `run` would try to compress: the planner's own selection (closed, not yet compressed,
 * older than the rolling window, not waiting for the recovery grace window) over Pi's projection
 * of the branch; 0 when chain compression is off. A chain the planner then skips (nothing to
 * back-fill) still counts, so such a session always takes the full path.
 */
export function pendingChains(branch: SessionEntry[], indexer: ToolCallIndexer, config: PruneConfig): number {
  if (!config.chainCompression.enabled) return 0;
  const messages = projectBranch(branch).map((i) => i.message);
  return selectEligibleChains(messages, indexer, config, protectionTest(config)).eligible.length;
}

/**
 * What a run would have to do on this session, and the rendered context (for the report).
 */
export function pendingWork(
  session: Session,
  config: PruneConfig,
): PendingWork & { capture: CaptureResult; rendered: Rendered } {
  const indexer = ToolCallIndexer.fromBranch(session.branch);
  const capture = captureBatches(session.branch, indexer, protectionTest(config), config.batchingMode);
  const rendered = renderBranch(session.branch, config, indexer);
  return {
    batches: capture.batches.length,
    chains: pendingChains(session.branch, indexer, config),
    diagnostics: unrecordedDiagnostics(session.branch, rendered.diagnostics).length,
    capture,
    rendered,
  };
}

/**
 * The report of a run that has nothing to do, or null when there is work (then plan as usual,
 * handing `work` to `planRun` so the capture and the render are not done twice).
 */
export function idleRunReport(session: Session, work: PendingWork & { capture: CaptureResult; rendered: Rendered }): RunReport | null {
  if (work.batches > 0 || work.chains > 0 || work.diagnostics > 0) return null;
  const size = sizeMessages(work.rendered.after);
  return {
    session: session.path,
    summarizer: "none (nothing to do)",
    batches: { captured: 0, summarized: 0, skippedTrivial: 0, skippedDeduped: 0, skippedOversized: 0, failed: 0 },
    calls: { spilled: 0, deduped: 0, protected: work.capture.protectedCalls, summarized: 0, unanswered: work.capture.unanswered },
    chars: { raw: 0, summary: 0 },
    chains: { compressed: 0, rangesSummarized: 0, backfilledCalls: 0, waiting: 0 },
    context: { before: size, after: size },
    usage: { input: 0, output: 0, cost: 0, calls: 0 },
    failures: [],
    entriesAppended: 0,
    sidecars: 0,
  };
}
