/**
 * The main job for one session, computed in memory (docs/design.md §5, §6): capture, flush,
 * chain compression, then the bookkeeping tail — frontier, stats, flush metrics — then, for the
 * `pi` target, the context edits that make stock Pi send the pruned context and the entry listing
 * them (docs/design.md §11), then any diagnostics not recorded yet. Nothing is written here;
 * `session/commit.ts` writes the sidecars and appends `entries`.
 */
import { compressChains, type CompressResult } from "../chain/compress.js";
import type { Batch, CaptureResult } from "../prune/capture.js";
import { flushBatches, type BatchOutcome, type FlushProgress, type FlushResult, type Sidecar } from "../prune/flush.js";
import type { RecoveryOptions } from "../context/vocabulary.js";
import { contextEditEntry, contextEditsEntry, diagnosticEntry, flushMetricsEntry, frontierEntry, statsEntry } from "../entries/build.js";
import { ownContextEditIds } from "../entries/read.js";
import { planContextEdits, type ContextEditPlan } from "../render/context-edits.js";
import {
  type ChainEntryData,
  type ContextMetrics,
  CUSTOM_TYPES,
  type DiagnosticData,
  type FlushMetricsData,
  type StatsData,
  type SummaryDetails,
} from "../entries/types.js";
import { recordedDiagnosticKeys, unrecordedDiagnostics } from "../render/diagnostics.js";
import { ToolCallIndexer } from "../prune/indexer.js";
import { contextOccurrences } from "../prune/occurrences.js";
import { contextSize, type ContextSize } from "../context/size.js";
import { type BranchContext, extendContext } from "../context/projection.js";
import { collisionDiagnostics, planRecovery, type RecoveryPlan } from "./recovery.js";
import { renderBranch, type Rendered } from "../render/render.js";
import { computeContextMetrics } from "../report/context-metrics.js";
import type { AgentMessage, NewEntry, SessionEntry } from "../session/types.js";
import { EntryChain } from "../session/writer.js";
import { withRecoveryHint } from "../summarize/refs.js";
import type { Summarizer } from "../summarize/types.js";
import { sumUsage } from "../summarize/usage.js";
import { runReport, type RunReport } from "./report.js";
import type { TargetDecision } from "./target.js";
import type { SessionView } from "./view.js";

export interface PlanOptions {
  summarizer: Summarizer;
  concurrency: number;
  /** Epoch ms used for every timestamp written. */
  nowMs: number;
  /** Where the entries will be written (sidecars go beside it). */
  targetPath: string;
  signal?: AbortSignal;
  onProgress?: (progress: FlushProgress) => void;
  /**
   * True when only the render after the run is wanted (a dry-run render, the "after" a command
   * reports): the entries are never written, so the flush-metrics entry carries zeros instead of
   * the extension's JSON-measured context metrics (a serialization of every branch message), and
   * what leaves the render as it is is not planned: new diagnostics, and for the `extension`
   * target the recovery index and the bookkeeping tail too (stock Pi's context edits depend on
   * them). `entries` then holds only what the render needs. Default false.
   */
  renderOnly?: boolean;
  /** Whom the run writes for (default: the extension only). */
  target?: TargetDecision;
  /** For the `pi` target: how the recovery command in stubs names the session (`--session` when needed). */
  recovery?: RecoveryOptions;
}

const EXTENSION_ONLY: TargetDecision = { used: "extension", reason: "--target extension" };

const NO_RECOVERY: RecoveryPlan = { entry: null, sidecars: [], recovered: [] };

export interface RunPlan {
  /** Entries with ids, parents and timestamps, ready to append. */
  entries: SessionEntry[];
  sidecars: Sidecar[];
  outcomes: BatchOutcome[];
  report: RunReport;
  /** The branch after the run (for `render --dry-run`). */
  afterBranch: SessionEntry[];
  /** The render of `afterBranch`. */
  after: Rendered;
}

