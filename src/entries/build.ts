/**
 * Every entry condense writes is built here, in the field order its writer uses. The
 * `context-prune-*` entries (docs/design.md §5) as the extension writes them: `custom` entries
 * carry `data`; the summary is a `custom_message` (hidden from the TUI, so it enters only the
 * model's context). The `compaction` entry (docs/design.md §10) as Pi writes it. For
 * `run --target pi`, Pi's own `context_edit` entries and the `condense-context-edits` entry that
 * lists them (docs/design.md §11). Ids, parents and timestamps are added when the
 * entries are chained (`session/writer.ts` `chainEntries`).
 */
import type { CompactionDetails, CompactionEntry, ContextEditEntry, Message, NewEntry } from "../session/types.js";
import {
  CONTEXT_EDITS_TYPE,
  CUSTOM_TYPES,
  type ChainEntryData,
  type DedupAliasData,
  type DiagnosticData,
  type ContextEditsData,
  type FlushMetricsData,
  type FrontierData,
  type IndexEntryData,
  type StatsData,
  type SummaryDetails,
  type SummaryToolCallRef,
  type ToolCallRecord,
} from "./types.js";

function custom(customType: string, data: unknown): NewEntry {
  return { type: "custom", customType, data };
}

/** `context-prune-index`: indexed records (and, for back-fills, their refs). */
export function indexEntry(data: IndexEntryData): NewEntry {
  return custom(CUSTOM_TYPES.index, data);
}

/**
 * The two `context-prune-index` entries of eagerly spilled calls: the records exactly as the
 * extension's own eager spill writes them (no refs), then their short refs in a record-less
 * back-filled entry `{ toolCalls: [], backfilled: true, refs }`. The extension reads refs only
 * from back-filled index entries, whose records never seed its dedup hash map (pi-condense 2.9.1
 * `ToolCallIndexer.reconstructFromSession`): this way it resolves the refs and never hands out
 * their numbers again, and dedup against the spilled records still works.
 */
export function spillIndexEntries(records: ToolCallRecord[], refs: SummaryToolCallRef[]): NewEntry[] {
  return [indexEntry({ toolCalls: records }), indexEntry({ toolCalls: [], backfilled: true, refs })];
}

/** `context-prune-summary`: the summary text (footer included) of one batch, with its refs. */
export function summaryEntry(text: string, details: SummaryDetails): NewEntry {
  return { type: "custom_message", customType: CUSTOM_TYPES.summary, content: text, display: false, details };
}

/** `context-prune-dedup-alias`: a call whose output repeats an indexed one. */
export function dedupAliasEntry(data: DedupAliasData): NewEntry {
  return custom(CUSTOM_TYPES.dedupAlias, data);
}

/** `context-prune-frontier`: the last call the flushes attempted. */
export function frontierEntry(data: FrontierData): NewEntry {
  return custom(CUSTOM_TYPES.frontier, data);
}

/** `context-prune-chain`: one compressed chain. */
export function chainEntry(data: ChainEntryData): NewEntry {
  return custom(CUSTOM_TYPES.chain, data);
}

/** `context-prune-diagnostic`: a degradation found while planning or rendering. */
export function diagnosticEntry(data: DiagnosticData): NewEntry {
  return custom(CUSTOM_TYPES.diagnostic, data);
}

/** `context-prune-stats`: cumulative summarizer usage and chain counts. */
export function statsEntry(data: StatsData): NewEntry {
  return custom(CUSTOM_TYPES.stats, data);
}

/** `context-prune-flush-metrics`: what one (offline) flush did, with the context metrics before it. */
export function flushMetricsEntry(data: FlushMetricsData): NewEntry {
  return custom(CUSTOM_TYPES.flushMetrics, data);
}

/** The fields of a compaction that its summary step produces (Pi's `CompactionResult`). */
export type CompactionFields = Pick<CompactionEntry<CompactionDetails>, "summary" | "firstKeptEntryId" | "tokensBefore" | "details" | "usage">;

/**
 * `compaction`, as Pi 1.6's `SessionManager.appendCompaction` writes it for `/compact`: summary,
 * firstKeptEntryId, tokensBefore, details, usage (model-written summaries only), `fromHook: false`,
 * then `systemMessage` — the replay of the branch's system messages, stamped with the entry's
 * time — when the branch has any; `customInstructions` last when given (docs/design.md §10).
 * @param options.timestampMs the entry's time (epoch ms; the same instant `chainEntries` stamps)
 */
export function compactionEntry(
  fields: CompactionFields,
  options: { systemMessage?: Message; timestampMs: number; customInstructions?: string },
): Omit<CompactionEntry<CompactionDetails>, "id" | "parentId" | "timestamp"> {
  return {
    type: "compaction",
    summary: fields.summary,
    firstKeptEntryId: fields.firstKeptEntryId,
    tokensBefore: fields.tokensBefore,
    details: fields.details,
    ...(fields.usage ? { usage: fields.usage } : {}),
    fromHook: false,
    ...(options.systemMessage ? { systemMessage: { ...options.systemMessage, timestamp: options.timestampMs } } : {}),
    ...(options.customInstructions ? { customInstructions: options.customInstructions } : {}),
  };
}

/**
 * Pi's `context_edit` (pi-coding-agent 1.6 `SessionManager.appendContextEdit`): the latest one per
 * target on the branch replaces that entry's content (`{ content }`) or omits it (`null`) in
 * Pi's projection. The caller checks that the target is one `appendContextEdit` accepts
 * (`context/projection.ts` `isEditableTarget`).
 */
export function contextEditEntry(targetId: string, replacement: ContextEditEntry["replacement"]): NewEntry {
  return { type: "context_edit", targetId, replacement };
}

/** `condense-context-edits`: the ids of the `context_edit` entries one run wrote. */
export function contextEditsEntry(data: ContextEditsData): NewEntry {
  return custom(CONTEXT_EDITS_TYPE, data);
}
