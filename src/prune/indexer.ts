/**
 * The pruner index (seeds/PRUNING.md "What Actually Lives in the Pruner Index", "Occurrence
 * Identity"): every indexed tool call by occurrence key, short refs, dedup aliases, summary
 * bodies, chain entries, the frontier and cumulative stats — rebuilt from the `context-prune-*`
 * entries on the branch so a run continues where the live extension or an earlier run stopped.
 */
import { occurrenceKey } from "./occurrence-key.js";
import { contentHash } from "./content-hash.js";
import {
  CUSTOM_TYPES,
  emptyStats,
  type ChainEntryData,
  type DedupAliasData,
  type FrontierData,
  type IndexEntryData,
  type StatsData,
  type SummaryDetails,
  type SummaryToolCallRef,
  type ToolCallRecord,
} from "./types.js";
import type { SessionEntry } from "../session/types.js";
import { textOf } from "../context/projection.js";

/** Split an occurrence key at its last `@` when the suffix is all digits. */
export function parseOccurrenceKey(key: string): { toolCallId: string; resultTimestamp?: number } {
  const at = key.lastIndexOf("@");
  if (at > 0 && /^\d+$/.test(key.slice(at + 1))) {
    return { toolCallId: key.slice(0, at), resultTimestamp: Number(key.slice(at + 1)) };
  }
  return { toolCallId: key };
}

/** A summary message on the branch: its refs and its full text (footer included). */
export interface SummaryBody {
  entryId: string;
  refs: SummaryToolCallRef[];
  text: string;
}

export class ToolCallIndexer {
  /** Records by occurrence key (or bare id for legacy records). */
  readonly records = new Map<string, ToolCallRecord>();
  /** Occurrence keys of each bare id, first seen first. */
  readonly bareIdToKeys = new Map<string, string[]>();
  /** Duplicate occurrence key → original occurrence key. */
  readonly dedupAliasToOriginal = new Map<string, string>();
  /** Content hash → occurrence key of the first record with it (back-filled records excluded). */
  readonly contentHashToOriginal = new Map<string, string>();
  readonly shortRefToKey = new Map<string, string>();
  readonly keyToShortRef = new Map<string, string>();
  /** Summary bodies, in branch order. */
  readonly summaries: SummaryBody[] = [];
  /** Chain entries by `startUserTimestamp` (a later entry for the same start replaces an earlier one). */
  readonly chains = new Map<number, ChainEntryData>();
  frontier: FrontierData | null = null;
  stats: StatsData = emptyStats();
  nextShortRef = 1;
  nextBlock = 1;

  /**
   * Rebuild from the branch's `context-prune-*` entries (the extension's `reconstructFromSession`).
   * Aliases are applied after the pass so a duplicate inherits its original's short ref.
   */
  static fromBranch(branch: SessionEntry[]): ToolCallIndexer {
    const indexer = new ToolCallIndexer();
    const aliases: DedupAliasData[] = [];
    for (const entry of branch) {
      const customType = entry.customType;
      if (entry.type === "custom") {
        const data = entry.data as Record<string, unknown> | undefined;
        if (!data || typeof data !== "object") continue;
        if (customType === CUSTOM_TYPES.index) indexer.loadIndexEntry(data as unknown as IndexEntryData);
        else if (customType === CUSTOM_TYPES.dedupAlias) {
          const a = data as unknown as DedupAliasData;
          if (a.newToolCallId && a.originalToolCallId) aliases.push(a);
        } else if (customType === CUSTOM_TYPES.chain) {
          const c = data as unknown as ChainEntryData;
          if (c.blockId && typeof c.startUserTimestamp === "number") {
            indexer.chains.set(c.startUserTimestamp, c);
            const n = /^b(\d+)$/.exec(c.blockId);
            if (n) indexer.nextBlock = Math.max(indexer.nextBlock, Number(n[1]) + 1);
          }
        } else if (customType === CUSTOM_TYPES.frontier) {
          const f = data as unknown as FrontierData;
          if (f.lastAttemptedToolCallId) indexer.frontier = normalizeFrontier(f);
        } else if (customType === CUSTOM_TYPES.stats) {
          indexer.stats = { ...emptyStats(), ...pickNumbers(data) };
        }
      } else if (entry.type === "custom_message" && customType === CUSTOM_TYPES.summary) {
        const refs = summaryRefs(entry.details);
        indexer.registerRefs(refs);
        const text = textOf(entry.content);
        if (text.trim() !== "") indexer.summaries.push({ entryId: entry.id, refs, text });
      }
    }
    for (const a of aliases) {
      indexer.addAlias(occurrenceKey(a.newToolCallId, a.newResultTimestamp), occurrenceKey(a.originalToolCallId, a.originalResultTimestamp));
    }
    return indexer;
  }