/**
 * Plan the main job on a session: the extension's entries, and for the `pi` target Pi's own context
 * edits too. Reads the capture and the render of the session as read, then
 * advances `view.indexer` through the flush, the chain compression and the recovery index.
 *
 * `run` never makes the context Pi sends larger (`context/size.ts`, the measure every command
 * reports): when the planned render would be larger than the render as read, the summaries and chains are withheld (the report says why) and only what
 * leaves the context as it is — the recovery index and new diagnostics — is planned.
 * @throws CondenseError (exit 130) when `signal` aborts during summarization
 */
export async function planRun(view: SessionView, options: PlanOptions): Promise<RunPlan> {
  // Everything that reads the index as read comes before the flush advances it.
  const metrics = options.renderOnly
    ? { openCycleThinkingTokens: 0, largestChainSharePct: 0, frontierGapTokens: 0 }
    : computeContextMetrics(view.branchMessages, view.indexer.frontier, view.indexer, view.isProtected);
  const before = view.rendered;
  // On the context as the user has it: a result condense's own edit omits still shares its key.
  const collisions = collisionDiagnostics(contextOccurrences(view.sourceContext.items), view.indexer);
  const capture = view.capture;
  const flushed = await flushBatches(capture.batches, view.indexer, {
    config: view.config,
    summarizer: options.summarizer,
    concurrency: options.concurrency,
    targetPath: options.targetPath,
    sessionId: view.session.id,
    signal: options.signal,
    onProgress: options.onProgress,
  });
  const chains = await compressStep(view, options, failedKeys(capture.batches, flushed.outcomes));
  const hinted = placeRecoveryHint([...flushed.entries, ...(chains?.entries ?? [])], flushed.summaryRoom);
  const pruning = hinted.entries;
  // A summary that carries the hint is that much longer: the frontier and the report count it.
  const flush = withSummaryChars(flushed, hinted.summaryCharsAdded);
  const full = finishPlan(view, options, {
    indexer: view.indexer,
    pruning,
    tail: [...bookkeeping(view.indexer, { capture, flush, chains, metrics, nowMs: options.nowMs }), ...(chains?.diagnostics ?? [])],
    collisions,
  });
  let plan = full;
  let withheld: RunReport["withheld"] = null;
  // What Pi sends for the target: stock Pi's own projection for `pi`, the extension's render otherwise.
  const forStockPi = (options.target ?? EXTENSION_ONLY).used === "pi";
  const sent = (p: Finished) => contextSize(forStockPi ? p.piOnlyAfter : p.after.afterAgent);
  const from = contextSize(forStockPi ? before.beforeAgent : before.afterAgent);
  const to = sent(full);
  if (pruning.length > 0 && to.chars > from.chars) {
    // Summaries and chains would grow the context: plan only what leaves it as it is — for stock
    // Pi, unless that plan sends more still (its stubs of outputs already indexed can be longer than
    // the outputs, as the extension's are): the smaller of the two, the same choice on every run.
    const without = finishPlan(view, options, { indexer: ToolCallIndexer.fromBranch(view.branch), pruning: [], tail: [], collisions });
    if (!forStockPi || sent(without).chars < to.chars) {
      plan = without;
      withheld = grewBy(from, to, flush, chains);
    }
  }
  const sidecars = [...(plan === full ? [...flush.sidecars, ...(chains?.sidecars ?? [])] : []), ...plan.recovery.sidecars];
  const report = runReport({
    session: view.session.path,
    summarizer: options.summarizer.name,
    target: options.target ?? EXTENSION_ONLY,
    contextEdits: plan.edits,
    piOnlyAfter: plan.piOnlyAfter,
    capture,
    flush: plan === full ? flush : emptyFlush(flush),
    chains: plan === full ? chains : null,
    before,
    after: plan.final,
    entriesAppended: plan.entries.length,
    sidecars: sidecars.length,
    recovered: plan.recovery.recovered,
    withheld,
  });
  return { entries: plan.entries, sidecars, outcomes: flush.outcomes, report, afterBranch: [...view.branch, ...plan.entries], after: plan.final };
}

