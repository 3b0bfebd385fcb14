/**
 * Back-filled records (docs/design.md "Deterministic fallback (uncovered chains)", "Pruned Data
 * Is Still Available"): outputs indexed only so that they stay recoverable — a compressed chain's
 * calls no summary covered, and tool results the render removes (orphan sweep) — in one flagged
 * `context-prune-index` entry `{toolCalls, backfilled: true, refs}`. The extension reads refs from
 * such entries and never lets their records seed its dedup hash map (pi-condense 2.9.1
 * `ToolCallIndexer.reconstructFromSession`); a huge output goes to a sidecar as an eager spill does.
 */
import { indexEntry } from "../entries/build.js";
import type { SummaryToolCallRef, ToolCallRecord } from "../entries/types.js";
import type { NewEntry } from "../session/types.js";
import type { ToolCallIndexer } from "./indexer.js";
import { spillRecord } from "./spill.js";

/** Where huge back-filled outputs go: beside the session the entries are written to. */
export interface BackfillTarget {
  sessionPath: string;
  sessionId: string;
  /** `spillThreshold`: outputs of this many characters or more are spilled. */
  spillThreshold: number;
  previewBytes: number;
}

export interface Backfill {
  /** The index entry, or null when there was nothing to back-fill. */
  entry: NewEntry | null;
  /** Sidecars to write before the entry. */
  sidecars: { path: string; text: string }[];
  /** The refs handed out, one per record, in order. */
  refs: SummaryToolCallRef[];
}

/**
 * Index records as back-filled, each with a new short ref (spilling huge outputs), and update
 * `indexer` as the entry will. The records are changed in place when spilled.
 */
export function backfill(records: ToolCallRecord[], indexer: ToolCallIndexer, target: BackfillTarget): Backfill {
  if (records.length === 0) return { entry: null, sidecars: [], refs: [] };
  const sidecars: { path: string; text: string }[] = [];
  const refs: SummaryToolCallRef[] = [];
  for (const record of records) {
    if (record.resultText.length >= target.spillThreshold) sidecars.push(spillRecord(record, { ...target }));
    refs.push(indexer.allocateRef(record));
  }
  const entry = indexEntry({ toolCalls: records, backfilled: true, refs });
  for (const record of records) indexer.addRecord(record, false);
  indexer.registerRefs(refs);
  return { entry, sidecars, refs };
}
