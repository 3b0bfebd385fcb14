/**
 * Chain compression at run time (docs/design.md §6 step 8; docs/design.md "Chain Compression",
 * "Rolling window", "Range summary fusion", "Deterministic fallback (uncovered chains)",
 * "Protected-output relocation"): closed chains older than the `rollingWindow` most recent ones
 * become `context-prune-chain` entries. The body is, in order of preference, one fused summary of
 * the chain's per-batch summaries (when two or more distinct ones cover it), the single summary
 * (left for the renderer to pick up), or — for a chain no summary covers — a deterministic body
 * written after back-filling the chain's tool calls into the index.
 *
 * Nothing is written here: the entries are returned and the indexer is updated as they would.
 */
import pLimit from "p-limit";
import type { PruneConfig } from "../config/config.js";
import { resultTextOf } from "../prune/capture.js";
import type { Sidecar } from "../prune/flush.js";
import { occurrenceKey, parseOccurrenceKey, recordKeyOf } from "../context/vocabulary.js";
import type { ToolCallIndexer } from "../prune/indexer.js";
import type { ProtectionTest } from "../prune/protect.js";
import { recoveryGraceKeys } from "../prune/grace.js";
import { backfill } from "../prune/backfill.js";
import { callsInOrder, sharedResultKeys } from "../prune/occurrences.js";
import { chainEntry, diagnosticEntry } from "../entries/build.js";
import type { ChainEntryData, DiagnosticData, ToolCallRecord } from "../entries/types.js";
import type { AgentMessage, SessionEntry, ToolResultMessage } from "../session/types.js";
import type { NewEntry } from "../session/types.js";
import { summarizeDeterministically } from "../summarize/deterministic.js";
import { withoutRecoveryHint } from "../summarize/refs.js";
import type { ReuseCounts, Summarizer, SummarizerResult, SummarizerUsage } from "../summarize/types.js";
import { addUsage, zeroUsage } from "../summarize/usage.js";
import { detectChains, type ChainRange } from "./detect.js";
import { rangeResolver, resolveRange } from "./resolve.js";

/** A context message and, when it came from one, its session entry (whose message is the raw original). */
export interface ChainSourceItem {
  message: AgentMessage;
  entry?: SessionEntry;
}

export interface CompressOptions {
  config: PruneConfig;
  summarizer: Summarizer;
  isProtected: ProtectionTest;
  /** Parallel fusion calls. */
  concurrency: number;
  /** Epoch ms written as `compressedAt`. */
  nowMs: number;
  /** Session file the entries go to: sidecars of back-filled spills live beside it. */
  targetPath: string;
  sessionId: string;
  /**
   * Occurrence keys of calls whose batch failed to summarize in this run: a chain holding one waits
   * for a later run rather than dropping an output nothing indexed.
   */
  pendingKeys?: Set<string>;
  /** `kind\0detail` of diagnostics already on the branch: never written twice. */
  existingDiagnostics?: Set<string>;
  signal?: AbortSignal;
}

export interface CompressResult {
  /** Per compressed chain, in chain order: [back-fill index entry], chain entry. */
  entries: NewEntry[];
  /** New `context-prune-diagnostic` entries (`backfill-empty`). */
  diagnostics: NewEntry[];
  sidecars: Sidecar[];
  chainsCompressed: number;
  /** Chains whose body is a fused range summary. */
  rangesSummarized: number;
  /** Tool calls back-filled into the index. */
  backfilledCalls: number;
  /** Chains held back: a `context_tree_query` result inside the recovery grace window, or a failed batch. */
  waiting: number;
  /** Chains left raw because a result in them shares its occurrence key with another result. */
  ambiguous: number;
  usage: SummarizerUsage;
  /** Model calls made for fusion (0 with the deterministic summarizer; answers reused not counted). */
  modelCalls: number;
  /** Fusion answers reused instead of asking the model. */
  reused: ReuseCounts;
  /** The fusion calls by the model that answered (`provider/id`). */
  answeredBy: Map<string, number>;
}

