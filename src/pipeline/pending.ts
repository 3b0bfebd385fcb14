/**
 * The quick check `run` makes before planning, so that a second pass over an archive does no work
 * on files that are already condensed (issue 6): when capture finds no batch, no chain is waiting
 * to be compressed and the render finds no diagnostic that is not yet recorded, there is nothing
 * to append — the summarizer is not even created, the context metrics and the flush are skipped.
 * Tool results the render removes that nothing recovers yet, and occurrence collisions not yet
 * recorded, are work too (the recovery index and the collision diagnostics), and for the `pi`
 * target the context edits stock Pi still needs.
 *
 * The check uses the planner's own pieces (the view's capture and render, chain selection,
 * unrecorded diagnostics) and is conservative: it may report work where the planner then finds
 * none (e.g. a chain with nothing to back-fill), never the other way round.
 */
import { selectEligibleChains } from "../chain/compress.js";
import type { RecoveryOptions } from "../context/vocabulary.js";
import { ownContextEditIds } from "../entries/read.js";
import { planContextEdits } from "../render/context-edits.js";
import { contextOccurrences } from "../prune/occurrences.js";
import { droppedResults, recoveryRecords } from "../prune/recovery.js";
import { unrecordedDiagnostics } from "../render/diagnostics.js";
import { collisionDiagnostics } from "./recovery.js";
import { idleRunReport, type RunReport } from "./report.js";
import type { RunFor } from "./target.js";
import type { SessionView } from "./view.js";

const EXTENSION_ONLY: RunFor = { target: { used: "extension", reason: "--target extension" }, recovery: {} };

/** Context edits a `pi`-target run would write on the branch as read (render/context-edits.ts). */
export function pendingEdits(view: SessionView, recovery: RecoveryOptions = {}): number {
  const ctx = { indexer: view.indexer, config: view.config, isProtected: view.isProtected, wording: { target: "pi" as const, recovery } };
  return planContextEdits(view.branch, ctx, ownContextEditIds(view.branch)).edits.length;
}

/**
 * Chains `run` would try to compress: the planner's own selection (closed, not yet compressed,
 * older than the rolling window, not waiting for the recovery grace window) over Pi's projection
 * of the branch; 0 when chain compression is off. A chain the planner then skips (nothing to
 * back-fill) still counts, so such a session always takes the full path.
 */
export function pendingChains(view: SessionView): number {
  if (!view.config.chainCompression.enabled) return 0;
  const messages = view.sourceContext.items.map((i) => i.message);
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
  const collisions = collisionDiagnostics(contextOccurrences(view.sourceContext.items), view.indexer).map((d) => ({ ...d, dedupKey: d.detail }));
  return unrecordedDiagnostics(view.branch, [...view.rendered.diagnostics, ...collisions]).length;
}

/**
 * Whether a run for `runFor` would change what Pi sends or record anything: batches, chains or
 * diagnostics to write, results to index, and for the `pi` target context edits stock Pi still
 * needs. Stops at the first kind of work found; the edits, the dearest check, come last.
 * @param options.renderOnly only work that changes the render counts: for the extension the
 *   recovery index never does; for stock Pi it comes with edits that omit results, so it counts
 */
export function hasPendingWork(view: SessionView, runFor: RunFor = EXTENSION_ONLY, options: { renderOnly?: boolean } = {}): boolean {
  const forStockPi = runFor.target.used === "pi";
  return (
    view.capture.batches.length > 0 ||
    pendingChains(view) > 0 ||
    pendingDiagnostics(view) > 0 ||
    ((forStockPi || !options.renderOnly) && pendingRecoveries(view) > 0) ||
    (forStockPi && pendingEdits(view, runFor.recovery) > 0)
  );
}

/** The report of a run that has nothing to do, or null when there is work (then plan as usual). */
export function idleReport(view: SessionView, runFor: RunFor = EXTENSION_ONLY): RunReport | null {
  if (hasPendingWork(view, runFor)) return null;
  return idleRunReport(view.session.path, runFor.target, view.capture, view.rendered);
}
