/**
 * Context health metrics (docs/design.md "Single-chain sessions", observability metrics; the
 * extension's `computeContextMetrics`): open-cycle thinking, largest-chain share, frontier gap.
 * Sizes come from a {@link ContextMeasure}: the extension's (`JSON.stringify` lengths, tokens
 * `Math.round(chars / 4)`) for the flush-metrics entries written for it, or condense's one
 * context measure (`context/size.ts`, Pi's estimate) for what `metrics` prints.
 */
import { detectChains, openSegmentStart } from "../chain/detect.js";
import { messageChars } from "../context/size.js";
import type { ToolCallIndexer } from "../prune/indexer.js";
import { resultKeyOf } from "../context/vocabulary.js";
import type { ProtectionTest } from "../prune/protect.js";
import type { ContextMetrics, FrontierData } from "../entries/types.js";
import type { AgentMessage, AssistantMessage, ToolCall, ToolResultMessage } from "../session/types.js";
import { jsonLengthMemo, type JsonLength } from "./json-size.js";
import { CHARS4, type Tokenizer } from "./tokenizer.js";

/** A thinking block as the metrics read it. */
export interface ThinkingBlock {
  type: "thinking";
  thinking?: string;
}

/** How the metrics measure messages. */
export interface ContextMeasure {
  /** Size of one message, for the largest-chain share. */
  chars(message: AgentMessage): number;
  /** Tokens of one tool result, for the frontier gap. */
  resultTokens(message: AgentMessage): number;
  /** Tokens of the open segment's thinking blocks, together. */
  thinkingTokens(blocks: ThinkingBlock[]): number;
}

/**
 * The extension's measure (pi-condense `context-metrics.ts`): `JSON.stringify` lengths; a result's
 * tokens `Math.round(chars / 4)`, the thinking blocks' JSON lengths summed, then rounded once.
 * Used for the `context-prune-flush-metrics` entries, which the extension reads.
 */
export function extensionMeasure(lengthOf: JsonLength = jsonLengthMemo()): ContextMeasure {
  return {
    chars: (m) => lengthOf(m),
    resultTokens: (m) => Math.round(lengthOf(m) / 4),
    thinkingTokens: (blocks) => Math.round(blocks.reduce((n, b) => n + lengthOf(b), 0) / 4),
  };
}

/**
 * condense's context measure (`context/size.ts`): Pi's per-message characters; tokens by the
 * tokenizer (default: Pi's ceil(chars / 4) per message; thinking: the thinking texts together).
 */
export function contextMeasure(tokenizer: Tokenizer = CHARS4): ContextMeasure {
  return {
    chars: messageChars,
    resultTokens: (m) => tokenizer.messageTokens(m),
    thinkingTokens: (blocks) => tokenizer.count(blocks.map((b) => (typeof b.thinking === "string" ? b.thinking : "")).join("")),
  };
}

/** Options of {@link computeContextMetrics}. */
export interface ContextMetricsOptions {
  /** How messages are measured (default: the extension's JSON measure). */
  measure?: ContextMeasure;
  /** When given, the frontier gap counts only tool results whose occurrence key it accepts (those in the context Pi sends). */
  inContext?: (resultKey: string) => boolean;
}

/**
 * Open-cycle thinking tokens, largest-chain share (%) and frontier gap tokens of a branch.
 *
 * - Open segment: the messages strictly after the last text-only assistant reply (an assistant
 *   message without toolCall blocks); the whole list when there is none.
 * - `openCycleThinkingTokens`: tokens of the `thinking` blocks of the open segment's assistant messages.
 * - `largestChainSharePct`: `round(100 × max(largest chain, open segment) / all)` in chars. A
 *   chain spans from the first user message carrying its start timestamp to the first assistant
 *   at or after it carrying its final timestamp (a chain whose final message is not found does not
 *   count); an interrupted chain ends before the next user message. 0 for an empty branch.
 * - `frontierGapTokens`: tool results after the persisted frontier that are neither indexed
 *   (`isSummarized` of their occurrence key) nor protected (arguments from the nearest preceding
 *   assistant carrying that call id), each message measured on its own. The frontier
 *   anchors at the assistant whose 0-based assistant ordinal is `lastAttemptedTurnIndex`, if it
 *   carries the frontier call at block k: results of blocks 0..k before the next assistant are
 *   excluded. Without a frontier, or when the anchor is not found, the whole branch counts.
 *
 * @param messages branch messages in order (message entries, plus custom messages), not compaction-aware
 */
export function computeContextMetrics(
  messages: AgentMessage[],
  frontier: FrontierData | null,
  indexer: Pick<ToolCallIndexer, "isSummarized">,
  isProtected: ProtectionTest,
  options: ContextMetricsOptions = {},
): ContextMetrics {
  if (messages.length === 0) return { openCycleThinkingTokens: 0, largestChainSharePct: 0, frontierGapTokens: 0 };
  const measure = options.measure ?? extensionMeasure();
  // prefix[i]: the size of messages[0, i), so that a span's size costs O(1).
  const prefix = new Float64Array(messages.length + 1);
  messages.forEach((m, i) => {
    prefix[i + 1] = prefix[i] + measure.chars(m);
  });
  const total = prefix[messages.length];
  const openStart = openSegmentStart(messages);

  const thinking: ThinkingBlock[] = [];
  for (let i = openStart; i < messages.length; i++) {
    const m = messages[i];
    if (m.role !== "assistant" || !Array.isArray(m.content)) continue;
    for (const b of m.content) if (b?.type === "thinking") thinking.push(b);
  }

  let largest = total - prefix[openStart];
  const spanOf = chainSpanFinder(messages);
  for (const chain of detectChains(messages, isProtected)) {
    const range = spanOf(chain.startUserTimestamp, chain.finalAssistantTimestamp);
    if (!range) continue;
    const sum = prefix[range.end + 1] - prefix[range.start];
    if (sum > largest) largest = sum;
  }

  const inContext = options.inContext ?? (() => true);
  const gap = frontierGap(messages, frontier, indexer, isProtected, (i) =>
    inContext(resultKeyOf(messages[i] as ToolResultMessage)) ? measure.resultTokens(messages[i]) : 0,
  );

  return {
    openCycleThinkingTokens: thinking.length > 0 ? measure.thinkingTokens(thinking) : 0,
    largestChainSharePct: total > 0 ? Math.round((100 * largest) / total) : 0,
    frontierGapTokens: gap,
  };
}