/** The entries of a plan, chained, with the render after them and the recovery they hold. */
interface Finished {
  entries: SessionEntry[];
  /** The render with the pruning entries (what the recovery index and diagnostics read). */
  after: Rendered;
  /** The render of the whole plan: `after`, or with stock Pi's context edits when there are any. */
  final: Rendered;
  recovery: RecoveryPlan;
  /** For the `pi` target: the context edits planned (null for the extension target). */
  edits: ContextEditPlan | null;
  /** What stock Pi sends after the whole plan (its projection). */
  piOnlyAfter: AgentMessage[];
}

/**
 * Chain the pruning entries, render the branch with them, index what that render removes
 * (recovery), then add the tail (bookkeeping), for the `pi` target the context edits of that branch
 * and the entry listing them, and the diagnostics not recorded yet — those of the renders and the
 * occurrence collisions. Custom entries do not change the render, so the render of the pruning
 * entries is the render of the whole plan as the extension sees it without stock Pi's edits.
 */
function finishPlan(
  view: SessionView,
  options: PlanOptions,
  parts: { indexer: ToolCallIndexer; pruning: NewEntry[]; tail: NewEntry[]; collisions: DiagnosticData[] },
): Finished {
  // Every entry is placed once, as it is decided: the chain continues from group to group.
  const chain = new EntryChain(view.session, new Date(options.nowMs).toISOString());
  const draft = chain.append(parts.pruning);
  // The index of the branch with the draft: the after-render's, and then (extended) stock Pi's edits'.
  const draftBranch = [...view.branch, ...draft];
  const draftIndex = draft.length > 0 ? ToolCallIndexer.fromBranch(draftBranch) : null;
  // Each projection extends the one before it (the branch as read is projected once, by the view).
  const draftContext = extendContext(view.context, draftBranch, view.branch.length);
  const after = draftIndex ? renderBranch(draftBranch, view.config, draftIndex, draftContext) : view.rendered;
  const forStockPi = (options.target ?? EXTENSION_ONLY).used === "pi";
  // Only the render is wanted: for the extension, what follows does not change it. (Stock Pi's
  // edits do change with the recovery index and the tail: they are planned for the `pi` target.)
  if (options.renderOnly && !forStockPi) return { entries: draft, after, final: after, recovery: NO_RECOVERY, edits: null, piOnlyAfter: after.beforeAgent };
  const target = { sessionPath: options.targetPath, sessionId: view.session.id };
  const recovery = planRecovery(after, parts.indexer, view.config, target, view.rendered.handler?.items);
  const written: SessionEntry[] = [...draft, ...chain.append([...(recovery.entry ? [recovery.entry] : []), ...parts.tail])];
  // The after-render is done with `draftIndex`: it is extended in place by what follows the draft.
  const native = forStockPi
    ? nativeStep(view, written, chain, options, {
        index: draftIndex?.extendedWith(written.slice(draft.length)),
        base: draftContext,
        baseLength: draftBranch.length,
      })
    : null;
  const placed = native ? [...written, ...native.entries] : written;
  // Stock Pi's edits change what the extension sees: a later run reads the diagnostics of that render too.
  // (Edits and their listing are no context-prune entries: the index of the branch before them is theirs.)
  const placedBranch = [...view.branch, ...placed];
  const final = native?.entries.length
    ? renderBranch(placedBranch, view.config, native.indexer, extendContext(native.context, placedBranch, view.branch.length + written.length))
    : after;
  // Diagnostics never change a render.
  if (options.renderOnly) return { entries: placed, after, final, recovery, edits: native?.plan ?? null, piOnlyAfter: final.beforeAgent };
  const found = [...after.diagnostics, ...(final === after ? [] : final.diagnostics), ...parts.collisions.map((d) => ({ ...d, dedupKey: d.detail }))];
  const diagnostics = unrecordedDiagnostics(view.branch, found);
  const entries = [...placed, ...chain.append(diagnostics.map(diagnosticEntry))];
  return { entries, after, final, recovery, edits: native?.plan ?? null, piOnlyAfter: final.beforeAgent };
}

