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

export interface PendingWork {
  /** Batches capture would hand to the flush. */
  batches: number;
  /** Closed chains older than the rolling window that have no chain entry yet. */
  chains: number;
  /** Render and occurrence-collision diagnostics not yet recorded as `context-prune-diagnostic` entries. */
  diagnostics: number;
  /** Tool results the render removes that no record recovers yet (the recovery index would take them). */
  recoveries: number;
  /** For the `pi` target: context edits stock Pi still needs (0 for the `extension` target). */
  edits: number;
}

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
  const dropped = droppedResults(contextOccurrences(handler.items), pruned.phases[0]?.messages ?? pruned.messages, pruned.messages);
  return recoveryRecords(dropped, view.indexer).length;
}

/**
 * What a run would have to do on this session. The context edits are looked for only when
 * nothing else is pending (a run with other work plans its edits anyway).
 */
export function pendingWork(view: SessionView, runFor: RunFor = EXTENSION_ONLY): PendingWork {
  const collisions = collisionDiagnostics(contextOccurrences(view.sourceContext.items), view.indexer).map((d) => ({ ...d, dedupKey: d.detail }));
  const work = {
    batches: view.capture.batches.length,
    chains: pendingChains(view),
    diagnostics: unrecordedDiagnostics(view.branch, [...view.rendered.diagnostics, ...collisions]).length,
    recoveries: pendingRecoveries(view),
    edits: 0,
  };
  if (runFor.target.used === "pi" && work.batches + work.chains + work.diagnostics + work.recoveries === 0) work.edits = pendingEdits(view, runFor.recovery);
  return work;
}

/** The report of a run that has nothing to do, or null when there is work (then plan as usual). */
export function idleReport(view: SessionView, runFor: RunFor = EXTENSION_ONLY): RunReport | null {
  const work = pendingWork(view, runFor);
  if (work.batches > 0 || work.chains > 0 || work.diagnostics > 0 || work.recoveries > 0 || work.edits > 0) return null;
  return idleRunReport(view.session.path, runFor.target, view.capture, view.rendered);
}
