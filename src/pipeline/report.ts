/**
 * What `run` reports for one session (and prints as `--json`, README "JSON output"): batches and
 * calls by outcome, chains, the rendered context before and after, summarizer usage, failures and
 * what was appended.
 */
import type { CompressResult } from "../chain/compress.js";
import type { CaptureResult } from "../prune/capture.js";
import type { BatchOutcome, FlushResult } from "../prune/flush.js";
import type { ContextEditKind, ContextEditPlan } from "../render/context-edits.js";
import type { Rendered } from "../render/render.js";
import { contextSize, type ContextSize } from "../context/size.js";
import type { ReuseCounts, SummarizerUsage } from "../summarize/types.js";
import type { RecoveredResult } from "./recovery.js";
import { sumUsage } from "../summarize/usage.js";
import type { AgentMessage } from "../session/types.js";
import type { TargetDecision } from "./target.js";

/** What the context edits of a `pi`-target run do (null for the `extension` target). */
export interface ContextEditCounts {
  /** `context_edit` entries written. */
  written: number;
  /** Results given a stub, assistant messages given purged arguments or stripped thinking, first user messages given their chain's block, messages omitted. */
  stubs: number;
  assistants: number;
  carriers: number;
  omitted: number;
  /** Targets left as someone else's later edit has them. */
  keptForeign: number;
  /** Changes no context edit may make (entries Pi's appendContextEdit refuses). */
  unrepresentable: number;
}

export interface RunReport {
  session: string;
  summarizer: string;
  /** Whom the run wrote for (`extension` or `pi`) and why. */
  target: TargetDecision;
  contextEdits: ContextEditCounts | null;
  batches: {
    captured: number;
    summarized: number;
    skippedTrivial: number;
    skippedDeduped: number;
    skippedOversized: number;
    failed: number;
    /** Taken whole by the spill step (every output spillThreshold or more, one at least written to a sidecar): no summary asked for. */
    spilled: number;
  };
  calls: {
    spilled: number;
    deduped: number;
    protected: number;
    summarized: number;
    unanswered: number;
    /** Answered calls whose result the orphan sweep removes: indexed for recovery, never summarized. */
    swept: number;
    /** Answered calls left raw: another result of the context shares their occurrence key. */
    ambiguous: number;
    /** Failed calls left raw: error purge takes their arguments, which a stub would bring back. */
    keptForErrorPurge: number;
  };
  chars: { raw: number; summary: number };
  chains: { compressed: number; rangesSummarized: number; backfilledCalls: number; waiting: number };
  /**
   * The context Pi sends (`context/size.ts`), before and after the run: with the extension switched
   * on (`before`, `after`), and stock Pi's, without it (`piOnly`).
   */
  context: { before: ContextSize; after: ContextSize; piOnly: { before: ContextSize; after: ContextSize } };
  /** Model calls made and what they used; `reused`: answers taken from the summary cache or from summaries already in the session instead. */
  usage: SummarizerUsage & {
    calls: number;
    reused: ReuseCounts;
    /** Only when a model other than `summarizer` answered (its fallback): the calls by the model that answered. */
    answeredBy?: Record<string, number>;
  };
  failures: { turnIndex: number; reason: string }[];
  entriesAppended: number;
  sidecars: number;
  /** Tool results the render removes that this run indexed, so that `query <ref>` recovers them. */
  recovered: RecoveredResult[];
  /** Set when summaries and chains were not written because the context would have grown. */
  withheld: { reason: string; context: { chars: number; tokens: number } } | null;
}

/** What a planned run did, for its report. */
export interface RunFacts {
  session: string;
  summarizer: string;
  target: TargetDecision;
  contextEdits: ContextEditPlan | null;
  /** What stock Pi sends after the run (its projection). */
  piOnlyAfter: AgentMessage[];
  capture: CaptureResult;
  flush: FlushResult;
  chains: CompressResult | null;
  before: Rendered;
  after: Rendered;
  entriesAppended: number;
  sidecars: number;
  recovered: RecoveredResult[];
  withheld: RunReport["withheld"];
}

