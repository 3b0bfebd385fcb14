/**
 * Every `context-prune-*` entry condense reads is read here (docs/design.md §5; the extension's
 * `reconstructFromSession`), checked at this boundary so the rest of the code gets typed values.
 * Entries written by any version of the extension or of condense are accepted as leniently as the
 * extension accepts them; what cannot be used is skipped, never an error:
 * - `data` must be an object; an index entry needs a `toolCalls` array, and each record a string
 *   `toolCallId`, `toolName` and `resultText`; as in the extension, an index entry's `refs` count
 *   only when it is `backfilled` — refs on other index entries (spill entries of condense before
 *   it stored them as the extension reads them) are `strayRefs`: unknown to the extension, their
 *   numbers still taken;
 * - a summary ref needs a non-empty `shortId` and `toolCallId` (a `resultTimestamp` that is not a
 *   number is left out); summaries written before refs existed list bare `toolCallIds`;
 * - a dedup alias needs both ids; a chain entry a `blockId` and a numeric `startUserTimestamp`;
 *   a frontier a `lastAttemptedToolCallId` (its other fields default); stats keep their finite
 *   numbers; a diagnostic needs a string `kind` and `detail`.
 * `context-prune-flush-metrics` entries are written for the extension's observability and read by
 * nothing here.
 */
import type { CustomEntry, CustomMessageEntry, SessionEntry } from "../session/types.js";
import {
  CONTEXT_EDITS_TYPE,
  CUSTOM_TYPES,
  type ChainEntryData,
  type DedupAliasData,
  type DiagnosticData,
  type FrontierData,
  type FrontierOutcome,
  type StatsData,
  type SummaryToolCallRef,
  type ToolCallRecord,
} from "./types.js";

/** One readable `context-prune-*` entry, by kind. */
export type PruneEntry =
  | { kind: "index"; entry: CustomEntry; records: ToolCallRecord[]; backfilled: boolean; refs: SummaryToolCallRef[]; strayRefs: SummaryToolCallRef[] }
  | { kind: "summary"; entry: CustomMessageEntry; refs: SummaryToolCallRef[] }
  | { kind: "dedup-alias"; entry: CustomEntry; data: DedupAliasData }
  | { kind: "chain"; entry: CustomEntry; data: ChainEntryData }
  | { kind: "frontier"; entry: CustomEntry; data: FrontierData }
  | { kind: "stats"; entry: CustomEntry; data: Partial<StatsData> }
  | { kind: "diagnostic"; entry: CustomEntry; data: DiagnosticData };

type Fields = Record<string, unknown>;

const isFields = (v: unknown): v is Fields => typeof v === "object" && v !== null;
const nonEmptyString = (v: unknown): v is string => typeof v === "string" && v !== "";

/**
 * Read one entry of the branch.
 * @returns the entry's kind and checked contents, or null for any other entry and for one that
 *   cannot be used
 */
export function readPruneEntry(entry: SessionEntry): PruneEntry | null {
  if (entry.type === "custom_message") {
    return entry.customType === CUSTOM_TYPES.summary ? { kind: "summary", entry, refs: readSummaryRefs(entry.details) } : null;
  }
  if (entry.type !== "custom" || !isFields(entry.data)) return null;
  const data = entry.data;
  switch (entry.customType) {
    case CUSTOM_TYPES.index:
      return readIndex(entry, data);
    case CUSTOM_TYPES.dedupAlias:
      return nonEmptyString(data.newToolCallId) && nonEmptyString(data.originalToolCallId)
        ? { kind: "dedup-alias", entry, data: data as Fields & DedupAliasData }
        : null;
    case CUSTOM_TYPES.chain:
      return nonEmptyString(data.blockId) && typeof data.startUserTimestamp === "number"
        ? { kind: "chain", entry, data: data as Fields & ChainEntryData }
        : null;
    case CUSTOM_TYPES.frontier:
      return data.lastAttemptedToolCallId ? { kind: "frontier", entry, data: readFrontier(data) } : null;
    case CUSTOM_TYPES.stats:
      return { kind: "stats", entry, data: readStats(data) };
    case CUSTOM_TYPES.diagnostic:
      return typeof data.kind === "string" && typeof data.detail === "string"
        ? { kind: "diagnostic", entry, data: { kind: data.kind as DiagnosticData["kind"], detail: data.detail } }
        : null;
    default:
      return null;
  }
}

/**
 * The `blockId` a `context-prune-chain` entry names, whether or not the rest of it is usable (to
 * place a diagnostic about that chain at its entry); undefined for any other entry.
 */
