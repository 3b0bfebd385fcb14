/**
 * The offline flush (SPEC.md section 6; seeds/PRUNING.md "Pre-flush Pipeline & Safeguards"):
 * spill → dedup → trivial skip → summarize (in parallel) → oversized check, over every captured
 * batch, producing the entries `run` appends and the sidecar files it writes first.
 *
 * The live extension flushes at each final reply, so dedup only sees records indexed by earlier
 * flushes (plus eager spills, which are indexed at once). Offline, the result must equal flushing
 * the flush groups in session order while model calls still run in parallel. We do that in two
 * passes: a speculative pass plans every batch assuming every summary is accepted and launches all
 * summarizer calls at once (bounded by `p-limit`); the real pass then walks the batches in order,
 * re-planning each against the true state and awaiting its answer — reusing the speculative call
 * when the plan matches, launching a new one when an earlier outcome changed it. The appended bytes
 * therefore never depend on concurrency or on the order answers arrive in.
 */
import pLimit from "p-limit";
import type { PruneConfig } from "../config/config.js";
import { CondenseError } from "../util/errors.js";
import type { NewEntry } from "../session/writer.js";
import { composeSummary } from "../summarize/refs.js";
import type { Summarizer, SummarizerResult, SummarizerUsage } from "../summarize/types.js";
import type { Batch, CapturedCall } from "./capture.js";
import { contentHash } from "./content-hash.js";
import type { ToolCallIndexer } from "./indexer.js";
import { spillRecord } from "./spill.js";
import {
  CUSTOM_TYPES,
  type DedupAliasData,
  type FrontierData,
  type FrontierOutcome,
  type IndexEntryData,
  type SummaryDetails,
  type SummaryToolCallRef,
  type ToolCallRecord,
} from "./types.js";

export interface FlushOptions {
  config: PruneConfig;
  summarizer: Summarizer;
  /** Parallel summarizer calls. */
  concurrency: number;
  /** Session file the entries go to (the input, or `--output`): sidecars live beside it. */
  targetPath: string;
  sessionId: string;
  signal?: AbortSignal;
  /** Called when a summarizer call settles. */
  onProgress?: (progress: FlushProgress) => void;
}

export interface FlushProgress {
  done: number;
  total: number;
  failed: number;
  usage: SummarizerUsage;
}

export type BatchOutcomeKind = FrontierOutcome | "failed" | "spilled";

export interface BatchOutcome {
  turnIndex: number;
  calls: number;
  outcome: BatchOutcomeKind;
  rawChars: number;
  summaryChars: number;
  /** Why a summary failed. */
  reason?: string;
}

export interface Sidecar {
  path: string;
  text: string;
}

export interface FlushResult {
  /** Entries to append, in order (chain entries and the frontier/stats tail are added by the caller). */
  entries: NewEntry[];
  sidecars: Sidecar[];
  outcomes: BatchOutcome[];
  /** The new frontier, or null when no batch was processed. */
  frontier: FrontierData | null;
  spilledCalls: number;
  dedupedCalls: number;
  summarizedCalls: number;
  /** Raw chars of the batches that got a summary, and the chars of those summaries. */
  rawChars: number;
  summaryChars: number;
  usage: SummarizerUsage;
  /** Model calls made (answers received, accepted or not). */
  modelCalls: number;
  processedBatches: number;
}

interface HashOrigin {
  key: string;
  group: number;
  viaSpill: boolean;
}

/** Which content hashes a batch may dedup against: earlier flush groups, plus eager spills. */
class HashState {
  private readonly origins = new Map<string, HashOrigin>();

  constructor(indexer: ToolCallIndexer) {
    for (const [hash, key] of indexer.contentHashToOriginal) this.origins.set(hash, { key, group: -Infinity, viaSpill: false });
  }

  lookup(hash: string, group: number): string | undefined {
    const o = this.origins.get(hash);
    return o && (o.viaSpill || o.group < group) ? o.key : undefined;
  }

  add(hash: string, key: string, group: number, viaSpill: boolean): void {
    if (!this.origins.has(hash)) this.origins.set(hash, { key, group, viaSpill });
  }
}

interface Plan {
  batch: Batch;
  aliases: { call: CapturedCall; originalKey: string }[];
  remaining: CapturedCall[];
  rawChars: number;
  dedupedChars: number;
  trivial: boolean;
  /** Identity of the summarizer input, to reuse speculative answers. */
  signature: string;
}

