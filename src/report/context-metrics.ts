/**
 * Context health metrics (seeds/PRUNING.md "Single-chain sessions", observability metrics): all
 * are chars/4 estimates (`Math.round`) of `JSON.stringify` sizes.
 */
import { detectChains, openSegmentStart } from "../chain/detect.js";
import type { ToolCallIndexer } from "../prune/indexer.js";
import { occurrenceKey } from "../prune/occurrence-key.js";
import type { ProtectionTest } from "../prune/protect.js";
import type { ContextMetrics, FrontierData } from "../prune/types.js";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../session/types.js";

const chars = (m: unknown) => JSON.stringify(m).length;

/**
 * Open-cycle thinking tokens, largest-chain share (%) and frontier gap tokens of a branch.
 * @param messages branch messages in order (message entries, plus custom messages)
 */
export function computeContextMetrics(
  messages: AgentMessage[],
  frontier: FrontierData | null,
  indexer: Pick<ToolCallIndexer, "isSummarized">,
  isProtected: ProtectionTest,
): ContextMetrics {
  if (messages.length === 0) return { openCycleThinkingTokens: 0, largestChainSharePct: 0, frontierGapTokens: 0 };
  const sizes = messages.map(chars);
  const total = sizes.reduce((a, b) => a + b, 0);
  const openStart = openSegmentStart(messages);

  let thinking = 0;
  for (let i = openStart; i < messages.length; i++) {
    const m = messages[i];
    if (m.role !== "assistant" || !Array.isArray(m.content)) continue;
    for (const b of m.content) if (b?.type === "thinking") thinking += chars(b);
  }

  let largest = 0;
  for (let i = openStart; i < messages.length; i++) largest += sizes[i];
  for (const chain of detectChains(messages, isProtected)) {
    let sum = 0;
    for (let i = chain.startIndex; i <= chain.endIndex; i++) sum += sizes[i];
    if (sum > largest) largest = sum;
  }

  let boundary = -1;
  const excluded = new Set<string>();
  if (frontier) {
    let ordinal = -1;
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i];
      if (m.role !== "assistant") continue;
      ordinal++;
      if (ordinal !== frontier.lastAttemptedTurnIndex) continue;
      const blocks = Array.isArray(m.content) ? m.content : [];
      const k = blocks.findIndex((b) => b?.type === "toolCall" && b.id === frontier.lastAttemptedToolCallId);
      if (k >= 0) {
        boundary = i;
        for (const b of blocks.slice(0, k + 1)) if (b?.type === "toolCall") excluded.add(b.id);
      }
      break;
    }
  }
  let gap = 0;
  const argsById = new Map<string, { name: string; args: unknown }>();
  let afterBoundaryAssistant = false;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role === "assistant") {
      argsById.clear();
      for (const b of (m as AssistantMessage).content ?? []) if (b?.type === "toolCall") argsById.set(b.id, { name: b.name, args: b.arguments });
      if (i > boundary) afterBoundaryAssistant = true;
      continue;
    }
    if (m.role !== "toolResult" || i <= boundary) continue;
    const r = m as ToolResultMessage;
    if (!afterBoundaryAssistant && excluded.has(r.toolCallId)) continue;
    if (indexer.isSummarized(occurrenceKey(r.toolCallId, typeof r.timestamp === "number" ? r.timestamp : undefined))) continue;
    const call = argsById.get(r.toolCallId);
    if (isProtected(r.toolName, call?.args)) continue;
    gap += Math.round(sizes[i] / 4);
  }

  return {
    openCycleThinkingTokens: Math.round(thinking / 4),
    largestChainSharePct: total > 0 ? Math.round((100 * largest) / total) : 0,
    frontierGapTokens: gap,
  };
}

/** The messages the metrics read: message entries and custom messages of the branch, in order. */
export { branchMessages } from "../context/branch-messages.js";
