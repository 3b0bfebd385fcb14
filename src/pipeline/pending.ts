/**
 * The quick check `run` makes before planning, so that a second pass over an archive does no work
 * on files that are already condensed (issue 6): when capture finds no batch, no chain is waiting
 * to be compressed and the render finds no diagnostic that is not yet recorded, there is nothing
 * to append — the summarizer is not even created, the context metrics and the flush are skipped.
 * Tool results the render removes that nothing recovers yet, and occurrence collisions not yet
 * recorded, are work too (the recovery index and the collision diagnostics).
 *
 * The check uses the planner's own pieces (the view's capture and render, chain selection,
 * unrecorded diagnostics) and is conservative: it may report work where the planner then finds
 * none (e.g. a chain with nothing to back-fill), never the other way round.
 */
import { selectEligibleChains } from "../chain/compress.js";
import { contextOccurrences } from "../prune/occurrences.js";
import { droppedResults, recoveryRecords } from "../prune/recovery.js";
import { unrecordedDiagnostics } from "../render/diagnostics.js";
import { collisionDiagnostics } from "./recovery.js";
import { idleRunReport, type RunReport } from "./report.js";
import type { SessionView } from "./view.js";

/**
 * Chains `run` would try to compress: the planner's own selection (closed, not yet compressed,
 * older than the rolling window, not waiting for the recovery grace window) over Pi's projection
 * of the branch; 0 when chain compression is off. A chain the planner then skips (nothing to
 * back-fill) still counts, so such a session always takes the full path.
 */
export function pendingChains(view: SessionView): number {
  if (!view.config.chainCompression.enabled) return 0;
  const messages = view.items.map((i) => i.message);
  return selectEligibleChains(messages, view.indexer, view.config, view.isProtected).eligible.length;
}

/** Tool results the render as read removes that no record recovers yet. */
export function pendingRecoveries(view: SessionView): number {
  const handler = view.rendered.handler;
  if (!handler) return 0;
  const { pruned } = handler;
  const dropped = droppedResults(contextOccurrences(handler.items), pruned.phases[0]?.messages ?? pruned.messages, pruned.messages, pruned.relocated);
  return recoveryRecords(dropped, view.indexer).length;
}

/** Render and occurrence-collision diagnostics not yet recorded. */
function pendingDiagnostics(view: SessionView): number {
  const collisions = collisionDiagnostics(contextOccurrences(view.items), view.indexer).map((d) => ({ ...d, dedupKey: d.detail }));
  return unrecordedDiagnostics(view.branch, [...view.rendered.diagnostics, ...collisions]).length;
}

/**
 * Whether a run would change what Pi sends or record anything: batches, chains or diagnostics to
 * write, and (unless `recoveries` is false: a render does not change with them) results to index.
 * Stops at the first kind of work found.
 */
export function hasPendingWork(view: SessionView, options: { recoveries?: boolean } = {}): boolean {
  return (
    view.capture.batches.length > 0 || pendingChains(view) > 0 || pendingDiagnostics(view) > 0 || (options.recoveries !== false && pendingRecoveries(view) > 0)
  );
}

/** The report of a run that has nothing to do, or null when there is work (then plan as usual). */
export function idleReport(view: SessionView): RunReport | null {
  if (hasPendingWork(view)) return null;
  return idleRunReport(view.session.path, view.capture, view.rendered);
}
