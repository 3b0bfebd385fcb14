/**
 * The offline flush (docs/design.md §6; docs/design.md "Pre-flush Pipeline & Safeguards"):
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
import { dedupAliasEntry, indexEntry, spillIndexEntries, summaryEntry } from "../entries/build.js";
import type { NewEntry } from "../session/types.js";
import { composeSummary } from "../summarize/refs.js";
import { SendSlots } from "../summarize/slots.js";
import type { ReuseCounts, Summarizer, SummarizerResult, SummarizerUsage } from "../summarize/types.js";
import { addUsage, zeroUsage } from "../summarize/usage.js";
import type { Batch, CapturedCall } from "./capture.js";
import { contentHash } from "./content-hash.js";
import type { ToolCallIndexer } from "./indexer.js";
import { spillRecord } from "./spill.js";
import type { DedupAliasData, FrontierData, FrontierOutcome, SummaryDetails, SummaryToolCallRef, ToolCallRecord } from "../entries/types.js";

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
  /**
   * Batches the spill step took whole, at least one output written to a sidecar: every output was
   * `spillThreshold` characters or more, so no summary was asked for (and no outcome recorded).
   */
  spilledBatches: number;
  dedupedCalls: number;
  summarizedCalls: number;
  /** Raw chars of the batches that got a summary, and the chars of those summaries. */
  rawChars: number;
  summaryChars: number;
  usage: SummarizerUsage;
  /** Model calls made (answers received, accepted or not; answers reused from the cache or the session not counted). */
  modelCalls: number;
  /** Answers reused instead of asking the model. */
  reused: ReuseCounts;
  /** The model calls by the model that answered (`provider/id`; the fallback's answers under its own name). */
  answeredBy: Map<string, number>;
  processedBatches: number;
  /** Each summary entry among `entries` with the raw chars of the batch it replaces (what it may grow to). */
  summaryRoom: Map<NewEntry, number>;
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
function planRest(
  batch: Batch,
  rest: CapturedCall[],
  hashes: HashState,
  config: PruneConfig,
): Pick<Plan, "aliases" | "remaining" | "rawChars" | "dedupedChars" | "trivial" | "signature"> {
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

/**
 * The summarizer calls of one flush: at most one per distinct batch input, each started on first
 * request and shared by later requests for the same input. At most `concurrency` requests are on
 * the wire (send slots); a summarizer that honours them (`slotted`) gets twice as many calls
 * started (`p-limit`), so the next requests are built while earlier ones are answered and go out
 * as slots free.
 */
class SummaryCalls {
  private readonly limit;
  private readonly slots: SendSlots;
  private readonly answers = new Map<string, Promise<SummarizerResult>>();
  private readonly progress: FlushProgress = { done: 0, total: 0, failed: 0, usage: zeroUsage() };

  constructor(private readonly options: FlushOptions) {
    const concurrency = Math.max(1, options.concurrency);
    this.slots = new SendSlots(concurrency);
    this.limit = pLimit(options.summarizer.slotted ? 3 * concurrency : concurrency);
  }

  /** The answer for a plan's remaining calls, started now unless an earlier request started it. */
  ask(plan: Plan): Promise<SummarizerResult> {
    let answer = this.answers.get(plan.signature);
    if (!answer) {
      this.progress.total++;
      answer = this.limit(() => this.call(plan)).then(
        (result) => this.settled(result),
        (error: unknown) => this.settled({ ok: false, kind: "transient", reason: `summarizer failed: ${(error as Error)?.message ?? String(error)}` }),
      );
      this.answers.set(plan.signature, answer);
    }
    return answer;
  }

  private call(plan: Plan): Promise<SummarizerResult> {
    const { signal, summarizer } = this.options;
    if (signal?.aborted) return Promise.resolve({ ok: false, kind: "aborted", reason: "aborted" });
    const calls = plan.remaining.map((c) => ({ toolName: c.toolName, args: c.args, resultText: c.resultText, isError: c.isError }));
    return summarizer.summarizeBatch({ assistantText: plan.batch.assistantText, calls, keys: plan.remaining.map((c) => c.key) }, signal, this.slots);
  }

  private settled(result: SummarizerResult): SummarizerResult {
    this.progress.done++;
    if (!result.ok) this.progress.failed++;
    addUsage(this.progress.usage, result.usage);
    this.options.onProgress?.({ ...this.progress, usage: { ...this.progress.usage } });
    return result;
  }
}

/** Consecutive batches of one live flush (same `flushGroup`), in order. */
function flushGroups(batches: Batch[]): Batch[][] {
  const groups: Batch[][] = [];
  for (const batch of batches) {
    const last = groups[groups.length - 1];
    if (last && last[0].flushGroup === batch.flushGroup) last.push(batch);
    else groups.push([batch]);
  }
  return groups;
}

/** Speculative pass: plan every batch assuming every summary is accepted, and start every call. */
function speculate(groups: Batch[][], indexer: ToolCallIndexer, config: PruneConfig, calls: SummaryCalls): void {
  const hashes = new HashState(indexer);
  for (const group of groups) {
    const rests = group.map((batch) => planSpill(batch, hashes, config).rest);
    group.forEach((batch, i) => {
      const plan: Plan = { batch, ...planRest(batch, rests[i], hashes, config) };
      if (plan.remaining.length > 0 && !plan.trivial) {
        void calls.ask(plan);
        for (const call of plan.remaining) hashes.add(hashOf(call), call.key, batch.flushGroup, false);
      }
    });
  }
}

/** What one batch came to in the real pass. */
interface Settled {
  kind: BatchOutcomeKind;
  summaryChars: number;
  reason?: string;
}

/**
 * The real pass, in session order: each flush group's spills first, then its batches — dedup,
 * trivial skip, the (usually already answered) summarizer call, the oversized check — updating
 * the index as the entries would; the frontier follows every processed batch up to the first
 * failure.
 */
class RealPass {
  readonly result: FlushResult = {
    entries: [],
    sidecars: [],
    outcomes: [],
    frontier: null,
    spilledCalls: 0,
    spilledBatches: 0,
    dedupedCalls: 0,
    summarizedCalls: 0,
    rawChars: 0,
    summaryChars: 0,
    usage: zeroUsage(),
    modelCalls: 0,
    answeredBy: new Map(),
    reused: { cache: 0, session: 0 },
    processedBatches: 0,
    summaryRoom: new Map(),
  };
  private readonly hashes: HashState;
  private readonly frontier = new FrontierTracker();

  constructor(
    private readonly indexer: ToolCallIndexer,
    private readonly options: FlushOptions,
    private readonly calls: SummaryCalls,
  ) {
    this.hashes = new HashState(indexer);
  }

  async group(group: Batch[]): Promise<void> {
    const spillEntries: NewEntry[] = [];
    const spills = group.map((batch) => this.spills(batch, spillEntries));
    const aliasEntries: NewEntry[] = [];
    const batchEntries: NewEntry[] = [];
    for (let i = 0; i < group.length; i++) await this.batch(group[i], spills[i], aliasEntries, batchEntries);
    this.result.entries.push(...spillEntries, ...aliasEntries, ...batchEntries);
  }

  finish(): FlushResult {
    this.result.frontier = this.frontier.data();
    return this.result;
  }

  /**
   * Eager spills of one batch (and aliases of spills whose output is already indexed).
   * @returns the other calls, and how many were spilled
   */
  private spills(batch: Batch, out: NewEntry[]): { rest: CapturedCall[]; spilled: number } {
    const { config } = this.options;
    const { spilled, spillAliases, rest } = planSpill(batch, this.hashes, config);
    this.aliases(spillAliases, out);
    if (spilled.length === 0) return { rest, spilled: 0 };
    const target = { sessionPath: this.options.targetPath, sessionId: this.options.sessionId, previewBytes: config.spillPreviewBytes };
    const records: ToolCallRecord[] = [];
    const refs: SummaryToolCallRef[] = [];
    for (const call of spilled) {
      const record = toRecord(call, batch);
      this.result.sidecars.push(spillRecord(record, target, hashOf(call)));
      records.push(record);
      refs.push(this.indexer.allocateRef(call));
    }
    out.push(...spillIndexEntries(records, refs));
    for (const record of records) this.indexer.addRecord(record, true);
    this.indexer.registerRefs(refs);
    this.result.spilledCalls += spilled.length;
    this.result.outcomes.push({ turnIndex: batch.turnIndex, calls: spilled.length, outcome: "spilled", rawChars: 0, summaryChars: 0 });
    return { rest, spilled: spilled.length };
  }

  private aliases(aliases: { call: CapturedCall; originalKey: string }[], out: NewEntry[]): void {
    for (const { call, originalKey } of aliases) {
      out.push(dedupAliasEntry(aliasData(call, originalKey, this.indexer)));
      this.indexer.addAlias(call.key, originalKey);
      this.result.dedupedCalls++;
    }
  }

  private async batch(
    batch: Batch,
    { rest, spilled }: { rest: CapturedCall[]; spilled: number },
    aliasEntries: NewEntry[],
    batchEntries: NewEntry[],
  ): Promise<void> {
    if (rest.length === 0) {
      // The spill step took every output: no summary, no frontier move. Counted as spilled, or — no
      // output spilled, each an alias of an identical one indexed already — as deduplicated.
      if (spilled > 0) this.result.spilledBatches++;
      else this.result.outcomes.push({ turnIndex: batch.turnIndex, calls: batch.calls.length, outcome: "skipped-deduped", rawChars: 0, summaryChars: 0 });
      return;
    }
    const plan: Plan = { batch, ...planRest(batch, rest, this.hashes, this.options.config) };
    this.aliases(plan.aliases, aliasEntries);
    const settled: Settled =
      plan.remaining.length === 0
        ? { kind: "skipped-deduped", summaryChars: 0 }
        : plan.trivial
          ? { kind: "skipped-trivial", summaryChars: 0 }
          : await this.summarize(plan, batchEntries);
    const calls = plan.remaining.length + plan.aliases.length;
    this.result.outcomes.push({
      turnIndex: batch.turnIndex,
      calls,
      outcome: settled.kind,
      rawChars: plan.rawChars,
      summaryChars: settled.summaryChars,
      ...(settled.reason ? { reason: settled.reason } : {}),
    });
    // Summary characters of every answer count, also past a failure.
    this.frontier.addSummaryChars(settled.summaryChars);
    if (settled.kind === "failed") this.frontier.close();
    else if (this.frontier.open) {
      this.result.processedBatches++;
      this.frontier.advance(plan, settled);
    }
  }

  /** Await the batch's answer; commit the summary unless it failed or is longer than the raw text. */
  private async summarize(plan: Plan, out: NewEntry[]): Promise<Settled> {
    const answer = await this.calls.ask(plan);
    addUsage(this.result.usage, answer.usage);
    if (!answer.ok) {
      if (answer.kind === "aborted") throw new CondenseError("interrupted; nothing was written", 130);
      return { kind: "failed", summaryChars: 0, reason: `${answer.kind}: ${answer.reason}` };
    }
    const { indexer } = this;
    if (answer.reused) this.result.reused[answer.reused]++;
    else if (!this.options.summarizer.local) {
      this.result.modelCalls++;
      if (answer.model) this.result.answeredBy.set(answer.model, (this.result.answeredBy.get(answer.model) ?? 0) + 1);
    }
    const refs = plan.remaining.map((call, k) => indexer.previewRef(call, k));
    const text = composeSummary(
      answer.text,
      refs,
      plan.remaining.map((c) => c.toolName),
    );
    if (text.length > plan.rawChars) return { kind: "skipped-oversized", summaryChars: text.length };
    const committed = plan.remaining.map((call) => indexer.allocateRef(call));
    const records = plan.remaining.map((call) => toRecord(call, plan.batch));
    const details: SummaryDetails = {
      toolCallRefs: committed,
      toolNames: plan.remaining.map((c) => c.toolName),
      turnIndex: plan.batch.turnIndex,
      timestamp: plan.batch.timestamp,
    };
    const entry = summaryEntry(text, details);
    this.result.summaryRoom.set(entry, plan.rawChars);
    out.push(entry, indexEntry({ toolCalls: records }));
    for (const record of records) indexer.addRecord(record, true);
    indexer.registerRefs(committed);
    indexer.summaries.push({ entryId: "", refs: committed, text });
    for (const call of plan.remaining) this.hashes.add(hashOf(call), call.key, plan.batch.flushGroup, false);
    this.result.summarizedCalls += plan.remaining.length;
    this.result.rawChars += plan.rawChars;
    this.result.summaryChars += text.length;
    return { kind: "summarized", summaryChars: text.length };
  }
}

/**
 * The frontier: the last call of the last processed batch before the first failed one, with the
 * totals of the processed batches (summary characters of every summarized or oversized answer).
 */
class FrontierTracker {
  /** False after the first failed batch: the frontier stays before it. */
  open = true;
  private batches = 0;
  private calls = 0;
  private raw = 0;
  private summary = 0;
  private readonly kinds = new Set<BatchOutcomeKind>();
  private last: { batch: Batch; call: CapturedCall } | null = null;

  close(): void {
    this.open = false;
  }

  addSummaryChars(chars: number): void {
    this.summary += chars;
  }

  advance(plan: Plan, settled: Settled): void {
    this.kinds.add(settled.kind);
    this.batches++;
    this.calls += plan.remaining.length + plan.aliases.length;
    this.raw += plan.rawChars + plan.dedupedChars;
    const call = plan.remaining.length > 0 ? plan.remaining[plan.remaining.length - 1] : plan.aliases[plan.aliases.length - 1].call;
    this.last = { batch: plan.batch, call };
  }

  /** The frontier entry's data, or null when no batch was processed. */
  data(): FrontierData | null {
    const last = this.last;
    if (!last) return null;
    const outcome: FrontierOutcome = this.kinds.has("summarized")
      ? "summarized"
      : this.kinds.has("skipped-oversized")
        ? "skipped-oversized"
        : this.kinds.has("skipped-deduped")
          ? "skipped-deduped"
          : "skipped-trivial";
    return {
      lastAttemptedToolCallId: last.call.toolCallId,
      lastAttemptedToolName: last.call.toolName,
      lastAttemptedTurnIndex: last.batch.turnIndex,
      lastAttemptedTimestamp: last.batch.timestamp,
      attemptedBatchCount: this.batches,
      attemptedToolCallCount: this.calls,
      rawCharCount: this.raw,
      summaryCharCount: this.summary,
      outcome,
    };
  }
}

/**
 * Run spill, dedup, trivial skip, summarization and the oversized check over captured batches,
 * updating `indexer` as the entries would.
 * @param batches captured batches in session order (see `captureBatches`)
 * @throws CondenseError (exit 130) when `signal` aborts while a summary is awaited
 */
export async function flushBatches(batches: Batch[], indexer: ToolCallIndexer, options: FlushOptions): Promise<FlushResult> {
  const calls = new SummaryCalls(options);
  const groups = flushGroups(batches);
  speculate(groups, indexer, options.config, calls);
  const pass = new RealPass(indexer, options, calls);
  for (const group of groups) await pass.group(group);
  return pass.finish();
}
