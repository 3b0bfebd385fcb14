/**
 * The pi-condense entry formats (docs/design.md §5), and the one entry of condense's own
 * (`condense-context-edits`, docs/design.md §11). Field order in these interfaces is the
 * order in which condense writes them, matching the extension.
 */

/** customType of every entry the pruner writes. */
export const CUSTOM_TYPES = {
  index: "context-prune-index",
  summary: "context-prune-summary",
  dedupAlias: "context-prune-dedup-alias",
  frontier: "context-prune-frontier",
  chain: "context-prune-chain",
  diagnostic: "context-prune-diagnostic",
  stats: "context-prune-stats",
  flushMetrics: "context-prune-flush-metrics",
} as const;

/**
 * customType of the `custom` entry that follows the `context_edit` entries one `run --target pi`
 * appends, listing their ids: which edits on a branch are condense's (a later edit of the same
 * target by anyone else is the user's, and condense leaves that target alone). Pi never puts a
 * `custom` entry into the context, and the extension ignores custom types it does not know.
 */
export const CONTEXT_EDITS_TYPE = "condense-context-edits";

/** `data` of a `condense-context-edits` entry. */
export interface ContextEditsData {
  /** Ids of the `context_edit` entries written by the same run, in file order. */
  editIds: string[];
}

/** One indexed tool call. `resultText` is "" when the output was spilled to a sidecar. */
export interface ToolCallRecord {
  toolCallId: string;
  toolName: string;
  args: unknown;
  resultText: string;
  isError: boolean;
  /** 0-based count of assistant messages on the branch before this call's message; -1 for back-filled records. */
  turnIndex: number;
  /** The batch's time (epoch ms): the assistant entry's persistence time. */
  timestamp: number;
  /** The ToolResultMessage's own `timestamp` (epoch ms): the occurrence discriminant. */
  resultTimestamp?: number;
  spillPath?: string;
  /** UTF-8 bytes of the spilled output. */
  spillBytes?: number;
  resultPreview?: string;
  contentHash?: string;
}

/** A short ref handed out for one occurrence. */
export interface SummaryToolCallRef {
  shortId: string;
  toolCallId: string;
  resultTimestamp?: number;
}

export interface IndexEntryData {
  toolCalls: ToolCallRecord[];
  backfilled?: true;
  refs?: SummaryToolCallRef[];
}

export interface SummaryDetails {
  toolCallRefs: SummaryToolCallRef[];
  toolNames: string[];
  turnIndex: number;
  timestamp: number;
}

export interface DedupAliasData {
  newToolCallId: string;
  originalToolCallId: string;
  newResultTimestamp?: number;
  originalResultTimestamp?: number;
  hash?: string;
}

export type FrontierOutcome = "summarized" | "skipped-deduped" | "skipped-trivial" | "skipped-oversized";

export interface FrontierData {
  lastAttemptedToolCallId: string;
  lastAttemptedToolName: string;
  lastAttemptedTurnIndex: number;
  lastAttemptedTimestamp: number;
  attemptedBatchCount: number;
  attemptedToolCallCount: number;
  rawCharCount: number;
  summaryCharCount: number;
  outcome: FrontierOutcome;
}

export interface ChainEntryData {
  blockId: string;
  startUserTimestamp: number;
  droppedToolCallIds: string[];
  finalAssistantTimestamp: number | null;
  toolRefs: string[];
  compressedAt: number;
  rangeSummaryText?: string;
  bodySource?: "deterministic";
  protectedToolCallIds?: string[];
  droppedOccurrenceKeys?: string[];
}

export type DiagnosticKind = "unresolved-range" | "range-id-mismatch" | "orphan-sweep" | "backfill-empty" | "occurrence-collision";

export interface DiagnosticData {
  kind: DiagnosticKind;
  detail: string;
}

export interface StatsData {
  totalInputTokens: number;
  totalOutputTokens: number;
  totalCost: number;
  callCount: number;
  chainsCompressed: number;
  rangesSummarized: number;
}

export interface ContextMetrics {
  openCycleThinkingTokens: number;
  largestChainSharePct: number;
  frontierGapTokens: number;
}

export interface FlushMetricsData {
  ts: number;
  trigger: string;
  capturedBatches: number;
  processedBatches: number;
  outcome: string;
  metrics: ContextMetrics;
}

export function emptyStats(): StatsData {
  return { totalInputTokens: 0, totalOutputTokens: 0, totalCost: 0, callCount: 0, chainsCompressed: 0, rangesSummarized: 0 };
}