const hashCache = new WeakMap<CapturedCall, string>();
function hashOf(call: CapturedCall): string {
  let h = hashCache.get(call);
  if (!h) {
    h = contentHash(call.toolName, call.resultText);
    hashCache.set(call, h);
  }
  return h;
}

/** Phase A of a batch: eager spill (dedup first, so a duplicate never writes a second file). */
function planSpill(
  batch: Batch,
  hashes: HashState,
  config: PruneConfig,
): { spilled: CapturedCall[]; spillAliases: { call: CapturedCall; originalKey: string }[]; rest: CapturedCall[] } {
  const spilled: CapturedCall[] = [];
  const spillAliases: { call: CapturedCall; originalKey: string }[] = [];
  const rest: CapturedCall[] = [];
  for (const call of batch.calls) {
    if (call.resultText.length < config.spillThreshold) {
      rest.push(call);
      continue;
    }
    const hash = hashOf(call);
    const original = config.dedupByContentHash ? hashes.lookup(hash, Infinity) : undefined;
    if (original && original !== call.key) spillAliases.push({ call, originalKey: original });
    else {
      spilled.push(call);
      hashes.add(hash, call.key, batch.flushGroup, true);
    }
  }
  return { spilled, spillAliases, rest };
}

/** Phase B of a batch: dedup against earlier groups, trivial check. */
function planRest(batch: Batch, rest: CapturedCall[], hashes: HashState, config: PruneConfig): Pick<Plan, "aliases" | "remaining" | "rawChars" | "dedupedChars" | "trivial" | "signature"> {
  const aliases: { call: CapturedCall; originalKey: string }[] = [];
  const remaining: CapturedCall[] = [];
  let dedupedChars = 0;
  for (const call of rest) {
    const original = config.dedupByContentHash ? hashes.lookup(hashOf(call), batch.flushGroup) : undefined;
    if (original && original !== call.key) {
      aliases.push({ call, originalKey: original });
      dedupedChars += call.resultText.length;
    } else remaining.push(call);
  }
  const rawChars = remaining.reduce((n, c) => n + c.resultText.length, 0);
  const trivial = remaining.length > 0 && config.minBatchChars > 0 && rawChars < config.minBatchChars;
  return { aliases, remaining, rawChars, dedupedChars, trivial, signature: remaining.map((c) => c.key).join("\n") };
}

function toRecord(call: CapturedCall, batch: Batch): ToolCallRecord {
  const record: ToolCallRecord = {
    toolCallId: call.toolCallId,
    toolName: call.toolName,
    args: call.args,
    resultText: call.resultText,
    isError: call.isError,
    turnIndex: batch.turnIndex,
    timestamp: batch.timestamp,
  };
  if (call.resultTimestamp !== undefined) record.resultTimestamp = call.resultTimestamp;
  return record;
}

function aliasData(call: CapturedCall, originalKey: string, indexer: ToolCallIndexer): DedupAliasData {
  const original = indexer.getRecord(originalKey);
  const data: DedupAliasData = { newToolCallId: call.toolCallId, originalToolCallId: original?.toolCallId ?? originalKey };
  if (call.resultTimestamp !== undefined) data.newResultTimestamp = call.resultTimestamp;
  if (original?.resultTimestamp !== undefined) data.originalResultTimestamp = original.resultTimestamp;
  return data;
}

function custom(customType: string, data: unknown): NewEntry {
  return { type: "custom", customType, data };
}

const zeroUsage = (): SummarizerUsage => ({ input: 0, output: 0, cost: 0 });

/**
 * Run spill, dedup, trivial skip, summarization and the oversized check over captured batches,
 * updating `indexer` as the entries would.
 * @param batches captured batches in session order (see `captureBatches`)
 * @throws CondenseError (exit 130) when `signal` aborts while a summary is awaited
 */