  private loadIndexEntry(data: IndexEntryData): void {
    if (!Array.isArray(data.toolCalls)) return;
    for (const record of data.toolCalls) {
      if (!record || typeof record.toolCallId !== "string") continue;
      this.addRecord(record, data.backfilled !== true);
    }
    if (Array.isArray(data.refs)) this.registerRefs(data.refs);
  }

  /** Index one record; non-back-filled records seed the content-hash map (first seen wins). */
  addRecord(record: ToolCallRecord, seedsHash: boolean): string {
    const key = occurrenceKey(record.toolCallId, record.resultTimestamp);
    this.records.set(key, record);
    const keys = this.bareIdToKeys.get(record.toolCallId);
    if (!keys) this.bareIdToKeys.set(record.toolCallId, [key]);
    else if (!keys.includes(key)) keys.push(key);
    if (seedsHash) {
      const hash = record.contentHash ?? contentHash(record.toolName, record.resultText);
      if (!this.contentHashToOriginal.has(hash)) this.contentHashToOriginal.set(hash, key);
    }
    return key;
  }

  /** Register short refs; the next ref number becomes one past the highest `tN` seen. */
  registerRefs(refs: SummaryToolCallRef[]): void {
    for (const ref of refs) {
      if (!ref?.shortId || !ref.toolCallId) continue;
      const key = occurrenceKey(ref.toolCallId, ref.resultTimestamp);
      if (ref.shortId !== key) {
        this.shortRefToKey.set(ref.shortId, key);
        this.keyToShortRef.set(key, ref.shortId);
      }
      const n = /^t(\d+)$/.exec(ref.shortId);
      if (n) this.nextShortRef = Math.max(this.nextShortRef, Number(n[1]) + 1);
    }
  }

  /** Register a duplicate: it resolves to the original and shares its short ref. */
  addAlias(newKey: string, originalKey: string): void {
    this.dedupAliasToOriginal.set(newKey, originalKey);
    const ref = this.keyToShortRef.get(originalKey);
    if (ref) this.keyToShortRef.set(newKey, ref);
  }

  /** Hand out the next short ref for an occurrence. */
  allocateRef(record: Pick<ToolCallRecord, "toolCallId" | "resultTimestamp">): SummaryToolCallRef {
    const ref: SummaryToolCallRef = { shortId: `t${this.nextShortRef++}`, toolCallId: record.toolCallId };
    if (typeof record.resultTimestamp === "number") ref.resultTimestamp = record.resultTimestamp;
    return ref;
  }

  /** The ref {@link allocateRef} would hand out `offset` calls from now, without taking it. */
  previewRef(record: Pick<ToolCallRecord, "toolCallId" | "resultTimestamp">, offset: number): SummaryToolCallRef {
    const ref: SummaryToolCallRef = { shortId: `t${this.nextShortRef + offset}`, toolCallId: record.toolCallId };
    if (typeof record.resultTimestamp === "number") ref.resultTimestamp = record.resultTimestamp;
    return ref;
  }

  /** Hand out the next block id `bN`. */
  allocateBlockId(): string {
    return `b${this.nextBlock++}`;
  }

  /** Strict: the exact occurrence key is indexed or is a dedup alias (never a bare-id fallback). */
  isSummarized(key: string): boolean {
    return this.records.has(key) || this.dedupAliasToOriginal.has(key);
  }

  /** True when the bare id is itself indexed and no occurrence-keyed sibling exists (legacy records). */
  hasLegacyBareRecord(toolCallId: string): boolean {
    const keys = this.bareIdToKeys.get(toolCallId);
    return !!keys && keys.length === 1 && keys[0] === toolCallId && this.records.has(toolCallId);
  }

