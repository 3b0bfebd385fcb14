/**
 * What `run` adds so that no tool result is lost or mislabelled (docs/design.md "Pruned Data Is
 * Still Available", "Occurrence Identity", "Orphan Sweep"):
 * - a back-filled index entry for every tool result the render removes and no record recovers yet
 *   (the orphan sweep's, and any a compressed chain dropped unindexed), so `query` returns it;
 * - an `occurrence-collision` diagnostic for each occurrence key that several results of the
 *   context share: condense leaves them raw, since a stub could not tell them apart.
 */
import type { PruneConfig } from "../config/config.js";
import type { ContextItem } from "../context/projection.js";
import type { DiagnosticData } from "../entries/types.js";
import { backfill } from "../prune/backfill.js";
import type { ToolCallIndexer } from "../prune/indexer.js";
import { type ContextOccurrences, contextOccurrences } from "../prune/occurrences.js";
import { droppedResults, recoveryRecords } from "../prune/recovery.js";
import { sweptPhrase } from "../render/orphan-sweep.js";
import type { Rendered } from "../render/render.js";
import type { NewEntry } from "../session/types.js";
import { recordKeyOf } from "../context/vocabulary.js";

/** One tool result `run` indexed because the render removes it. */
export interface RecoveredResult {
  /** The short ref `query` takes. */
  ref: string;
  /** The result's own occurrence key (`id@resultTimestamp`). */
  key: string;
  /** The key the record is stored under: `key`, or `id#n@resultTimestamp` when `key` is unsafe. */
  storedAs: string;
  /** The session entry of the result. */
  entryId: string;
  /** What removes it: the orphan sweep (with why), or a compressed chain. */
  removedBy: string;
}

export interface RecoveryPlan {
  /** The back-filled index entry, or null when every removed result is recoverable already. */
  entry: NewEntry | null;
  sidecars: { path: string; text: string }[];
  recovered: RecoveredResult[];
}

/** Where recovery sidecars go. */
export interface RecoveryTarget {
  sessionPath: string;
  sessionId: string;
}

/**
 * Index the results a render removes that nothing recovers yet.
 * @param rendered the render the entries are planned against (its handler view and prune result)
 * @param indexer the index as it will be after the entries planned before this one; updated
 * @param baseItems the handler's items of the branch as read, whose reading of the tool results
 *   `rendered`'s shares when only messages without results follow them (`contextOccurrences`)
 */
export function planRecovery(
  rendered: Rendered,
  indexer: ToolCallIndexer,
  config: PruneConfig,
  target: RecoveryTarget,
  baseItems?: readonly ContextItem[],
): RecoveryPlan {
  if (!rendered.handler) return { entry: null, sidecars: [], recovered: [] };
  const { items, pruned } = rendered.handler;
  const occurrences = contextOccurrences(items, baseItems);
  const dropped = droppedResults(occurrences, pruned.phases[0]?.messages ?? pruned.messages, pruned.messages, pruned.relocated);
  const pairs = recoveryRecords(dropped, indexer);
  const done = backfill(
    pairs.map((p) => p.record),
    indexer,
    { sessionPath: target.sessionPath, sessionId: target.sessionId, spillThreshold: config.spillThreshold, previewBytes: config.spillPreviewBytes },
  );
  const recovered = pairs.map(
    ({ result, record }, i): RecoveredResult => ({
      ref: done.refs[i].shortId,
      key: result.key,
      storedAs: recordKeyOf(record),
      entryId: result.entry.id,
      removedBy: result.swept ? `the orphan sweep: ${sweptPhrase(result.message.toolCallId, result.swept)}` : "a compressed chain",
    }),
  );
  return { entry: done.entry, sidecars: done.sidecars, recovered };
}

/**
 * One `occurrence-collision` diagnostic per occurrence key that several tool results of the
 * context share, naming their entries; when the index holds the key already (written by the
 * extension, or before the second result existed), it says that the stub of that record replaces
 * every one of them.
 */
export function collisionDiagnostics(occurrences: ContextOccurrences, indexer: Pick<ToolCallIndexer, "isSummarized">): DiagnosticData[] {
  const out: DiagnosticData[] = [];
  for (const key of occurrences.sharedKeys) {
    const sharing = occurrences.byKey.get(key) ?? [];
    const entries = sharing.map((r) => r.entry.id).join(", ");
    const indexed = indexer.isSummarized(key)
      ? "; the index already holds this key, so the extension stubs every one of them with that record's output"
      : "; condense leaves them raw (a stub is looked up by this key and could not tell them apart)";
    out.push({ kind: "occurrence-collision", detail: `${key}: ${sharing.length} tool results share this occurrence key (entries ${entries})${indexed}` });
  }
  return out;
}