/**
 * Native mode: the context edits that make Pi's projection of the branch after `placed` the
 * render of it (render/context-edits.ts), then the `condense-context-edits` entry listing their
 * ids, both placed on `chain` after `placed`.
 * @param known.index the index of the branch with `placed`, when the caller has it (else rebuilt)
 * @param known.base Pi's projection of the first `known.baseLength` entries of the branch with `placed` (extended here)
 * @returns the entries placed, the plan (for the report), the index and Pi's projection of the branch with `placed`
 */
function nativeStep(
  view: SessionView,
  placed: SessionEntry[],
  chain: EntryChain,
  options: PlanOptions,
  known: { index?: ToolCallIndexer | null; base: BranchContext; baseLength: number },
): { entries: SessionEntry[]; plan: ContextEditPlan; indexer: ToolCallIndexer; context: BranchContext } {
  const branch = [...view.branch, ...placed];
  const indexer = known.index ?? ToolCallIndexer.fromBranch(branch);
  const context = extendContext(known.base, branch, known.baseLength);
  const ctx = {
    indexer,
    config: view.config,
    isProtected: view.isProtected,
    wording: { target: "pi" as const, recovery: options.recovery ?? {} },
  };
  const plan = planContextEdits(branch, ctx, ownContextEditIds(view.branch), context);
  if (plan.edits.length === 0) return { entries: [], plan, indexer, context };
  const edits = chain.append(plan.edits.map((e) => contextEditEntry(e.targetId, e.replacement)));
  return { entries: [...edits, ...chain.append([contextEditsEntry({ editIds: edits.map((e) => e.id) })])], plan, indexer, context };
}

/** Why summaries and chains were withheld: what Pi sends would have grown from `from` to `to`. */
function grewBy(from: ContextSize, to: ContextSize, flush: FlushResult, chains: CompressResult | null): NonNullable<RunReport["withheld"]> {
  return {
    reason:
      `the rendered context would grow from ${from.chars.toLocaleString("en-US")} to ${to.chars.toLocaleString("en-US")} chars ` +
      `(${flush.summarizedCalls} summarized call(s): ${flush.summaryChars.toLocaleString("en-US")} summary chars for ${flush.rawChars.toLocaleString("en-US")} raw chars; ` +
      `${chains?.chainsCompressed ?? 0} compressed chain(s)); summaries and chains were not written`,
    context: to,
  };
}

/** A flush that wrote nothing, for the report of a plan whose summaries were withheld. */
function emptyFlush(flush: FlushResult): FlushResult {
  return { ...flush, entries: [], sidecars: [], spilledCalls: 0, dedupedCalls: 0, summarizedCalls: 0, rawChars: 0, summaryChars: 0 };
}

/**
 * Chain compression (step 8) on the context as it stands after the flush: the flush has updated
 * the in-memory index (records, refs, per-batch summaries), which decides each chain's body.
 * @returns null when chain compression is off
 */
async function compressStep(view: SessionView, options: PlanOptions, pendingKeys: Set<string>): Promise<CompressResult | null> {
  if (!view.config.chainCompression.enabled) return null;
  return compressChains(view.sourceContext.items, view.indexer, {
    config: view.config,
    summarizer: options.summarizer,
    isProtected: view.isProtected,
    concurrency: options.concurrency,
    nowMs: options.nowMs,
    targetPath: options.targetPath,
    sessionId: view.session.id,
    existingDiagnostics: recordedDiagnosticKeys(view.branch),
    pendingKeys,
    signal: options.signal,
  });
}

/**
 * The bookkeeping tail (step 9): the frontier (when the flush moved it), cumulative stats and the
 * flush metrics — only when the flush attempted a batch or a chain was compressed.
 */