/** The report of a planned run. */
export function runReport(facts: RunFacts): RunReport {
  const { capture, flush, chains } = facts;
  const count = (k: BatchOutcome["outcome"]) => flush.outcomes.filter((o) => o.outcome === k).length;
  return {
    session: facts.session,
    summarizer: facts.summarizer,
    target: facts.target,
    contextEdits: facts.contextEdits ? editCounts(facts.contextEdits) : null,
    batches: {
      captured: capture.batches.length,
      summarized: count("summarized"),
      skippedTrivial: count("skipped-trivial"),
      skippedDeduped: count("skipped-deduped"),
      skippedOversized: count("skipped-oversized"),
      failed: count("failed"),
      spilled: flush.spilledBatches,
    },
    calls: {
      spilled: flush.spilledCalls,
      deduped: flush.dedupedCalls,
      protected: capture.protectedCalls,
      summarized: flush.summarizedCalls,
      unanswered: capture.unanswered,
      swept: capture.swept,
      ambiguous: capture.ambiguous,
      keptForErrorPurge: capture.keptForErrorPurge,
    },
    chars: { raw: flush.rawChars, summary: flush.summaryChars },
    chains: {
      compressed: chains?.chainsCompressed ?? 0,
      rangesSummarized: chains?.rangesSummarized ?? 0,
      backfilledCalls: chains?.backfilledCalls ?? 0,
      waiting: chains?.waiting ?? 0,
    },
    context: {
      before: contextSize(facts.before.afterAgent),
      after: contextSize(facts.after.afterAgent),
      piOnly: { before: contextSize(facts.before.beforeAgent), after: contextSize(facts.piOnlyAfter) },
    },
    usage: {
      ...sumUsage(flush.usage, chains?.usage),
      calls: flush.modelCalls + (chains?.modelCalls ?? 0),
      reused: { cache: flush.reused.cache + (chains?.reused.cache ?? 0), session: flush.reused.session + (chains?.reused.session ?? 0) },
      ...answeredBy(facts.summarizer, flush.answeredBy, chains?.answeredBy),
    },
    failures: flush.outcomes.filter((o) => o.outcome === "failed").map((o) => ({ turnIndex: o.turnIndex, reason: o.reason ?? "" })),
    entriesAppended: facts.entriesAppended,
    sidecars: facts.sidecars,
    recovered: facts.recovered,
    withheld: facts.withheld,
  };
}

/** `{answeredBy}` when a model other than the summarizer's own answered (the fallback), else nothing. */
function answeredBy(summarizer: string, ...counts: (Map<string, number> | undefined)[]): { answeredBy?: Record<string, number> } {
  const all = new Map<string, number>();
  for (const c of counts) for (const [model, k] of c ?? []) all.set(model, (all.get(model) ?? 0) + k);
  return [...all.keys()].some((m) => m !== summarizer) ? { answeredBy: Object.fromEntries(all) } : {};
}

/** The counts of a context-edit plan. */
function editCounts(plan: ContextEditPlan): ContextEditCounts {
  const count = (kind: ContextEditKind) => plan.edits.filter((e) => e.kind === kind).length;
  return {
    written: plan.edits.length,
    stubs: count("stub"),
    assistants: count("assistant"),
    carriers: count("carrier"),
    omitted: count("omit"),
    keptForeign: new Set(plan.keptForeign).size,
    unrepresentable: plan.unrepresentable.length,
  };
}

/** The report of a run that has nothing to do: the context as read, the calls capture saw. */
export function idleRunReport(session: string, target: TargetDecision, capture: CaptureResult, rendered: Rendered): RunReport {
  const size = contextSize(rendered.afterAgent);
  const piOnly = contextSize(rendered.beforeAgent);
  return {
    session,
    summarizer: "none (nothing to do)",
    target,
    contextEdits: target.used === "pi" ? editCounts({ edits: [], keptForeign: [], unrepresentable: [] }) : null,
    batches: { captured: 0, summarized: 0, skippedTrivial: 0, skippedDeduped: 0, skippedOversized: 0, failed: 0, spilled: 0 },
    calls: {
      spilled: 0,
      deduped: 0,
      protected: capture.protectedCalls,
      summarized: 0,
      unanswered: capture.unanswered,
      swept: capture.swept,
      ambiguous: capture.ambiguous,
      keptForErrorPurge: capture.keptForErrorPurge,
    },
    chars: { raw: 0, summary: 0 },
    chains: { compressed: 0, rangesSummarized: 0, backfilledCalls: 0, waiting: 0 },
    context: { before: size, after: size, piOnly: { before: piOnly, after: piOnly } },
    usage: { input: 0, output: 0, cost: 0, calls: 0, reused: { cache: 0, session: 0 } },
    failures: [],
    entriesAppended: 0,
    sidecars: 0,
    recovered: [],
    withheld: null,
  };
}
