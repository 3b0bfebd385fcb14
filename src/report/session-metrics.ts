/**
 * Everything `condense metrics` reports for one session (docs/design.md §9), computed in memory
 * from a loaded session: context health (open-cycle thinking, largest-chain share, frontier gap),
 * the rendered context before and after pruning, the provider-reported usage of the last request,
 * the pruner index, and the structural diagnostics. The JSON shape is documented in
 * docs/json-schemas.md; field names are stable.
 */
import type { ContextItem } from "../context/projection.js";
import { contextSize, type ContextSize } from "../context/size.js";
import { reportedRequests, usageTokens } from "../context/usage.js";
import { resultKeyOf } from "../context/vocabulary.js";
import type { ToolCallIndexer } from "../prune/indexer.js";
import type { ProtectionTest } from "../prune/protect.js";
import type { Rendered } from "../render/render.js";
import { sessionLabel, type SessionLabel } from "../session/label.js";
import type { Session } from "../session/session.js";
import type { AgentMessage, AssistantMessage, SessionEntry } from "../session/types.js";
import { computeContextMetrics, contextMeasure } from "./context-metrics.js";
import { findDiagnostics, faultCount, type Diagnostics } from "./diagnostics.js";
import { CHARS4, type Tokenizer } from "./tokenizer.js";

export type { ContextSize };

/** Whom a run writes for, as `pipeline/target.ts` decides it: stock Pi too (`pi`), or the extension only. */
export interface RunTargetShown {
  used: "extension" | "pi";
  reason: string;
}

/** A context before → after, and what that saves. */
export interface ContextChange {
  before: ContextSize;
  after: ContextSize;
  /** `before.tokens - after.tokens`. */
  reclaimedTokens: number;
  /** Rounded percentage of `before.tokens` reclaimed (0 when before is 0). */
  reclaimedPct: number;
}

function change(before: ContextSize, after: ContextSize): ContextChange {
  return {
    before,
    after,
    reclaimedTokens: before.tokens - after.tokens,
    reclaimedPct: before.tokens > 0 ? Math.round((100 * (before.tokens - after.tokens)) / before.tokens) : 0,
  };
}

/** Usage the provider reported for the last request (the last assistant message with usage). */
export interface ReportedUsage {
  entryId: string;
  line: number | null;
  /** `provider/model` of that message, when recorded. */
  model: string | null;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens: number;
  /** `totalTokens`, or `input + output + cacheRead + cacheWrite` when that is 0 (Pi's rule). */
  tokens: number;
}

export interface SessionMetrics {
  session: string;
  id: string;
  /** How a person knows the session: short id, date, name or first prompt. */
  label: SessionLabel;
  tokenizer: Tokenizer["name"];
  entries: number;
  branchEntries: number;
  /** Entries of the whole file by type. */
  entryTypes: Record<string, number>;
  /** Message entries on the branch by role. */
  roles: Record<string, number>;
  toolCalls: number;
  toolResults: number;
  openCycleThinkingTokens: number;
  largestChainSharePct: number;
  frontierGapTokens: number;
  /**
   * The context Pi sends (`context/size.ts`): `before` for the file as it is, `after` once `run`
   * (deterministic summarizer, for the target `run` would pick) has appended its entries — the
   * figures `run` reports: with the extension switched on, and stock Pi's, without it (`piOnly`).
   */
  context: ContextChange & { piOnly: ContextChange };
  /** Whom `run` would write for on this session (the plan behind "after": `pipeline/target.ts`), and why. */
  target: RunTargetShown;
  reportedUsage: ReportedUsage | null;
  index: {
    records: number;
    summaries: number;
    aliases: number;
    spills: number;
    chains: number;
    refs: number;
    frontier: { toolCallId: string; turnIndex: number; outcome: string } | null;
    summarizer: { calls: number; inputTokens: number; outputTokens: number; cost: number };
    chainsCompressed: number;
    rangesSummarized: number;
  };
  diagnostics: Diagnostics;
  /** Sum of the fault counts of `diagnostics` (images excluded). */
  diagnosticFaults: number;
  /** Reader warnings and file problems (skipped lines, missing header). */
  warnings: string[];
}

/** 1-based line of an entry in its session file, or null. */
export function lineOf(session: Pick<Session, "indexOf" | "locations">, entry: SessionEntry): number | null {
  const i = session.indexOf.get(entry);
  return i === undefined ? null : (session.locations[i]?.line ?? null);
}

/**
 * One session as the metrics read it (`pipeline/view.ts` `SessionView` is one): the session, its
 * branch, the configuration's protection test, the index rebuilt from the branch, Pi's projection,
 * the branch's messages (not compaction-aware) and the render of the branch as read.
 */
export interface MetricsInput {
  session: Session;
  branch: SessionEntry[];
  isProtected: ProtectionTest;
  indexer: ToolCallIndexer;
  items: ContextItem[];
  branchMessages: AgentMessage[];
  rendered: Rendered;
}