/** The key a chain's calls are looked up by: occurrence keys when it has results, else bare ids. */
export function chainLookupKeys(chain: Pick<ChainRange, "middleOccurrenceKeys" | "middleToolCallIds">): string[] {
  return chain.middleOccurrenceKeys.length > 0 ? chain.middleOccurrenceKeys : chain.middleToolCallIds;
}

/** What chain selection and compression look up in one message list, made once for both. */
export interface MessageLookups {
  /** Chain boundaries → range ({@link rangeResolver}). */
  resolve: ReturnType<typeof rangeResolver>;
  /** Occurrence keys two or more results share ({@link sharedResultKeys}). */
  shared: Set<string>;
}

/** The {@link MessageLookups} of a message list. */
export function messageLookups(messages: AgentMessage[]): MessageLookups {
  return { resolve: rangeResolver(messages), shared: sharedResultKeys(messages) };
}

/**
 * Closed chains to compress now: closed, not yet in the registry, with at least one tool call; all
 * but the `rollingWindow` most recent such chains whose boundaries resolve to exactly one range (an
 * entry that does not resolve compresses nothing); then minus those holding a `context_tree_query`
 * result still inside the recovery grace window (they wait; the window is decided before this), and
 * minus those holding a result whose occurrence key another result of the context shares (they stay
 * raw: such results cannot be indexed apart, docs/design.md "Occurrence Identity").
 * @param lookups the range resolver and the shared occurrence keys of `messages`, when the caller has them (else made here)
 * @returns the eligible chains, how many wait for the grace window, how many stay raw for a shared key
 */
export function selectEligibleChains(
  messages: AgentMessage[],
  indexer: Pick<ToolCallIndexer, "chains">,
  config: Pick<PruneConfig, "chainCompression" | "recoveryGraceTurns">,
  isProtected: ProtectionTest,
  lookups: MessageLookups = messageLookups(messages),
): { eligible: ChainRange[]; waiting: number; ambiguous: number } {
  const candidates = detectChains(messages, isProtected).filter(
    (c) => c.finalAssistantTimestamp !== null && !indexer.chains.has(c.startUserTimestamp) && c.middleToolCallIds.length > 0,
  );
  const { resolve, shared } = lookups;
  // A chain whose boundaries do not resolve to one range would compress nothing (render fails closed).
  const aged = candidates
    .slice(0, Math.max(0, candidates.length - config.chainCompression.rollingWindow))
    .filter((c) => resolve(c.startUserTimestamp, c.finalAssistantTimestamp) !== null);
  const distinct = aged.filter((c) => !c.middleOccurrenceKeys.some((k) => shared.has(k)));
  const grace = recoveryGraceKeys(messages, config.recoveryGraceTurns);
  const eligible = distinct.filter((c) => !c.middleOccurrenceKeys.some((k) => grace.has(k)));
  return { eligible, waiting: distinct.length - eligible.length, ambiguous: aged.length - distinct.length };
}

/**
 * Distinct per-batch summary texts covering any of the given keys (occurrence keys, or bare ids
 * for legacy chain entries), in branch order. The summaries are indexed once, so k lookups cost
 * O(summaries + k · keys).
 */
export function summaryLookup(indexer: Pick<ToolCallIndexer, "summaries">): (keys: string[], byBareId: boolean) => string[] {
  const byKey = new Map<string, number[]>();
  const byBare = new Map<string, number[]>();
  indexer.summaries.forEach((s, i) => {
    for (const r of s.refs) {
      for (const [map, key] of [
        [byKey, recordKeyOf(r)],
        [byBare, r.toolCallId],
      ] as const) {
        const list = map.get(key);
        if (!list) map.set(key, [i]);
        else if (list[list.length - 1] !== i) list.push(i);
      }
    }
  });
  return (keys, byBareId) => {
    const hits = new Set<number>();
    for (const key of keys) for (const i of (byBareId ? byBare : byKey).get(key) ?? []) hits.add(i);
    const out: string[] = [];
    for (const i of [...hits].sort((a, b) => a - b)) if (!out.includes(indexer.summaries[i].text)) out.push(indexer.summaries[i].text);
    return out;
  };
}