export async function flushBatches(batches: Batch[], indexer: ToolCallIndexer, options: FlushOptions): Promise<FlushResult> {
  const { config, summarizer } = options;
  const limit = pLimit(Math.max(1, options.concurrency));
  const answers = new Map<string, Promise<SummarizerResult>>();
  const progress: FlushProgress = { done: 0, total: 0, failed: 0, usage: zeroUsage() };
  const ask = (plan: Plan): Promise<SummarizerResult> => {
    let answer = answers.get(plan.signature);
    if (!answer) {
      progress.total++;
      answer = limit(() =>
        options.signal?.aborted
          ? Promise.resolve<SummarizerResult>({ ok: false, kind: "aborted", reason: "aborted" })
          : summarizer.summarizeBatch(
              {
                assistantText: plan.batch.assistantText,
                calls: plan.remaining.map((c) => ({ toolName: c.toolName, args: c.args, resultText: c.resultText, isError: c.isError })),
              },
              options.signal,
            ),
      ).then(
        (result) => result,
        (error: unknown): SummarizerResult => ({ ok: false, kind: "transient", reason: `summarizer failed: ${(error as Error)?.message ?? String(error)}` }),
      ).then((result) => {
        progress.done++;
        if (!result.ok) progress.failed++;
        if (result.usage) {
          progress.usage.input += result.usage.input;
          progress.usage.output += result.usage.output;
          progress.usage.cost += result.usage.cost;
        }
        options.onProgress?.({ ...progress, usage: { ...progress.usage } });
        return result;
      });
      answers.set(plan.signature, answer);
    }
    return answer;
  };

  const groups: Batch[][] = [];
  for (const batch of batches) {
    const last = groups[groups.length - 1];
    if (last && last[0].flushGroup === batch.flushGroup) last.push(batch);
    else groups.push([batch]);
  }

  // Speculative pass: assume every summary is accepted, launch every call.
  {
    const hashes = new HashState(indexer);
    for (const group of groups) {
      const rests = group.map((batch) => planSpill(batch, hashes, config).rest);
      group.forEach((batch, i) => {
        const plan: Plan = { batch, ...planRest(batch, rests[i], hashes, config) };
        if (plan.remaining.length > 0 && !plan.trivial) {
          void ask(plan);
          for (const call of plan.remaining) hashes.add(hashOf(call), call.key, batch.flushGroup, false);
        }
      });
    }
  }

  // Real pass, in session order.
  const result: FlushResult = {
    entries: [],
    sidecars: [],
    outcomes: [],
    frontier: null,
    spilledCalls: 0,
    dedupedCalls: 0,
    summarizedCalls: 0,
    rawChars: 0,
    summaryChars: 0,
    usage: zeroUsage(),
    modelCalls: 0,
    processedBatches: 0,
  };
  const hashes = new HashState(indexer);
  const spillTarget = { sessionPath: options.targetPath, sessionId: options.sessionId, previewBytes: config.spillPreviewBytes };
  let frontierOpen = true; // false after the first failed batch: the frontier stays before it
  let attemptedBatches = 0;
  let attemptedCalls = 0;
  let attemptedRaw = 0;
  let attemptedSummary = 0;
  const kinds = new Set<BatchOutcomeKind>();
  let last: { batch: Batch; call: CapturedCall } | null = null;

  for (const group of groups) {
    const spillEntries: NewEntry[] = [];
    const aliasEntries: NewEntry[] = [];
    const batchEntries: NewEntry[] = [];
    const rests: CapturedCall[][] = [];
    for (const batch of group) {
      const { spilled, spillAliases, rest } = planSpill(batch, hashes, config);
      rests.push(rest);
      for (const { call, originalKey } of spillAliases) {
        spillEntries.push(custom(CUSTOM_TYPES.dedupAlias, aliasData(call, originalKey, indexer)));
        indexer.addAlias(call.key, originalKey);
        result.dedupedCalls++;
      }
      if (spilled.length > 0) {
        const records: ToolCallRecord[] = [];
        const refs: SummaryToolCallRef[] = [];
        for (const call of spilled) {
          const record = toRecord(call, batch);
          result.sidecars.push(spillRecord(record, spillTarget, hashOf(call)));
          records.push(record);
          refs.push(indexer.allocateRef(call));
        }
        const data: IndexEntryData = { toolCalls: records, refs };
        spillEntries.push(custom(CUSTOM_TYPES.index, data));
        for (const record of records) indexer.addRecord(record, true);
        indexer.registerRefs(refs);
        result.spilledCalls += spilled.length;
        result.outcomes.push({ turnIndex: batch.turnIndex, calls: spilled.length, outcome: "spilled", rawChars: 0, summaryChars: 0 });
      }
    }
    for (let i = 0; i < group.length; i++) {
      const batch = group[i];
      const plan: Plan = { batch, ...planRest(batch, rests[i], hashes, config) };
      for (const { call, originalKey } of plan.aliases) {
        aliasEntries.push(custom(CUSTOM_TYPES.dedupAlias, aliasData(call, originalKey, indexer)));
        indexer.addAlias(call.key, originalKey);
        result.dedupedCalls++;
      }
      if (plan.remaining.length === 0 && plan.aliases.length === 0) continue; // everything spilled
      let kind: BatchOutcomeKind;
      let summaryChars = 0;
      let reason: string | undefined;
      if (plan.remaining.length === 0) kind = "skipped-deduped";
      else if (plan.trivial) kind = "skipped-trivial";
      else {
        const answer = await ask(plan);
        if (answer.usage) {
          result.usage.input += answer.usage.input;
          result.usage.output += answer.usage.output;
          result.usage.cost += answer.usage.cost;
        }
        if (!answer.ok) {
          if (answer.kind === "aborted") throw new CondenseError("interrupted; nothing was written", 130);
          kind = "failed";
          reason = `${answer.kind}: ${answer.reason}`;
        } else {
          if (!summarizer.local) result.modelCalls++;
          const refs = plan.remaining.map((call, k) => indexer.previewRef(call, k));
          const text = composeSummary(answer.text, refs, plan.remaining.map((c) => c.toolName));
          summaryChars = text.length;
          attemptedSummary += text.length;
          if (text.length > plan.rawChars) kind = "skipped-oversized";
          else {
            kind = "summarized";
            const committed = plan.remaining.map((call) => indexer.allocateRef(call));
            const records = plan.remaining.map((call) => toRecord(call, batch));
            const details: SummaryDetails = {
              toolCallRefs: committed,
              toolNames: plan.remaining.map((c) => c.toolName),
              turnIndex: batch.turnIndex,
              timestamp: batch.timestamp,
            };
            batchEntries.push({ type: "custom_message", customType: CUSTOM_TYPES.summary, content: text, display: false, details });
            batchEntries.push(custom(CUSTOM_TYPES.index, { toolCalls: records } satisfies IndexEntryData));
            for (const record of records) indexer.addRecord(record, true);
            indexer.registerRefs(committed);
            indexer.summaries.push({ entryId: "", refs: committed, text });
            for (const call of plan.remaining) hashes.add(hashOf(call), call.key, batch.flushGroup, false);
            result.summarizedCalls += plan.remaining.length;
            result.rawChars += plan.rawChars;
            result.summaryChars += text.length;
          }
        }
      }
      result.outcomes.push({ turnIndex: batch.turnIndex, calls: plan.remaining.length + plan.aliases.length, outcome: kind, rawChars: plan.rawChars, summaryChars, ...(reason ? { reason } : {}) });
      if (kind === "failed") {
        frontierOpen = false;
        continue;
      }
      if (!frontierOpen) continue;
      result.processedBatches++;
      kinds.add(kind);
      attemptedBatches++;
      attemptedCalls += plan.remaining.length + plan.aliases.length;
      attemptedRaw += plan.rawChars + plan.dedupedChars;
      const lastCall = plan.remaining.length > 0 ? plan.remaining[plan.remaining.length - 1] : plan.aliases[plan.aliases.length - 1].call;
      last = { batch, call: lastCall };
    }
    result.entries.push(...spillEntries, ...aliasEntries, ...batchEntries);
  }

  if (last) {
    const outcome: FrontierOutcome = kinds.has("summarized")
      ? "summarized"
      : kinds.has("skipped-oversized")
        ? "skipped-oversized"
        : kinds.has("skipped-deduped")
          ? "skipped-deduped"
          : "skipped-trivial";
    result.frontier = {
      lastAttemptedToolCallId: last.call.toolCallId,
      lastAttemptedToolName: last.call.toolName,
      lastAttemptedTurnIndex: last.batch.turnIndex,
      lastAttemptedTimestamp: last.batch.timestamp,
      attemptedBatchCount: attemptedBatches,
      attemptedToolCallCount: attemptedCalls,
      rawCharCount: attemptedRaw,
      summaryCharCount: attemptedSummary,
      outcome,
    };
  }
  return result;
}