export function chainBlockIdOf(entry: SessionEntry): unknown {
  return entry.type === "custom" && entry.customType === CUSTOM_TYPES.chain && isFields(entry.data) ? entry.data.blockId : undefined;
}

function readIndex(entry: CustomEntry, data: Fields): PruneEntry | null {
  if (!Array.isArray(data.toolCalls)) return null;
  const records = data.toolCalls.filter(isRecord);
  const backfilled = data.backfilled === true;
  const refs = Array.isArray(data.refs) ? readRefs(data.refs) : [];
  return { kind: "index", entry, records, backfilled, refs: backfilled ? refs : [], strayRefs: backfilled ? [] : refs };
}

function isRecord(r: unknown): r is ToolCallRecord {
  return isFields(r) && typeof r.toolCallId === "string" && typeof r.toolName === "string" && typeof r.resultText === "string";
}

/** The usable refs of a list (see the module comment). */
export function readRefs(list: unknown[]): SummaryToolCallRef[] {
  const out: SummaryToolCallRef[] = [];
  for (const r of list) {
    if (!isFields(r) || !nonEmptyString(r.shortId) || !nonEmptyString(r.toolCallId)) continue;
    const ref = r as Fields & SummaryToolCallRef;
    if (r.resultTimestamp === undefined || typeof r.resultTimestamp === "number") out.push(ref);
    else out.push({ shortId: r.shortId, toolCallId: r.toolCallId });
  }
  return out;
}

/**
 * The refs of a summary's `details`: `toolCallRefs`, or — for summaries written before refs
 * existed — bare `toolCallIds`, each its own ref. Shared by the index and the chain-range prune,
 * which must agree on what a summary covers.
 */
export function readSummaryRefs(details: unknown): SummaryToolCallRef[] {
  if (!isFields(details)) return [];
  if (Array.isArray(details.toolCallRefs)) return readRefs(details.toolCallRefs);
  if (Array.isArray(details.toolCallIds)) {
    return details.toolCallIds.filter(nonEmptyString).map((id) => ({ shortId: id, toolCallId: id }));
  }
  return [];
}

const num = (v: unknown, fallback: number) => (typeof v === "number" ? v : fallback);

function readFrontier(f: Fields): FrontierData {
  return {
    lastAttemptedToolCallId: String(f.lastAttemptedToolCallId),
    lastAttemptedToolName: typeof f.lastAttemptedToolName === "string" ? f.lastAttemptedToolName : "unknown",
    lastAttemptedTurnIndex: num(f.lastAttemptedTurnIndex, 0),
    lastAttemptedTimestamp: num(f.lastAttemptedTimestamp, 0),
    attemptedBatchCount: num(f.attemptedBatchCount, 0),
    attemptedToolCallCount: num(f.attemptedToolCallCount, 0),
    rawCharCount: num(f.rawCharCount, 0),
    summaryCharCount: num(f.summaryCharCount, 0),
    outcome: (f.outcome as FrontierOutcome | undefined) ?? "summarized",
  };
}

const STATS_KEYS: (keyof StatsData)[] = ["totalInputTokens", "totalOutputTokens", "totalCost", "callCount", "chainsCompressed", "rangesSummarized"];

function readStats(data: Fields): Partial<StatsData> {
  const out: Partial<StatsData> = {};
  for (const key of STATS_KEYS) {
    const v = data[key];
    if (typeof v === "number" && Number.isFinite(v)) out[key] = v;
  }
  return out;
}

/**
 * Ids of the `context_edit` entries condense wrote on a branch: the `editIds` of its
 * `condense-context-edits` entries (strings only; anything else in them is ignored).
 */
export function ownContextEditIds(branch: readonly SessionEntry[]): Set<string> {
  const ids = new Set<string>();
  for (const entry of branch) {
    if (entry.type !== "custom" || entry.customType !== CONTEXT_EDITS_TYPE || !isFields(entry.data)) continue;
    const list = entry.data.editIds;
    if (Array.isArray(list)) for (const id of list) if (typeof id === "string") ids.add(id);
  }
  return ids;
}

/**
 * The branch without the `context_edit` entries condense wrote for stock Pi (other edits kept):
 * projected, it is the session as the user has it — what capture replays, and where a recovered
 * output's images are found (a stub edit leaves none in the projection).
 */
export function withoutOwnContextEdits(branch: readonly SessionEntry[]): SessionEntry[] {
  const own = ownContextEditIds(branch);
  return own.size === 0 ? [...branch] : branch.filter((e) => !(e.type === "context_edit" && own.has(e.id)));
}