/** The number of a short ref (`t12` → 12), or Infinity for anything else. */
const refNumber = (ref: string) => (/^t\d+$/.test(ref) ? Number(ref.slice(1)) : Number.POSITIVE_INFINITY);

/**
 * Short refs of a chain's calls, each once (a dedup alias shares its original's ref), in numeric
 * order (`t9, t12, t112`: a ref back-filled late sorts after the refs its summaries gave earlier).
 */
export function chainToolRefs(indexer: Pick<ToolCallIndexer, "shortRefFor">, keys: string[]): string[] {
  const refs: string[] = [];
  for (const key of keys) {
    const ref = indexer.shortRefFor(key);
    if (ref && !refs.includes(ref)) refs.push(ref);
  }
  return refs
    .map((ref, i) => ({ ref, i }))
    .sort((a, b) => refNumber(a.ref) - refNumber(b.ref) || a.i - b.i)
    .map((x) => x.ref);
}

/** One tool call of a chain as the deterministic body describes it. */
export interface ChainCall {
  /** Its short ref (a bare id when it has none). */
  ref: string;
  toolName: string;
  args: unknown;
  /** The stored output (a spilled one's head preview, with `spilledBytes`). */
  resultText: string;
  isError: boolean;
  spilledBytes?: number;
  /** Epoch ms: the result's timestamp. */
  at: number;
}

/** `2 min 38 s`, `41 s`, `1 h 3 min`. */
function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ""}`;
  return `${Math.floor(s / 3600)} h${Math.floor((s % 3600) / 60) ? ` ${Math.floor((s % 3600) / 60)} min` : ""}`;
}

/** The calls as deterministic summary bullets, each labelled by its ref (`summarize/deterministic.ts`). */
export function describeCalls(calls: Pick<ChainCall, "ref" | "toolName" | "args" | "resultText" | "isError" | "spilledBytes">[]): string {
  return summarizeDeterministically({ assistantText: "", calls }, { label: (i) => `\`${calls[i].ref}\``, reserve: 0 });
}

/**
 * The zero-model body of a chain no summary covers: what it is, one line with the call
 * count, the tools (most used first, then by name) and the time span (one time for one call),
 * then each call as the deterministic summarizer describes it, under its ref.
 * @param calls the chain's indexed calls, in chain order (at least one)
 */
export function deterministicChainBody(calls: ChainCall[]): string {
  // A dedup alias shares its original's ref and output: described once, counted as a call.
  const seen = new Set<string>();
  const described = calls.filter((c) => {
    if (seen.has(c.ref)) return false;
    seen.add(c.ref);
    return true;
  });
  const counts = new Map<string, number>();
  for (const c of calls) counts.set(c.toolName, (counts.get(c.toolName) ?? 0) + 1);
  const tools = [...counts]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([name, n]) => (calls.length === 1 ? name : `${name} ×${n}`))
    .join(", ");
  const times = calls.map((c) => c.at).sort((a, b) => a - b);
  const first = times[0];
  const last = times[times.length - 1];
  const when =
    first === last ? new Date(first).toISOString() : `${new Date(first).toISOString()} to ${new Date(last).toISOString()} (${duration(last - first)})`;
  return [
    "Sub-task compressed without a model (no per-batch summary covered it); each output below is recoverable by its ref.",
    `${calls.length} call${calls.length === 1 ? "" : "s"} (${tools}) · ${when}`,
    describeCalls(described),
  ].join("\n");
}

/**
 * Records for a chain's calls that are in neither the index nor the dedup aliases and are not
 * protected: walk the resolved range, pairing each tool result with the call it answers in order in
 * its turn (prune/occurrences.ts `callsInOrder`); a result that answers no call there keeps its own
 * tool name and no arguments (as the recovery index stores it). `turnIndex` is -1 and `timestamp` the result's own
 * timestamp (there is no batch). A result whose occurrence key another result of the context shares
 * is left out: a record under that key would stub every result that has it.
 * @param shared occurrence keys that two or more results of the context share
 * @param messages `items`' messages (pass them when extracting for many chains: the walk is then
 *   linear in the chain's range, not in the context)
 */
