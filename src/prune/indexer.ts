/**
 * The pruner index (docs/design.md "What Actually Lives in the Pruner Index", "Occurrence
 * Identity"): every indexed tool call by occurrence key, short refs, dedup aliases, summary
 * bodies, chain entries, the frontier and cumulative stats — rebuilt from the `context-prune-*`
 * entries on the branch so a run continues where the live extension or an earlier run stopped.
 */
import { occurrenceKey, parseOccurrenceKey, recordKeyOf } from "../context/vocabulary.js";
import { contentHash } from "./content-hash.js";
import { readPruneEntry, type PruneEntry } from "../entries/read.js";
import {
  emptyStats,
  type ChainEntryData,
  type DedupAliasData,
  type FrontierData,
  type StatsData,
  type SummaryToolCallRef,
  type ToolCallRecord,
} from "../entries/types.js";
import type { SessionEntry } from "../session/types.js";
import { textOf } from "../context/projection.js";

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
      const read = readPruneEntry(entry);
      if (read) indexer.load(read, aliases);
    }
    for (const a of aliases) {
      indexer.addAlias(occurrenceKey(a.newToolCallId, a.newResultTimestamp), occurrenceKey(a.originalToolCallId, a.originalResultTimestamp));
    }
    return indexer;
  }

  /**
   * This index with `entries` appended to its branch: what {@link fromBranch} of the whole branch
   * builds, loaded in place — or null, leaving this index untouched, when that is not certain:
   * an entry is a dedup alias (fromBranch applies every alias after its pass), or an entry names
   * an occurrence key an applied alias reads or writes (an alias copies its original's short ref,
   * so the order of the two would matter). The one difference to a rebuilt index: an alias's entry
   * in `keyToShortRef`, which is only looked up, comes before the new entries' refs.
   */
  extendedWith(entries: SessionEntry[]): ToolCallIndexer | null {
    const reads: PruneEntry[] = [];
    for (const entry of entries) {
      const read = readPruneEntry(entry);
      if (!read) continue;
      if (read.kind === "dedup-alias" || ((read.kind === "index" || read.kind === "summary") && this.touchesAlias(read))) return null;
      reads.push(read);
    }
    const none: DedupAliasData[] = [];
    for (const read of reads) this.load(read, none);
    return this;
  }

  /** True when an index or summary entry names a key that is a dedup alias or an alias's original. */
  private touchesAlias(read: Extract<PruneEntry, { kind: "index" | "summary" }>): boolean {
    if (this.dedupAliasToOriginal.size === 0) return false;
    const originals = new Set(this.dedupAliasToOriginal.values());
    const named = (key: string) => this.dedupAliasToOriginal.has(key) || originals.has(key);
    if (read.refs.some((r) => named(recordKeyOf(r)))) return true;
    return read.kind === "index" && read.records.some((r) => named(recordKeyOf(r)));
  }

  /** Take in one entry of the branch; aliases are collected for after the pass. */
  private load(read: PruneEntry, aliases: DedupAliasData[]): void {
    switch (read.kind) {
      case "index":
        for (const record of read.records) this.addRecord(record, !read.backfilled);
        this.registerRefs(read.refs);
        this.reserveRefNumbers(read.strayRefs);
        return;
      case "summary": {
        this.registerRefs(read.refs);
        const text = textOf(read.entry.content);
        if (text.trim() !== "") this.summaries.push({ entryId: read.entry.id, refs: read.refs, text });
        return;
      }
      case "dedup-alias":
        aliases.push(read.data);
        return;
      case "chain": {
        this.chains.set(read.data.startUserTimestamp, read.data);
        const n = /^b(\d+)$/.exec(read.data.blockId);
        if (n) this.nextBlock = Math.max(this.nextBlock, Number(n[1]) + 1);
        return;
      }
      case "frontier":
        this.frontier = read.data;
        return;
      case "stats":
        this.stats = { ...emptyStats(), ...read.data };
        return;
      case "diagnostic":
        return;
    }
  }

  /** Index one record; non-back-filled records seed the content-hash map (first seen wins). */
  addRecord(record: ToolCallRecord, seedsHash: boolean): string {
    const key = recordKeyOf(record);
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
      const key = recordKeyOf(ref);
      if (ref.shortId !== key) {
        this.shortRefToKey.set(ref.shortId, key);
        this.keyToShortRef.set(key, ref.shortId);
      }
    }
    this.reserveRefNumbers(refs);
  }

  /**
   * Move the next ref number past these refs' numbers without making them resolvable (refs the
   * extension does not read, so that no number is ever handed out twice).
   */
  reserveRefNumbers(refs: SummaryToolCallRef[]): void {
    for (const ref of refs) {
      const n = /^t(\d+)$/.exec(ref?.shortId ?? "");
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
   * labelled with its own occurrence key — oldest first, as the extension orders them
   * (`getRecordsForId`): by result timestamp (a dedup alias's own), else the batch time.
   * @param stored also the records stored under `toolCallId#n` (recovery records whose own key was
   *   unsafe: prune/recovery.ts), as `condense query` promises for a raw id; without it the id is
   *   taken as given, as the extension's `context_tree_query` takes it
   */
  getRecordsForId(toolCallId: string, stored = false): { key: string; record: ToolCallRecord; aliasOf?: string }[] {
    const ids = new Set([toolCallId]);
    if (stored) for (const id of this.bareIdToKeys.keys()) if (isStoredIdOf(id, toolCallId)) ids.add(id);
    const out: { key: string; record: ToolCallRecord; aliasOf?: string }[] = [];
    for (const id of ids) {
      for (const key of this.bareIdToKeys.get(id) ?? []) {
        const record = this.records.get(key);
        if (record) out.push({ key, record });
      }
    }
    for (const [newKey, originalKey] of this.dedupAliasToOriginal) {
      if (!ids.has(parseOccurrenceKey(newKey).toolCallId)) continue;
      const record = this.records.get(originalKey);
      if (record) out.push({ key: newKey, record, aliasOf: originalKey });
    }
    const at = (e: { key: string; record: ToolCallRecord; aliasOf?: string }) =>
      (e.aliasOf ? parseOccurrenceKey(e.key).resultTimestamp : e.record.resultTimestamp) ?? e.record.timestamp;
    return out.sort((a, b) => at(a) - at(b));
  }
}

/** True when `id` is `toolCallId#n` (n digits): the id a recovery record of `toolCallId` is stored under. */
function isStoredIdOf(id: string, toolCallId: string): boolean {
  return id.length > toolCallId.length + 1 && id.startsWith(`${toolCallId}#`) && /^\d+$/.test(id.slice(toolCallId.length + 1));
}
