/**
 * What `run` reports for one session (and prints as `--json`, README "JSON output"): batches and
 * calls by outcome, chains, the rendered context before and after, summarizer usage, failures and
 * what was appended.
 */
import type { CompressResult } from "../chain/compress.js";
import type { CaptureResult } from "../prune/capture.js";
import type { BatchOutcome, FlushResult } from "../prune/flush.js";
import type { Rendered } from "../render/render.js";
import { contextSize, type ContextSize } from "../context/size.js";
import type { ReuseCounts, SummarizerUsage } from "../summarize/types.js";
import type { RecoveredResult } from "./recovery.js";
import { sumUsage } from "../summarize/usage.js";

export interface RunReport {
  session: string;
  summarizer: string;
  batches: {
    captured: number;
    summarized: number;
    skippedTrivial: number;
    skippedDeduped: number;
    skippedOversized: number;
    failed: number;
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
  /** The context Pi sends (`context/size.ts`), before and after the run. */
  context: { before: ContextSize; after: ContextSize };
  /** Model calls made and what they used; `reused`: answers taken from the summary cache or from summaries already in the session instead. */
  usage: SummarizerUsage & { calls: number; reused: ReuseCounts };
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
    batches: {
      captured: capture.batches.length,
      summarized: count("summarized"),
      skippedTrivial: count("skipped-trivial"),
      skippedDeduped: count("skipped-deduped"),
      skippedOversized: count("skipped-oversized"),
      failed: count("failed"),
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
    context: { before: contextSize(facts.before.afterAgent), after: contextSize(facts.after.afterAgent) },
    usage: {
      ...sumUsage(flush.usage, chains?.usage),
      calls: flush.modelCalls + (chains?.modelCalls ?? 0),
      reused: { cache: flush.reused.cache + (chains?.reused.cache ?? 0), session: flush.reused.session + (chains?.reused.session ?? 0) },
    },
    failures: flush.outcomes.filter((o) => o.outcome === "failed").map((o) => ({ turnIndex: o.turnIndex, reason: o.reason ?? "" })),
    entriesAppended: facts.entriesAppended,
    sidecars: facts.sidecars,
    recovered: facts.recovered,
    withheld: facts.withheld,
  };
}

/** The report of a run that has nothing to do: the context as read, the calls capture saw. */
export function idleRunReport(session: string, capture: CaptureResult, rendered: Rendered): RunReport {
  const size = contextSize(rendered.afterAgent);
  return {
    session,
    summarizer: "none (nothing to do)",
    batches: { captured: 0, summarized: 0, skippedTrivial: 0, skippedDeduped: 0, skippedOversized: 0, failed: 0 },
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
    context: { before: size, after: size },
    usage: { input: 0, output: 0, cost: 0, calls: 0, reused: { cache: 0, session: 0 } },
    failures: [],
    entriesAppended: 0,
    sidecars: 0,
    recovered: [],
    withheld: null,
  };
}