  /** The record for a key, following a dedup alias to its original. */
  getRecord(key: string): ToolCallRecord | undefined {
    return this.records.get(key) ?? this.records.get(this.dedupAliasToOriginal.get(key) ?? "");
  }

  /** The occurrence key behind a short ref, raw occurrence key, alias, or unambiguous bare id. */
  resolveToolCallId(ref: string): string | undefined {
    if (this.records.has(ref)) return ref;
    const alias = this.dedupAliasToOriginal.get(ref);
    if (alias) return alias;
    const viaRef = this.shortRefToKey.get(ref);
    if (viaRef) return this.dedupAliasToOriginal.get(viaRef) ?? viaRef;
    const keys = this.bareIdToKeys.get(ref);
    if (keys && keys.length === 1) return keys[0];
    return undefined;
  }

  /** Short ref of an occurrence (or of the original it is an alias of). */
  shortRefFor(key: string): string | undefined {
    return this.keyToShortRef.get(key) ?? this.keyToShortRef.get(this.dedupAliasToOriginal.get(key) ?? "");
  }

  /**
   * Every occurrence that shares a raw tool-call id — indexed records and dedup aliases, each
   * labelled with its own occurrence key — oldest first.
   */
  getRecordsForId(toolCallId: string): { key: string; record: ToolCallRecord; aliasOf?: string }[] {
    const out: { key: string; record: ToolCallRecord; aliasOf?: string }[] = [];
    for (const key of this.bareIdToKeys.get(toolCallId) ?? []) {
      const record = this.records.get(key);
      if (record) out.push({ key, record });
    }
    for (const [newKey, originalKey] of this.dedupAliasToOriginal) {
      if (parseOccurrenceKey(newKey).toolCallId !== toolCallId) continue;
      const record = this.records.get(originalKey);
      if (record) out.push({ key: newKey, record, aliasOf: originalKey });
    }
    const at = (e: { key: string; record: ToolCallRecord }) =>
      parseOccurrenceKey(e.key).resultTimestamp ?? e.record.resultTimestamp ?? e.record.timestamp;
    return out.sort((a, b) => at(a) - at(b));
  }
}

function summaryRefs(details: unknown): SummaryToolCallRef[] {
  const d = details as Partial<SummaryDetails> & { toolCallIds?: unknown };
  if (!d || typeof d !== "object") return [];
  if (Array.isArray(d.toolCallRefs)) return d.toolCallRefs.filter((r) => r && typeof r.shortId === "string");
  if (Array.isArray(d.toolCallIds)) {
    return d.toolCallIds.filter((id): id is string => typeof id === "string").map((id) => ({ shortId: id, toolCallId: id }));
  }
  return [];
}

function pickNumbers(data: Record<string, unknown>): Partial<StatsData> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(data)) if (typeof v === "number" && Number.isFinite(v)) out[k] = v;
  return out as Partial<StatsData>;
}

function normalizeFrontier(f: Partial<FrontierData>): FrontierData {
  return {
    lastAttemptedToolCallId: String(f.lastAttemptedToolCallId),
    lastAttemptedToolName: typeof f.lastAttemptedToolName === "string" ? f.lastAttemptedToolName : "unknown",
    lastAttemptedTurnIndex: typeof f.lastAttemptedTurnIndex === "number" ? f.lastAttemptedTurnIndex : 0,
    lastAttemptedTimestamp: typeof f.lastAttemptedTimestamp === "number" ? f.lastAttemptedTimestamp : 0,
    attemptedBatchCount: typeof f.attemptedBatchCount === "number" ? f.attemptedBatchCount : 0,
    attemptedToolCallCount: typeof f.attemptedToolCallCount === "number" ? f.attemptedToolCallCount : 0,
    rawCharCount: typeof f.rawCharCount === "number" ? f.rawCharCount : 0,
    summaryCharCount: typeof f.summaryCharCount === "number" ? f.summaryCharCount : 0,
    outcome: (f.outcome as FrontierData["outcome"]) ?? "summarized",
  };
}