/** Message entries of the branch by role, tool calls and results, and the last usage Pi trusts (`context/usage.ts` `reportedRequests`). */
function branchCounts(branch: SessionEntry[]) {
  const roles: Record<string, number> = {};
  let toolCalls = 0;
  let toolResults = 0;
  for (const e of branch) {
    if (e.type !== "message") continue;
    const m = e.message as AssistantMessage | undefined;
    const role = String(m?.role);
    roles[role] = (roles[role] ?? 0) + 1;
    if (role === "assistant" && m && Array.isArray(m.content)) toolCalls += m.content.filter((b) => b?.type === "toolCall").length;
    if (role === "toolResult") toolResults++;
  }
  const last = reportedRequests(branch).at(-1);
  return { roles, toolCalls, toolResults, lastUsage: last ? { entry: last.entry, m: last.message } : null };
}

function reportedUsageOf(last: { entry: SessionEntry; m: AssistantMessage } | null, line: number | null): ReportedUsage | null {
  const u = last?.m.usage as Partial<Record<string, number>> | undefined;
  if (!last || !u) return null;
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  return {
    entryId: last.entry.id,
    line,
    model: last.m.provider || last.m.model ? `${last.m.provider ?? "?"}/${last.m.model ?? "?"}` : null,
    input: num(u.input),
    output: num(u.output),
    cacheRead: num(u.cacheRead),
    cacheWrite: num(u.cacheWrite),
    totalTokens: num(u.totalTokens),
    tokens: usageTokens(u),
  };
}

function indexSummary(indexer: ToolCallIndexer): SessionMetrics["index"] {
  let spills = 0;
  for (const r of indexer.records.values()) if (r.spillPath) spills++;
  return {
    records: indexer.records.size,
    summaries: indexer.summaries.length,
    aliases: indexer.dedupAliasToOriginal.size,
    spills,
    chains: indexer.chains.size,
    refs: indexer.shortRefToKey.size,
    frontier: indexer.frontier
      ? { toolCallId: indexer.frontier.lastAttemptedToolCallId, turnIndex: indexer.frontier.lastAttemptedTurnIndex, outcome: indexer.frontier.outcome }
      : null,
    summarizer: {
      calls: indexer.stats.callCount,
      inputTokens: indexer.stats.totalInputTokens,
      outputTokens: indexer.stats.totalOutputTokens,
      cost: indexer.stats.totalCost,
    },
    chainsCompressed: indexer.stats.chainsCompressed,
    rangesSummarized: indexer.stats.rangesSummarized,
  };
}

/**
 * Compute the metrics of one loaded session.
 * @param view the session, its index, projection and render (under the pruning configuration)
 * @param afterRun the render of the session after `run` (`pipeline/render.ts` `renderAfterRun`): its
 *   `afterAgent` is what Pi sends with the extension, its `beforeAgent` what stock Pi sends
 * @param tokenizer token estimate for every "tokens" figure (default Pi's ceil(chars / 4) per message)
 * @param target whom the run behind `afterRun` wrote for
 */
export function computeSessionMetrics(
  view: MetricsInput,
  afterRun: Rendered,
  tokenizer: Tokenizer = CHARS4,
  target: RunTargetShown = { used: "extension", reason: "--target extension" },
): SessionMetrics {
  const { session, branch, indexer } = view;
  const where = (e: SessionEntry) => lineOf(session, e);
  const entryTypes: Record<string, number> = {};
  for (const e of session.entries) entryTypes[e.type] = (entryTypes[e.type] ?? 0) + 1;
  const { roles, toolCalls, toolResults, lastUsage } = branchCounts(branch);
  // The gap counts only results Pi still sends (not those a compaction left behind).
  const inContext = new Set<string>();
  for (const item of view.items) if (item.message.role === "toolResult") inContext.add(resultKeyOf(item.message));
  const health = computeContextMetrics(view.branchMessages, indexer.frontier, indexer, view.isProtected, {
    measure: contextMeasure(tokenizer),
    inContext: (key) => inContext.has(key),
  });
  const tokensOf = (m: AgentMessage) => tokenizer.messageTokens(m);
  const before = contextSize(view.rendered.afterAgent, tokensOf);
  const after = contextSize(afterRun.afterAgent, tokensOf);
  const piOnly = change(contextSize(view.rendered.beforeAgent, tokensOf), contextSize(afterRun.beforeAgent, tokensOf));
  const diagnostics = findDiagnostics(view.items, view.rendered.diagnostics, branch, where, view.rendered.afterAgent);
  return {
    session: session.path,
    id: session.id,
    label: sessionLabel(session),
    tokenizer: tokenizer.name,
    entries: session.entries.length,
    branchEntries: branch.length,
    entryTypes,
    roles,
    toolCalls,
    toolResults,
    ...health,
    context: { ...change(before, after), piOnly },
    target,
    reportedUsage: reportedUsageOf(lastUsage, lastUsage ? where(lastUsage.entry) : null),
    index: indexSummary(indexer),
    diagnostics,
    diagnosticFaults: faultCount(diagnostics),
    warnings: [],
  };
}