/**
 * Where the frontier sits: the index of the assistant whose 0-based assistant ordinal is the
 * frontier's turn, if it carries the frontier call, and the ids of its calls up to that one.
 */
function frontierAnchor(messages: AgentMessage[], frontier: FrontierData | null): { boundary: number; excluded: Set<string> } {
  const excluded = new Set<string>();
  if (!frontier) return { boundary: -1, excluded };
  let ordinal = -1;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role !== "assistant") continue;
    ordinal++;
    if (ordinal !== frontier.lastAttemptedTurnIndex) continue;
    const blocks = Array.isArray(m.content) ? m.content : [];
    const k = blocks.findIndex((b) => b?.type === "toolCall" && b.id === frontier.lastAttemptedToolCallId);
    if (k < 0) return { boundary: -1, excluded };
    for (const b of blocks.slice(0, k + 1)) if (b?.type === "toolCall") excluded.add(b.id);
    return { boundary: i, excluded };
  }
  return { boundary: -1, excluded };
}

/** Tokens of the tool results past the frontier that are neither indexed nor protected. */
function frontierGap(
  messages: AgentMessage[],
  frontier: FrontierData | null,
  indexer: Pick<ToolCallIndexer, "isSummarized">,
  isProtected: ProtectionTest,
  tokensAt: (index: number) => number,
): number {
  const { boundary, excluded } = frontierAnchor(messages, frontier);
  let gap = 0;
  // The call block of each id as carried by the nearest preceding assistant that has it (its arguments are read).
  const callsById = new Map<string, ToolCall>();
  let afterBoundaryAssistant = false;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role === "assistant") {
      const content = (m as AssistantMessage).content;
      if (Array.isArray(content)) {
        for (const b of content) if (b?.type === "toolCall") callsById.set(b.id, b);
      }
      if (i > boundary) afterBoundaryAssistant = true;
      continue;
    }
    if (m.role !== "toolResult" || i <= boundary) continue;
    const r = m as ToolResultMessage;
    if (!afterBoundaryAssistant && excluded.has(r.toolCallId)) continue;
    if (indexer.isSummarized(resultKeyOf(r))) continue;
    if (isProtected(r.toolName, callsById.get(r.toolCallId)?.arguments)) continue;
    gap += tokensAt(i);
  }
  return gap;
}

/**
 * Where a chain sits, found by its timestamps as the extension finds it: the first user message
 * with the start timestamp; for a closed chain the first assistant at or after it with the final
 * timestamp (null when there is none); for an interrupted chain the message before the next user
 * message, or the last message.
 */
export function chainSpan(messages: AgentMessage[], startUserTimestamp: number, finalAssistantTimestamp: number | null): { start: number; end: number } | null {
  return chainSpanFinder(messages)(startUserTimestamp, finalAssistantTimestamp);
}

/**
 * {@link chainSpan} for many chains over one message list: user and assistant messages are indexed
 * by timestamp once, so finding k chains costs O(n + k log n) instead of O(n · k). Same rules.
 */
export function chainSpanFinder(
  messages: AgentMessage[],
): (startUserTimestamp: number, finalAssistantTimestamp: number | null) => { start: number; end: number } | null {
  const firstUser = new Map<unknown, number>();
  const assistants = new Map<unknown, number[]>();
  const nextUser = new Int32Array(messages.length + 1).fill(-1);
  for (let i = messages.length - 1; i >= 0; i--) nextUser[i] = messages[i].role === "user" ? i : nextUser[i + 1];
  messages.forEach((m, i) => {
    if (m.role === "user" && !firstUser.has(m.timestamp)) firstUser.set(m.timestamp, i);
    else if (m.role === "assistant") {
      const list = assistants.get(m.timestamp);
      if (list) list.push(i);
      else assistants.set(m.timestamp, [i]);
    }
  });
  return (startUserTimestamp, finalAssistantTimestamp) => {
    const start = firstUser.get(startUserTimestamp);
    if (start === undefined) return null;
    if (finalAssistantTimestamp !== null) {
      const list = assistants.get(finalAssistantTimestamp) ?? [];
      const end = list[lowerBound(list, start)];
      return end === undefined ? null : { start, end };
    }
    const next = nextUser[start + 1];
    return { start, end: next < 0 ? messages.length - 1 : next - 1 };
  };
}

/** The first position in the ascending `list` whose value is ≥ `x` (`list.length` when none is). */
function lowerBound(list: number[], x: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The messages the metrics read: message entries and custom messages of the branch, in order. */
export { branchMessages } from "../context/branch-messages.js";