function bookkeeping(
  indexer: ToolCallIndexer,
  run: { capture: CaptureResult; flush: FlushResult; chains: CompressResult | null; metrics: ContextMetrics; nowMs: number },
): NewEntry[] {
  const { capture, flush, chains } = run;
  const chainsCompressed = chains?.chainsCompressed ?? 0;
  if (!flush.frontier && chainsCompressed === 0) return [];
  const previous = indexer.stats;
  const total = sumUsage({ input: previous.totalInputTokens, output: previous.totalOutputTokens, cost: previous.totalCost }, flush.usage, chains?.usage);
  const stats: StatsData = {
    totalInputTokens: total.input,
    totalOutputTokens: total.output,
    totalCost: total.cost,
    callCount: previous.callCount + flush.modelCalls + (chains?.modelCalls ?? 0),
    chainsCompressed: previous.chainsCompressed + chainsCompressed,
    rangesSummarized: previous.rangesSummarized + (chains?.rangesSummarized ?? 0),
  };
  const flushMetrics: FlushMetricsData = {
    ts: run.nowMs,
    trigger: "offline",
    capturedBatches: capture.batches.length,
    processedBatches: flush.processedBatches,
    outcome: flush.frontier?.outcome ?? (capture.batches.length === 0 ? "empty" : "error"),
    metrics: run.metrics,
  };
  return [...(flush.frontier ? [frontierEntry(flush.frontier)] : []), statsEntry(stats), flushMetricsEntry(flushMetrics)];
}

/**
 * The recovery hint, once per run (docs/design.md "Recovery hints"): at the end of the last summary
 * this run writes that no chain compressed in this run hides and that stays within its batch's raw
 * size with it; without one, at the end of the last chain body this run writes; else nowhere
 * (the extension's stubs name `context_tree_query` themselves).
 * @param entries the flush's entries, then the chain step's, in order
 * @param room each summary entry's batch raw chars
 */
export function placeRecoveryHint(entries: NewEntry[], room: Map<NewEntry, number>): { entries: NewEntry[]; summaryCharsAdded: number } {
  const hidden = new Set<string>();
  for (const e of entries)
    if (e.type === "custom" && e.customType === CUSTOM_TYPES.chain) for (const ref of (e.data as ChainEntryData).toolRefs ?? []) hidden.add(ref);
  const fits = (e: NewEntry): e is NewEntry & { type: "custom_message"; content: string } => {
    if (e.type !== "custom_message" || typeof e.content !== "string" || !room.has(e)) return false;
    const refs = (e.details as SummaryDetails).toolCallRefs;
    return !refs.some((r) => hidden.has(r.shortId)) && withRecoveryHint(e.content).length <= (room.get(e) ?? 0);
  };
  const out = [...entries];
  for (let i = out.length - 1; i >= 0; i--) {
    const e = out[i];
    if (fits(e)) {
      const content = withRecoveryHint(e.content);
      out[i] = { ...e, content };
      return { entries: out, summaryCharsAdded: content.length - e.content.length };
    }
  }
  for (let i = out.length - 1; i >= 0; i--) {
    const e = out[i];
    if (e.type !== "custom" || e.customType !== CUSTOM_TYPES.chain) continue;
    const data = e.data as ChainEntryData;
    if (data.rangeSummaryText === undefined) continue;
    out[i] = { ...e, data: { ...data, rangeSummaryText: withRecoveryHint(data.rangeSummaryText) } };
    return { entries: out, summaryCharsAdded: 0 };
  }
  return { entries: out, summaryCharsAdded: 0 };
}

/** The flush result with `added` more summary characters (in its totals and its frontier). */
function withSummaryChars(flush: FlushResult, added: number): FlushResult {
  if (added === 0) return flush;
  const frontier = flush.frontier ? { ...flush.frontier, summaryCharCount: flush.frontier.summaryCharCount + added } : null;
  return { ...flush, summaryChars: flush.summaryChars + added, frontier };
}

/** Occurrence keys of the captured calls whose batch failed to summarize. */
function failedKeys(batches: Batch[], outcomes: BatchOutcome[]): Set<string> {
  const failed = new Set(outcomes.filter((o) => o.outcome === "failed").map((o) => o.turnIndex));
  return new Set(batches.filter((b) => failed.has(b.turnIndex)).flatMap((b) => b.calls.map((c) => c.key)));
}