export function extractChainRecords(
  items: ChainSourceItem[],
  chain: ChainRange,
  indexer: Pick<ToolCallIndexer, "isSummarized">,
  resolve?: ReturnType<typeof rangeResolver>,
  shared: Set<string> = new Set(),
  messages: AgentMessage[] = items.map((i) => i.message),
): ToolCallRecord[] {
  const range = (resolve ?? ((a: number, b: number | null) => resolveRange(messages, a, b)))(chain.startUserTimestamp, chain.finalAssistantTimestamp);
  if (!range) return [];
  const protectedIds = new Set(chain.protectedToolCallIds);
  const records: ToolCallRecord[] = [];
  const taken = new Set<string>();
  const inRange = messages.slice(range.startIndex + 1, range.endIndex);
  const inTurn = callsInOrder(inRange);
  inRange.forEach((m, k) => {
    if (m.role !== "toolResult") return;
    const source = items[range.startIndex + 1 + k].entry;
    const raw = (source?.type === "message" ? source.message : m) as ToolResultMessage;
    const call = inTurn.get(k);
    if (protectedIds.has(raw.toolCallId) || typeof raw.timestamp !== "number" || typeof raw.toolCallId !== "string" || raw.toolCallId === "") return;
    const key = occurrenceKey(raw.toolCallId, raw.timestamp);
    if (indexer.isSummarized(key) || taken.has(key) || shared.has(key)) return;
    taken.add(key);
    records.push({
      toolCallId: raw.toolCallId,
      toolName: call?.name ?? String(raw.toolName ?? ""),
      args: call ? (call.arguments ?? {}) : {},
      resultText: resultTextOf(raw),
      isError: raw.isError === true,
      turnIndex: -1,
      timestamp: raw.timestamp,
      resultTimestamp: raw.timestamp,
    });
  });
  return records;
}

/** Index back-filled records in one flagged `context-prune-index` entry, spilling huge outputs. */
function backfillRecords(fresh: ToolCallRecord[], indexer: ToolCallIndexer, options: CompressOptions, result: CompressResult, out: NewEntry[]): void {
  const { config } = options;
  const done = backfill(fresh, indexer, {
    sessionPath: options.targetPath,
    sessionId: options.sessionId,
    spillThreshold: config.spillThreshold,
    previewBytes: config.spillPreviewBytes,
  });
  if (!done.entry) return;
  result.sidecars.push(...done.sidecars);
  out.push(done.entry);
  result.backfilledCalls += fresh.length;
}

/** A record as a chain call: its ref (or bare id), and its output (the head preview when spilled). */
function chainCall(record: ToolCallRecord, ref: string | undefined, at: number): ChainCall {
  const call = { ref: ref ?? record.toolCallId, toolName: record.toolName, args: record.args, resultText: record.resultText, isError: record.isError, at };
  if (record.resultText !== "" || !record.spillPath) return call;
  return { ...call, resultText: record.resultPreview ?? "", spilledBytes: record.spillBytes ?? 0 };
}

/** Chains to compress now: eligible, and holding no call whose batch failed in this run (those wait). */
function chainsToCompress(
  messages: AgentMessage[],
  indexer: ToolCallIndexer,
  options: CompressOptions,
  lookups: MessageLookups,
): { chains: ChainRange[]; waiting: number; ambiguous: number } {
  const selected = selectEligibleChains(messages, indexer, options.config, options.isProtected, lookups);
  const pending = options.pendingKeys ?? new Set<string>();
  const chains = selected.eligible.filter((c) => !c.middleOccurrenceKeys.some((k) => pending.has(k)));
  return { chains, waiting: selected.waiting + selected.eligible.length - chains.length, ambiguous: selected.ambiguous };
}

/**
 * One fusion call per chain covered by two or more distinct summaries (when fusion is on), all
 * started at once: their inputs depend only on the per-batch summaries. Every call is settled
 * before anything throws, so no promise is left unobserved.
 * @returns per chain, its answer or null
 */
async function fuseRanges(bodiesOf: string[][], options: CompressOptions): Promise<(SummarizerResult | null)[]> {
  const { summarizer, signal } = options;
  const limit = pLimit(Math.max(1, options.concurrency));
  const fusions = bodiesOf.map((bodies) =>
    options.config.chainCompression.fuseRangeSummary && bodies.length >= 2
      ? limit(() =>
          signal?.aborted ? Promise.resolve<SummarizerResult>({ ok: false, kind: "aborted", reason: "aborted" }) : summarizer.fuseRange(bodies, signal),
        )
      : null,
  );
  return Promise.all(fusions.map((f) => (f ? f.catch((e: unknown): SummarizerResult => ({ ok: false, kind: "transient", reason: String(e) })) : null)));
}

/** What separates a chain body from the calls no summary covers (named after it). */
export const UNCOVERED_HEADING = "\n\nNot summarized in this span:\n";

/** The shared state of one compression: the projected context, the index, the options, the result. */
interface Compression {
  items: ChainSourceItem[];
  /** `items`' messages. */
  messages: AgentMessage[];
  indexer: ToolCallIndexer;
  options: CompressOptions;
  result: CompressResult;
  resolve: ReturnType<typeof rangeResolver>;
  /** Occurrence keys two or more results of the context share (never back-filled under them). */
  shared: Set<string>;
}

/**
 * The body of a chain some summary covers: the fused summary when the fusion answered, else none
 * (the renderer shows the per-batch summaries); calls no summary covers (trivial batches left raw)
 * would vanish with the range, so they are back-filled into the index and named, with short
 * outputs verbatim, after the body.
 */
function coveredBody(c: Compression, chain: ChainRange, bodies: string[], answer: SummarizerResult | null, backfill: NewEntry[]): string | undefined {
  const { indexer, result } = c;
  const local = c.options.summarizer.local;
  let body: string | undefined;
  if (answer?.ok && answer.reused) result.reused[answer.reused]++;
  else if (answer?.ok && !local) {
    result.modelCalls++;
    if (answer.model) result.answeredBy.set(answer.model, (result.answeredBy.get(answer.model) ?? 0) + 1);
  }
  if (answer?.ok && answer.text.trim() !== "") {
    body = answer.text;
    result.rangesSummarized++;
  }
  const uncovered = extractChainRecords(c.items, chain, indexer, c.resolve, c.shared, c.messages);
  if (uncovered.length === 0) return body;
  const shown = uncovered.map((r) => ({ ...r }));
  backfillRecords(uncovered, indexer, c.options, result, backfill);
  const calls = shown.map((r, i) => chainCall(r, indexer.shortRefFor(recordKeyOf(uncovered[i])), r.timestamp));
  return `${body ?? bodies.map(withoutRecoveryHint).join("\n\n")}${UNCOVERED_HEADING}${describeCalls(calls)}`;
}

/**
 * The zero-model body of a chain no summary covers, after back-filling its calls; null when none
 * of its outputs can be indexed (then a `backfill-empty` diagnostic, once, unless every call is
 * protected).
 */
function deterministicBody(c: Compression, chain: ChainRange, keys: string[], backfill: NewEntry[]): string | null {
  const { indexer, options } = c;
  const fresh = extractChainRecords(c.items, chain, indexer, c.resolve, c.shared, c.messages);
  // Whether any call is indexed already matters only when none is back-filled now.
  if (fresh.length === 0 && !keys.some((k) => indexer.getRecord(k) !== undefined)) {
    const fullyProtected = chain.middleToolCallIds.every((id) => chain.protectedToolCallIds.includes(id));
    if (!fullyProtected) {
      const diagnostic: DiagnosticData = {
        kind: "backfill-empty",
        detail: `start=${chain.startUserTimestamp} middles=${chain.middleToolCallIds.length}: no tool output of this chain could be indexed`,
      };
      const seen = `${diagnostic.kind}\0${diagnostic.detail}`;
      if (!options.existingDiagnostics?.has(seen)) {
        options.existingDiagnostics?.add(seen);
        c.result.diagnostics.push(diagnosticEntry(diagnostic));
      }
    }
    return null;
  }
  backfillRecords(fresh, indexer, options, c.result, backfill);
  const calls: ChainCall[] = [];
  for (const key of keys) {
    const record = indexer.getRecord(key);
    if (!record) continue;
    const at = parseOccurrenceKey(key).resultTimestamp ?? record.resultTimestamp ?? record.timestamp;
    calls.push(chainCall(record, indexer.shortRefFor(key), at));
  }
  return deterministicChainBody(calls);
}

/** The chain entry's data, in the extension's field order. */
function chainData(chain: ChainRange, blockId: string, toolRefs: string[], body: string | undefined, deterministic: boolean, nowMs: number): ChainEntryData {
  const entry: ChainEntryData = {
    blockId,
    startUserTimestamp: chain.startUserTimestamp,
    droppedToolCallIds: chain.middleToolCallIds,
    finalAssistantTimestamp: chain.finalAssistantTimestamp,
    toolRefs,
    compressedAt: nowMs,
  };
  if (body !== undefined) entry.rangeSummaryText = body;
  if (deterministic) entry.bodySource = "deterministic";
  if (chain.protectedToolCallIds.length > 0) entry.protectedToolCallIds = chain.protectedToolCallIds;
  if (chain.middleOccurrenceKeys.length > 0) entry.droppedOccurrenceKeys = chain.middleOccurrenceKeys;
  return entry;
}

/**
 * Compress the eligible chains of a session's context.
 * @param items the projected context (compaction-aware), each with its source entry
 * @param indexer the index after this run's flush; updated with back-filled records, refs and chains
 * @throws Error("aborted") when `signal` aborts during a fusion call
 */
export async function compressChains(items: ChainSourceItem[], indexer: ToolCallIndexer, options: CompressOptions): Promise<CompressResult> {
  const result: CompressResult = {
    entries: [],
    diagnostics: [],
    sidecars: [],
    chainsCompressed: 0,
    rangesSummarized: 0,
    backfilledCalls: 0,
    waiting: 0,
    ambiguous: 0,
    usage: zeroUsage(),
    modelCalls: 0,
    answeredBy: new Map(),
    reused: { cache: 0, session: 0 },
  };
  const messages = items.map((i) => i.message);
  // The messages do not change from here on: selection and compression share their lookups.
  const lookups = messageLookups(messages);
  const { chains, waiting, ambiguous } = chainsToCompress(messages, indexer, options, lookups);
  result.waiting = waiting;
  result.ambiguous = ambiguous;
  if (chains.length === 0) return result;
  const covering = summaryLookup(indexer);
  const bodiesOf = chains.map((chain) => covering(chainLookupKeys(chain), chain.middleOccurrenceKeys.length === 0));
  const answers = await fuseRanges(bodiesOf, options);
  const c: Compression = { items, messages, indexer, options, result, resolve: lookups.resolve, shared: lookups.shared };
  for (let n = 0; n < chains.length; n++) {
    const chain = chains[n];
    const keys = chainLookupKeys(chain);
    const answer = answers[n];
    addUsage(result.usage, answer?.usage);
    if (answer && !answer.ok && answer.kind === "aborted") throw new Error("aborted");
    const backfill: NewEntry[] = [];
    const covered = bodiesOf[n].length > 0;
    const body = covered ? coveredBody(c, chain, bodiesOf[n], answer, backfill) : deterministicBody(c, chain, keys, backfill);
    if (body === null) continue;
    const entry = chainData(chain, indexer.allocateBlockId(), chainToolRefs(indexer, keys), body, !covered, options.nowMs);
    indexer.chains.set(entry.startUserTimestamp, entry);
    result.entries.push(...backfill, chainEntry(entry));
    result.chainsCompressed++;
  }
  return result;
}
